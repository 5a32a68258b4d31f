"""The CLI mirrors the library management API: edit, show, trash, duplicates, collections,
auto-export, export formats, citekeys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from assistant.cli import main

FIX = Path(__file__).parent / "fixtures" / "library"


@pytest.fixture
def cli(tmp_path):
    runner = CliRunner()
    db = str(tmp_path / "lib.sqlite")
    result = runner.invoke(
        main,
        ["library", "import", str(FIX / "good.bib"), str(FIX / "acm_duplicates.bib"), "--db", db],
    )
    assert result.exit_code == 0, result.output

    def run(*args, input=None):
        return runner.invoke(main, ["library", *args, "--db", db], input=input)

    return run


def test_edit_show_history_revert(cli):
    bad = cli("edit", "koci2018query", "--set", "year=twenty")
    assert bad.exit_code == 1 and "Error: year 'twenty' is not a year" in bad.stderr
    ok = cli("edit", "koci2018query", "--set", "year=2017", "--set", "editor=Doe, Jane")
    assert ok.exit_code == 0 and "koci2018query: saved" in ok.stdout
    shown = json.loads(cli("show", "koci2018query", "--json").stdout)
    assert shown["year"] == 2017 and shown["editors"] == ["Doe, Jane"]
    assert shown["records"][0]["text"].startswith("@article{10.1145/3000000.3000001")
    change = shown["history"][0]["id"]
    assert "year: 2018 -> 2017" in cli("history", "koci2018query").stdout
    assert cli("revert", str(change)).exit_code == 0
    assert json.loads(cli("show", "koci2018query", "--json").stdout)["year"] == 2018
    missing = cli("show", "nokey")
    assert missing.exit_code == 1 and "no paper 'nokey'" in missing.stderr


def test_remove_goes_to_trash_and_empty_asks(cli):
    assert cli("remove", "koci2018query").exit_code == 0
    assert "koci2018query" in cli("trash").stdout
    assert cli("trash", "restore", "koci2018query").exit_code == 0
    assert "0 paper(s) in the trash" in cli("trash", "list").stderr
    cli("remove", "koci2018query")
    refused = cli("trash", "empty", input="n\n")
    assert refused.exit_code == 1 and "nothing deleted" in refused.stderr
    assert "koci2018query" in cli("trash", "list").stdout
    assert "deleted 1 paper(s) for good" in cli("trash", "empty", "--yes").stdout
    assert cli("show", "koci2018query").exit_code == 1


def test_duplicates_list_and_merge(cli):
    # the ACM copies carry different DOIs: never proposed, but a librarian may merge them by hand
    assert json.loads(cli("duplicates", "--json").stdout) == []
    keys = [p["citekey"] for p in json.loads(cli("search", "KMS Hypermedia", "--json").stdout)]
    assert len(keys) == 2
    merged = cli("duplicates", "--keep", keys[0], keys[1])
    assert merged.exit_code == 0 and f"merged 1 paper(s) into {keys[0]}" in merged.stdout
    shown = {json.loads(cli("show", k, "--json").stdout)["citekey"] for k in keys}
    assert shown == {keys[0]}  # every old key still resolves


def test_collections_export_formats_and_auto_export(cli, tmp_path):
    assert "created collection" in cli("collections", "--create", "Draft").stdout
    assert (
        "added 2 paper(s) to Draft"
        in cli("collections", "--add", "Draft", "koci2018query", "smith2020axioms").stdout
    )
    assert "Draft" in cli("collections").stdout
    out = tmp_path / "draft.json"
    assert (
        cli("export", "-o", str(out), "--format", "csl-json", "--collection", "Draft").exit_code
        == 0
    )
    assert sorted(i["id"] for i in json.loads(out.read_text())) == [
        "koci2018query",
        "smith2020axioms",
    ]
    ris = cli("export", "-o", "-", "--format", "ris", "--keys", "smith2020axioms").stdout
    assert "TY  - CONF" in ris and "SP  - 1\nEP  - 10" in ris
    bib = tmp_path / "auto.bib"
    assert cli("auto-export", str(bib), "--collection", "Draft").exit_code == 0
    assert bib.read_text().count("@") == 2
    cli("collections", "--remove", "Draft", "smith2020axioms")
    assert bib.read_text().count("@") == 1
    cli("edit", "koci2018query", "--set", "note=checked")
    assert "note = {checked}" in bib.read_text()
    assert str(bib) in cli("auto-export").stdout
    assert "stopped" in cli("auto-export", str(bib), "--remove").stdout
    unknown = cli("collections", "--show", "Nope")
    assert unknown.exit_code == 1 and "no collection 'Nope'" in unknown.stderr


def test_citekey_pattern_and_regenerate(cli):
    bad = cli("citekeys", "--pattern", "[nope]")
    assert bad.exit_code == 1 and "unknown citekey field [nope]" in bad.stderr
    cli("edit", "koci2018query", "--pin")
    out = cli("citekeys", "--pattern", "[auth:lower]_[year]", "--regenerate")
    assert "koll1978weird -> koll_1978" in out.stdout and "koci2018query ->" not in out.stdout
    assert json.loads(cli("show", "koll1978weird", "--json").stdout)["citekey"] == "koll_1978"


def test_recommend_from_unknown_collection_is_one_line_error(cli, tmp_path):
    from click.testing import CliRunner

    db = tmp_path / "lib.sqlite"
    result = CliRunner().invoke(
        main, ["recommend", "query expansion", "--collection", "Nope", "--db", str(db)]
    )
    assert result.exit_code == 1 and "Error: no collection 'Nope'" in result.stderr
