"""Importers on hand-written fixtures: BibTeX/RIS/CSL-JSON/Zotero/folders, bad input, progress, cancel, kill -9."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from assistant.cli import main
from assistant.errors import Cancelled
from assistant.library.export import paper_to_bibtex
from assistant.library.importers import import_paths
from assistant.library.store import SCHEMA_VERSION, Library

FIX = Path(__file__).parent / "fixtures" / "library"


@pytest.fixture
def lib(tmp_path):
    library = Library(tmp_path / "lib.sqlite")
    yield library
    library.close()


def _issues(report, name):
    return [(i.line, i.severity, i.reason) for i in report.issues if Path(i.file).name == name]


def test_bibtex_strings_crossref_months_latex(lib):
    report = import_paths(lib, [FIX / "good.bib"])
    assert (report.added, report.issues) == (5, [])
    p = lib.get_by_citekey("mueller2019dense")
    assert p.authors == ["Müller, Jörg", "García, María", "van der Berg, Jan"]
    assert p.title == "Dense Retrieval for Citation Recommendation: A Naïve Baseline"
    assert p.venue == "Proceedings of the 42nd International ACM SIGIR Conference"  # @string
    assert p.extra["publisher"] == "Association for Computing Machinery" and p.extra["month"] == "7"
    assert p.doi == "10.1145/3331184.9999999" and p.year == 2019
    assert (
        p.abstract == "We compare α-weighted fusion of BM25 and dense retrieval & show gains of 5%."
    )
    assert p.keywords == ["citation recommendation", "dense retrieval", "BM25"]
    child = lib.get_by_citekey("smith2020axioms")  # crossref inherits year/booktitle/publisher
    assert child.year == 2020 and child.venue.startswith("Proceedings of the 2020 ACM SIGIR")
    assert child.authors == ["Smith, Alice", "Østergaard, Søren"] and child.extra["month"] == "9"
    doi_keyed = lib.get_by_doi("10.1145/3000000.3000001")
    assert doi_keyed.citekey == "koci2018query" and doi_keyed.authors == ["Koči, Ondřej", "others"]
    assert lib.get_by_citekey("arxiv2021").arxiv_id == "2101.00001"
    assert lib.get_by_citekey("arxiv2021").authors == ["OpenAI Research Team"]


def test_reimport_is_a_noop(lib):
    first = import_paths(lib, [FIX / "good.bib", FIX / "sample.ris"])
    versions = lib.paper_versions()
    stamps = {p.id: p.updated_at for p in lib.iter_papers()}
    again = import_paths(lib, [FIX / "good.bib", FIX / "sample.ris"])
    assert again.added == again.merged == 0 and again.unchanged == first.added
    assert (
        lib.paper_versions() == versions
        and {p.id: p.updated_at for p in lib.iter_papers()} == stamps
    )


def test_malformed_bibtex_reports_line_and_keeps_the_rest(lib):
    report = import_paths(lib, [FIX / "malformed.bib"])
    assert report.added == 3
    assert {p.citekey for p in lib.iter_papers()} == {
        "first2019good",
        "second2019good",
        "third2020good",
    }
    issues = _issues(report, "malformed.bib")
    assert (
        issues[0][:2] == (8, "error") and "broken2019" in issues[0][2] and "closing" in issues[0][2]
    )
    assert issues[1][:2] == (19, "error") and "no title" in issues[1][2]


def test_unreadable_year_is_kept_as_written_with_a_warning(lib, tmp_path):
    bib = tmp_path / "years.bib"
    bib.write_text(
        "@article{odd2019, title={Odd Year}, author={Doe, Jane}, year={20x9}}\n\n"
        "@article{ok2019, title={Fine Year}, author={Doe, Jane}, date={2019-05-01}}\n"
    )
    report = import_paths(lib, [bib])
    assert report.added == 2
    ((line, severity, reason),) = _issues(report, "years.bib")
    assert (line, severity) == (1, "warning") and "odd2019" in reason and "'20x9'" in reason
    odd = lib.get_by_citekey("odd2019")
    assert odd.year is None and "year = {20x9}" in paper_to_bibtex(
        odd
    )  # exported as the user wrote it
    assert lib.get_by_citekey("ok2019").year == 2019


def test_unreadable_year_in_ris_and_csl_json_is_kept_too(lib, tmp_path):
    ris = tmp_path / "y.ris"
    ris.write_text("TY  - JOUR\nTI  - Undated Report\nPY  - forthcoming\nER  - \n")
    csl = tmp_path / "y.json"
    csl.write_text(
        '[{"id": "s1", "type": "book", "title": "String Date", "issued": "2017"},\n'
        ' {"id": "s2", "type": "book", "title": "Odd Date", "issued": {"literal": "Spring"}}]'
    )
    report = import_paths(lib, [ris, csl])
    assert report.added == 3
    assert [(line, sev, "'forthcoming'" in why) for line, sev, why in _issues(report, "y.ris")] == [
        (1, "warning", True)
    ]
    assert [(line, sev, "s2" in why) for line, sev, why in _issues(report, "y.json")] == [
        (2, "warning", True)
    ]
    by_title = {p.title: p for p in lib.iter_papers()}
    assert by_title["String Date"].year == 2017  # a bare string date is read, not dropped
    assert by_title["Odd Date"].year is None and by_title["Odd Date"].extra["year"] == "Spring"
    assert "year = {forthcoming}" in paper_to_bibtex(by_title["Undated Report"])


@pytest.mark.parametrize(
    "name,reason", [("empty.bib", "empty file"), ("binary.bib", "binary file")]
)
def test_empty_and_binary_files_give_one_clear_error(lib, name, reason):
    report = import_paths(lib, [FIX / name, FIX / "good.bib"])
    assert report.added == 5
    assert [(line, reason in text) for line, _, text in _issues(report, name)] == [(0, True)]


def test_unreadable_and_missing_files(lib, tmp_path):
    locked = tmp_path / "locked.bib"
    locked.write_text("@article{a, title={T}}")
    locked.chmod(0)
    missing = tmp_path / "missing.bib"
    report = import_paths(lib, [locked, missing])
    reasons = [i.reason for i in report.issues]
    if os.geteuid() != 0:  # root can read anything
        assert any("cannot read file" in r for r in reasons)
    assert any("no such file" in r for r in reasons)


def test_non_utf8_is_decoded_with_a_warning(lib):
    report = import_paths(lib, [FIX / "latin1.bib"])
    assert report.added == 1
    paper = lib.get_by_citekey("latin2001")
    assert paper.title == "Señales y Búsqueda de Información" and paper.authors == [
        "Peña, José María"
    ]
    assert _issues(report, "latin1.bib") == [
        (
            2,
            "warning",
            "not valid UTF-8 on 2 line(s) (2, 3); those lines decoded as cp1252, the others as UTF-8",
        )
    ]


def test_ris(lib):
    report = import_paths(lib, [FIX / "sample.ris"])
    assert report.added == 3
    bm25 = lib.get_by_doi("10.1561/1500000019")
    assert bm25.authors == ["Robertson, Stephen", "Zaragoza, Hugo"] and bm25.year == 2009
    assert bm25.abstract.endswith(
        "grounded in work done in the 1970-80s."
    )  # continuation line folded
    assert bm25.extra["pages"] == "333–389" and bm25.keywords == ["BM25", "probabilistic model"]
    assert (
        lib.get_by_doi("10.18653/v1/2020.emnlp-main.550").entry_type == "inproceedings"
    )  # DOI from UR
    lines = [(line, sev) for line, sev, _ in _issues(report, "sample.ris")]
    assert lines == [(18, "error"), (33, "warning"), (28, "error")]


def test_csljson(lib):
    report = import_paths(lib, [FIX / "sample.json"])
    assert report.added == 2
    p = lib.get_by_citekey("cohan2019structural")
    assert p.doi == "10.18653/v1/n19-1361" and p.year == 2019 and p.entry_type == "inproceedings"
    assert p.authors == ["Cohan, Arman", "Ammar, Waleed", "van Zuylen, Madeleine"]
    assert json.loads(p.original_text)["id"] == "cohan2019structural"
    assert lib.get_by_citekey("boudin2021acmcr").year == 2021
    assert [(line, sev) for line, sev, _ in _issues(report, "sample.json")] == [
        (14, "error"),
        (20, "error"),
    ]


def test_truncated_json_reports_line(lib):
    report = import_paths(lib, [FIX / "truncated.json"])
    assert report.added == 0
    ((line, _severity, reason),) = _issues(report, "truncated.json")
    assert line == 3 and "invalid JSON" in reason


def test_zotero_sqlite_copy(lib, tmp_path):
    zdir = tmp_path / "Zotero"
    zdir.mkdir()
    conn = sqlite3.connect(zdir / "zotero.sqlite")
    conn.executescript((FIX / "zotero.sql").read_text())
    conn.commit()
    conn.execute("BEGIN EXCLUSIVE")  # Zotero holds a lock while it runs: we read a copy
    try:
        report = import_paths(lib, [zdir / "zotero.sqlite"])
    finally:
        conn.rollback()
        conn.close()
    assert (
        report.added == 2 and report.skipped == 1
    )  # note, attachment and trash excluded; untitled skipped
    ltr = lib.get_by_doi("10.1561/1500000016")
    assert (
        ltr.keywords == ["learning to rank", "survey"]
        and ltr.year == 2009
        and ltr.extra["pages"] == "225-331"
    )
    cit = lib.get_by_citekey("farber2020citation")
    assert cit.authors == ["Färber, Michael", "Jatowt, Adam"] and cit.arxiv_id == "2002.06961"
    assert cit.pdf_path == str(zdir / "storage" / "PDFKEY01" / "farber2020.pdf")
    assert json.loads(cit.original_text)["key"] == "EFGH5678"


def test_folder_import_is_recursive_and_dedups(lib, tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "one.bib").write_text((FIX / "good.bib").read_text())
    (tmp_path / "a" / "dup.bib").write_text(
        "@article{other, title={Query expansion with word embeddings}, author={Koci, Ondrej}, year=2018,"
        " abstract={A longer record of the same paper.}}"
    )
    (tmp_path / "a" / "notes.txt").write_text("ignored")
    (tmp_path / "a" / "package.json").write_text('{"name": "not a bibliography"}')
    report = import_paths(lib, [tmp_path / "a"])
    assert (report.files, report.added, report.merged) == (2, 5, 1)
    assert (
        lib.get_by_doi("10.1145/3000000.3000001").abstract == "A longer record of the same paper."
    )


def test_pdf_dispatch_reports_clear_error_when_unavailable(lib, tmp_path, monkeypatch):
    pdf = tmp_path / "paper.pdf"
    pdf.write_bytes(b"%PDF-1.4\n%%EOF\n")
    monkeypatch.setitem(sys.modules, "assistant.library.importers.pdf", None)  # as if not installed
    report = import_paths(lib, [pdf])
    assert [i.reason.startswith("PDF import is not available") for i in report.issues] == [True]


def test_progress_and_cancel_roll_back(lib, tmp_path):
    big = tmp_path / "big.bib"
    big.write_text(
        "".join(
            f"@article{{k{i}, title={{Synthetic paper number {i}}}, author={{Auth{i}, A.}},"
            f" year=2001}}\n"
            for i in range(4500)
        )
    )
    seen = []
    with pytest.raises(Cancelled, match="nothing was imported"):
        import_paths(
            lib, [FIX / "good.bib", big], progress=seen.append, cancelled=lambda: len(seen) > 3
        )
    assert len(seen) == 4 and lib.count() == 0  # stopped at once, nothing half-written
    full = []
    report = import_paths(lib, [big], progress=full.append)
    assert report.added == 4500 and full[-1].fraction == 1.0 and full[-1].stage == "import"
    assert "(1/1 files, 4500 records" in full[-1].message and full[-1].message.endswith("ETA 0:00)")
    assert any(" 2000 records" in p.message for p in full)  # inside a file, every 2000 records


_KILL_SCRIPT = """
import sys, time
from assistant.library.store import Library
from assistant.errors import Cancelled
from assistant.library.importers import import_paths
lib = Library(sys.argv[1])
def progress(p):
    print("records", p.records, flush=True)
    if p.records >= 4000:
        time.sleep(1)  # leave the parent time to kill us mid-transaction even on a loaded machine
