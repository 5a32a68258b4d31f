"""The ACM-CR evaluation on a small real library: query/qrels construction, metric aggregation
re-checked from the written TREC run files, blacklist handling, CLI."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from retrieval_helpers import CHIIR_DEV, chiir_library  # noqa: F401 - session fixture

from assistant.evaluation.acm_cr import evaluate_acm_cr, protocol_setup
from assistant.evaluation.acm_cr_data import build_queries, load_collection, read_dois_file
from assistant.evaluation.metrics import mean_metrics, query_metrics, read_trec_run
from assistant.retrieval.pipeline import PipelineConfig, Recommender


@pytest.fixture(scope="module")
def setup(tmp_path_factory, acm_dev_dir, chiir_library):
    src = acm_dev_dir / CHIIR_DEV[0]
    papers = tmp_path_factory.mktemp("dev") / "dev"
    (papers / CHIIR_DEV[0]).mkdir(parents=True)
    for ext in (".xml", ".dois"):
        shutil.copy(src / f"{CHIIR_DEV[1]}{ext}", papers / CHIIR_DEV[0])
    lib = chiir_library.lib
    rec = Recommender(lib, PipelineConfig(use_intent=False), encoder=chiir_library.encoder)
    return papers, lib, rec


def _expected_queries(papers_dir, candidate_dois):
    """Independent count straight from the XML: contexts/sentences citing a candidate."""
    xml = papers_dir / CHIIR_DEV[0] / f"{CHIIR_DEV[1]}.xml"
    refs = read_dois_file(xml.with_suffix(".dois"))
    root = ET.parse(xml).getroot()
    para = sent = 0
    for ctx in root.iter("context"):
        hit_any = False
        for s in ctx.iter("s"):
            cites = [c.strip() for c in (s.get("cites") or "").split(",") if c.strip()]
            if any(refs.get(c, "").lower() in candidate_dois for c in cites):
                sent += 1
                hit_any = True
        para += hit_any
    return para, sent


def test_parse_dev_paper(setup):
    papers, _, _ = setup
    (paper,) = load_collection(papers)
    assert paper.paper_id == "/".join(CHIIR_DEV) and paper.title and paper.abstract
    assert paper.references["1"] == "10.1007/s11257-009-9066-4" and len(paper.references) >= 10
    queries = build_queries([paper])
    assert {q.level for q in queries} == {"paragraph", "sentence"}
    assert all("[" not in q.qid for q in queries)


def test_eval_metrics_match_run_files(setup, tmp_path):
    papers, lib, rec = setup
    result = evaluate_acm_cr(papers, lib, rec.config, recommender=rec, run_dir=tmp_path / "runs")
    candidates = {
        p.doi for p in lib.iter_papers() if p.doi and p.entry_type in ("article", "inproceedings")
    }
    para, sent = _expected_queries(papers, candidates)
    assert para >= 1 and result["queries"] == {"paragraph": para, "sentence": sent}
    for level in ("paragraph", "sentence"):
        qrels = {}
        for line in (tmp_path / "runs" / f"{level}.qrels").read_text().splitlines():
            qid, _, doc, _ = line.split()
            qrels.setdefault(qid, set()).add(doc)
        for variant in ("plain", "enhanced"):
            for stage in ("bm25", "dense", "fused"):
                run = read_trec_run(tmp_path / "runs" / f"{level}-{variant}-{stage}.run")
                rows = [query_metrics(run.get(qid, []), rel) for qid, rel in qrels.items()]
                expected = mean_metrics(rows)
                got = result["levels"][level][variant][stage]
                assert got == pytest.approx(expected), (level, variant, stage)
    assert (
        result["levels"]["sentence"]["enhanced"]["fused"]["R@100"] == 1.0
    )  # tiny library: all found
    assert result["latency_ms"]["prefilter"]["n"] == 2 * (para + sent)


def test_blacklist_removes_candidates(setup, tmp_path):
    papers, lib, rec = setup
    base = evaluate_acm_cr(
        papers, lib, rec.config, recommender=rec, variants=("plain",), levels=("sentence",)
    )
    (paper,) = load_collection(papers)
    cited = {v.lower() for v in paper.references.values()}
    in_lib = sorted(p.doi for p in lib.iter_papers() if p.doi in cited)
    bl = tmp_path / "blacklist.txt"
    bl.write_text("\n".join(in_lib) + "\n")
    assert 0 < len(in_lib) < lib.count()
    out = evaluate_acm_cr(
        papers,
        lib,
        rec.config,
        recommender=rec,
        variants=("plain",),
        levels=("sentence",),
        blacklist=bl,
    )
    assert (
        base["queries"]["sentence"] > 0 and out["queries"] == {}
    )  # every cited paper is blacklisted


def test_the_protocol_setup_is_the_one_every_acm_cr_run_uses(setup, tmp_path):
    """``protocol_setup``: the candidates (the blacklist beside the papers applied), the queries
    citing one and their answer key, checked against the XML; ``eval acm-cr`` and
    ``tools/eval_reranker.py`` (fused and BM25 candidates) run on exactly those queries, and the
    blacklisted citing paper itself is never ranked."""
    from tools.eval_reranker import collect_candidates, collect_candidates_bm25

    papers, lib, rec = setup
    papers = shutil.copytree(papers, tmp_path / "dev")
    (paper,) = load_collection(papers)
    (papers / "blacklist.txt").write_text(f"{paper.doi}\n")
    manuscript = lib.get_by_doi(paper.doi).id
    ps = protocol_setup(lib, papers)
    candidates = {
        p.doi
        for p in lib.iter_papers()
        if p.doi and p.entry_type in ("article", "inproceedings") and p.doi != paper.doi
    }
    assert set(ps.by_doi) == candidates and ps.blacklist == papers / "blacklist.txt"
    every = {p.id for p in lib.iter_papers()}
    assert ps.others == {manuscript} and set(ps.doi_of) | ps.others == every
    para, sent = _expected_queries(papers, candidates)
    queries = ps.queries()
    assert [sum(q.level == level for q in queries) for level in ("paragraph", "sentence")] == [
        para,
        sent,
    ]
    assert all(ps.relevant(q) and ps.relevant(q) <= q.cited_dois for q in queries)
    assert ps.queries(limit=2) == queries[:2]
    assert ps.abbreviations.keys() == {paper.paper_id}
    result = evaluate_acm_cr(papers, lib, rec.config, recommender=rec, variants=("plain",))
    assert result["queries"] == {"paragraph": para, "sentence": sent}
    assert result["candidates"] == len(candidates)

    rows, doi_of = collect_candidates(lib, papers, ("paragraph", "sentence"), recommender=rec)
    assert doi_of == ps.doi_of
    assert [(r["qid"], r["relevant"]) for r in rows] == [
        (q.qid, sorted(ps.relevant(q))) for q in queries
    ]
    assert all(len(r["ids"]) == len(r["texts"]) > 0 for r in rows)
    assert all(pid in doi_of for r in rows for pid in r["ids"])  # never the manuscript
    bm25_rows, bm25_doi_of = collect_candidates_bm25(lib, papers, ("paragraph", "sentence"))
    assert bm25_doi_of == doi_of and [r["qid"] for r in bm25_rows] == [r["qid"] for r in rows]
    assert all(pid in doi_of for r in bm25_rows for pid in r["ids"])


def test_intent_need_eval_runs_on_the_protocol_setup(setup):
    """``tools/intent_need_eval.py`` (sentence queries, no need vs the sentence's own intent) on
    the protocol's candidates and sentence queries."""
    from tools.intent_need_eval import main as need_main

    papers, lib, _ = setup
    ps = protocol_setup(lib, papers, abbreviations=False)
    n = min(3, len(ps.queries(("sentence",))))
    out = CliRunner().invoke(
        need_main, ["--db", str(lib.path), "--papers", str(papers), "--limit", "3"]
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["queries"] == n > 0 and data["candidates"] == len(ps.by_doi)
    assert sum(data["sentence_intents"].values()) == n
    assert sum(v["queries"] for v in data["r_at_10"].values()) == n


def test_cli_json(setup, tmp_path):
    papers, lib, _ = setup
    from assistant.cli import main

    out = CliRunner().invoke(
        main,
        [
            "eval",
            "acm-cr",
            str(papers),
            "--db",
            str(lib.path),
            "--level",
            "paragraph",
            "--variant",
            "plain",
            "--runs",
            str(tmp_path / "r"),
            "--json",
        ],
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert set(data["levels"]) == {"paragraph"} and set(data["levels"]["paragraph"]["plain"]) == {
        "bm25",
        "dense",
        "fused",
    }
    assert any(f.endswith("paragraph-plain-fused.run") for f in data["run_files"])


def test_cli_fusion_overrides_reach_the_pipeline(setup, tmp_path):
    """--dense-weight 1 makes the fused ranking the dense one, 0 the BM25 one."""
    papers, lib, _ = setup
    from assistant.cli import main
    from assistant.evaluation.metrics import read_trec_run

    def run(weight: str, runs: Path) -> dict:
        out = CliRunner().invoke(
            main,
            [
                "eval",
                "acm-cr",
                str(papers),
                "--db",
                str(lib.path),
                "--level",
                "sentence",
                "--variant",
                "plain",
                "--dense-weight",
                weight,
                "--depth",
                "150",
                "--runs",
                str(runs),
                "--json",
            ],
        )
        assert out.exit_code == 0, out.output
        return json.loads(out.stdout)

    data = run("1", tmp_path / "w1")
    assert data["config"]["dense_weight"] == 1.0 and data["config"]["depth"] == 150
    fused, dense = (
        read_trec_run(tmp_path / "w1" / f"sentence-plain-{s}.run") for s in ("fused", "dense")
    )
    assert fused and fused == dense
    run("0", tmp_path / "w0")
    fused, bm25 = (
        read_trec_run(tmp_path / "w0" / f"sentence-plain-{s}.run") for s in ("fused", "bm25")
    )
    assert fused.keys() == bm25.keys() and all(fused[q][: len(bm25[q])] == bm25[q] for q in bm25)
    assert fused != dense  # the two weights gave different fused rankings
    bad = CliRunner().invoke(
        main, ["eval", "acm-cr", str(papers), "--db", str(lib.path), "--dense-weight", "1.5"]
    )
    assert bad.exit_code == 2 and "--dense-weight" in bad.output


def test_product_variant_reads_authors_from_the_pdf_and_ranks(setup, tmp_path, acm_dev_dir):
    """The product variant takes the citing paper's authors/year from its PDF (documents layer);
    with a ranker the ``ranked`` stage appears, and ``collect`` gets one feature row per query."""
    from assistant.retrieval.ranker import FEATURES, LearnedRanker

    papers, lib, rec = setup
    shutil.copy(
        acm_dev_dir / CHIIR_DEV[0] / f"{CHIIR_DEV[1]}.pdf",
        papers / CHIIR_DEV[0] / f"{CHIIR_DEV[1]}.pdf",
    )
    n = len(FEATURES)
    coef = [1.0 if f == "fused" else 0.0 for f in FEATURES]
    ranker = LearnedRanker(FEATURES, *(np.zeros(n), np.ones(n), np.array(coef)))
    folder = ranker.save(tmp_path / "ranker").parent
    rows: list[dict] = []
    config = replace(rec.config, ranker=str(folder))
    result = evaluate_acm_cr(
        papers, lib, config, recommender=rec, variants=("product",), collect=rows
    )
    stages = result["levels"]["sentence"]["product"]
    assert stages["ranked"]["R@10"] == pytest.approx(stages["fused"]["R@10"])  # fused weight only
    assert rows and rows[0]["x"].shape[1] == n and rows[0]["group"].startswith(CHIIR_DEV[0])
    paper = load_collection(papers)[0]
    from assistant.evaluation.acm_cr_data import read_pdf_meta

    read_pdf_meta([paper])
    assert paper.authors[:2] == ["Davari, Masoud", "Hienert, Daniel"]  # the PDF header


def test_cli_runs_default_beside_the_library_and_the_index_stays_usable(setup):
    """Without --runs the run files go beside the library: inside the index folder they made
    every later search refuse the index as damaged ("runs: a folder, not a file the index
    writes")."""
    from assistant.cli import main
    from assistant.config import index_dir_for
    from assistant.retrieval import index_files

    papers, lib, _ = setup
    args = ["eval", "acm-cr", str(papers), "--db", str(lib.path), "--level", "paragraph"]
    out = CliRunner().invoke(main, [*args, "--variant", "plain", "--limit", "2", "--json"])
    assert out.exit_code == 0, out.output
    runs = lib.path.with_name(lib.path.name + ".eval-runs")
    assert all(Path(f).parent == runs for f in json.loads(out.stdout)["run_files"])
    index_files.check_folder(index_dir_for(lib.path))  # raises IndexDamagedError on a stray dir
