"""Intent stage of the recommendation pipeline: why would this paper be cited here?

Exact rule (also in docs/ARCHITECTURE.md "Intent"). For a query context ``c`` and a
candidate paper ``d``, with intents ``k`` in (background, method, result):

1. ``p(k|c)`` — the calibrated SciCite classifier on the user's context (same for every
   candidate of the query). Blank contexts (``global`` mode) get the model's class prior.
2. Intent profile of ``d``: ``n_d[k]`` = how often the library's extracted citation contexts
   cite ``d`` with intent ``k`` (``citations`` table, labelled by ``classify_library_citations``).
   Library prior ``pi[k]`` = intent distribution over all labelled citations, smoothed with the
   SciCite training prior (``PRIOR_STRENGTH`` pseudo-counts) so that it exists for any library.
   Smoothed profile (Dirichlet posterior mean) ``theta_d[k] = (n_d[k] + ALPHA*pi[k]) / (N_d + ALPHA)``.
3. Combination (naive Bayes: context, the paper's text and its citation history are independent
   given the intent): ``p(k|c,d) ∝ p(k|c) * (q_d[k]/q̄[k])^b * (theta_d[k]/pi[k])^g``, where
   ``q_d`` is the paper-profile model's reading of the candidate's title + abstract
   (``assistant.inference.paper_intent``; ``q̄`` its training prior) and ``b``, ``g`` are the
   weights fitted on held-out citectx pairs (``assistant train paper-intent``; without a profile
   model ``b = 0``, ``g = 1``). A paper never cited in the library has
   ``theta_d = pi``, so its label is the classifier's; a paper cited 12x for its method moves mass
   towards ``method`` in proportion to the evidence. ``Recommendation.intent`` is the arg-max,
   ``intent_confidence`` its probability, ``intent_probs`` the whole distribution,
   ``intent_uncertain`` is True when that probability is below the model's ``uncertain_below``
   (weak evidence: the GUI shows "uncertain" instead of a confident chip) and
   ``intent_evidence`` says in words what the label rests on.
4. Intent-aware ranking, only when a preference ``k*`` is given ("I need a method citation"):
   for the ordering the user's stated need replaces the context prediction (the labels stay
   ``p(k|c,d)``), and candidates are re-ordered by
   ``rel_i * p(k*|d_i)`` where ``p(k*|d_i)`` is rule 3 with the library prior ``pi`` in place of
   the sentence's ``p(k|c)`` (the paper's own evidence: its text and its citation history) and ``rel_i = 1 / (RANK_K + rank_i)`` is the rank-based relevance prior of the
   incoming order (the RRF discount; scores of different rankers are not comparable, ranks are).
   Ties keep the incoming order; without a preference the order is never changed.
"""

from __future__ import annotations

import logging
import re
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from assistant.inference.intent import LABELS
from assistant.progress import ProgressEvent

if TYPE_CHECKING:
    from assistant.retrieval.pipeline import Recommendation

log = logging.getLogger(__name__)

ALPHA = 3.0  # Dirichlet pseudo-counts of a paper's intent profile
PRIOR_STRENGTH = 20.0  # pseudo-counts of the SciCite prior in the library prior
DEFAULT_UNCERTAIN_BELOW = 0.6  # without a profile model
RANK_K = 10.0  # rank discount of the relevance prior (1 / (RANK_K + rank))
#: Label distribution of the SciCite training set (background, method, result).
SCICITE_PRIOR = np.array([4840, 2294, 1109], dtype=np.float64) / 8243.0

_PREFERENCE_WORDS = {
    "background": ("background", "context", "motivation", "related work", "overview", "survey"),
    "method": (
        "method",
        "methods",
        "methodology",
        "technique",
        "approach",
        "algorithm",
        "tool",
        "dataset",
        "procedure",
        "model",
    ),
    "result": (
        "result",
        "results",
        "finding",
        "findings",
        "comparison",
        "compare",
        "evidence",
        "outcome",
    ),
}


