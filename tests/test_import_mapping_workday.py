"""Import mapping defects of issue 34 (item 7), on small real-format files."""

from __future__ import annotations

import json
from pathlib import Path

from assistant.library.export import render
from assistant.library.importers import import_paths
from assistant.library.models import Paper
from assistant.library.store import Library, merge_papers


def _one(tmp_path: Path, name: str, text: str) -> Paper:
    src = tmp_path / name
    src.write_text(text, encoding="utf-8")
    with Library(tmp_path / "lib.sqlite") as lib:
        report = import_paths(lib, [src], workers=1)
        assert report.added == 1, report
        return next(lib.iter_papers())


def test_biblatex_journaltitle_is_the_journal_and_online_is_misc(tmp_path):
    paper = _one(
        tmp_path,
        "b.bib",
        "@article{k1, title={Dense retrieval}, author={Doe, Jane}, date={2021-03},"
        " journaltitle={Journal of IR}}\n"
        "",
    )
    assert paper.venue == "Journal of IR" and "journaltitle" not in paper.extra
    assert "journal = {Journal of IR}" in render([paper], "bibtex")
    (tmp_path / "w").mkdir()
    web = _one(
        tmp_path / "w",
        "o.bib",
        "@online{k2, title={A blog post on ranking}, author={Roe, Rich}, year={2020},"
        " url={https://example.org/post}}\n",
    )
    assert web.entry_type == "misc" and web.url == "https://example.org/post"


def test_ris_sn_on_a_book_is_its_isbn(tmp_path):
    paper = _one(
        tmp_path,
        "b.ris",
        "TY  - BOOK\nTI  - Introduction to Information Retrieval\nAU  - Manning, Christopher\n"
        "PY  - 2008\nSN  - 978-0521865715\nER  - \n",
    )
    assert paper.extra.get("isbn") == "978-0521865715" and "issn" not in paper.extra


def test_csl_id_is_not_the_citekey(tmp_path):
    items = [
        {
            "id": "ITEM-1",
            "type": "article-journal",
            "title": "Learning to rank for information retrieval",
            "author": [{"family": "Liu", "given": "Tie-Yan"}],
            "issued": {"date-parts": [[2009]]},
        }
    ]
    paper = _one(tmp_path, "c.json", json.dumps(items))
    assert paper.citekey == "liu2009learning"


def test_csl_round_trip_keeps_the_key(tmp_path):
    from assistant.library.formats import paper_to_csl

    item = paper_to_csl(Paper(title="T", citekey="mykey2020", authors=["Doe, J"], year=2020))
    assert item["citation-key"] == "mykey2020"


def test_a_pdf_merged_into_a_record_replaces_a_missing_pdf_path(tmp_path):
    pdf = tmp_path / "paper.pdf"
    pdf.write_bytes(b"%PDF-1.4\n")
    old = Paper(title="T", authors=["Doe, J"], year=2020, pdf_path=str(tmp_path / "gone.pdf"))
    new = Paper(title="T", authors=["Doe, J"], year=2020, pdf_path=str(pdf))
    assert merge_papers(old, new).pdf_path == str(pdf)
    kept = Paper(title="T", authors=["Doe, J"], year=2020, pdf_path=str(pdf))
    other = Paper(title="T", authors=["Doe, J"], year=2020, pdf_path=str(tmp_path / "x.pdf"))
    assert merge_papers(kept, other).pdf_path == str(pdf)  # an existing PDF is kept
