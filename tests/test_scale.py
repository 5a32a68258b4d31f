"""A library at scale (issue 32): the FAISS kind ``index --kind auto`` picks by size, and
``assistant bench scale`` on a tiny synthetic library (real importer, real index files)."""

from __future__ import annotations

import json

import faiss
import numpy as np
import pytest
from click.testing import CliRunner

from assistant.cli import main
from assistant.evaluation.synthetic import PaperGenerator, SyntheticEncoder, write_bibtex
from assistant.library.importers import import_paths
from assistant.library.store import Library
from assistant.retrieval import index as index_mod
from assistant.retrieval.pipeline import PipelineConfig, Recommender
from assistant.retrieval.query import Query


def test_auto_picks_exact_search_then_hnsw_then_ivfpq_by_size():
    assert index_mod.resolve_kind("auto", 176) == "flat"
    assert index_mod.resolve_kind("auto", index_mod.FLAT_LIMIT - 1) == "flat"
    assert index_mod.resolve_kind("auto", index_mod.FLAT_LIMIT) == "hnsw"
    assert index_mod.resolve_kind("auto", 1_000_000) == "hnsw"
    assert index_mod.resolve_kind("auto", index_mod.HNSW_LIMIT) == "ivfpq"
    assert index_mod.resolve_kind("ivfpq", 50) == "ivfpq"  # asked for: kept (build falls back)
    with pytest.raises(ValueError):
        index_mod.resolve_kind("annoy", 10)


@pytest.fixture
def synthetic_library(tmp_path):
    files = write_bibtex(400, tmp_path / "bib", per_file=150)
    library = Library(tmp_path / "lib.sqlite")
    report = import_paths(library, files)
    assert report.added == 400 and not report.issues
    yield library
    library.close()


def test_auto_builds_hnsw_past_the_flat_limit_and_recommends_from_it(
    synthetic_library, monkeypatch
):
    encoder = SyntheticEncoder()
    monkeypatch.setattr(index_mod, "FLAT_LIMIT", 300)
    report = index_mod.build_index(synthetic_library, encoder, kind="auto")
    assert report.kind == "hnsw" and report.total == 400
    rec = Recommender(synthetic_library, PipelineConfig(use_intent=False), encoder=encoder)
    assert "HNSW" in type(faiss.downcast_index(rec.searcher.faiss_index.index)).__name__
    paper = synthetic_library.get(7)
    result = rec.recommend(Query(paper.title + ". " + paper.abstract, mode="local"))
    assert paper.id in [it.paper.id for it in result.items[:3]]
    monkeypatch.setattr(index_mod, "FLAT_LIMIT", 200_000)
    again = index_mod.build_index(synthetic_library, encoder, kind="auto")
    assert again.kind == "flat"  # back under the limit: rebuilt exact


def test_ivfpq_needs_enough_vectors_to_train(synthetic_library):
    report = index_mod.build_index(synthetic_library, SyntheticEncoder(), kind="ivfpq")
    assert report.kind == "flat"


def test_synthetic_records_are_drawn_not_copied():
    a, b = PaperGenerator(seed=3), PaperGenerator(seed=3)
    papers = [a.paper(i) for i in range(50)]
    assert [p.title for p in papers] == [b.paper(i).title for i in range(50)]  # seeded
    assert len({p.title for p in papers}) == 50
    assert all(p.authors and p.venue and 1900 < p.year < 2100 for p in papers)
    assert np.mean([bool(p.abstract) for p in papers]) > 0.5
    vecs = SyntheticEncoder().encode([p.title + " " + p.abstract for p in papers])
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)


def test_bench_scale_on_a_tiny_library(tmp_path):
    result = CliRunner().invoke(
        main,
        [
            "bench",
            "scale",
            "--papers",
            "300",
            "--queries",
            "3",
            "--no-product",
            "--recall",
            "hnsw",
            "--dir",
            str(tmp_path / "scale"),
        ],
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout[result.stdout.index("{") :])
    assert out["import"]["added"] == 300
    assert out["index"]["kind"] == "flat" and out["disk_mb"]["index"] > 0
    assert out["query"]["prefilter"]["p95_ms"] >= out["query"]["prefilter"]["p50_ms"] > 0
    assert "ranker" in out["query"]["stages"]
    assert 0.0 <= out["recall"]["hnsw"]["recall_at_100"] <= 1.0
    assert out["rss_mb"]["peak_whole_run"] > 0
    assert not list((tmp_path / "scale").glob("library.sqlite*"))  # removed unless --keep


def test_a_kept_bench_library_leaves_its_report_and_serves_in_a_fresh_process(tmp_path):
    """``--keep --dir``: the figures so far are in ``scale-report.json`` (written after each
    step); an HNSW library's recall is measured on its own graph (no second build); and
    ``measure_serving`` (``tools/bench_serve_scale.py``) serves the kept library."""
    from assistant.evaluation.scale_bench import measure_serving

    workdir = tmp_path / "scale"
    args = ["bench", "scale", "--papers", "300", "--queries", "3", "--no-product"]
    args += ["--kind", "hnsw", "--recall", "hnsw", "--dir", str(workdir), "--keep"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout[result.stdout.index("{") :])
    report = json.loads((workdir / "scale-report.json").read_text(encoding="utf-8"))
    assert report == {k: v for k, v in out.items() if k != "load_avg"}
    assert out["index"]["kind"] == "hnsw" and out["recall"]["hnsw"]["build_s"] is None
    served = measure_serving(workdir / "library.sqlite", 10)
    for name in ("prefilter_ranker_first_pass", "prefilter_ranker_warm", "product"):
        assert served[name]["p95_ms"] >= served[name]["p50_ms"] > 0, name
    assert served["rss_after_product_mb"] >= served["rss_after_ranker_mb"] > 0
