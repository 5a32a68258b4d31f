"""Train the paper-profile model and fit how per-paper intent combines its evidence.

``assistant train paper-intent``:

1. Profile model (``assistant.inference.paper_intent``): TF-IDF + logistic regression of the
   cited paper's ``title. abstract`` -> how it is cited, on the citectx *training* files
   (ACL-ARC train, 3C train; one row per citation, so a paper cited for both its method and its
   results contributes both). Abstracts that do not share a content word with their title are
   dropped (the ACL-ARC release has wrong ones, e.g. a patent abstract on an NLG paper).
2. Combination ``p(k|c,d) ∝ p(k|c) * (q_d/q̄)^b * (theta_d/pi)^g`` (``intent_stage``): ``b`` and
   ``g`` are chosen on the *held-out* citectx pairs (ACL-ARC test, ACT test) by 2-fold
   cross-validation grouped by cited paper; the library profile ``theta_d`` of a held-out pair is
   simulated by the other citations of the same cited paper (training files and the other
   held-out pairs, never the pair itself), as a library with imported manuscripts would have.
   Reported: per-pair macro-F1 (cross-validated) of each variant, and the accuracy of the pairs
   flagged ``uncertain``.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from assistant.inference.intent import LABELS
from assistant.inference.paper_intent import PROFILE_FILE, PaperProfileModel, paper_text
from assistant.library.normalize import title_key
from assistant.progress import Progress, ProgressEvent, no_progress
from assistant.training.intent_aux import (
    AUX_HELDOUT_FILES,
    AUX_TRAIN_FILES,
    CitePair,
    citectx_dir,
    load_citectx,
)

_CONTENT = re.compile(r"[a-z]{4,}")
GRID_B = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0)
GRID_G = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5)
#: weight of the paper profile in p(k*|d) when the author states a need (intent-aware ranking).
#: Measured with tools/intent_need_eval.py on ACM-CR dev (200 sentence queries, 100k candidates,
#: BM25): weight 1 lowers R@10 for every need (background 0.484 -> 0.456, method 0.416 -> 0.413,
#: result 0.481 -> 0.426), 0.5 is mixed, 0.25 neutral; so the need re-orders by library edges only.
NEED_PROFILE_WEIGHT = 0.0


def abstract_agrees(title: str, abstract: str) -> bool:
    """At least one content word of the title occurs in the abstract (or no content words)."""
    words = set(_CONTENT.findall((title or "").lower()))
    return not words or any(w in (abstract or "").lower() for w in words)


def pair_text(p: CitePair) -> str:
    keep = p.cited_abstract if abstract_agrees(p.cited_title, p.cited_abstract) else ""
    return paper_text(p.cited_title, keep)


def fit_profile(pairs: list[CitePair], c: float = 1.0, seed: int = 13) -> dict:
    """The JSON spec of ``PaperProfileModel`` fitted on ``pairs``."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    texts = [pair_text(p) for p in pairs]
    y = np.array([p.label for p in pairs])
    vec = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=2, max_features=20000)
    x = vec.fit_transform(texts)
    clf = LogisticRegression(C=c, class_weight="balanced", max_iter=2000, random_state=seed)
    clf.fit(x, y)
    counts = np.bincount(y, minlength=len(LABELS)).astype(float)
    return {
        "labels": list(LABELS),
        "ngram_max": 2,
        "vocab": {t: int(i) for t, i in vec.vocabulary_.items()},
        "idf": vec.idf_.round(6).tolist(),
        "coef": clf.coef_.round(6).tolist(),
        "intercept": clf.intercept_.round(6).tolist(),
        "prior": (counts / counts.sum()).round(4).tolist(),
        "train_pairs": len(pairs),
    }


def library_counts(
    target: list[CitePair], sources: list[CitePair], targets_in_sources: bool
) -> np.ndarray:
    """Per target pair: label counts of the *other* citations of the same cited paper."""
    by_key: dict[str, Counter] = defaultdict(Counter)
    for p in sources:
        by_key[title_key(p.cited_title)][p.label] += 1
    out = np.zeros((len(target), len(LABELS)))
    for i, p in enumerate(target):
        c = by_key.get(title_key(p.cited_title), Counter())
        for k, n in c.items():
            out[i, k] = n
        if targets_in_sources:  # never the pair itself
            out[i, p.label] -= 1
    return np.clip(out, 0, None)


def combine_scores(p_c, q, q_prior, theta, pi, b: float, g: float) -> np.ndarray:
    """Rows of ``p(k|c,d)`` (the rule of ``intent_stage.combine``, vectorised)."""
    z = np.log(np.clip(p_c, 1e-9, 1)) + b * np.log(q / q_prior) + g * np.log(theta / pi)
    z -= z.max(axis=1, keepdims=True)
    p = np.exp(z)
    return p / p.sum(axis=1, keepdims=True)


def _macro_f1(y, pred) -> float:
    from sklearn.metrics import f1_score

    return float(f1_score(y, pred, labels=[0, 1, 2], average="macro", zero_division=0))


