"""Multi-record operations are one transaction, and auto-exports stay in step with the library
(once per operation, serialised, caught up after a kill), refusing pipes and devices at once."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from assistant.cli import main
from assistant.library import autoexport, editing
from assistant.library.importers import import_paths
from assistant.library.manager import LibraryEditError, LibraryManager
from assistant.library.store import Library

FIX = Path(__file__).parent / "fixtures" / "library"


@pytest.fixture
def db(tmp_path) -> Path:
    path = tmp_path / "lib.sqlite"
    with Library(path) as lib:
        import_paths(lib, [FIX / "good.bib", FIX / "acm_duplicates.bib", FIX / "curation.bib"])
    return path


def _keys(lib) -> list[str]:
    return sorted(p.citekey for p in lib.iter_papers())


def test_remove_of_several_keys_is_all_or_nothing(db, monkeypatch):
    with Library(db) as lib:
        keys = _keys(lib)[:5]
    real, calls = editing._store, []

    def failing_store(lib, old, new, action):
        calls.append(old.id)
        if len(calls) == 3:
            raise sqlite3.OperationalError("disk I/O error")
        return real(lib, old, new, action)

    monkeypatch.setattr(editing, "_store", failing_store)
    result = CliRunner().invoke(main, ["library", "remove", *keys, "--db", str(db)])
    assert result.exit_code != 0
    with Library(db) as lib:
        assert lib.trashed_ids() == []  # not 2 of 5


def test_auto_exports_render_only_the_changed_entries(db, tmp_path, monkeypatch):
    from assistant.library import formats

    with Library(db) as lib:
        mgr = LibraryManager(lib)
        for name, fmt in (("a.bib", "bibtex"), ("b.ris", "ris"), ("c.json", "csl-json")):
            mgr.add_auto_export(tmp_path / name, fmt=fmt)
        renders = []
        real = formats.paper_to_ris
        monkeypatch.setattr(formats, "paper_to_ris", lambda p: renders.append(p.id) or real(p))
        keys = _keys(lib)[:6]
        result = CliRunner().invoke(main, ["library", "remove", *keys, "--db", str(db)])
        assert result.exit_code == 0, result.output
        assert renders == []  # the removed entries are dropped, no other entry is rendered
        paper = lib.get_by_citekey(_keys(lib)[0])
        mgr.edit(paper.id, {"note": "re-rendered"})
        assert renders == [paper.id]
        assert autoexport.out_of_step(lib) == []
        for e in mgr.auto_exports():
            assert Path(e.path).read_text() == autoexport.export_text(lib, None, e.format)
        assert not any(f"{{{k}," in (tmp_path / "a.bib").read_text() for k in keys)
        assert "re-rendered" in (tmp_path / "c.json").read_text()
        (tmp_path / "a.bib").write_text("% edited by hand\n")  # not spliced: written whole
        mgr.edit(paper.id, {"note": "again"})
        assert (tmp_path / "a.bib").read_text() == autoexport.export_text(lib, None, "bibtex")


def test_a_kill_after_the_commit_is_caught_up_on_the_next_open(db, tmp_path, monkeypatch):
    out = tmp_path / "refs.bib"
    with Library(db) as lib:
        LibraryManager(lib).add_auto_export(out)
        paper = lib.get_by_citekey("smith2020axioms")
        with monkeypatch.context() as m:  # (undo only this patch: the fixtures' HOME stays)
            m.setattr(Library, "_after_change", lambda self: None)  # "killed" here
            editing.edit_paper(lib, paper.id, {"year": "2011"})
        assert "year = {2020}" in out.read_text()
        assert autoexport.out_of_step(lib) == [str(out.resolve())]
    with Library(db) as lib:  # recovery: the next open brings the file in step
        assert autoexport.out_of_step(lib) == []
        assert out.read_text() == autoexport.export_text(lib, None, "bibtex")
        assert "year = {2011}" in out.read_text()


@pytest.mark.timeout(20)
def test_auto_export_onto_a_fifo_or_device_is_refused_at_once(db, tmp_path):
    fifo = tmp_path / "pipe.bib"
    os.mkfifo(fifo)
    with Library(db) as lib:
        mgr = LibraryManager(lib)
        for target in (fifo, Path("/dev/zero")):
            with pytest.raises(LibraryEditError, match="not a regular file"):
                mgr.add_auto_export(target)
        # a FIFO registered behind the program's back: every change still goes through
        with lib.transaction():
            lib.conn.execute(
                "INSERT INTO auto_exports (path, format) VALUES (?, 'bibtex')", (str(fifo),)
            )
            lib.conn.execute(
                "INSERT INTO auto_exports (path, format) VALUES (?, 'docx')",
                (str(tmp_path / "x.docx"),),
            )
        paper = lib.get_by_citekey("smith2020axioms")
        assert mgr.edit(paper.id, {"year": "2012"}).year == 2012
        errors = lib.auto_export_errors
        assert len(errors) == 2 and "not a regular file" in errors[0] + errors[1]
        assert any("unknown format 'docx'" in e for e in errors)


def test_cli_remove_reports_one_line_per_failed_export(db, tmp_path):
    runner = CliRunner()
    bad = tmp_path / "gone" / "x.bib"
    with Library(db) as lib:
        with lib.transaction():
            lib.conn.execute(
                "INSERT INTO auto_exports (path, format) VALUES (?, 'bibtex')", (str(bad),)
            )
    result = runner.invoke(main, ["library", "remove", "smith2020axioms", "--db", str(db)])
    assert result.exit_code == 0 and "Traceback" not in result.output
    assert "warning: auto-export failed:" in result.stderr
    shown = runner.invoke(main, ["library", "trash", "--db", str(db)])
    assert "smith2020axioms" in shown.stdout


def test_an_unknown_export_format_is_one_line(db, tmp_path):
    with Library(db) as lib:
        mgr = LibraryManager(lib)
        with pytest.raises(LibraryEditError, match="unknown export format 'docx'"):
            mgr.export(tmp_path / "out.docx", fmt="docx")
        with pytest.raises(LibraryEditError, match="unknown format 'docx'"):
            mgr.add_auto_export(tmp_path / "auto.docx", fmt="docx")
        assert mgr.auto_exports() == [] and not (tmp_path / "out.docx").exists()
