"""Intent labels of recommendations and of the library's citation edges (real model, real Library)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

from assistant.inference.intent import LABELS, load_intent_classifier
from assistant.library.models import Citation, Paper
from assistant.library.store import Library
from assistant.retrieval import intent_stage as stage

try:
    from assistant.retrieval.pipeline import Recommendation
except ImportError:  # the pipeline module is written in parallel; same fields as its contract

    @dataclass
    class Recommendation:  # type: ignore[no-redef]
        paper: Paper
        score: float
        scores: dict = field(default_factory=dict)
        ranks: dict = field(default_factory=dict)
        intent: str | None = None
        intent_confidence: float | None = None
        intent_probs: dict | None = None


METHOD_CTX = [
    "We used the segmentation algorithm of [1] to threshold the images.",
    "Features were extracted with the toolkit described in [4].",
    "Following the procedure of [2], samples were incubated for 24 h at 37 °C.",
]
RESULT_CTX = [
    "Our results are consistent with those reported in [3], who also observed a decrease.",
    "These findings agree with the previous study [5] showing similar effects.",
]
BACKGROUND_CTX = ["Climate change is expected to alter the distribution of many species [3]."]


def _recs(lib: Library, ids: list[int]) -> list[Recommendation]:
    return [
        Recommendation(paper=p, score=1.0 / (i + 1), scores={}, ranks={"final": i})
        for i, p in enumerate(lib.get_many(ids))
    ]


@pytest.fixture()
def library(tmp_path):
    lib = Library(tmp_path / "lib.sqlite")
    ids = [
        lib.add_paper(
            Paper(
                title=f"Paper number {i} about topic {i}", year=2000 + i, authors=[f"Author{i}, A."]
            )
        ).id
        for i in range(6)
    ]
    citing = ids[0]
    for ctx in METHOD_CTX * 4:  # paper 1 is cited 12x for its method
        lib.add_citation(Citation(citing_id=citing, cited_id=ids[1], context=ctx))
    for ctx in RESULT_CTX * 3:  # paper 2 is cited 6x for its results
        lib.add_citation(Citation(citing_id=citing, cited_id=ids[2], context=ctx))
    lib.add_citation(Citation(citing_id=citing, cited_id=ids[3], context=""))  # no context
    lib.ids = ids
    yield lib
    lib.close()


def test_classify_library_citations_is_incremental_and_tracks_the_model(library):
    clf = load_intent_classifier()
    rep = stage.classify_library_citations(library, classifier=clf)
    assert rep.labelled == 18 and rep.skipped_empty == 1 and not rep.relabelled_all
    to_method = library.citations_to(library.ids[1])
    assert [c.intent for c in to_method] == ["method"] * 12
    assert all(0.34 < c.intent_confidence <= 1 for c in to_method)
    assert {c.intent for c in library.citations_to(library.ids[2])} == {"result"}
    assert library.citations_to(library.ids[3])[0].intent is None
    assert library.get_meta(stage.META_KEY) == clf.version

    # only new rows are classified next time
    library.add_citation(
        Citation(citing_id=library.ids[0], cited_id=library.ids[4], context=BACKGROUND_CTX[0])
    )
    rep = stage.classify_library_citations(library, classifier=clf)
    assert rep.labelled == 1 and library.citations_to(library.ids[4])[0].intent == "background"

    # a different model (or --force) relabels everything
    library.set_citation_intent(library.citations_to(library.ids[1])[0].id, "result", 0.99)
    clf_old_version = clf.version
    try:
        clf.version = "other-model@x"
        rep = stage.classify_library_citations(library, classifier=clf)
    finally:
        clf.version = clf_old_version
    assert rep.relabelled_all and rep.labelled == 19 and rep.previous_model == clf_old_version
    assert library.citations_to(library.ids[1])[0].intent == "method"
    rep = stage.classify_library_citations(library, classifier=clf, force=True)
    assert rep.relabelled_all and rep.labelled == 19


def test_labels_come_from_the_model_and_follow_the_context(library):
    recs = _recs(library, library.ids[3:6])  # papers without labelled citations
    out = stage.label_recommendations(METHOD_CTX[0], recs, library)
    assert [r.intent for r in out] == ["method"] * 3
    assert out == recs  # same order without a preference
    clf = load_intent_classifier()
    p_c = stage.context_probs(METHOD_CTX[0], clf)
    prior = stage.library_prior(library)
    model = stage._profile_model(clf)
    if model is None:  # no paper-profile model: no citations -> the sentence model alone
        expected = p_c
    else:  # the candidate's title/abstract reading enters with the fitted weight
        from assistant.inference.paper_intent import paper_text

        q = model.predict_proba([paper_text(recs[0].paper.title, recs[0].paper.abstract)])[0]
        expected = stage.combine(
            p_c,
            prior,
            prior,
            profile=q,
            profile_prior=model.prior,
            profile_weight=model.combine.profile,
        )
    assert list(out[0].intent_probs.values()) == pytest.approx(list(expected), abs=1e-6)
    out = stage.label_recommendations(RESULT_CTX[0], _recs(library, library.ids[3:6]), library)
    assert {r.intent for r in out} == {"result"}
    for r in out:
        assert sum(r.intent_probs.values()) == pytest.approx(1.0) and r.intent_confidence == max(
            r.intent_probs.values()
        )


def test_profile_shifts_the_label_per_candidate(library):
    stage.classify_library_citations(library)
    ambiguous = "A similar approach was described in [9]."  # the model leans to method (~0.65)
    recs = _recs(library, [library.ids[5], library.ids[1], library.ids[2]])
    out = stage.label_recommendations(ambiguous, recs, library)
    base, cited_method, cited_result = (r.intent_probs for r in out)
    assert cited_method["method"] > base["method"] and cited_result["result"] > base["result"]
    assert out[0].intent == "method" and out[1].intent == "method"
    assert out[1].intent_confidence > out[0].intent_confidence
    assert out[2].intent == "result"  # cited 6x for its results: the profile flips the label
    assert out[1].scores["cited_method"] == 12.0
    assert out[2].scores["cited_result"] == 6.0 and out[0].scores["cited_method"] == 0.0


def test_preference_reorders_by_profile(library):
    stage.classify_library_citations(library)
    order = [library.ids[5], library.ids[4], library.ids[2], library.ids[1]]
    out = stage.label_recommendations(
        "We analysed the data [3].",
        _recs(library, order),
        library,
        preference="I need a method citation",
    )
    ids = [r.paper.id for r in out]
    assert ids[0] == library.ids[1]  # cited 12x for its method climbs from rank 4
    assert ids.index(library.ids[2]) == 3  # cited only for results sinks
    assert [r.ranks["final"] for r in out] == [1, 2, 3, 4] and out[0].ranks["before_intent"] == 3
    out = stage.label_recommendations(
        "We analysed the data [3].", _recs(library, order), library, preference="result"
    )
    assert out[0].paper.id == library.ids[2]


def test_combination_rule_and_preference_parsing():
    prior = np.array([0.5, 0.3, 0.2])
    p_c = np.array([0.2, 0.5, 0.3])
    empty = stage.IntentProfile({lab: 0 for lab in LABELS})
    assert np.allclose(stage.combine(p_c, stage.smoothed_profile(empty, prior), prior), p_c)
    method12 = stage.IntentProfile({"background": 0, "method": 12, "result": 0})
    theta = stage.smoothed_profile(method12, prior)
    assert theta.sum() == pytest.approx(1) and theta[1] > 0.85
    post = stage.combine(p_c, theta, prior)
    expected = p_c * theta / prior
    assert np.allclose(post, expected / expected.sum())
    assert method12.describe() == "cited for its method 12\u00d7"
    assert stage.parse_intent_preference("Methods") == "method"
    assert stage.parse_intent_preference("I need a method citation") == "method"
    assert stage.parse_intent_preference("compare results") == "result"
    assert (
        stage.parse_intent_preference(None) is None and stage.parse_intent_preference(" ") is None
    )
    with pytest.raises(ValueError):
        stage.parse_intent_preference("banana")


def test_empty_items_and_blank_query(library):
    assert stage.label_recommendations("x", [], library) == []
    out = stage.label_recommendations("", _recs(library, library.ids[3:4]), library)
    assert out[0].intent == "background" and out[0].intent_confidence < 0.7
