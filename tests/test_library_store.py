"""Library store: schema, dedup/merge, stable citekeys, search, citations, removal, export round trip."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import sqlite_utils

from assistant.library.export import export_bibtex, paper_to_bibtex
from assistant.library.models import Citation, Paper
from assistant.library.schema import SCHEMA_VERSION, SchemaTooNewError
from assistant.library.store import Library


@pytest.fixture
def lib(tmp_path):
    library = Library(tmp_path / "lib.sqlite")
    yield library
    library.close()


def _paper(title="Dense Retrieval for Citation Recommendation", **kw) -> Paper:
    kw.setdefault("authors", ["Müller, Jörg", "Smith, Alice"])
    kw.setdefault("year", 2020)
    return Paper(title=title, **kw)


def test_open_creates_schema_wal_and_version(tmp_path):
    path = tmp_path / "sub" / "lib.sqlite"
    with Library(path) as lib:
        assert lib.schema_version == SCHEMA_VERSION
        assert lib.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert {"papers", "citations", "paper_records", "papers_fts"} <= set(
            sqlite_utils.Database(lib.conn).table_names()
        )
    with Library(path) as again:  # reopening does not re-run migrations
        assert again.count() == 0


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "lib.sqlite"
    Library(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(SchemaTooNewError):
        Library(path)


def test_a_file_that_is_not_a_library_is_refused_untouched(tmp_path):
    from assistant.library.schema import LibraryOpenError

    text = tmp_path / "notes.txt"
    text.write_text("my notes\n")
    with pytest.raises(LibraryOpenError, match="notes.txt is not a Cite-Assist library"):
        Library(text)
    assert text.read_text() == "my notes\n"
    zotero = (
        tmp_path / "zotero.sqlite"
    )  # another program's database: no tables added, no WAL switch
    conn = sqlite3.connect(zotero)
    conn.executescript((Path(__file__).parent / "fixtures" / "library" / "zotero.sql").read_text())
    conn.commit()
    conn.close()
    before = zotero.read_bytes()
    with pytest.raises(LibraryOpenError, match="another program.*library import zotero.sqlite"):
        Library(zotero)
    assert zotero.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == [
        "notes.txt",
        "zotero.sqlite",
    ]
    with pytest.raises(LibraryOpenError, match="folder"):
        Library(tmp_path)
    empty = tmp_path / "new.sqlite"
    empty.write_bytes(b"")
    Library(empty).close()  # an empty file becomes a new library


def test_cli_names_the_file_instead_of_a_traceback(tmp_path):
    from click.testing import CliRunner

    from assistant.cli import main

    (tmp_path / "notes.txt").write_text("my notes\n")
    runner = CliRunner()
    res = runner.invoke(main, ["--db", str(tmp_path / "notes.txt"), "library", "stats"])
    assert res.exit_code == 1 and "notes.txt is not a Cite-Assist library" in res.stderr
    res = runner.invoke(
        main,
        [
            "--db",
            str(tmp_path / "lib.sqlite"),
            "library",
            "export",
            "-o",
            str(tmp_path / "missing" / "out.bib"),
        ],
    )
    assert res.exit_code == 1 and "missing/out.bib: No such file or directory" in res.stderr
    assert "Traceback" not in res.output


def test_add_get_and_citekey(lib):
    out = lib.add_paper(
        _paper(doi="https://doi.org/10.1145/ABC.123", original_text="@article{x, title={...}}")
    )
    assert out.status == "added" and out.citekey == "muller2020dense"
    paper = lib.get(out.id)
    assert paper.doi == "10.1145/abc.123"
    assert paper.authors == ["Müller, Jörg", "Smith, Alice"]
    assert paper.original_text.startswith("@article")
    assert lib.get_by_doi("doi:10.1145/abc.123").id == out.id
    assert lib.get_by_citekey("muller2020dense").id == out.id
    assert lib.get_many([out.id, 999]) == [paper]


def test_citekey_clashes_get_suffixes_and_never_change(lib):
    a = lib.add_paper(_paper(doi="10.1/a"))
    b = lib.add_paper(_paper(title="Dense Retrieval Revisited", doi="10.1/b"))
    c = lib.add_paper(_paper(title="Dense Passage Retrieval", doi="10.1/c"))
    assert [a.citekey, b.citekey, c.citekey] == [
        "muller2020dense",
        "muller2020densea",
        "muller2020denseb",
    ]
    # a richer duplicate of b merges into it: its key stays
    merged = lib.add_paper(
        _paper(title="Dense Retrieval Revisited", doi="10.1/B", abstract="Longer abstract.")
    )
    assert merged.status == "merged" and merged.citekey == "muller2020densea"
    assert lib.get(b.id).abstract == "Longer abstract."


def test_user_citekey_is_kept_but_doi_keys_are_replaced(lib):
    assert (
        lib.add_paper(_paper(citekey="mueller:dense20", doi="10.1/a")).citekey == "mueller:dense20"
    )
    assert (
        lib.add_paper(_paper(title="Other", citekey="10.1145/123.456", doi="10.1/b")).citekey
        == "muller2020other"
    )
    # a user key already taken by another paper is not reused
    assert (
        lib.add_paper(_paper(title="Third", citekey="mueller:dense20", doi="10.1/c")).citekey
        == "muller2020third"
    )


def test_dedup_by_title_year_author_merges_richer_fields(lib):
    first = lib.add_paper(
        _paper(title="A Study of BM25!", abstract="", keywords=["bm25"], original_text="rec 1")
    )
    second = lib.add_paper(
        _paper(
            title="a study of  BM25",
            doi="10.5/x",
            abstract="An abstract.",
            keywords=["BM25", "ranking"],
            authors=["Muller, J.", "Smith, A.", "Lee, B."],
            original_text="rec 2",
        )
    )
    assert second.status == "merged" and second.id == first.id
    paper = lib.get(first.id)
    assert paper.doi == "10.5/x" and paper.abstract == "An abstract."
    assert paper.keywords == ["bm25", "ranking"]
    assert len(paper.authors) == 3
    assert [r["text"] for r in lib.records(first.id)] == [
        "rec 1",
        "rec 2",
    ]  # original texts never dropped
    assert lib.count() == 1


def test_merge_takes_entry_type_of_the_record_with_a_doi(lib):
    first = lib.add_paper(_paper(title="DataInk: Direct and Creative Drawing", entry_type="inbook"))
    lib.add_paper(
        _paper(
            title="DataInk: Direct and Creative Drawing", entry_type="inproceedings", doi="10.1/d"
        )
    )
    assert lib.get(first.id).entry_type == "inproceedings" and lib.get(first.id).doi == "10.1/d"


def test_different_dois_same_title_are_not_merged(lib):
    lib.add_paper(_paper(title="Session details: Keynote Address", doi="10.1/one"))
    out = lib.add_paper(_paper(title="Session details: Keynote Address", doi="10.1/two"))
    assert out.status == "added" and lib.count() == 2


def test_same_record_twice_is_unchanged_and_keeps_timestamps(lib):
    p = _paper(doi="10.1/a", original_text="@article{k, title={Dense}}")
    first = lib.add_paper(p)
    before = lib.get(first.id)
    again = lib.add_paper(p)
    assert again.status == "unchanged" and again.id == first.id
    assert lib.get(first.id).updated_at == before.updated_at
    assert lib.count() == 1 and len(lib.records(first.id)) == 1


def test_paper_versions_change_only_with_indexed_text(lib):
    out = lib.add_paper(_paper(doi="10.1/a"))
    v1 = lib.paper_versions()[out.id]
    lib.add_paper(_paper(doi="10.1/a", extra={"pages": "1-2"}))
    assert lib.paper_versions()[out.id] == v1
    lib.add_paper(_paper(doi="10.1/a", abstract="Now with an abstract."))
    assert lib.paper_versions()[out.id] != v1


def test_fts_search(lib):
    lib.add_paper(
        _paper(
            title="Query Expansion with Word Embeddings",
            doi="10.1/a",
            keywords=["pseudo relevance"],
        )
    )
    lib.add_paper(
        _paper(title="Neural Ranking Models", doi="10.1/b", abstract="We study query likelihood.")
    )
    lib.add_paper(_paper(title="Graph Databases", doi="10.1/c"))
    assert [p.doi for p in lib.search("query expansion")] == ["10.1/a"]
    assert {p.doi for p in lib.search("query")} == {"10.1/a", "10.1/b"}
    assert [p.doi for p in lib.search("pseudo relevance")] == ["10.1/a"]  # keywords indexed
    assert [p.doi for p in lib.search("graph zebra")] == ["10.1/c"]  # falls back to OR
    # invalid FTS syntax falls back to plain words instead of raising
    assert {p.doi for p in lib.search('"unbalanced query*')} == {"10.1/a", "10.1/b"}
    assert lib.search("!!!") == []


def test_citations_and_remove(lib):
    a = lib.add_paper(_paper(title="Citing Paper", doi="10.1/a")).id
    b = lib.add_paper(_paper(title="Cited Paper", doi="10.1/b")).id
    cid = lib.add_citation(Citation(a, b, context="as shown by [1]", section="Introduction"))
    assert [c.cited_id for c in lib.citations_from(a)] == [b]
    assert [c.citing_id for c in lib.citations_to(b)] == [a]
    lib.set_citation_intent(cid, "background", 0.9)
    assert (
        lib.citations_to(b)[0].intent == "background"
        and lib.citations_to(b)[0].intent_confidence == 0.9
    )
    assert lib.remove(b) is True
    assert lib.get(b) is None and lib.citations_from(a) == [] and lib.count() == 1
    assert lib.search("cited") == []  # FTS row removed too
    assert lib.remove(b) is False


def test_transaction_rolls_back_everything(lib):
    lib.add_paper(_paper(doi="10.1/a"))
    with pytest.raises(RuntimeError), lib.transaction():
        lib.add_paper(_paper(title="Second", doi="10.1/b"))
        lib.add_paper(_paper(title="Third", doi="10.1/c"))
        raise RuntimeError("boom")
    assert lib.count() == 1
    assert lib.search("second") == []


def test_iter_papers_batches(lib):
    with lib.transaction():
        for i in range(25):
            lib.add_paper(_paper(title=f"Paper number {i} on ranking", doi=f"10.1/{i}"))
    assert len(list(lib.iter_papers(batch_size=7))) == 25


def test_export_round_trip_keeps_records_and_keys(lib, tmp_path):
    from assistant.library.importers import import_paths

    lib.add_paper(
        _paper(
            title="Costs of $3 & 50% {braces} a_b",
            doi="10.1/x_y",
            abstract="Uses α and #tags.",
            keywords=["a", "b"],
            extra={"pages": "1–5", "month": "7"},
            url="https://doi.org/10.1/x_y",
        )
    )
    lib.add_paper(Paper(title="No Authors Here", entry_type="misc", arxiv_id="2101.00001"))
    out = tmp_path / "out.bib"
    assert export_bibtex(lib, out) == (2, [])
    with Library(tmp_path / "copy.sqlite") as copy:
        report = import_paths(copy, [out])
        assert report.added == 2 and not report.issues
        fields = (
            "citekey",
            "entry_type",
            "doi",
            "arxiv_id",
            "title",
            "abstract",
            "authors",
            "year",
            "venue",
            "keywords",
            "url",
            "extra",
        )
        before = {p.citekey: p for p in lib.iter_papers()}
        after = {p.citekey: p for p in copy.iter_papers()}
        assert before.keys() == after.keys()
        for key, paper in before.items():
            assert [getattr(paper, f) for f in fields] == [getattr(after[key], f) for f in fields]
    text = paper_to_bibtex(lib.get_by_citekey("muller2020costs"))
    assert (
        "month = jul" in text
        and r"\$3 \& 50\% \{braces\} a\_b" in text
        and "doi = {10.1/x_y}" in text
    )


def test_export_selection_reports_missing(lib, tmp_path):
    lib.add_paper(_paper(doi="10.1/a"))
    out = tmp_path / "sel.bib"
    out.write_text("% the user's own file\n")
    # a typo in one key must not replace an existing file with a partial selection
    assert export_bibtex(lib, out, citekeys=["muller2020dense", "nope"]) == (0, ["nope"])
    assert out.read_text() == "% the user's own file\n"
    written, missing = export_bibtex(
        lib, out, citekeys=["muller2020dense", "nope"], allow_missing=True
    )
    assert written == 1 and missing == ["nope"]
    assert out.read_text().startswith("@article{muller2020dense,")


def test_forward_migration_upgrades_existing_file(tmp_path, monkeypatch):
    from assistant.library import schema

    path = tmp_path / "old.sqlite"
    with Library(path) as lib:
        pid = lib.add_paper(_paper(doi="10.1/a")).id
    monkeypatch.setattr(
        schema, "MIGRATIONS", [*schema.MIGRATIONS, "ALTER TABLE papers ADD COLUMN note TEXT;"]
    )
    monkeypatch.setattr(schema, "SCHEMA_VERSION", len(schema.MIGRATIONS))
    monkeypatch.setattr("assistant.library.store.migrate", schema.migrate)
    with Library(path) as lib:
        assert lib.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
        assert (
            "note" in sqlite_utils.Database(lib.conn)["papers"].columns_dict
            and lib.get(pid).doi == "10.1/a"
        )
