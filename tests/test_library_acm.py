"""The library on real ACM-DL BibTeX files (shared data; skipped when absent)."""

from __future__ import annotations

import itertools
import re

import pytest

from assistant.library.export import export_bibtex
from assistant.library.importers import import_paths
from assistant.library.store import Library

_ENTRY = re.compile(r"^@(\w+)\{", re.M)
_DOI = re.compile(r"^\s*doi\s*=\s*\{([^}]*)\}", re.M | re.I)


def _raw_counts(files):
    """Entry types and the DOIs of @article/@inproceedings entries, counted straight from the text."""
    types: dict[str, int] = {}
    dois: set[str] = set()
    for path in files:
        text = path.read_text(encoding="utf-8")
        starts = [m.start() for m in _ENTRY.finditer(text)] + [len(text)]
        for begin, end in itertools.pairwise(starts):
            chunk = text[begin:end]
            etype = _ENTRY.match(chunk).group(1).lower()
            types[etype] = types.get(etype, 0) + 1
            doi = _DOI.search(chunk)
            if doi and etype in ("article", "inproceedings"):
                dois.add(doi.group(1).strip().lower())
    return types, dois


def _fields(paper):
    return (
        paper.entry_type,
        paper.doi,
        paper.title,
        paper.abstract,
        paper.authors,
        paper.year,
        paper.venue,
        paper.keywords,
        paper.url,
        paper.extra,
    )


def test_acm_sample_import_export_round_trip(acm_dl_sample_files, tmp_path):
    types, dois = _raw_counts(acm_dl_sample_files)
    with Library(tmp_path / "acm.sqlite") as lib:
        report = import_paths(lib, acm_dl_sample_files)
        assert not [i for i in report.issues if i.severity == "error"]
        assert report.skipped == types.get("dataset", 0)  # only the "Review ID" records are skipped
        assert report.added + report.merged + report.unchanged == sum(types.values()) - types.get(
            "dataset", 0
        )
        have = {p.doi for p in lib.iter_papers() if p.entry_type in ("article", "inproceedings")}
        assert dois <= have  # every @article/@inproceedings with a DOI is in, with that type
        stats = lib.stats()
        assert stats["papers"] == report.added and stats["with_abstract"] > 0.8 * stats["papers"]
        # real records decode cleanly: no LaTeX/HTML left in titles
        assert not [
            p.title for p in lib.iter_papers() if re.search(r"[\\{}]|</?\w+>|&amp;", p.title)
        ]
        hits = lib.search("query performance prediction", limit=5)
        assert hits and all("query" in (h.title + h.abstract).lower() for h in hits)
        keys = {p.citekey for p in lib.iter_papers()}
        assert len(keys) == stats["papers"] and all(
            re.fullmatch(r"[a-z]+\d{4}[a-z0-9]+", k) for k in keys
        )

        again = import_paths(lib, acm_dl_sample_files)  # re-import: no-op
        assert (again.added, again.merged) == (0, 0) and lib.count() == stats["papers"]

        out = tmp_path / "export.bib"
        written, _ = export_bibtex(lib, out)
        assert written == stats["papers"]
        with Library(tmp_path / "copy.sqlite") as copy:
            back = import_paths(copy, [out])
            assert back.added == written and not back.issues
            original = {p.citekey: _fields(p) for p in lib.iter_papers()}
            restored = {p.citekey: _fields(p) for p in copy.iter_papers()}
            assert restored == original


@pytest.mark.slow
@pytest.mark.timeout(
    3600
)  # two full imports + export: ~5 min idle, much longer on a shared machine
def test_full_acm_dl_import(acm_dl_dir, tmp_path):
    files = sorted(acm_dl_dir.rglob("*.bib"))
    assert len(files) == 903
    _, dois = _raw_counts(files)
    with Library(tmp_path / "full.sqlite") as lib:
        report = import_paths(lib, [acm_dl_dir])
        assert not [i for i in report.issues if i.severity == "error"]
        have = {
            doi
            for (doi,) in lib.conn.execute(
                "SELECT doi FROM papers WHERE entry_type IN ('article', 'inproceedings') AND doi IS NOT NULL"
            )
        }
        assert dois <= have
        assert report.files == 903 and lib.count() > 110_000
        out = tmp_path / "all.bib"
        assert export_bibtex(lib, out)[0] == lib.count()
        with Library(tmp_path / "copy.sqlite") as copy:
            back = import_paths(copy, [out])
            assert back.added == lib.count() and not back.issues
            for a, b in zip(lib.iter_papers(), copy.iter_papers()):
                assert (a.citekey, _fields(a)) == (b.citekey, _fields(b))
