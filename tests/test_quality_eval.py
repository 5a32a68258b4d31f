"""Measuring the quality tiers (issue 36): ``eval acm-cr --quality`` measures the tier it names
(never the fast index under a best label), each tier has its own shipped ranker, and
``tools.eval_tier`` re-fuses and cross-validates offline exactly as the pipeline ranks."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

import numpy as np
import pytest
from click.testing import CliRunner
from retrieval_helpers import CHIIR_DEV, chiir_library  # noqa: F401 - session fixture


@pytest.fixture(scope="module")
def dev(tmp_path_factory, acm_dev_dir, chiir_library):
    src = acm_dev_dir / CHIIR_DEV[0]
    papers = tmp_path_factory.mktemp("dev") / "dev"
    (papers / CHIIR_DEV[0]).mkdir(parents=True)
    for ext in (".xml", ".dois", ".pdf"):
        shutil.copy(src / f"{CHIIR_DEV[1]}{ext}", papers / CHIIR_DEV[0])
    return papers, chiir_library


VARIANTS = ("plain", "enhanced", "product")


def _collect(dev):
    """The dev queries through the fast pipeline, collected as ``eval_tier collect`` saves
    them: ``(rows, by_doi, the pipeline's own figures, its config)``; the one citing paper's
    queries are split into four pseudo-papers (``group``) for the CV folds."""
    from assistant.evaluation.acm_cr import evaluate_acm_cr, protocol_setup
    from assistant.retrieval.pipeline import Recommender, pipeline_config

    papers, lib = dev
    config = pipeline_config(reranker=None, ranker="auto", use_intent=False)
    rec = Recommender(lib.lib, config, encoder=lib.encoder)
    rows: list[dict] = []
    result = evaluate_acm_cr(
        papers, lib.lib, config, recommender=rec, variants=VARIANTS, collect=rows
    )
    for i, r in enumerate(rows):
        r["group"] = f"g{i % 4}"
    by_doi = protocol_setup(lib.lib, papers, abbreviations=False).by_doi
    return rows, by_doi, result, config


def test_eval_best_without_its_index_is_one_line_and_fast_says_its_tier(dev):
    from assistant.cli import main

    papers, lib = dev
    args = ["eval", "acm-cr", str(papers), "--db", str(lib.lib.path), "--level", "paragraph"]
    args += ["--variant", "plain", "--limit", "2", "--json"]
    best = CliRunner().invoke(main, [*args, "--quality", "best"])
    assert best.exit_code == 1
    assert "quality best cannot be measured" in best.output
    assert "run `assistant index --quality best` first" in best.output
    assert "Traceback" not in best.output
    fast = CliRunner().invoke(main, ["--quality", "fast", *args])  # the global option
    assert fast.exit_code == 0, fast.output
    assert json.loads(fast.stdout)["quality"] == {
        "asked": "fast",
        "tier": "fast",
        "reason": "quality fast",
    }


def test_each_tier_has_its_shipped_ranker(tmp_path, monkeypatch):
    """``auto`` is the tier's own ranker; a tier without one falls back to the fast tier's
    ranker; a tier's ranker shipped disabled means no ranker for that tier."""
    import assistant.config
    from assistant.retrieval.pipeline import pipeline_config
    from assistant.retrieval.ranker import resolve_ranker

    monkeypatch.setattr(assistant.config, "SHIPPED_MODELS_DIR", tmp_path)
    (tmp_path / "ranker").mkdir()
    (tmp_path / "ranker" / "ranker.json").write_text("{}")
    assert resolve_ranker("auto", "best") == str(tmp_path / "ranker")
    (tmp_path / "ranker-best").mkdir()
    (tmp_path / "ranker-best" / "ranker.json").write_text('{"enabled_by_default": true}')
    assert resolve_ranker("auto", "best") == str(tmp_path / "ranker-best")
    assert resolve_ranker("auto", "fast") == str(tmp_path / "ranker")
    assert pipeline_config(reranker=None, tier="best").ranker == str(tmp_path / "ranker-best")
    assert resolve_ranker("off", "best") is None
    (tmp_path / "ranker-best" / "ranker.json").write_text('{"enabled_by_default": false}')
    assert resolve_ranker("auto", "best") is None


def test_offline_refusion_and_cv_reproduce_the_pipeline(dev, tmp_path):
    """The tool's stages come from the saved runs: at the product's dense weight the re-fused
    order must give exactly the metrics the pipeline's own fused stage gave, the saved file
    must read back equal, the shipped ranker scored offline must give the pipeline's ranked
    stage, and every held-out stage must be computed for every query."""
    from assistant.retrieval.pipeline import PipelineConfig
    from tools.eval_tier import load_rows, save_rows, tier_report

    _, lib = dev
    rows, by_doi, result, config = _collect(dev)
    assert len(rows) == 6  # one paragraph and one sentence query, three variants
    meta = {"quality": "fast", "doi_of": {str(p): d for d, p in by_doi.items()}}
    save_rows(tmp_path / "rows.npz", rows, meta)
    back, meta_back = load_rows(tmp_path / "rows.npz")
    assert meta_back == meta and len(back) == len(rows)
    for a, b in zip(rows, back):
        assert np.array_equal(np.asarray(a["x"]), b["x"]) and a["focus"] == b["focus"]
        assert np.array_equal(a["dense"][1], b["dense"][1]) and a["relevant"] == b["relevant"]
    doi_of = {pid: doi for doi, pid in by_doi.items()}
    report = tier_report(
        back, doi_of, lib.lib, replace(PipelineConfig(), reranker=None), config.ranker
    )
    for level, cells in report["stages"].items():
        for variant in VARIANTS:
            cell, shipped = cells[variant], result["levels"][level][variant]
            for stage in ("bm25", "dense", "fused", "ranked-shipped"):
                shipped["ranked-shipped"] = shipped["ranked"]  # the pipeline's ranked stage
                assert cell[stage] == {k: round(v, 4) for k, v in shipped[stage].items()}, stage
            assert {"fused-cv", "ranked-cv"} <= cell.keys()
    assert len(report["per_query"]["ranked-cv"]) == len(rows)
    assert len(report["chosen"]["dense_weight"]) == 4


def test_each_tier_has_its_shipped_cross_encoder_and_knobs(tmp_path, monkeypatch):
    """A cross-encoder trained for the best tier (manifest ``tier``) serves that tier only; a
    tier without its own takes the fast tier's, with the weight and head chosen for that tier
    (``by_tier``) where the manifest has them."""
    import assistant.config
    from assistant.retrieval.pipeline import pipeline_config
    from assistant.retrieval.reranker_setting import RerankerSetting, resolve_reranker

    monkeypatch.setattr(assistant.config, "SHIPPED_MODELS_DIR", tmp_path)
    minilm, mpnet = tmp_path / "reranker-minilm", tmp_path / "reranker-mpnet"
    minilm.mkdir()
    meta = {"kind": "cross-encoder", "rerank_weight": 0.2, "rerank_top": 20}
    meta["by_tier"] = {"best": {"rerank_weight": 0.3, "rerank_top": 10}}
    (minilm / "manifest.json").write_text(json.dumps(meta))
    assert resolve_reranker("auto", "fast") == RerankerSetting(str(minilm), 0.2, 20)
    assert resolve_reranker("auto", "best") == RerankerSetting(str(minilm), 0.3, 10)
    mpnet.mkdir()
    best = {"kind": "cross-encoder", "tier": "best", "rerank_weight": 0.5, "rerank_top": 30}
    (mpnet / "manifest.json").write_text(json.dumps(best | {"enabled_by_default": False}))
    assert resolve_reranker("auto", "best").model == str(minilm)  # disabled: not used
    (mpnet / "manifest.json").write_text(json.dumps(best))
    assert resolve_reranker("auto", "best") == RerankerSetting(str(mpnet), 0.5, 30)
    assert resolve_reranker("auto", "fast").model == str(minilm)  # never the best tier's
    config = pipeline_config(ranker=None, tier="best")
    assert (config.reranker, config.rerank_weight, config.rerank_top) == (str(mpnet), 0.5, 30)


def test_report_pairs_two_tiers_query_by_query_and_keeps_each_tiers_figures(dev, tmp_path):
    """``report A B``: B against A query by query (the same rows twice: no difference, no query
    better or worse); each tier's figures are kept beside its rows and reused."""
    from tools.eval_tier import main as tool
    from tools.eval_tier import save_rows

    _, lib = dev
    rows, by_doi, _, _ = _collect(dev)
    meta = {"quality": "fast", "encoder": "minilm"}
    meta["doi_of"] = {str(p): d for d, p in by_doi.items()}
    for name in ("a.npz", "b.npz"):
        save_rows(tmp_path / name, rows, meta)
    args = ["report", str(tmp_path / "a.npz"), str(tmp_path / "b.npz"), "--db", str(lib.lib.path)]
    first = CliRunner().invoke(tool, [*args, "--reranker", "off"])
    assert first.exit_code == 0, first.output
    diff = json.loads(first.stdout)["difference (last - first)"]
    assert set(diff) == {"dense", "fused", "fused-cv", "ranked-shipped", "ranked-cv"}
    for stage in diff.values():
        for cell in stage["R@10"].values():
            assert (cell["mean"], cell["better"], cell["worse"]) == (0.0, 0, 0)
    cache = tmp_path / "a.report.json"
    stamp = cache.stat().st_mtime_ns
    again = CliRunner().invoke(tool, [*args, "--reranker", "off"])
    assert again.stdout == first.stdout and cache.stat().st_mtime_ns == stamp
    # ``compare`` pairs the two kept reports without recomputing them, every shared stage
    pair = [str(tmp_path / "a.npz"), str(tmp_path / "b.npz")]
    compared = CliRunner().invoke(tool, ["compare", *pair])
    assert compared.exit_code == 0, compared.output
    out = json.loads(compared.stdout)
    assert out["second"]["reranker"] is None and cache.stat().st_mtime_ns == stamp
    stages = out["difference (second - first)"]
    assert {"bm25", "dense", "fused", "ranked-cv"} <= set(stages)
    assert all(c["mean"] == 0.0 for st in stages.values() for c in st["nDCG@10"].values())
    save_rows(tmp_path / "c.npz", rows, meta)  # rows without a report yet
    missing = CliRunner().invoke(tool, ["compare", pair[0], str(tmp_path / "c.npz")])
    assert missing.exit_code == 1 and "run `report" in missing.output


def test_fit_writes_a_ranker_the_tier_loads(dev, tmp_path):
    """``fit ROWS --out DIR`` writes a ranker the pipeline reads back, labelled with the rows'
    tier and encoder, with its C from the grid and its held-out figures per level."""
    from assistant.retrieval.ranker import FEATURES, load_ranker
    from assistant.training.ranker import C_GRID
    from tools.eval_tier import main as tool
    from tools.eval_tier import save_rows

    rows, by_doi, _, _ = _collect(dev)
    meta = {"quality": "best", "encoder": "mpnet"}
    meta["doi_of"] = {str(p): d for d, p in by_doi.items()}
    save_rows(tmp_path / "rows.npz", rows, meta)
    out = tmp_path / "models" / "ranker-best"  # a folder that does not exist yet
    result = CliRunner().invoke(tool, ["fit", str(tmp_path / "rows.npz"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    saved = json.loads((out / "ranker.json").read_text())
    assert (saved["tier"], saved["encoder"]) == ("best", "mpnet")
    assert saved["C"] == printed["C"] and saved["C"] in C_GRID
    assert set(saved["held_out"]) == {"paragraph", "sentence"}
    model = load_ranker(out)
    assert model.features == FEATURES and np.isfinite(model.coef).all()
    assert set(printed["coef"]) == set(FEATURES)
