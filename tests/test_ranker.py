"""The learned ranker and its bibliographic signals, on the bundled sample library."""

from __future__ import annotations

import json

import numpy as np
import pytest
from retrieval_helpers import draft_citing_sentences, sample_library  # noqa: F401

from assistant.retrieval.bibsignals import SIGNALS, LibraryStats, name_key, signals
from assistant.retrieval.pipeline import PipelineConfig, Recommender
from assistant.retrieval.query import Query
from assistant.retrieval.ranker import (
    FEATURES,
    LearnedRanker,
    RankerFileError,
    load_ranker,
    resolve_ranker,
)
from assistant.training.ranker import cross_validate, fit

TEXT = (
    "Click models such as the dynamic Bayesian network model later separated the "
    "attractiveness of a snippet from the satisfaction it brings."
)


def _one_hot(tmp_path, weights: dict[str, float], name: str = "r") -> str:
    n = len(FEATURES)
    model = LearnedRanker(
        FEATURES,
        np.zeros(n),
        np.ones(n),
        np.array([weights.get(f, 0.0) for f in FEATURES]),
    )
    return str(model.save(tmp_path / name).parent)


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("Lin, Jimmy", "lin j"),
        ("Jimmy Lin", "lin j"),
        ("J. Lin", "lin j"),
        ("de Rijke, Maarten", "de rijke m"),
        ("Müller, Jörg", "muller j"),
        ("Chang¹, Jianxin", "chang j"),  # a footnote mark read from a PDF header
        ("", ""),
    ],
)
def test_name_key_normalises_forms_of_one_name(name, key):
    assert name_key(name) == key


def test_signals_see_authors_coauthors_years_and_library_citations(sample_library):
    lib = sample_library.lib
    stats = LibraryStats.build(lib)
    assert stats.papers == lib.count()
    cited = lib.get(sample_library.cited[0])  # cited by the sample's manuscript (a citation row)
    assert stats.cited_count[cited.id] == 1
    first, *rest = cited.authors
    row = dict(zip(SIGNALS, signals([cited], stats, [first], year=cited.year + 4)[0]))
    assert row["author_overlap"] == 1 and row["author_overlap_idf"] > 0
    assert row["coauthor_overlap"] == (len(rest) if len(rest) <= 29 else 0)
    assert row["year_known"] == 1 and row["year_gap"] == pytest.approx(np.log1p(4))
    assert row["library_citations"] == pytest.approx(np.log1p(1))
    none = dict(zip(SIGNALS, signals([cited], stats, ["Nobody, Zed"], year=None)[0]))
    assert none["author_overlap"] == none["coauthor_overlap"] == none["year_known"] == 0


def test_a_ranker_on_the_fused_score_keeps_the_fused_order(sample_library, tmp_path):
    rec = Recommender(sample_library.lib, encoder=sample_library.encoder)
    plain = rec.recommend(Query(TEXT), PipelineConfig(k=10, use_intent=False))
    path = _one_hot(tmp_path, {"fused": 1.0})
    ranked = rec.recommend(Query(TEXT), PipelineConfig(k=10, use_intent=False, ranker=path))
    assert [i.paper.id for i in ranked.items] == [i.paper.id for i in plain.items]
    assert ranked.items[0].ranks["ranker"] == 1 and "ranker" in ranked.timings_ms


def test_the_manuscripts_own_author_lifts_a_paper(sample_library, tmp_path):
    """A paper of the manuscript's author rises when the ranker weighs author overlap."""
    rec = Recommender(sample_library.lib, encoder=sample_library.encoder)
    config = PipelineConfig(k=10, use_intent=False)
    plain = rec.recommend(Query(TEXT), config)
    target = plain.items[6].paper
    path = _one_hot(tmp_path, {"fused": 1.0, "author_overlap_idf": 10.0})
    query = Query(TEXT, authors=(target.authors[0],))
    ranked = rec.recommend(query, PipelineConfig(k=10, use_intent=False, ranker=path))
    top = ranked.items[0].paper
    assert name_key(target.authors[0]) in {name_key(a) for a in top.authors}
    without = rec.recommend(Query(TEXT), PipelineConfig(k=10, use_intent=False, ranker=path))
    assert [i.paper.id for i in without.items] == [i.paper.id for i in plain.items]


def test_bad_ranker_files_name_the_file(tmp_path):
    bad = tmp_path / "ranker.json"
    bad.write_text("{not json")
    with pytest.raises(RankerFileError, match="ranker.json"):
        load_ranker(tmp_path)
    bad.write_text(json.dumps({"features": ["nope"], "mean": [0], "scale": [1], "coef": [1]}))
    with pytest.raises(RankerFileError, match="do not match"):
        load_ranker(bad)
    assert resolve_ranker("off") is None and resolve_ranker(str(tmp_path)) == str(tmp_path)


def test_the_shipped_ranker_loads_with_this_programs_features():
    found = resolve_ranker("auto")
    assert found, "assistant/models/ranker/ranker.json is missing or disabled"
    model = load_ranker(found)
    assert set(model.features) <= set(FEATURES) and np.isfinite(model.coef).all()


def test_the_shipped_ranker_keeps_the_drafts_citations_on_top(sample_library):
    """With the shipped ranker on, each citing sentence of the sample draft still finds the papers
    it cites in its top 5 (the prefilter alone does: test_retrieval_pipeline)."""
    rec = Recommender(sample_library.lib, encoder=sample_library.encoder)
    config = PipelineConfig(use_intent=False, ranker=resolve_ranker("auto"))
    cases = draft_citing_sentences()
    assert config.ranker and len(cases) >= 2
    for sentence, keys in cases:
        result = rec.recommend(Query(sentence, mode="local"), config)
        assert "ranker" in result.timings_ms
        top = [it.paper.citekey for it in result.items[:5]]
        assert set(keys) <= set(top), (sentence, keys, top)


def _rows(seed: int, n_groups: int = 6, per_group: int = 5, pool: int = 30) -> list[dict]:
    """Synthetic queries where ``author_overlap`` marks the cited papers, hidden low in the
    fused order: only a ranker that learns the signal finds them."""
    rng = np.random.default_rng(seed)
    rows = []
    for g in range(n_groups):
        for q in range(per_group):
            x = rng.normal(size=(pool, len(FEATURES)))
            x[:, FEATURES.index("author_overlap")] = 0
            pos = rng.choice(np.arange(15, pool), size=2, replace=False)
            x[pos, FEATURES.index("author_overlap")] = 1
            dois = [f"d{g}-{q}-{i}" for i in range(pool)]
            rows.append(
                {
                    "qid": f"{g}/{q}",
                    "level": "sentence",
                    "variant": "product",
                    "group": f"paper{g}",
                    "ids": list(range(pool)),
                    "x": x,
                    "y": [1 if i in pos else 0 for i in range(pool)],
                    "relevant": [dois[i] for i in pos],
                    "dois": dois,
                }
            )
    return rows


def test_training_learns_a_signal_and_reports_held_out_figures():
    rows = _rows(0)
    cv = cross_validate(rows, folds=3)
    fig = cv["levels"]["sentence"]["product"]
    assert fig["queries"] == len(rows)
    assert fig["fused"]["R@10"] == 0.0  # the cited papers sit below rank 15 in the fused order
    assert fig["ranked-cv"]["R@10"] == 1.0
    model = fit(rows, 1.0)
    assert model.coef[FEATURES.index("author_overlap")] == max(model.coef)
