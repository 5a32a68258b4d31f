"""Issue 23, data loss (items 1-3): outputs never replace what they must not, and good records
in odd files are kept (each test is named after the defect it pins down)."""

from __future__ import annotations

import json
import os
import sqlite3
import stat

import pytest
from click.testing import CliRunner

from assistant.cli import main
from assistant.errors import AssistantError
from assistant.library.export import export_bibtex
from assistant.library.importers import import_paths
from assistant.library.importers.bibtex import parse_bibtex_text
from assistant.library.importers.csljson import parse_csljson_text
from assistant.library.importers.ris import parse_ris_text
from assistant.library.models import Paper
from assistant.library.store import Library
from assistant.textfile import decode_text, write_atomic

BIB = "@article{smith20, title={Dense retrieval}, author={Smith, J}, year={2020}}\n"


@pytest.fixture
def lib(tmp_path):
    library = Library(tmp_path / "lib.sqlite")
    library.add_paper(Paper(title="Dense retrieval", authors=["Smith, J"], year=2020))
    yield library
    library.close()


def _titles(path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [r[0] for r in conn.execute("SELECT title FROM papers ORDER BY id")]
    finally:
        conn.close()


# -- 1. `library export -o PATH` ---------------------------------------------------------------


def test_issue23_1_export_refuses_the_open_library(lib, tmp_path):
    before = (tmp_path / "lib.sqlite").read_bytes()[:16]
    with pytest.raises(AssistantError, match="open library"):
        export_bibtex(lib, tmp_path / "lib.sqlite")
    assert (tmp_path / "lib.sqlite").read_bytes()[:16] == before == b"SQLite format 3\x00"
    assert _titles(tmp_path / "lib.sqlite") == ["Dense retrieval"]


def test_issue23_1_export_cli_refuses_the_open_library_with_one_line(lib, tmp_path):
    db = str(tmp_path / "lib.sqlite")
    res = CliRunner().invoke(main, ["--db", db, "library", "export", "-o", db])
    assert res.exit_code == 1
    assert res.stderr.startswith("Error: ") and "open library" in res.stderr
    assert "Traceback" not in res.output
    assert _titles(db) == ["Dense retrieval"]


def test_issue23_1_export_refuses_a_fifo_and_another_sqlite_file(lib, tmp_path):
    fifo = tmp_path / "out.bib"
    os.mkfifo(fifo)
    with pytest.raises(AssistantError, match="named pipe"):
        export_bibtex(lib, fifo)  # would block (or replace the node) before the fix
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    other = tmp_path / "other.sqlite"
    Library(other).conn.close()
    with pytest.raises(AssistantError, match="SQLite database"):
        export_bibtex(lib, other)
    assert other.read_bytes()[:16] == b"SQLite format 3\x00"


def test_issue23_1_export_never_follows_a_planted_part_symlink(lib, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (tmp_path / "out.bib.part").symlink_to(victim)
    export_bibtex(lib, tmp_path / "out.bib")
    assert victim.read_text() == "precious\n"
    assert "@" in (tmp_path / "out.bib").read_text()


def test_issue23_1_export_keeps_permissions_and_refuses_read_only(lib, tmp_path):
    out = tmp_path / "private.bib"
    out.write_text("old\n")
    out.chmod(0o600)
    export_bibtex(lib, out)
    assert stat.S_IMODE(out.stat().st_mode) == 0o600 and "Dense retrieval" in out.read_text()
    ro = tmp_path / "ro.bib"
    ro.write_text("keep me\n")
    ro.chmod(0o444)
    with pytest.raises(AssistantError, match="read-only"):
        export_bibtex(lib, ro)
    assert ro.read_text() == "keep me\n"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_issue23_1_write_atomic_never_writes_through_a_symlinked_target(tmp_path):
    # issue 29 replaced "written through, the link stays": a link is never written through
    real = tmp_path / "real.bib"
    real.write_text("old")
    link = tmp_path / "link.bib"
    link.symlink_to(real)
    with pytest.raises(AssistantError, match="symbolic link"):
        write_atomic(link, b"new")
    assert link.is_symlink() and real.read_text() == "old"


# -- 2. BibTeX `#` concatenation ----------------------------------------------------------------


def test_issue23_2_bibtex_hash_concatenation_is_resolved():
    text = (
        '@string{proc = "Proceedings of"}\n@string{acm = "ACM"}\n'
        '@inproceedings{a, title = "Concatenated" # " Title", booktitle = proc # " " # acm,'
        ' month = jan # "~1", year = 2020}\n'
        "@article{b, title = {C# in Depth}, journal = proc # acm}\n"
    )
    result = parse_bibtex_text(text, "x.bib")
    a, b = (r.paper for r in result.records)
    assert a.title == "Concatenated Title" and a.venue == "Proceedings of ACM"
    assert a.extra["month"] == "1"
    assert b.title == "C# in Depth" and b.venue == "Proceedings ofACM"


# -- 3. good records dropped or mangled ----------------------------------------------------------


def test_issue23_3_ris_record_without_er_is_kept():
    text = "TY  - JOUR\nTI  - First record\nAU  - Smith, J\nPY  - 2020\nTY  - JOUR\nTI  - Second\nER  - \n"
    result = parse_ris_text(text, "x.ris")
    assert [(r.paper.title, r.paper.year) for r in result.records] == [
        ("First record", 2020),
        ("Second", None),
    ]
    assert any("imported anyway" in i.reason for i in result.issues)


def test_issue23_3_csljson_odd_fields_keep_the_item_and_name_the_field():
    items = [
        {"id": "a", "title": "Null author", "author": None},
        {"id": "b", "title": "Int keyword", "keyword": 5, "DOI": 12345},
        {"id": "c", "title": "URL list", "URL": ["https://x.org/p", "https://y.org"]},
        {"id": "d", "title": "Number name", "author": [7, {"family": "Lee", "given": "K"}]},
        {"id": "e", "title": None},
        {"id": "f", "title": ["List", "Title"], "issued": {"date-parts": 5}},
    ]
    result = parse_csljson_text(json.dumps(items, indent=1), "x.json")
    # a CSL id is not a citekey (issue 34): the items are told apart by their order
    assert len(result.records) == 5 and all(r.paper.citekey is None for r in result.records)
    got = dict(zip("abcdf", (r.paper for r in result.records)))
    assert got["a"].title == "Null author" and got["c"].title == "URL list"
    assert got["b"].keywords == ["5"] and got["c"].url == "https://x.org/p"
    assert got["d"].authors == ["7", "Lee, K"] and got["f"].title == "List Title"
    messages = " ".join(i.reason for i in result.issues)
    assert "'URL'" in messages and "'title'" in messages
    assert "has no attribute" not in messages and "None" not in got["a"].title
    assert [i.reason for i in result.issues if i.severity == "error"] == [
        "item 'e' has no title; skipped"
    ]


def test_issue23_3_one_nul_byte_or_utf16_without_bom_is_read(tmp_path, lib):
    nul = tmp_path / "nul.bib"
    nul.write_bytes(BIB.replace("Dense", "Sparse").encode() + b"\x00\n" + BIB.encode())
    le = tmp_path / "le.bib"
    le.write_bytes(BIB.replace("Dense", "Hybrid").encode("utf-16-le"))
    assert decode_text(le.read_bytes())[1].encoding == "utf-16-le"
    report = import_paths(lib, [nul, le])
    titles = set(_titles(tmp_path / "lib.sqlite"))
    assert {"Sparse retrieval", "Hybrid retrieval", "Dense retrieval"} <= titles
    assert any("NUL" in i.reason for i in report.issues)


def test_issue23_3_unreadable_subfolder_is_reported(tmp_path, lib, monkeypatch):
    root = tmp_path / "refs"
    (root / "locked").mkdir(parents=True)
    (root / "locked" / "a.bib").write_text(BIB)
    (root / "ok.bib").write_text(BIB.replace("Dense", "Open"))
    if os.geteuid() == 0:  # root reads any folder: make the kernel refuse it the way it would
        real = os.scandir

        def scandir(path="."):
            if str(path).endswith("locked"):
                raise PermissionError(13, "Permission denied", str(path))
            return real(path)

        monkeypatch.setattr(os, "scandir", scandir)
    else:
        (root / "locked").chmod(0)
    try:
        report = import_paths(lib, [root])
    finally:
        (root / "locked").chmod(0o755)
    assert any("locked" in i.file and "folder not read" in i.reason for i in report.issues)
    assert "Open retrieval" in _titles(tmp_path / "lib.sqlite")


def test_issue23_3_duplicate_citekeys_in_one_file_are_reported():
    text = "@article{k, title={One}}\n@article{k, title={Two}}\n"
    result = parse_bibtex_text(text, "x.bib")
    assert [r.paper.title for r in result.records] == ["One", "Two"]
    [warning] = [i for i in result.issues if "used twice" in i.reason]
    assert warning.severity == "warning" and warning.line == 2


def test_issue23_also_control_characters_are_not_stored(tmp_path, lib):
    bib = tmp_path / "esc.bib"
    bib.write_text("@article{e, title={Evil \x1b[31mred\x1b[0m title\x07}, author={X, Y}}\n")
    import_paths(lib, [bib])
    [title] = [t for t in _titles(tmp_path / "lib.sqlite") if "Evil" in t]
    assert "\x1b" not in title and "\x07" not in title


def test_issue23_also_symlink_loop_is_named_as_such(tmp_path, lib):
    loop = tmp_path / "loop.bib"
    loop.symlink_to(loop)
    report = import_paths(lib, [loop])
    assert any("symbolic link loop" in i.reason for i in report.issues)


def test_issue23_also_deeply_nested_json_is_one_issue(tmp_path, lib):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    report = import_paths(lib, [deep])
    [issue] = report.issues
    assert "nested too deeply" in issue.reason and "RecursionError" not in issue.reason
    assert _titles(tmp_path / "lib.sqlite") == ["Dense retrieval"]


def test_issue23_also_bibliography_path_cannot_point_outside_the_manuscript(tmp_path):
    from assistant.documents.textops import LATEX, bib_from_manuscript
    from assistant.library.bibfile import BibFileError, append_entry

    tex = tmp_path / "paper" / "paper.tex"
    tex.parent.mkdir()
    elsewhere = tmp_path / "nowhere" / "deep" / "evil"
    assert bib_from_manuscript(f"\\bibliography{{{elsewhere}}}", tex, LATEX) is None
    assert bib_from_manuscript("\\bibliography{refs}", tex, LATEX) == tex.parent / "refs.bib"
    shared = tmp_path / "shared.bib"
    shared.write_text(BIB)
    assert bib_from_manuscript("\\bibliography{../shared}", tex, LATEX) == shared
    with pytest.raises(BibFileError, match="does not exist"):
        append_entry(elsewhere.with_suffix(".bib"), BIB)
    assert not (tmp_path / "nowhere").exists()


def test_issue23_also_bak_copy_is_whole_and_keeps_mode(tmp_path):
    from assistant.library.bibfile import append_entry

    bib = tmp_path / "refs.bib"
    bib.write_text(BIB)
    bib.chmod(0o640)
    result = append_entry(
        bib, "@article{lee19, title={Sparse retrieval}, year={2019}}\n", backup=True
    )
    assert result.backup.read_text() == BIB
    assert stat.S_IMODE(result.backup.stat().st_mode) == 0o640
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_issue23_also_missing_comma_is_named_not_no_title():
    text = "@article{m, author={Lee, K}\n title={Run-on fields}, year=2020}\n"
    result = parse_bibtex_text(text, "x.bib")
    [record] = result.records
    assert (record.paper.title, record.paper.authors, record.paper.year) == (
        "Run-on fields",
        ["Lee, K"],
        2020,
    )
    assert any("missing comma before field 'title'" in i.reason for i in result.issues)


def test_issue23_also_tmp_files_of_a_killed_write_are_cleaned(lib, tmp_path):
    old = tmp_path / ".out.bib.0badc0ffee00.tmp"
    old.write_text("half an export")
    os.utime(old, (1, 1))
    young = tmp_path / ".out.bib.123456abcdef.tmp"
    young.write_text("a concurrent writer's file")
    export_bibtex(lib, tmp_path / "out.bib")
    assert not old.exists() and young.exists()