def parse_intent_preference(text: str | None) -> str | None:
    """``"method"`` from ``"method"``, ``"Methods"``, ``"I need a method citation"``; None if absent.

    Raises ValueError when the text names no intent (so a typo is not silently ignored).
    """
    if text is None or not str(text).strip():
        return None
    low = str(text).lower().strip()
    if low in LABELS:
        return low
    hits = [
        lab
        for lab, words in _PREFERENCE_WORDS.items()
        if any(re.search(rf"\b{re.escape(w)}\b", low) for w in words)
    ]
    if len(hits) == 1:
        return hits[0]
    raise ValueError(f"cannot tell which intent {text!r} asks for; use one of {', '.join(LABELS)}")


@dataclass
class IntentProfile:
    """How often a paper is cited for each intent in the library."""

    counts: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def describe(self) -> str:
        """e.g. ``"cited for its method 12x, background 3x"``."""
        parts = [
            f"{k} {v}\u00d7" for k, v in sorted(self.counts.items(), key=lambda kv: -kv[1]) if v
        ]
        return ("cited for its " + ", ".join(parts)) if parts else "not cited in the library"


def library_prior(library) -> np.ndarray:
    """``pi``: intent distribution over the library's labelled citations, smoothed with SciCite's
    (cached per library until it changes: a GROUP BY over every citation, on every query)."""
    key = None
    if library is not None and hasattr(library, "generation"):
        key = (id(library), library.generation())
        cached = _PRIOR_CACHE.get(key)
        if cached is not None:
            return cached.copy()
    counts = np.zeros(len(LABELS))
    if library is not None:
        for intent, n in library.intent_counts().items():
            if intent in LABELS:
                counts[LABELS.index(intent)] = n
    prior = (counts + PRIOR_STRENGTH * SCICITE_PRIOR) / (counts.sum() + PRIOR_STRENGTH)
    if key is not None:
        _PRIOR_CACHE.clear()  # one library per process in practice: keep the last one
        _PRIOR_CACHE[key] = prior.copy()
    return prior


_PRIOR_CACHE: dict[tuple, np.ndarray] = {}
#: (model, text) -> p(k|c) of recent query contexts; (model, paper id, text) -> q_d of papers
_CONTEXT_CACHE: OrderedDict[tuple, np.ndarray] = OrderedDict()
_PROFILE_CACHE: OrderedDict[tuple, np.ndarray] = OrderedDict()
CONTEXT_CACHE_SIZE = 256
PROFILE_CACHE_SIZE = 50_000  # ~10 MB: the papers that keep coming back in the shown lists


def _remember(cache: OrderedDict, key, value, size: int) -> None:
    cache[key] = value
    if len(cache) > size:
        cache.popitem(last=False)


def paper_profiles(model, papers: list) -> np.ndarray:
    """``q_d`` of each paper (rows of ``model.predict_proba``), cached per model version, paper
    id and text: an edited title or abstract is another key, a library paper is computed once."""
    from assistant.inference.paper_intent import paper_text

    texts = [paper_text(p.title or "", p.abstract or "") for p in papers]
    version = (id(model), getattr(model, "version", ""))
    keys = [(version, p.id, hash(t)) for p, t in zip(papers, texts)]
    rows: list[np.ndarray | None] = [_PROFILE_CACHE.get(k) for k in keys]
    missing = [i for i, row in enumerate(rows) if row is None]
    if missing:
        fresh = model.predict_proba([texts[i] for i in missing])
        for i, row in zip(missing, fresh):
            rows[i] = row
            _remember(_PROFILE_CACHE, keys[i], row, PROFILE_CACHE_SIZE)
    return np.asarray(rows, dtype=np.float64).reshape(len(papers), len(LABELS))


def intent_profiles(library, paper_ids: list[int]) -> dict[int, IntentProfile]:
    """Intent counts of the citations *to* each paper (one library query)."""
    out = {pid: IntentProfile({lab: 0 for lab in LABELS}) for pid in paper_ids}
    ids = [int(p) for p in paper_ids if p is not None]
    if library is None or not ids:
        return out
    for cited, counts in library.intent_counts_to(ids).items():
        for intent, n in counts.items():
            if intent in LABELS:
                out[cited].counts[intent] = n
    return out


