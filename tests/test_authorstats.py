"""The ranker's library-wide numbers read on demand (``retrieval.authorstats``): the same
signals as ``LibraryStats``, the author part cached next to the index and rebuilt after an edit,
and nothing about authors read for a query that names none (the cold ``recommend``)."""

from __future__ import annotations

import pytest
from retrieval_helpers import SAMPLE_BIB, make_library, sample_library  # noqa: F401

from assistant.library.editing import edit_paper
from assistant.retrieval import authorstats
from assistant.retrieval.authorstats import AuthorTable, LibraryView
from assistant.retrieval.bibsignals import LibraryStats, name_keys, signals


def test_the_author_table_holds_what_library_stats_holds(sample_library):
    stats = LibraryStats.build(sample_library.lib)
    table = AuthorTable.from_stats(stats)
    assert table.papers == stats.papers and len(table.keys) == len(stats.name_df) > 300
    for key in stats.name_df:
        assert table.idf(key) == stats.idf(key)
        assert table.coauthors(key) == stats.coauthors.get(key, set())
    assert any(len(v) > 2 for v in stats.coauthors.values())  # the check saw real co-authors
    for unknown in ("nobody z", "zzz", "", "müller j"):
        assert table.idf(unknown) == stats.idf(unknown) and table.coauthors(unknown) == set()


def test_the_view_gives_the_signals_of_library_stats(sample_library, tmp_path):
    lib = sample_library.lib
    stats = LibraryStats.build(lib)
    view = LibraryView(lib, tmp_path / authorstats.CACHE_FILE)
    papers = lib.get_many(sorted(lib.paper_versions()))
    cited = lib.get(sample_library.cited[0])
    for authors, year in (
        (cited.authors[:1], cited.year + 2),
        (cited.authors, None),
        (["Nobody, Zed", *cited.authors[1:2]], 2020),
        ((), 2019),
    ):
        assert signals(papers, view, authors, year) == signals(papers, stats, authors, year)
    assert view.cited_counts([p.id for p in papers]) == stats.cited_counts(p.id for p in papers)
    assert view.cited_counts([cited.id]) == {cited.id: 1}


def test_a_query_without_authors_reads_no_author_statistics(sample_library, tmp_path, monkeypatch):
    cache = tmp_path / authorstats.CACHE_FILE

    def refuse(*_a, **_k):
        raise AssertionError("the author statistics were built for a query without authors")

    monkeypatch.setattr(LibraryStats, "build", refuse)
    view = LibraryView(sample_library.lib, cache)
    papers = sample_library.lib.get_many(sample_library.cited)
    rows = signals(papers, view, (), 2020)
    assert len(rows) == 2 and rows[0][-1] > 0  # the library's own citation counts are there
    assert not cache.exists()


def test_the_cache_is_read_back_and_rebuilt_after_an_edit(tmp_path, monkeypatch):
    lib = make_library(tmp_path / "lib.sqlite", SAMPLE_BIB, limit=40)
    cache = tmp_path / authorstats.CACHE_FILE
    paper = lib.get(sorted(lib.paper_versions())[3])
    first = LibraryView(lib, cache)
    mine = frozenset(name_keys(paper.authors[:1]))
    near = first.near(mine)
    assert cache.is_file() and near == LibraryStats.build(lib).near(mine)

    built = []
    real_build = LibraryStats.build
    monkeypatch.setattr(
        LibraryStats,
        "build",
        classmethod(lambda cls, *a, **k: built.append(1) or real_build(*a, **k)),
    )
    again = LibraryView(lib, cache)
    assert again.near(mine) == near and again.idf(next(iter(mine))) == first.idf(next(iter(mine)))
    assert built == []  # read from the file

    edit_paper(lib, paper.id, {"authors": [*paper.authors, "Newcomer, Nina"]})
    after = LibraryView(lib, cache)
    assert "newcomer n" in after.near(mine) and built == [1]  # the edit made it stale
    assert LibraryView(lib, cache).near(mine) == after.near(mine) and built == [1]
    lib.close()


def test_a_damaged_cache_is_rebuilt(tmp_path):
    lib = make_library(tmp_path / "lib.sqlite", SAMPLE_BIB, limit=20)
    cache = tmp_path / authorstats.CACHE_FILE
    cache.write_bytes(b"not a zip file")
    key = next(iter(name_keys(lib.get(sorted(lib.paper_versions())[0]).authors)))
    assert LibraryView(lib, cache).idf(key) == LibraryStats.build(lib).idf(key)
    assert AuthorTable.load(cache, tuple(lib.papers_signature())) is not None
    lib.close()


@pytest.mark.parametrize("broken", ["keys", "co_ptr"])
def test_a_cache_with_inconsistent_arrays_is_not_used(tmp_path, broken):
    lib = make_library(tmp_path / "lib.sqlite", SAMPLE_BIB, limit=20)
    signature = tuple(lib.papers_signature())
    table = AuthorTable.from_stats(LibraryStats.build(lib))
    setattr(table, broken, getattr(table, broken)[:-1])
    cache = tmp_path / authorstats.CACHE_FILE
    table.save(cache, signature)
    assert AuthorTable.load(cache, signature) is None
    lib.close()


def test_a_fifo_in_place_of_the_cache_is_never_opened(tmp_path):
    import os

    lib = make_library(tmp_path / "lib.sqlite", SAMPLE_BIB, limit=20)
    cache = tmp_path / authorstats.CACHE_FILE
    os.mkfifo(cache)  # opening it for reading would block for ever
    key = next(iter(name_keys(lib.get(sorted(lib.paper_versions())[0]).authors)))
    assert LibraryView(lib, cache).idf(key) == LibraryStats.build(lib).idf(key)
    assert not cache.is_file()  # left as it was: not replaced by the build either
    lib.close()
