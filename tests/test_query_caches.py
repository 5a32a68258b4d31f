"""What the recommendation keeps between queries (issue 32): reranked heads, paper intent
profiles, the library's intent prior, the draft's abbreviations. Each cache gives the same
answer as computing afresh, and forgets what a change to the library or the draft makes stale."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from retrieval_helpers import copy_sample_library, sample_library  # noqa: F401 - session fixture

from assistant.documents import abbreviations
from assistant.library.editing import edit_paper
from assistant.library.models import Citation
from assistant.library.store import Library
from assistant.retrieval import intent_stage
from assistant.retrieval.pipeline import PipelineConfig, Recommender
from assistant.retrieval.query import Query

CONTEXT = "Unbiased learning to rank corrects click logs for position bias."


class CountingReranker:
    """A cross-encoder stand-in: scores a document by its length, counts the pairs it scores."""

    def __init__(self) -> None:
        self.pairs = 0

    def score(self, query, docs):
        self.pairs += len(docs)
        return np.asarray([len(d) % 97 for d in docs], dtype=np.float32)


@pytest.fixture
def own_copy(sample_library, tmp_path):
    """A private copy of the indexed sample library (these tests edit it)."""
    lib = Library(copy_sample_library(sample_library, tmp_path))
    yield lib, sample_library.encoder
    lib.close()


def _reranking(lib, encoder):
    rec = Recommender(lib, PipelineConfig(use_intent=False), encoder=encoder)
    fake = rec._rerankers["counting"] = CountingReranker()
    config = replace(rec.config, reranker="counting", rerank_top=20, rerank_weight=0.2)
    return rec, fake, config


def test_an_editor_asking_again_reuses_the_reranked_head(own_copy):
    lib, encoder = own_copy
    rec, fake, config = _reranking(lib, encoder)
    first = rec.recommend(Query(CONTEXT, mode="local"), config)
    assert fake.pairs == 20
    again = rec.recommend(Query(CONTEXT, mode="local"), config)
    assert fake.pairs == 20  # nothing scored again
    assert [(i.paper.id, i.score) for i in again.items] == [
        (i.paper.id, i.score) for i in first.items
    ]
    rec.recommend(Query(CONTEXT + " Clicks are noisy.", mode="local"), config)
    assert fake.pairs == 40  # another sentence is scored


def test_an_edited_candidate_is_reranked_again(own_copy):
    lib, encoder = own_copy
    rec, fake, config = _reranking(lib, encoder)
    first = rec.recommend(Query(CONTEXT, mode="local"), config)
    top = first.items[0].paper
    edit_paper(lib, top.id, {"abstract": (top.abstract or "") + " With a longer abstract now."})
    again = rec.recommend(Query(CONTEXT, mode="local"), config)
    assert fake.pairs == 40  # the head's texts changed: scored afresh
    edited = next(i for i in again.items if i.paper.id == top.id)
    assert edited.paper.abstract.endswith("longer abstract now.")


class CountingProfile:
    """A paper-profile model stand-in that counts the texts it reads."""

    version = "test-1"
    prior = np.full(3, 1 / 3)

    def __init__(self) -> None:
        self.texts: list[str] = []

    def predict_proba(self, texts):
        self.texts += list(texts)
        return np.asarray([[0.2, 0.3 + len(t) % 5 / 100, 0.5 - len(t) % 5 / 100] for t in texts])


def test_paper_profiles_are_computed_once_per_paper_text(own_copy):
    lib, _ = own_copy
    model = CountingProfile()
    papers = lib.get_many([1, 2, 3])
    first = intent_stage.paper_profiles(model, papers)
    assert len(model.texts) == 3
    again = intent_stage.paper_profiles(model, lib.get_many([3, 2, 1, 4]))
    assert len(model.texts) == 4  # only paper 4 is new
    assert np.array_equal(again[:3], first[::-1])
    edit_paper(lib, 2, {"title": "A retitled paper about click models"})
    intent_stage.paper_profiles(model, lib.get_many([1, 2]))
    assert model.texts[-1].startswith("A retitled paper")  # the edited paper is read again
    assert len(model.texts) == 5
    other = CountingProfile()
    other.version = "test-2"  # another model version never sees the first one's rows
    intent_stage.paper_profiles(other, lib.get_many([1]))
    assert len(other.texts) == 1


def test_the_library_intent_prior_follows_new_citation_labels(own_copy):
    lib, _ = own_copy
    before = intent_stage.library_prior(lib)
    assert np.array_equal(intent_stage.library_prior(lib), before)
    with lib.transaction():
        for cited in (2, 3, 4, 5, 6, 7):
            cid = lib.add_citation(Citation(citing_id=1, cited_id=cited, context="we use it"))
            lib.set_citation_intent(cid, "method", 0.9)
    after = intent_stage.library_prior(lib)
    assert after[1] > before[1]  # more mass on "method"
    # a commit by another connection (the GUI's job connection) is seen too
    other = Library(lib.path)
    with other.transaction():
        cid = other.add_citation(Citation(citing_id=1, cited_id=8, context="as shown"))
        other.set_citation_intent(cid, "result", 0.9)
    other.close()
    assert intent_stage.library_prior(lib)[2] > after[2]


def test_abbreviations_of_an_edited_draft(monkeypatch):
    """Typing elsewhere in the draft does not run the detector on unchanged definitions again;
    changing a definition gives the new long form."""
    seen: list[str] = []
    real = abbreviations._pipeline()

    class Spy:
        def pipe(self, texts):
            texts = list(texts)
            seen.extend(texts)
            return real.pipe(texts)

    monkeypatch.setattr(abbreviations, "_pipeline", lambda: Spy())
    monkeypatch.setattr(abbreviations, "_DETECTED", {})
    draft = (
        "We study learning to rank (LTR) from clicks. Inverse propensity scoring (IPS) "
        "reweights each click."
    )
    assert abbreviations.find_abbreviations(draft) == {
        "LTR": "learning to rank",
        "IPS": "Inverse propensity scoring",
    }
    calls = len(seen)
    assert calls >= 1
    edited = draft + " A new sentence typed at the end of the draft."
    assert abbreviations.find_abbreviations(edited)["LTR"] == "learning to rank"
    assert len(seen) == calls  # same windows: answered from the cache
    redefined = edited.replace("learning to rank (LTR)", "listwise training of rankers (LTR)")
    assert abbreviations.find_abbreviations(redefined)["LTR"] == "listwise training of rankers"
    assert len(seen) > calls