def smoothed_profile(profile: IntentProfile, prior: np.ndarray) -> np.ndarray:
    """``theta_d``: Dirichlet posterior mean of the paper's intent distribution."""
    n = np.array([profile.counts.get(lab, 0) for lab in LABELS], dtype=np.float64)
    return (n + ALPHA * prior) / (n.sum() + ALPHA)


def combine(
    context_probs: np.ndarray,
    theta: np.ndarray,
    prior: np.ndarray,
    library_weight: float = 1.0,
    profile: np.ndarray | None = None,
    profile_prior: np.ndarray | None = None,
    profile_weight: float = 0.0,
) -> np.ndarray:
    """``p(k|c,d) ∝ p(k|c) * (q_d/q̄)^b * (theta_d/pi)^g`` (normalised)."""
    z = np.log(np.clip(np.asarray(context_probs, dtype=np.float64), 1e-9, 1.0))
    z = z + library_weight * np.log(theta / prior)
    if profile is not None and profile_weight:
        z = z + profile_weight * np.log(np.clip(profile, 1e-9, 1.0) / profile_prior)
    post = np.exp(z - z.max())
    return post / post.sum()


PROFILE_WORDS = {"background": "background/survey", "method": "method/resource", "result": "result"}


def describe_evidence(p_c: np.ndarray, profile: IntentProfile, q: np.ndarray | None) -> str:
    """One line: what the per-paper label rests on."""
    k = int(np.argmax(p_c))
    parts = [f"sentence: {LABELS[k]} {p_c[k]:.2f}"]
    if q is not None:
        j = int(np.argmax(q))
        parts.append(f"paper reads as {PROFILE_WORDS[LABELS[j]]} {q[j]:.2f}")
    parts.append(profile.describe())
    return "; ".join(parts)


def context_probs(query_text: str, classifier=None) -> np.ndarray:
    """Calibrated ``p(k|c)`` of the query context (the model's class prior if blank)."""
    from assistant.inference.intent import load_intent_classifier

    clf = classifier or load_intent_classifier()
    key = (id(clf), getattr(clf, "version", ""), query_text or "")
    cached = _CONTEXT_CACHE.get(key)
    if cached is not None:
        return cached.copy()
    probs = clf.predict_proba([query_text or ""])[0]
    if list(clf.labels) != list(LABELS):  # reorder to LABELS
        probs = np.array([probs[list(clf.labels).index(lab)] for lab in LABELS])
    probs = np.asarray(probs, dtype=np.float64)
    _remember(_CONTEXT_CACHE, key, probs.copy(), CONTEXT_CACHE_SIZE)
    return probs


