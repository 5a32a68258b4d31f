"""Importer and CLI defects from the outside campaign (issue 37): each test failed before."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from assistant.cli import main
from assistant.library.bibfile import append_entry
from assistant.library.importers import import_paths
from assistant.library.importers.bibtex import parse_bibtex_text
from assistant.library.importers.csljson import parse_csljson_text
from assistant.library.store import Library

FIX = Path(__file__).parent / "fixtures" / "library"


@pytest.fixture
def lib(tmp_path):
    library = Library(tmp_path / "lib.sqlite")
    yield library
    library.close()


def test_string_concatenation_keeps_the_trailing_space():
    text = (
        '@string{proc = "Proceedings of the "}\n'
        '@inproceedings{a, title={T}, booktitle = proc # "Association for X", year=2020}\n'
    )
    (rec,) = parse_bibtex_text(text, "a.bib").records
    assert rec.paper.venue == "Proceedings of the Association for X"


def test_csl_date_parts_given_as_a_string_keep_the_year():
    items = [
        {"id": "a", "title": "A", "issued": {"date-parts": "2019-05-01"}},
        {"id": "b", "title": "B", "issued": {"date-parts": [2018, 3]}},
    ]
    years = [r.paper.year for r in parse_csljson_text(json.dumps(items), "a.json").records]
    assert years == [2019, 2018]


def test_csl_items_keep_their_line_numbers():
    items = "[\n" + ",\n".join(json.dumps({"id": f"i{n}", "title": f"T{n}"}) for n in range(5))
    parsed = parse_csljson_text(items + ',\n{"id": "x"}\n]\n', "a.json")
    assert [r.line for r in parsed.records] == [2, 3, 4, 5, 6]
    assert parsed.issues[0].line == 7 and "no title" in parsed.issues[0].reason


def test_a_rekeyed_duplicate_key_keeps_its_authors_as_a_list():
    text = (
        "@article{k, title={One}, author={Smith, A. and Doe, B.}, year=2020}\n"
        '@article{k, title={Two}, author={Roe, R. and Poe, P.}, note="n", year=2021}\n'
    )
    second = parse_bibtex_text(text, "a.bib").records[1].paper
    assert second.authors == ["Roe, R.", "Poe, P."] and second.extra["note"] == "n"


def test_control_characters_are_stripped_from_people_keywords_and_notes():
    text = (
        "@article{k, title={T}, author={Sm\x1b[31mith, A. and D\x07oe, B.}, "
        "editor={Ed\x00, E.}, keywords={a\x08b, c}, note={x\x01y}, year=2020}\n"
    )
    p = parse_bibtex_text(text, "a.bib").records[0].paper
    blob = json.dumps([p.authors, p.editors, p.keywords, p.extra])
    assert not any(ch in blob for ch in ("\\u001b", "\\u0007", "\\u0000", "\\b", "\\u0001"))
    assert len(p.authors) == 2


def test_a_utf8_record_next_to_one_latin1_byte_is_decoded_right(lib, tmp_path):
    path = tmp_path / "mixed.bib"
    path.write_bytes(
        "@article{a, title={Müller's Café}, author={Müller, Jörg}, year=2020}\n".encode()
        + b"@article{b, title={Caf\xe9 Latin}, author={Doe, J.}, year=2021}\n"
    )
    report = import_paths(lib, [path])
    titles = sorted(p.title for p in lib.iter_papers())
    assert titles == ["Café Latin", "Müller's Café"]
    assert any("line(s) (2)" in i.reason for i in report.issues)


def test_a_lone_surrogate_does_not_crash_append_entry(tmp_path):
    result = append_entry(tmp_path / "refs.bib", "@article{k, title={Bad \ud800 char}}\n")
    assert result.status == "added" and "\ufffd" in (tmp_path / "refs.bib").read_text()


def test_entry_less_and_empty_files_say_so(tmp_path):
    db = str(tmp_path / "lib.sqlite")
    junk = tmp_path / "notes.bib"
    junk.write_text("just some notes, no entries at all\n" * 1000)
    empty = tmp_path / "empty.bib"
    empty.write_text("")
    runner = CliRunner()
    for path, why in ((junk, "no entries found"), (empty, "empty file")):
        result = runner.invoke(main, ["library", "import", str(path), "--db", db])
        assert result.exit_code == 1 and why in result.stderr, result.output


def test_a_non_utf8_file_name_stores_its_records(lib, tmp_path):
    name = os.fsdecode(b"caf\xe9.bib")
    path = tmp_path / name
    path.write_text("@article{a, title={A Title Here}, author={Doe, J.}, year=2020}\n")
    report = import_paths(lib, [path])
    assert report.added == 1 and lib.count() == 1
    assert "\ufffd" in next(lib.iter_papers()).source_file


def test_non_utf8_arguments_give_one_line(tmp_path):
    db = str(tmp_path / "lib.sqlite")
    runner = CliRunner()
    runner.invoke(main, ["library", "import", str(FIX / "good.bib"), "--db", db])
    bad = os.fsdecode(b"k\xff")
    for args in (
        ["show", bad],
        ["edit", "smith2020axioms", "--set", f"note={bad}"],
        ["collections", "--create", bad],
        ["auto-export", str(tmp_path / os.fsdecode(b"x\xff.bib"))],
        ["remove", bad],
    ):
        result = runner.invoke(main, ["library", *args, "--db", db])
        assert result.exit_code == 1, (args, result.output)
        assert result.exception is None or isinstance(result.exception, SystemExit), args
        assert "not valid UTF-8" in result.stderr or "no paper" in result.stderr, args


def test_malformed_rows_in_a_library_file_are_read(tmp_path):
    db = tmp_path / "lib.sqlite"
    with Library(db) as lib:
        import_paths(lib, [FIX / "good.bib"])
    conn = sqlite3.connect(db)
    conn.execute("UPDATE papers SET authors = 'not json', extra = '[1]', keywords = '{'")
    conn.commit()
    conn.close()
    runner = CliRunner()
    for args in (["show", "smith2020axioms"], ["export", "-o", "-"], ["search", "axiomatic"]):
        result = runner.invoke(main, ["library", *args, "--db", str(db)])
        assert result.exit_code == 0 and result.exception is None, (args, result.output)
