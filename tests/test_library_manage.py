"""Library management on real records: migration, edit/history/revert, trash, editors, duplicates
and merge with aliases, Zotero collections and tags, citekey patterns, exports and auto-export."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import sqlite_utils

from assistant.library import citekeys
from assistant.library.duplicates import DuplicateGroup
from assistant.library.export import paper_to_bibtex, render
from assistant.library.importers import import_paths
from assistant.library.manager import LibraryEditError, LibraryManager
from assistant.library.models import Paper
from assistant.library.schema import _V1
from assistant.library.store import Library
from assistant.library.table import PaperTable, View

FIX = Path(__file__).parent / "fixtures" / "library"
DUPS = FIX / "acm_duplicates.bib"


@pytest.fixture
def lib(tmp_path):
    library = Library(tmp_path / "lib.sqlite")
    yield library
    library.close()


@pytest.fixture
def mgr(lib):
    import_paths(lib, [FIX / "good.bib", DUPS])
    return LibraryManager(lib)


def _fields(p) -> dict:
    """What an export carries (ids, timestamps and the record text aside)."""
    keep = ("citekey", "entry_type", "title", "abstract", "authors", "editors", "year", "venue")
    out = {k: getattr(p, k) for k in keep}
    out.update(doi=p.doi, url=p.url, keywords=p.keywords, extra=p.extra)
    return out


def _reimport(tmp_path, text: str, name: str) -> dict[str, dict]:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with Library(tmp_path / f"{name}.sqlite") as again:
        report = import_paths(again, [path])
        assert not [i for i in report.issues if i.severity == "error"]
        return {p.citekey: _fields(p) for p in again.iter_papers()}


# -- schema ------------------------------------------------------------------------------------
def test_v1_library_migrates_in_place(tmp_path):
    """A library written by the previous version (schema v1) opens, keeps its papers and
    gains the new tables; search now also finds authors and citekeys."""
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(_V1)
    conn.execute(
        "INSERT INTO papers (citekey, title, abstract, authors, year, added_at, updated_at) "
        "VALUES ('koll1978weird', 'WEIRD: An Approach', 'vector space', '[\"Koll, Matthew B.\"]',"
        " 1978, 'x', 'x')"
    )
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    with Library(path) as lib:
        assert lib.schema_version == 2
        assert [p.citekey for p in lib.search("vector")] == ["koll1978weird"]
        assert [p.citekey for p in lib.search("Koll")] == ["koll1978weird"]  # authors indexed now
        lib.conn.execute("INSERT INTO papers_fts(papers_fts, rank) VALUES ('integrity-check', 1)")
        assert {"paper_history", "citekey_aliases", "collections", "auto_exports"} <= set(
            sqlite_utils.Database(lib.conn).table_names()
        )


# -- edit, history, revert, index staleness ------------------------------------------------------
def test_edit_validates_keeps_records_and_reverts(mgr):
    paper = mgr.find("koci2018query")
    versions = mgr.lib.paper_versions()
    for bad, why in (
        ({"year": "20x"}, "not a year"),
        ({"doi": "nope"}, "not a DOI"),
        ({"title": ""}, "cannot be empty"),
        ({"url": "ftp:/x y"}, "not a web address"),
        ({"citekey": "10.1145/x"}, "not a valid key"),
    ):
        with pytest.raises(LibraryEditError, match=why):
            mgr.edit(paper.id, bad)
    assert mgr.find("koci2018query") == paper  # a refused edit changes nothing
    new = mgr.edit(paper.id, {"year": "2019", "doi": "https://doi.org/10.1000/ABC", "pages": "3-9"})
    assert (new.year, new.doi, new.extra["pages"]) == (2019, "10.1000/abc", "3-9")
    assert mgr.lib.records(paper.id)[0]["text"] == paper.original_text  # the record text is kept
    # only the edited paper is stale for the index (and only when indexed text changes)
    assert mgr.lib.paper_versions() == versions
    mgr.edit(paper.id, {"abstract": "A new abstract."})
    changed = {k for k, v in mgr.lib.paper_versions().items() if versions[k] != v}
    assert changed == {paper.id}
    history = mgr.history(paper.id)
    assert [h.action for h in history] == ["edit", "edit"]
    assert set(history[1].changed_fields()) == {"year", "doi", "extra.pages"}
    back = mgr.revert(history[1].id)
    # only that change is undone: the later abstract edit stays
    assert (back.year, back.doi, back.abstract) == (paper.year, paper.doi, "A new abstract.")
    assert "pages" not in back.extra
    assert mgr.history(paper.id)[0].action == "revert"


def test_duplicate_doi_and_taken_key_are_refused(mgr):
    a, b = mgr.find("koci2018query"), mgr.lib.get_many([1])[0]
    with pytest.raises(LibraryEditError, match="already the DOI of koci2018query"):
        mgr.edit(b.id, {"doi": a.doi})
    with pytest.raises(LibraryEditError, match="already used"):
        mgr.edit(b.id, {"citekey": "koci2018query"})


def test_citekey_edit_pins_and_keeps_alias(mgr, tmp_path):
    paper = mgr.find("koci2018query")
    new = mgr.edit(paper.id, {"key": "koci18"})
    assert new.pinned and new.citekey == "koci18"
    assert mgr.lib.get_by_citekey("koci2018query").id == paper.id  # old \cite{} still resolves
    out = tmp_path / "x.bib"
    mgr.export(out, citekeys=["koci2018query"])
    assert out.read_text().startswith("@article{koci18,")


# -- trash -------------------------------------------------------------------------------------
def test_trash_restore_and_confirmed_empty(mgr):
    total = mgr.lib.count()
    paper = mgr.find("koci2018query")
    assert mgr.trash([paper.id]) == 1
    assert mgr.lib.count() == total - 1
    assert paper.id not in {p.id for p in mgr.lib.iter_papers()}
    assert paper.id not in mgr.lib.paper_versions()  # leaves the index on the next run
    assert paper.id not in [p.id for p in mgr.lib.search("query expansion")]
    assert mgr.lib.get_by_citekey("koci2018query") is None
    assert [p.id for p in mgr.trashed()] == [paper.id]
    assert mgr.restore([paper.id]) == 1 and mgr.lib.count() == total
    mgr.trash([paper.id])
    with pytest.raises(LibraryEditError, match="confirm"):
        mgr.empty_trash(confirmed=False)
    assert mgr.lib.get(paper.id) is not None  # nothing destroyed without confirmation
    assert mgr.empty_trash(confirmed=True) == 1
    assert mgr.lib.get(paper.id) is None and mgr.trashed() == []


# -- editors -----------------------------------------------------------------------------------
def test_bibtex_editors_are_not_authors(lib, tmp_path):
    bib = tmp_path / "ed.bib"
    bib.write_text(
        "@book{ir2011, editor = {Baeza-Yates, Ricardo and Ribeiro-Neto, Berthier},"
        " title = {Modern Information Retrieval}, year = {2011}, pages = {1039--1040}}\n"
        "@incollection{ch2011, author = {Smith, Alice}, editor = {Doe, Jane},"
        " title = {A Chapter on Ranking}, booktitle = {Ranking Book}, year = {2011}}\n"
    )
    import_paths(lib, [bib])
    book, chapter = lib.get_by_citekey("ir2011"), lib.get_by_citekey("ch2011")
    assert book.authors == [] and book.editors == ["Baeza-Yates, Ricardo", "Ribeiro-Neto, Berthier"]
    assert chapter.authors == ["Smith, Alice"] and chapter.editors == ["Doe, Jane"]
    assert book.extra["pages"] == "1039\u20131040" and "editor" not in book.extra
    text = paper_to_bibtex(book)
    assert "editor = {Baeza-Yates, Ricardo and Ribeiro-Neto, Berthier}" in text
    assert "pages = {1039--1040}" in text and "author =" not in text


# -- duplicates and merge ----------------------------------------------------------------------
def test_acm_records_with_different_dois_are_merged_only_by_hand(mgr, tmp_path):
    # the proceedings paper and its SIGIR Forum reprint have two DOIs: two works for the finder
    assert mgr.duplicates() == []
    ids = [p.id for p in mgr.lib.search("WEIRD Concept-Based") if p.year == 1978]
    weird = DuplicateGroup(sorted(ids), "title", 100.0)
    assert len(weird.ids) == 4  # the 1978 copies (the 1979 reprint has another year)
    papers = mgr.lib.get_many(weird.ids)
    n_records = sum(len(mgr.lib.records(p.id)) for p in papers)
    col = mgr.create_collection("To read")
    mgr.add_to_collection(col, [weird.ids[3]])
    kept = mgr.merge(weird.ids[0], weird.ids[1:])
    assert len(mgr.lib.records(kept.id)) == n_records  # every imported record kept
    assert all(mgr.lib.get(i) is None for i in weird.ids[1:])
    for p in papers:  # every old key resolves to the kept paper
        assert mgr.lib.get_by_citekey(p.citekey).id == kept.id
    assert mgr.collection_paper_ids([col]) == [kept.id]
    merge = mgr.history(kept.id)[0]
    assert merge.action == "merge" and len(merge.before["merged_papers"]) == 3
    assert {m["doi"] for m in merge.before["merged_papers"]} == {p.doi for p in papers[1:]}
    assert [len(g.ids) for g in mgr.duplicates() if kept.id in g.ids] == []
    # export -> re-import gives the same papers (one entry for the merged group)
    expected = {p.citekey: _fields(p) for p in mgr.lib.iter_papers()}
    assert _reimport(tmp_path, render(mgr.lib.iter_papers()), "merged.bib") == expected


def test_round_trip_after_edit_and_delete(mgr, tmp_path):
    p = mgr.find("koci2018query")
    mgr.edit(
        p.id,
        {"author": "Koči, Ondřej and Doe, J. & Co", "editor": "Ed, Itor", "note": "50% off_{x}"},
    )
    mgr.trash([mgr.lib.get_many([1])[0].id])
    expected = {q.citekey: _fields(q) for q in mgr.lib.iter_papers()}
    text = render(mgr.lib.iter_papers())
    assert r"50\% off\_\{x\}" in text and r"Doe, J. \& Co" in text
    assert _reimport(tmp_path, text, "edited.bib") == expected
    ris = _reimport(tmp_path, render(mgr.lib.iter_papers(), "ris"), "edited.ris")
    csl = _reimport(tmp_path, render(mgr.lib.iter_papers(), "csl-json"), "edited.json")
    for fmt, got in (("ris", ris), ("csl", csl)):
        for key, fields in expected.items():
            assert got[key]["title"] == fields["title"]
            people = [a for a in fields["authors"] if a != "others"]
            if fmt == "ris":  # RIS cannot mark an institution: "OpenAI Research Team" is split
                people = [a for a in people if "," in a]
                got[key]["authors"] = [a for a in got[key]["authors"] if "Team" not in a]
            assert got[key]["authors"] == people
            assert got[key]["editors"] == fields["editors"]
            assert (got[key]["year"], got[key]["doi"]) == (fields["year"], fields["doi"])
            assert got[key]["extra"].get("pages") == fields["extra"].get("pages")


# -- Zotero collections and tags -----------------------------------------------------------------
def test_zotero_collections_tags_and_editors(lib, tmp_path):
    zdir = tmp_path / "Zotero"
    zdir.mkdir()
    conn = sqlite3.connect(zdir / "zotero.sqlite")
    conn.executescript((FIX / "zotero.sql").read_text())
    conn.close()
    import_paths(lib, [zdir / "zotero.sqlite"])
    mgr = LibraryManager(lib)
    paths = {c.path: c for c in mgr.collections()}
    assert set(paths) == {"Thesis", "Thesis / Chapter 2: Ranking", "Reading list"}
    assert all(c.source == "zotero" for c in paths.values())
    ltr = mgr.find("10.1561/1500000016")
    farber = lib.search("Citation Recommendation Approaches")[0]
    assert mgr.collection_paper_ids([paths["Reading list"].id]) == sorted([ltr.id, farber.id])
    assert mgr.collection_paper_ids([paths["Thesis"].id]) == [ltr.id]  # via its sub-collection
    assert mgr.tags() == {"learning to rank": 1, "survey": 2}
    assert (
        farber.editors == ["Zotero Editorial Board"]
        and "Zotero Editorial Board" not in farber.authors
    )
    import_paths(lib, [zdir / "zotero.sqlite"])  # re-import: no second copy of the collections
    assert len(mgr.collections()) == 3


# -- citekeys ----------------------------------------------------------------------------------
def test_citekey_patterns():
    p = Paper(
        title="The Effect of Ümlauts on Ranking", authors=["Müller, Jörg", "Smith, A."], year=2021
    )
    assert citekeys.format_key("[auth:lower][year][shorttitle:1]", p) == "muller2021Effect"
    assert citekeys.format_key("[auth:lower][year][shorttitle:1:lower]", p) == "muller2021effect"
    assert (
        citekeys.format_key("[Auth][shortyear]_[shorttitle]", p) == "Muller21_EffectUmlautsRanking"
    )
    assert citekeys.format_key("[authEtAl][year]", p) == "MullerSmith2021"
    assert citekeys.key_for(p) == citekeys.base_key(p.authors, p.year, p.title)
    with pytest.raises(citekeys.PatternError, match="unknown citekey field"):
        citekeys.check_pattern("[autor][year]")


def test_pattern_regenerate_skips_pinned_and_keeps_aliases(mgr):
    pinned = mgr.find("koci2018query")
    mgr.set_pinned(pinned.id)
    mgr.set_citekey_pattern("[Auth][year]")
    before = {p.id: p.citekey for p in mgr.lib.iter_papers()}
    changed = dict(mgr.regenerate_citekeys())
    assert pinned.citekey not in changed and mgr.lib.get(pinned.id).citekey == "koci2018query"
    assert "Koll1978" in changed.values() and "Koll1978a" in changed.values()
    for pid, old in before.items():
        assert mgr.lib.get_by_citekey(old).id == pid
    assert mgr.regenerate_citekeys() == []  # stable: a second run changes nothing
    new = mgr.lib.add_paper(Paper(title="Fresh Paper", authors=["Zed, Z."], year=2022))
    assert new.citekey == "Zed2022"  # new papers follow the pattern


# -- auto-export -------------------------------------------------------------------------------
def test_auto_export_follows_changes_with_minimal_diff(mgr, tmp_path):
    out = tmp_path / "refs.bib"
    col = mgr.create_collection("Paper draft")
    mgr.add_auto_export(out, fmt="bibtex")
    sub = tmp_path / "draft.bib"
    mgr.add_auto_export(sub, collection_id=col)
    first = out.read_text()
    assert first.count("@") == mgr.lib.count() and sub.read_text() == ""
    keys = [line.split("{")[1].rstrip(",") for line in first.splitlines() if line.startswith("@")]
    assert keys == sorted(keys, key=str.lower)  # stable order
    p = mgr.find("koci2018query")
    mgr.edit(p.id, {"year": "2017"})
    second = out.read_text()
    diff = [(a, b) for a, b in zip(first.splitlines(), second.splitlines()) if a != b]
    assert diff == [("  year = {2018},", "  year = {2017},")]
    mgr.add_to_collection(col, [p.id])
    assert sub.read_text().startswith("@article{koci2018query,")
    mgr.trash([p.id])
    assert "koci2018query" not in out.read_text() and sub.read_text() == ""
    assert mgr.lib.auto_export_errors == []


# -- table -------------------------------------------------------------------------------------
def test_table_sorts_filters_and_searches_in_sql(mgr):
    table = PaperTable(mgr.lib)
    n = table.refresh(View(sort="year", descending=True))
    years = [r["year"] for r in table.rows(0, n)]
    assert n == mgr.lib.count() and years == sorted(years, reverse=True)
    assert table.refresh(View(search="koll weir")) == 5  # prefix of the last word
    assert table.refresh(View(search="Koči")) == 1  # authors are searched
    assert table.refresh(View(search="10.1145/67449")) == 1  # and DOIs
    assert table.refresh(View(filters={"year": "1978", "venue": "forum"})) == 2
    assert table.refresh(View(filters={"year": "<1980"})) == 5
    rows = table.rows(0, 2, ("citekey", "authors"))
    assert set(rows[0]) == {"id", "citekey", "authors"} and rows[0]["authors"] == "Koll"
    mgr.trash([table.ids[0]])
    assert table.refresh(View(trash=True)) == 1


def test_papers_without_a_value_sort_last_both_ways(mgr):
    """Sorting by year (or venue) lists the papers that have one first, ascending or descending,
    as a user looking for the oldest paper expects; a search keeps that order."""
    table = PaperTable(mgr.lib)
    ids = table.refresh(View())
    first, second = table.ids[0], table.ids[1]
    mgr.lib.conn.execute("UPDATE papers SET year = NULL WHERE id = ?", (first,))
    mgr.lib.conn.execute("UPDATE papers SET year = NULL, venue = '' WHERE id = ?", (second,))
    for descending in (False, True):
        n = table.refresh(View(sort="year", descending=descending))
        years = [r["year"] for r in table.rows(0, n)]
        assert n == ids and years[-2:] == [None, None], descending
        assert years[:-2] == sorted(years[:-2], reverse=descending)
        n = table.refresh(View(sort="venue", descending=descending))
        venues = [r["venue"] or "" for r in table.rows(0, n)]
        filled = [v for v in venues if v]
        assert second in table.ids[len(filled) :] and venues[: len(filled)] == filled
    table.refresh(View(sort="year", descending=True))
    hits = table.refresh(View(sort="year", descending=True, search="koll"), reuse_order=True)
    years = [r["year"] for r in table.rows(0, hits)]
    assert hits and years == sorted(years, reverse=True)


def test_pipeline_only_ids_mask(mgr):
    from assistant.retrieval.pipeline import PipelineConfig, Recommender

    class _Searcher:
        max_id = 30

    rec = Recommender.__new__(Recommender)
    rec.library, rec.searcher = mgr.lib, _Searcher()
    col = mgr.create_collection("Only")
    mgr.add_to_collection(col, [2, 5])
    mask = rec._only(None, PipelineConfig(collection_ids=(col,)))
    assert sorted(map(int, mask.nonzero()[0])) == [2, 5]
    assert rec._only(None, PipelineConfig()) is None
    mask = rec._only(None, PipelineConfig(only_ids=[5, 7], collection_ids=(col,)))
    assert sorted(map(int, mask.nonzero()[0])) == [5]


def test_attach_folder_by_name_doi_and_title(mgr, tmp_path):
    import pymupdf

    folder = tmp_path / "pdfs"
    folder.mkdir()

    def pdf(name, lines):
        doc = pymupdf.open()
        page = doc.new_page()
        y = 72
        for size, text in lines:
            page.insert_text((72, y), text, fontsize=size)
            y += size * 2
        doc.save(folder / name)

    pdf("koci2018query.pdf", [(9, "some text")])
    pdf(
        "x1.pdf",
        [(18, "Collaboration in KMS, a Shared"), (9, "https://doi.org/10.1145/67449.67457")],
    )
    pdf("unknown.pdf", [(18, "Nothing Like Any Paper Here"), (9, "body text")])
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 broken")
    report = mgr.attach_folder(folder)
    assert sorted(k for k, _ in report.attached) == ["koci2018query", "yoder1989collaboration"]
    assert [Path(p).name for p in report.unmatched] == ["unknown.pdf"]
    assert len(report.issues) == 1 and "broken.pdf" in report.issues[0]
    paper = mgr.find("koci2018query")
    assert mgr.pdf_file(paper) == (folder / "koci2018query.pdf").resolve()
    assert json.loads(json.dumps(report.attached))  # plain data for the faces