def label_recommendations(
    query_text: str,
    items: list[Recommendation],
    library,
    preference: str | None = None,
    classifier=None,
) -> list[Recommendation]:
    """Fill ``intent``/``intent_confidence``/``intent_probs`` of each item; re-rank only with a preference.

    ``items`` are ``Recommendation`` objects (``.paper.id`` is read, the intent fields are set
    in place). ``preference`` is ``None`` or anything ``parse_intent_preference`` accepts.
    Returns the list (a new, re-ordered list when a preference is given).
    """
    pref = parse_intent_preference(preference)
    if not items:
        return list(items)
    p_c = context_probs(query_text, classifier)
    prior = library_prior(library)
    model = _profile_model(classifier)
    weights = model.combine if model is not None else None
    q_all = paper_profiles(model, [it.paper for it in items]) if model is not None else None
    ids = [it.paper.id for it in items]
    profiles = intent_profiles(library, [i for i in ids if i is not None])
    empty = IntentProfile({lab: 0 for lab in LABELS})
    keyed = []
    for rank, (item, pid) in enumerate(zip(items, ids)):
        profile = profiles.get(pid, empty) if pid is not None else empty
        theta = smoothed_profile(profile, prior)
        q = q_all[rank] if q_all is not None else None
        post = combine(
            p_c,
            theta,
            prior,
            library_weight=weights.library if weights else 1.0,
            profile=q,
            profile_prior=model.prior if model is not None else None,
            profile_weight=weights.profile if weights else 0.0,
        )
        best = int(np.argmax(post))
        item.intent = LABELS[best]
        item.intent_confidence = float(post[best])
        item.intent_probs = {lab: float(p) for lab, p in zip(LABELS, post)}
        threshold = weights.uncertain_below if weights else DEFAULT_UNCERTAIN_BELOW
        item.intent_uncertain = bool(post[best] < threshold)
        item.intent_evidence = describe_evidence(p_c, profile, q)
        for lab in LABELS:  # the profile, e.g. "cited for its method 12x", for display
            item.scores[f"cited_{lab}"] = float(profile.counts.get(lab, 0))
        if pref:
            # p(k*|d): the paper's own evidence (profile + library) without the sentence
            doc = combine(
                prior,
                theta,
                prior,
                library_weight=weights.library if weights else 1.0,
                profile=q,
                profile_prior=model.prior if model is not None else None,
                profile_weight=weights.need_profile if weights else 0.0,
            )
            p_need = float(doc[LABELS.index(pref)])
            item.scores["intent_profile"] = p_need
            keyed.append((-(p_need / (RANK_K + rank)), rank, item))
    if not pref:
        return list(items)
    keyed.sort(key=lambda t: (t[0], t[1]))
    out = [t[2] for t in keyed]
    for new_rank, item in enumerate(out, start=1):
        if "final" in item.ranks:
            item.ranks["before_intent"] = item.ranks["final"]
        item.ranks["final"] = new_rank
    return out


def _profile_model(classifier=None):
    """The paper-profile model shipped next to the intent model (None if absent/unreadable)."""
    from assistant.inference.paper_intent import load_paper_profile

    try:
        return load_paper_profile(getattr(classifier, "model_dir", None))
    except (OSError, ValueError, KeyError) as exc:
        log.warning("paper profile model unusable: %s", exc)
        return None


META_KEY = "intent_model"


@dataclass
class LabelReport:
    model: str
    labelled: int = 0
    skipped_empty: int = 0
    relabelled_all: bool = False
    previous_model: str | None = None


def classify_library_citations(
    library, force: bool = False, classifier=None, batch_size: int = 128, progress=None
) -> LabelReport:
    """Label the intent of every extracted citation context in ``library`` (``citations`` table).

    Only unlabelled citations are classified, unless the model differs from the one recorded in
    the library's ``meta`` table (key ``intent_model``) or ``force`` is set: then all are
    relabelled. The model is recorded only after every batch is stored, so an interrupted
    relabelling starts again on the next call. Citations with an empty context stay unlabelled.
    PDF import calls this after adding a paper's citation edges (cheap: only new rows).
    ``progress`` gets a ``ProgressEvent`` (stage "intent") after each batch.
    """
    from assistant.inference.intent import load_intent_classifier

    clf = classifier or load_intent_classifier()
    previous = library.get_meta(META_KEY)
    relabel_all = force or (previous is not None and previous != clf.version)
    rows = library.citation_contexts(unlabelled_only=not relabel_all)
    report = LabelReport(model=clf.version, relabelled_all=relabel_all, previous_model=previous)
    todo = [(cid, ctx) for cid, ctx in rows if (ctx or "").strip()]
    report.skipped_empty = len(rows) - len(todo)
    for start in range(0, len(todo), batch_size):
        chunk = todo[start : start + batch_size]
        preds = clf.classify([ctx for _, ctx in chunk])
        with library.transaction():
            for (cid, _), pred in zip(chunk, preds):
                library.set_citation_intent(cid, pred.label, round(pred.confidence, 4))
        report.labelled += len(chunk)
        if progress:
            progress(
                ProgressEvent(
                    report.labelled, len(todo), "intent", f"{report.labelled}/{len(todo)} citations"
                )
            )
    if (
        report.skipped_empty and relabel_all
    ):  # stale labels of empty contexts would keep an old model's output
        with library.transaction():
            for cid, ctx in rows:
                if not (ctx or "").strip():
                    library.set_citation_intent(cid, None, None)
    library.set_meta(META_KEY, clf.version)
    return report
