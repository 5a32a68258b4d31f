"""import_pdf: the paper, its citation edges with contexts, unmatched references; the eval command."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from assistant.library.importers.pdf import import_pdf
from assistant.library.models import Paper
from assistant.library.store import Library

_spec = importlib.util.spec_from_file_location(
    "pdfgen", Path(__file__).parent / "fixtures" / "documents" / "pdfgen.py"
)
pdfgen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pdfgen)


@pytest.fixture
def library(tmp_path):
    lib = Library(tmp_path / "lib.sqlite")
    lib.add_paper(
        Paper(
            "Context-aware citation recommendation",
            authors=["He, Qi", "Pei, Jian"],
            year=2010,
            venue="WWW",
            abstract="Citation recommendation using citation contexts.",
        )
    )
    lib.add_paper(
        Paper(
            "Content-Based Citation Recommendation",
            authors=["Bhagavatula, Chandra"],
            year=2018,
            doi="10.18653/v1/N18-1022",
            abstract="Embeddings of papers for recommendation.",
        )
    )
    lib.add_paper(
        Paper(
            "Who should I cite: learning literature search models from citation behavior",
            authors=["Bethard, Steven"],
            year=2010,
            abstract="Literature search models.",
        )
    )
    lib.add_paper(Paper("An unrelated paper about databases", authors=["Nobody, N."], year=2010))
    yield lib
    lib.close()


def test_import_pdf_adds_paper_edges_and_contexts(tmp_path, library):
    pdf = pdfgen.make_paper(tmp_path / "paper.pdf")
    report = import_pdf(library, pdf)
    assert report.created and report.title == pdfgen.TITLE
    paper = library.get(report.paper_id)
    assert paper.doi == "10.1145/1234567.7654321" and paper.year == 2020
    assert paper.abstract == pdfgen.ABSTRACT and paper.pdf_path == str(pdf.resolve())
    assert report.references == 5 and report.linked == 3
    assert sorted(r.number for r in report.unmatched) == [3, 4]
    assert (
        "@" in report.unmatched_bibtex() and "Recommending citations" in report.unmatched_bibtex()
    )
    edges = library.citations_from(report.paper_id)
    he = library.search("Context-aware citation recommendation", limit=1)[0]
    he_edges = [e for e in edges if e.cited_id == he.id]
    # [1] is cited in two sentences, in two sections
    assert {e.section for e in he_edges} == {"INTRODUCTION", "RELATED WORK"}
    assert any(
        "studied extensively in the information retrieval community [1, 2]" in e.context
        for e in he_edges
    )
    assert all(e.citing_id == report.paper_id for e in edges)
    # re-import: merged, no duplicate edges
    again = import_pdf(library, pdf)
    assert again.paper_id == report.paper_id and not again.created
    assert again.citations_added == 0
    assert len(library.citations_from(report.paper_id)) == len(edges)


def test_library_import_dispatches_pdf(tmp_path, library):
    from assistant.cli.library import library as library_cli

    pdf = pdfgen.make_paper(tmp_path / "paper.pdf")
    db = tmp_path / "cli.sqlite"
    result = CliRunner().invoke(library_cli, ["import", "--db", str(db), str(pdf)])
    assert result.exit_code == 0, result.output
    lib = Library(db)
    try:
        assert lib.count() == 1
        assert lib.search("Learning to Cite", limit=1)[0].title == pdfgen.TITLE
    finally:
        lib.close()


def test_eval_pdf_command_on_dev_subset(acm_dev_dir, tmp_path):
    from assistant.cli.evaluate import eval_pdf

    sub = tmp_path / "dev" / "sigir-2020"
    sub.mkdir(parents=True)
    for ext in (".pdf", ".xml", ".dois"):
        shutil.copy(acm_dev_dir / "sigir-2020" / f"3397271.3401188{ext}", sub)
    lib = Library(tmp_path / "lib.sqlite")
    lib.add_paper(
        Paper(
            "An Assumption-Free Approach to the Dynamic Truncation of Ranked Lists",
            year=2019,
            doi="10.1145/3341981.3344234",
            authors=["Bahri, Dara"],
        )
    )
    lib.add_paper(
        Paper(
            "Attention is All you Need",
            year=2017,
            doi="10.5555/3295222.3295349",
            authors=["Vaswani, Ashish"],
        )
    )
    lib.close()
    result = CliRunner().invoke(
        eval_pdf, [str(tmp_path / "dev"), "--db", str(tmp_path / "lib.sqlite"), "--json"]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)["summary"]
    assert summary["papers"] == 1 and summary["title_exact"] == 1.0
    assert summary["abstract_f1"] > 0.95 and summary["ref_count_accuracy"] == 1.0
    assert summary["citing_sentence_recall"] >= 0.85 and summary["marker_f1"] >= 0.8
    assert summary["linking_gold"] >= 1 and summary["linking_precision"] is not None