def cross_fit(
    p_c, q, q_prior, theta, pi, y, groups, subset=None, grid_b=GRID_B, grid_g=GRID_G
) -> dict:
    """2-fold CV (grouped by cited paper) of (b, g); the per-pair macro-F1 of each variant."""
    rng = np.random.default_rng(13)
    uniq = sorted(set(groups))
    fold_of = dict(zip(uniq, rng.integers(0, 2, len(uniq))))
    fold = np.array([fold_of[g] for g in groups])

    def best(mask, bs, gs):
        scored = [
            (_macro_f1(y[mask], combine_scores(*a, b, g).argmax(1)), -b - g, b, g)
            for b in bs
            for g in gs
            for a in [(p_c[mask], q[mask], q_prior, theta[mask], pi)]
        ]
        return max(scored)[2:]

    variants = {
        "context_only": ((0.0,), (0.0,)),
        "context+profile": (grid_b, (0.0,)),
        "context+library": ((0.0,), grid_g),
        "context+profile+library": (grid_b, grid_g),
    }
    out = {}
    for name, (bs, gs) in variants.items():
        pred = np.zeros(len(y), dtype=int)
        for f in (0, 1):
            b, g = best(fold != f, bs, gs)
            test = fold == f
            pred[test] = combine_scores(p_c[test], q[test], q_prior, theta[test], pi, b, g).argmax(
                1
            )
        b_all, g_all = best(np.ones(len(y), bool), bs, gs)
        out[name] = {
            "cv_macro_f1": round(_macro_f1(y, pred), 4),
            "cv_macro_f1_with_library_evidence": (
                round(_macro_f1(y[subset], pred[subset]), 4) if subset is not None else None
            ),
            "b": b_all,
            "g": g_all,
        }
    return out


def uncertain_table(probs: np.ndarray, y: np.ndarray) -> list[dict]:
    conf, pred = probs.max(1), probs.argmax(1)
    rows = []
    for t in (0.5, 0.6, 0.7):
        low = conf < t
        rows.append(
            {
                "threshold": t,
                "share_uncertain": round(float(low.mean()), 3),
                "accuracy_uncertain": round(float((pred[low] == y[low]).mean()), 3)
                if low.any()
                else None,
                "accuracy_certain": round(float((pred[~low] == y[~low]).mean()), 3)
                if (~low).any()
                else None,
            }
        )
    return rows


def build(intent_model: str | None, out_dir: Path, progress: Progress = no_progress) -> dict:
    """Fit the profile model and the combination; write ``out_dir/paper_profile.json``."""
    from assistant.inference.intent import IntentClassifier
    from assistant.retrieval.intent_stage import PRIOR_STRENGTH, SCICITE_PRIOR

    d = citectx_dir()
    train = [p for f in AUX_TRAIN_FILES for p in load_citectx(d / f)]
    held = [p for f in AUX_HELDOUT_FILES for p in load_citectx(d / f)]
    train_keys = {p.context.lower() for p in train}
    held = [p for p in held if p.context.lower() not in train_keys]
    progress(
        ProgressEvent(
            0,
            None,
            "training",
            f"profile model on {len(train)} training pairs; {len(held)} held-out",
        )
    )
    spec = fit_profile(train)
    model = PaperProfileModel(spec)
    q = model.predict_proba([pair_text(p) for p in held])
    q_prior = np.asarray(spec["prior"])
    clf = IntentClassifier(intent_model)
    p_c = clf.predict_proba([p.context for p in held]).astype(np.float64)
    counts = library_counts(held, train + held, targets_in_sources=True)
    n_lib = np.bincount([p.label for p in train + held], minlength=len(LABELS))
    pi = (n_lib + PRIOR_STRENGTH * SCICITE_PRIOR) / (n_lib.sum() + PRIOR_STRENGTH)
    from assistant.retrieval.intent_stage import ALPHA

    theta = (counts + ALPHA * pi) / (counts.sum(1, keepdims=True) + ALPHA)
    y = np.array([p.label for p in held])
    groups = [title_key(p.cited_title) for p in held]
    variants = cross_fit(p_c, q, q_prior, theta, pi, y, groups, subset=counts.sum(1) > 0)
    # the profile enters the label only if it raises the cross-validated per-pair macro-F1
    final = max(
        (variants["context+library"], variants["context+profile+library"]),
        key=lambda v: v["cv_macro_f1"],
    )
    probs = combine_scores(p_c, q, q_prior, theta, pi, final["b"], final["g"])
    from assistant.evaluation.metrics import classification_metrics

    metrics = {
        "heldout_pairs": len(held),
        "heldout_files": list(AUX_HELDOUT_FILES),
        "with_library_evidence": int((counts.sum(1) > 0).sum()),
        "with_abstract": int(sum(bool(p.cited_abstract) for p in held)),
        "variants": variants,
        "profile_only_macro_f1": round(_macro_f1(y, q.argmax(1)), 4),
        "combined_in_sample": classification_metrics(y, probs.argmax(1)),
        "uncertain": uncertain_table(probs, y),
        "intent_model": clf.version,
    }
    spec["combine"] = {
        "profile": final["b"],
        "library": final["g"],
        "need_profile": NEED_PROFILE_WEIGHT,
        "uncertain_below": 0.6,
        "metrics": {k: v["cv_macro_f1"] for k, v in variants.items()},
    }
    spec["version"] = f"paper-profile@{len(train)}x{len(spec['vocab'])}"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / PROFILE_FILE).write_text(json.dumps(spec), encoding="utf-8")
    progress(ProgressEvent(1, 1, "export", f"wrote {out_dir / PROFILE_FILE}"))
    return metrics