import_paths(lib, [sys.argv[2]], progress=progress)
print("finished", flush=True)
"""


def test_kill_9_mid_import_leaves_previous_state(tmp_path):
    db = tmp_path / "lib.sqlite"
    with Library(db) as lib:
        import_paths(lib, [FIX / "good.bib"])
        before = sorted((p.id, p.citekey, p.updated_at) for p in lib.iter_papers())
    big = tmp_path / "big.bib"
    big.write_text(
        "".join(
            f"@inproceedings{{x{i}, title={{Killed import paper {i}}}, author={{Kill, K.}},"
            f" year=1999, abstract={{{'word ' * 60}}}}}\n"
            for i in range(12000)
        )
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILL_SCRIPT, str(db), str(big)], stdout=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 300
    for line in proc.stdout:
        if line.startswith("records") and int(line.split()[1]) >= 4000:
            break
        assert time.monotonic() < deadline and not line.startswith("finished")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with Library(db) as lib:
        assert lib.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert sorted((p.id, p.citekey, p.updated_at) for p in lib.iter_papers()) == before
        assert lib.search("killed") == []
        triggers = {
            r[0] for r in lib.conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        }
        assert len(triggers) == 3  # bulk FTS mode dropped them inside the rolled-back transaction


def test_cli_import_stats_search_export(tmp_path):
    runner = CliRunner()
    db = str(tmp_path / "cli.sqlite")
    result = runner.invoke(
        main,
        [
            "library",
            "import",
            str(FIX / "good.bib"),
            str(FIX / "malformed.bib"),
            "--db",
            db,
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["added"] == 8 and summary["issues"] == 2
    assert "malformed.bib:8: error: malformed entry" in result.stderr
    stats = json.loads(runner.invoke(main, ["--db", db, "library", "stats", "--json"]).stdout)
    assert (
        stats["papers"] == 8
        and stats["by_entry_type"]["article"] == 3
        and stats["schema_version"] == SCHEMA_VERSION
    )
    assert stats["with_doi"] == 3 and stats["db_size_bytes"] > 0 and stats["citations"] == 0
    result = runner.invoke(main, ["library", "search", "dense", "retrieval", "--db", db])
    assert result.stdout.startswith("mueller2019dense")
    out = tmp_path / "sel.bib"
    result = runner.invoke(
        main,
        [
            "library",
            "export",
            "--keys",
            "mueller2019dense,first2019good",
            "-o",
            str(out),
            "--db",
            db,
        ],
    )
    assert result.exit_code == 0 and out.read_text().count("@") == 2
    typo = runner.invoke(
        main,
        [
            "library",
            "export",
            "--keys",
            "mueller2019dense,mueler2019dense",
            "-o",
            str(out),
            "--db",
            db,
        ],
    )
    assert typo.exit_code == 1 and "no paper with citekey 'mueler2019dense'" in typo.stderr
    assert (
        "nothing written" in typo.stderr and out.read_text().count("@") == 2
    )  # the earlier file is intact
    typo = runner.invoke(main, ["library", "remove", "first2019good", "frist2019good", "--db", db])
    assert (
        typo.exit_code == 1
        and "no paper 'frist2019good'" in typo.stderr
        and "nothing removed" in typo.stderr
    )
    assert runner.invoke(main, ["library", "remove", "first2019good", "--db", db]).exit_code == 0
    assert (
        json.loads(runner.invoke(main, ["library", "stats", "--json", "--db", db]).stdout)["papers"]
        == 7
    )
    bad = runner.invoke(main, ["library", "import", str(FIX / "empty.bib"), "--db", db])
    assert bad.exit_code == 1 and "empty.bib: error: empty file" in bad.stderr


def test_pdf_dispatch_to_documents_importer(lib, tmp_path, acm_dev_dir):
    pytest.importorskip("assistant.library.importers.pdf")
    bad = tmp_path / "broken.pdf"
    bad.write_bytes(b"%PDF-1.4\n%%EOF\n")
    pdf = sorted(acm_dev_dir.glob("*/*.pdf"))[0]
    report = import_paths(lib, [bad, pdf])
    errors = [i for i in report.issues if i.severity == "error"]
    assert [(Path(i.file).name, i.reason.startswith("PDF import failed")) for i in errors] == [
        ("broken.pdf", True)
    ]
    assert report.added == 1 and lib.count() == 1
    paper = next(lib.iter_papers())
    assert paper.pdf_path == str(pdf.resolve()) and len(paper.title) > 10


def _fts_ok(lib) -> bool:
    # rank=1 makes FTS5 compare the index with the external content table
    lib.conn.execute("INSERT INTO papers_fts(papers_fts, rank) VALUES ('integrity-check', 1)")
    return True


def test_bulk_fts_stays_consistent_with_merges_and_triggers(lib, tmp_path):
    import_paths(lib, [FIX / "good.bib"])
    old_id = lib.get_by_doi("10.1145/3000000.3000001").id
    batch = tmp_path / "batch.bib"
    batch.write_text(
        "@article{a1, title={Zebra Crossing Detection}, author={New, Ned}, year=2020}\n"
        "@article{a2, title={Zebra crossing detection}, author={New, N.}, year=2020, abstract={Giraffe abstract.}}\n"
        "@article{a3, title={Query expansion with word embeddings}, author={Koci, O.}, year=2018,"
        " doi={10.1145/3000000.3000001}, abstract={Okapi mentions here.}}\n"
    )
    report = import_paths(lib, [batch])
    assert (report.added, report.merged) == (1, 2)
    assert [p.title for p in lib.search("giraffe")] == [
        "Zebra Crossing Detection"
    ]  # merged into a new row
    assert [p.id for p in lib.search("okapi")] == [old_id]  # merged into an existing row
    assert _fts_ok(lib)
    # the per-row triggers are back after the import
    names = {
        r[0] for r in lib.conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
    }
    assert names == {"papers_ai", "papers_ad", "papers_au"}
    assert lib.remove(old_id) and lib.search("okapi") == [] and _fts_ok(lib)


def test_bundled_sample_library_and_draft(lib):
    import re

    from assistant.config import RESOURCES_DIR

    bib, draft = RESOURCES_DIR / "sample" / "library.bib", RESOURCES_DIR / "sample" / "draft.tex"
    assert bib.stat().st_size < 400_000
    report = import_paths(lib, [bib])
    assert report.issues == [] and 150 <= report.added <= 300
    stats = lib.stats()
    assert stats["with_abstract"] == stats["papers"] and stats["with_doi"] == stats["papers"]
    cited = re.findall(r"\\cite\{([^}]+)\}", draft.read_text())
    assert cited and all(lib.get_by_citekey(k) for group in cited for k in group.split(","))
    assert lib.search("position bias clicks", limit=3)


def test_a_record_that_cannot_be_stored_is_reported_and_skipped(lib, tmp_path):
    from assistant.library.importers.bibtex import parse_bibtex_file

    bib = tmp_path / "x.bib"
    bib.write_text(
        "@article{a, title={First Fine Paper}, year=2001}\n@article{b, title={Second Odd Paper}, year=2002}\n"
    )
    parsed = parse_bibtex_file(bib)
    parsed.records[1].paper.extra = {"bad": object()}  # not JSON-serialisable
    import assistant.library.importers as importers

    report = importers.ImportReport()
    with lib.transaction():
        importers._store(lib, parsed, report, {"records": 0}, lambda _: None)
    assert report.added == 1 and report.skipped == 1
    assert report.issues[0].line == 2 and "record not stored" in report.issues[0].reason
    assert [p.title for p in lib.iter_papers()] == ["First Fine Paper"]
