"""Curation that never loses work: duplicates with evidence that never join two DOIs, a merge
that ``revert`` undoes completely, and field-level revert that refuses conflicts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from assistant.cli import main
from assistant.library.importers import import_paths
from assistant.library.manager import LibraryEditError, LibraryManager
from assistant.library.store import Library

FIX = Path(__file__).parent / "fixtures" / "library"
CURATION = FIX / "curation.bib"


@pytest.fixture
def mgr(tmp_path):
    lib = Library(tmp_path / "lib.sqlite")
    import_paths(lib, [FIX / "good.bib", CURATION])
    yield LibraryManager(lib)
    lib.close()


def _state(mgr, paper_id: int) -> dict:
    """Everything a merge touches, for comparing a paper before a merge and after its undo."""
    p = mgr.lib.get(paper_id)
    d = mgr.details(paper_id)
    return {
        "paper": {k: v for k, v in p.__dict__.items() if k != "updated_at"},
        "records": [r["text"] for r in d.records],
        "aliases": d.aliases,
        "collections": [c.id for c in d.collections],
        "tags": d.tags,
        "history": [(h.id, h.action, h.changed_fields()) for h in d.history],
        "cites": [c.cited_id for c in mgr.lib.citations_from(paper_id)],
        "cited_by": [c.citing_id for c in mgr.lib.citations_to(paper_id)],
    }


def test_different_dois_and_numbered_parts_are_never_duplicates(mgr):
    groups = mgr.duplicates()
    assert [sorted(mgr.lib.get(i).citekey for i in g.ids) for g in groups] == [
        ["liu2009copy", "liu2009ltr"]
    ]
    (g,) = groups
    assert g.evidence and "year 2009" in g.evidence[0] and "one DOI" in g.evidence[0]
    for group in groups:
        dois = {mgr.lib.get(i).doi for i in group.ids} - {None}
        assert len(dois) <= 1


def test_revert_of_a_merge_brings_every_paper_back(mgr):
    from assistant.library.models import Citation

    kept, other = mgr.find("liu2009ltr"), mgr.find("liu2009copy")
    mueller = mgr.find("mueller2019dense")
    col = mgr.create_collection("Reading")
    mgr.add_to_collection(col, [other.id])
    mgr.add_tags(other.id, ["survey"])
    mgr.edit(other.id, {"note": "checked", "citekey": "liuCopy"})  # an alias: liu2009copy
    mgr.lib.add_citation(Citation(mueller.id, other.id, "see", ""))
    mgr.lib.add_citation(Citation(other.id, kept.id, "self", ""))
    before_kept, before_other = _state(mgr, kept.id), _state(mgr, other.id)

    merged = mgr.merge(kept.id, [other.id])
    assert mgr.lib.get(other.id) is None and merged.abstract.startswith("Learning to rank")
    assert mgr.find("liuCopy").id == mgr.find("liu2009copy").id == kept.id
    merge = mgr.history(kept.id)[0]
    assert merge.action == "merge"
    assert [h.action for h in mgr.history(kept.id)] == ["merge"]  # the other's edits left out

    back = mgr.revert(merge.id)
    assert back.id == kept.id
    after_kept, after_other = _state(mgr, kept.id), _state(mgr, other.id)
    assert after_other == before_other
    after_kept["history"] = [h for h in after_kept["history"] if h[1] not in ("merge", "unmerge")]
    assert after_kept == before_kept
    with pytest.raises(LibraryEditError, match="already undone"):
        mgr.revert(merge.id)


def test_revert_undoes_one_change_only(mgr):
    p = mgr.find("smith2020axioms")
    mgr.edit(p.id, {"year": "2017"})
    mgr.edit(p.id, {"title": "Axioms", "note": "hello"})
    year_change, title_change = sorted(h.id for h in mgr.history(p.id))
    back = mgr.revert(year_change)
    assert back.year == 2020 and back.title == "Axioms" and back.extra["note"] == "hello"
    assert mgr.revert(title_change).title == "Axiomatic Thinking for Neural Ranking"
    assert "note" not in mgr.lib.get(p.id).extra


def test_revert_refuses_a_conflict_with_a_later_change(mgr):
    p = mgr.find("smith2020axioms")
    mgr.edit(p.id, {"year": "2017"})
    mgr.edit(p.id, {"year": "2016"})
    first, second = sorted(h.id for h in mgr.history(p.id))
    with pytest.raises(LibraryEditError, match=rf"year changed again since by #{second}"):
        mgr.revert(first)
    assert mgr.lib.get(p.id).year == 2016
    assert mgr.revert(second).year == 2017


def test_revert_of_a_merged_away_papers_edit_never_touches_the_kept_paper(mgr):
    kept, other = mgr.find("liu2009ltr"), mgr.find("liu2009copy")
    mgr.edit(other.id, {"venue": "Reading list", "year": "2008"})
    edit_id = mgr.history(other.id)[0].id
    mgr.merge(kept.id, [other.id])
    before = mgr.lib.get(kept.id)
    with pytest.raises(LibraryEditError, match=f"no change #{edit_id}"):
        mgr.revert(edit_id)
    assert mgr.lib.get(kept.id) == before


@pytest.fixture
def cli(tmp_path):
    runner = CliRunner()
    db = str(tmp_path / "cli.sqlite")
    done = runner.invoke(main, ["library", "import", str(CURATION), "--db", db])
    assert done.exit_code == 0, done.output

    def run(*args, input=None):
        return runner.invoke(main, ["library", *args, "--db", db], input=input)

    return run


def test_cli_merge_needs_yes_or_a_reviewed_list(cli, tmp_path):
    listed = cli("duplicates")
    assert "evidence: " in listed.stdout and "differs: " in listed.stdout
    refused = cli("duplicates", "--merge")
    assert refused.exit_code != 0 and "--yes" in refused.output
    assert "liu2009copy" in cli("show", "liu2009copy", "--json").stdout
    groups = json.loads(cli("duplicates", "--json").stdout)
    assert [g["citekeys"] for g in groups] == [["liu2009ltr", "liu2009copy"]]
    reviewed = tmp_path / "reviewed.json"
    reviewed.write_text(json.dumps(groups))
    done = cli("duplicates", "--merge-file", str(reviewed))
    assert done.exit_code == 0 and "merged liu2009copy into liu2009ltr" in done.stdout
    assert json.loads(cli("show", "liu2009copy", "--json").stdout)["citekey"] == "liu2009ltr"
    change = json.loads(cli("show", "liu2009ltr", "--json").stdout)["history"][0]["id"]
    assert cli("revert", str(change)).exit_code == 0
    assert json.loads(cli("show", "liu2009copy", "--json").stdout)["citekey"] == "liu2009copy"
    assert cli("duplicates", "--merge", "--yes").exit_code == 0
    assert json.loads(cli("duplicates", "--json").stdout) == []
