"""The values the ranker's bibliographic signals and the intent stage read from the library are
the same as before their SQL moved into ``Library`` (issue #33).

The bundled sample library gets real citation edges: the sample manuscript (and a second paper)
cite the keys of the sample draft's sentences with those sentences as contexts; the intents are
set by a fixed rule (not a model, so a retrained classifier cannot move these numbers), one cited
paper is trashed and two papers are merged. ``EXPECTED`` was computed with the code before the
move (commit f4e4534)."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from retrieval_helpers import (
    SAMPLE_BIB,
    SAMPLE_MANUSCRIPT,
    draft_citing_sentences,
    make_library,
)

from assistant.inference.intent import LABELS
from assistant.library import duplicates, editing
from assistant.library.models import Citation
from assistant.retrieval import intent_stage as stage
from assistant.retrieval.bibsignals import LibraryStats, signals

CITING = (SAMPLE_MANUSCRIPT, "wang2018position", "wang2016learningc")  # every 3rd/5th/7th paper
TRASHED = "joachims2017unbiased"  # cited by the manuscript, then trashed
MERGE = ("chapelle2009dynamic", "guo2009click")  # the second is merged into the first


def _digest(value) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _build(path):
    lib = make_library(path, SAMPLE_BIB)
    papers = list(lib.iter_papers(with_record=False))
    citing = [lib.get_by_citekey(k) for k in CITING]
    with lib.transaction():
        for n, paper in enumerate(papers):
            context = (paper.abstract or "").split(". ")[0]  # a real sentence about the paper
            for step, source in zip((3, 5, 7), citing):
                if n % step or source.id == paper.id:
                    continue
                intent = None if n % 4 == 3 else LABELS[(n + step) % 3]
                lib.add_citation(Citation(source.id, paper.id, context, "", intent, 0.9))
        for sentence, keys in draft_citing_sentences():  # the draft's own citations
            for key in keys:
                cited = lib.get_by_citekey(key)
                lib.add_citation(Citation(citing[0].id, cited.id, sentence, "", "method", 0.8))
        lib.add_citation(Citation(citing[1].id, citing[0].id, "", "", None, None))  # no context
    editing.trash(lib, [lib.get_by_citekey(TRASHED).id])
    keep, other = (lib.get_by_citekey(k) for k in MERGE)
    duplicates.merge(lib, keep.id, [other.id])
    return lib


class _Classifier:
    """A fixed p(k|c) (no model): the intent stage's arithmetic on the library's counts."""

    version = "fixed-1"
    labels = LABELS
    model_dir = None

    def __init__(self):
        self.asked: list[str] = []

    def predict_proba(self, texts):
        return np.array([[0.5, 0.3, 0.2] for _ in texts])

    def classify(self, texts):
        from types import SimpleNamespace

        self.asked.extend(texts)
        return [SimpleNamespace(label=LABELS[len(t) % 3], confidence=0.75) for t in texts]


def _measure(lib, monkeypatch) -> dict:
    manuscript = lib.get_by_citekey(SAMPLE_MANUSCRIPT)
    papers = list(lib.iter_papers(with_record=False))
    stats = LibraryStats.build(lib)
    rows = signals(papers, stats, manuscript.authors, manuscript.year)
    out = {
        "papers": stats.papers,
        "name_df": [len(stats.name_df), sum(stats.name_df.values()), _digest(stats.name_df)],
        "top_names": stats.name_df.most_common(4),
        "coauthors": _digest({k: sorted(v) for k, v in stats.coauthors.items()}),
        "cited_count": [
            len(stats.cited_count),
            sum(stats.cited_count.values()),
            _digest(sorted(stats.cited_count.items())),
        ],
        "signal_sums": [round(float(s), 9) for s in np.asarray(rows).sum(axis=0)],
        "signals": _digest([[round(v, 9) for v in r] for r in rows]),
    }
    stage._PRIOR_CACHE.clear()
    out["prior"] = [round(float(p), 12) for p in stage.library_prior(lib)]
    profiles = stage.intent_profiles(lib, [p.id for p in papers])
    cited = sorted((pid, sorted(pr.counts.items())) for pid, pr in profiles.items() if pr.total)
    totals = [sum(profiles[pid].counts[lab] for pid, _ in cited) for lab in LABELS]
    out["profiles"] = [len(cited), totals, _digest(cited)]
    monkeypatch.setattr(stage, "_profile_model", lambda classifier=None: None)
    from assistant.retrieval.pipeline import Recommendation

    items = [
        Recommendation(paper=p, score=1.0, scores={}, ranks={"final": i + 1})
        for i, p in enumerate(papers)
    ]
    ranked = stage.label_recommendations("any sentence", items, lib, "method", _Classifier())
    out["labels"] = _digest(
        [(it.paper.citekey, it.intent, round(it.intent_confidence, 12)) for it in ranked]
    )
    out["method_top"] = [it.paper.citekey for it in ranked[:5]]
    clf = _Classifier()
    first = stage.classify_library_citations(lib, classifier=clf)
    again = stage.classify_library_citations(lib, classifier=clf)
    clf2 = _Classifier()
    clf2.version = "fixed-2"
    relabel = stage.classify_library_citations(lib, classifier=clf2)
    out["classify"] = [
        [first.labelled, first.skipped_empty, first.relabelled_all, first.previous_model],
        [again.labelled, again.skipped_empty],
        [relabel.labelled, relabel.skipped_empty, relabel.relabelled_all, relabel.previous_model],
        len(clf.asked),
        _digest(clf.asked),
        lib.get_meta(stage.META_KEY),
    ]
    stage._PRIOR_CACHE.clear()
    out["prior_after"] = [round(float(p), 12) for p in stage.library_prior(lib)]
    return out


EXPECTED: dict = {
    "papers": 174,
    "name_df": [356, 638, "a4d3dc59ac67723b"],
    "top_names": [["de rijke m", 16], ["croft w", 13], ["joachims t", 12], ["wang x", 9]],
    "coauthors": "a7ae5e0e5b71de6c",
    "cited_count": [98, 124, "f410f71238062cf7"],
    "signal_sums": [27.0, 82.951024373, 80.0, 176.427338733, 174.0, 41.0, 77.541803254],
    "signals": "1d19b595adfee608",
    "prior": [0.631636583421, 0.21041013154, 0.157953285038],
    "profiles": [73, [58, 18, 15], "d69aaf798557bd3a"],
    "labels": "1f16cd2b589536d9",
    "method_top": [
        "ai2018unbiasedb",
        "hofmann2016online",
        "agarwal2019estimating",
        "chapelle2012largescale",
        "wang2016learningc",
    ],
    "classify": [
        [31, 1, False, None],
        [0, 1],
        [123, 1, True, "fixed-1"],
        31,
        "d14624191ad621be",
        "fixed-2",
    ],
    "prior_after": [0.340862219183, 0.318642900227, 0.34049488059],
}


@pytest.fixture()
def golden_library(tmp_path):
    lib = _build(tmp_path / "lib.sqlite")
    yield lib
    lib.close()


def test_signals_and_intent_stage_read_the_same_values_as_before(golden_library, monkeypatch):
    got = json.loads(json.dumps(_measure(golden_library, monkeypatch)))
    assert got == EXPECTED
