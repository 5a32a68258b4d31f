"""The GUI's non-Qt logic: safe .bib appends and citation insertion in manuscript text."""

from __future__ import annotations

import os

import pytest

from assistant.documents import textops
from assistant.library import bibfile
from assistant.library.bibfile import BibFileError, append_entry, entry_number, read_bib

ENTRY_A = """@inproceedings{karpukhin2020dense,
  title = {Dense Passage Retrieval for Open-Domain Question Answering},
  author = {Karpukhin, Vladimir and Oguz, Barlas},
  year = {2020},
  doi = {10.18653/v1/2020.emnlp-main.550},
}"""
ENTRY_B = """@article{robertson2009bm25,
  title = {The Probabilistic Relevance Framework: BM25 and Beyond},
  author = {Robertson, Stephen and Zaragoza, Hugo},
  year = {2009},
  doi = {10.1561/1500000019},
}"""
USER_BIB = """% my references -- hand formatted, must stay byte-for-byte
@book{knuth1984,
    title={The {\\TeX}book},
    author={Knuth, Donald E.},
    year=1984,
    publisher={Addison-Wesley}
}
"""


def test_append_creates_file_and_is_valid(tmp_path):
    bib = tmp_path / "refs.bib"
    result = append_entry(bib, ENTRY_A)
    assert result.status == "added" and result.key == "karpukhin2020dense" and result.written
    assert result.backup is None  # nothing to back up
    entries = read_bib(bib)
    assert [e.key for e in entries] == ["karpukhin2020dense"]
    assert entries[0].doi == "10.18653/v1/2020.emnlp-main.550"


def test_append_keeps_user_text_and_backup(tmp_path):
    bib = tmp_path / "refs.bib"
    bib.write_text(USER_BIB, encoding="utf-8")
    result = append_entry(bib, ENTRY_B, backup=True)  # the backup copy is opt-in
    assert result.status == "added"
    text = bib.read_text(encoding="utf-8")
    assert text.startswith(USER_BIB)  # existing content untouched
    assert result.backup is not None and result.backup.read_text(encoding="utf-8") == USER_BIB
    assert [e.key for e in read_bib(bib)] == ["knuth1984", "robertson2009bm25"]
    assert entry_number(bib, "robertson2009bm25") == 2
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # no temp file left


def test_duplicates_by_key_and_doi_are_not_added(tmp_path):
    bib = tmp_path / "refs.bib"
    append_entry(bib, ENTRY_A)
    before = bib.read_text(encoding="utf-8")
    again = append_entry(bib, ENTRY_A)
    assert again.status in ("duplicate-doi", "duplicate-key") and not again.written
    # same DOI under another key: the key already in the file is the one to cite
    other_key = ENTRY_A.replace("karpukhin2020dense", "dpr").replace(
        "doi = {10.18653", "doi = {https://doi.org/10.18653"
    )
    dup = append_entry(bib, other_key)
    assert dup.status == "duplicate-doi" and dup.key == "karpukhin2020dense"
    assert bib.read_text(encoding="utf-8") == before


def test_same_key_different_paper_is_renamed(tmp_path):
    bib = tmp_path / "refs.bib"
    append_entry(bib, ENTRY_A)
    clash = ENTRY_B.replace("robertson2009bm25", "karpukhin2020dense")
    result = append_entry(bib, clash)
    assert result.status == "renamed" and result.key == "karpukhin2020dense-1"
    keys = [e.key for e in read_bib(bib)]
    assert keys == ["karpukhin2020dense", "karpukhin2020dense-1"]


def test_refuses_to_corrupt_a_broken_file(tmp_path):
    bib = tmp_path / "refs.bib"
    broken = USER_BIB + "@article{unclosed, title = {Oops\n"
    bib.write_text(broken, encoding="utf-8")
    with pytest.raises(BibFileError, match="unchanged"):
        append_entry(bib, ENTRY_B)
    assert bib.read_text(encoding="utf-8") == broken
    assert not (tmp_path / "refs.bib.bak").exists()


def test_rejects_invalid_new_entry(tmp_path):
    with pytest.raises(BibFileError):
        append_entry(tmp_path / "x.bib", "@article{nokey title={x}")
    with pytest.raises(BibFileError):
        append_entry(tmp_path / "x.bib", ENTRY_A + "\n" + ENTRY_B)
    assert not (tmp_path / "x.bib").exists()


def test_write_failure_leaves_file_intact(tmp_path, monkeypatch):
    bib = tmp_path / "refs.bib"
    bib.write_text(USER_BIB, encoding="utf-8")

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        append_entry(bib, ENTRY_B)
    assert bib.read_text(encoding="utf-8") == USER_BIB
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_normalize_doi():
    assert bibfile.normalize_doi("https://doi.org/10.1145/ABC") == "10.1145/abc"
    assert bibfile.normalize_doi("doi: 10.1145/X") == "10.1145/x"
    assert bibfile.normalize_doi("{10.1145/3331184.3331249}") == "10.1145/3331184.3331249"
    assert bibfile.normalize_doi("") is None


# --- textops ----------------------------------------------------------------------------------
TEX = (
    "Dense retrievers encode queries and passages separately, e.g. with BERT. "
    "BM25 remains a strong baseline \\cite{robertson2009bm25}.\n\n"
    "Rerankers are slower but more accurate \\cite{}. Final words."
)


def test_style_for_path():
    assert textops.style_for_path("a.tex") == textops.LATEX
    assert textops.style_for_path("a.md") == textops.MARKDOWN
    assert textops.style_for_path("a.txt") == textops.NUMERIC


def test_citation_spans_all_styles():
    spans = textops.citation_spans("see \\citep[p.~3]{a, b} and [@x; @y, p. 4] and [2-4] or [7]")
    assert [(s.style, s.keys) for s in spans] == [
        ("latex", ["a", "b"]),
        ("markdown", ["x", "y"]),
        ("numeric", ["2-4"]),
        ("numeric", ["7"]),
    ]
    assert textops.cited_keys(TEX, textops.LATEX) == {"robertson2009bm25"}


def test_sentence_and_query_modes():
    pos = TEX.index("queries")
    spec = textops.query_at(TEX, pos, pos)
    assert spec.mode == "local"
    assert spec.text.startswith("Dense retrievers") and spec.text.endswith(
        "with BERT."
    )  # "e.g." kept
    # the one auto rule (retrieval.query.detect_mode, as the CLI): two sentences are a citation
    # context (local), more are a paragraph; Global is the user's explicit choice
    two = textops.query_at(TEX, 0, TEX.index("\n\n"))
    assert two.mode == "local"
    assert textops.query_at(TEX, 0, len(TEX)).mode == "paragraph"
    para = textops.context_for_mode(TEX, spec, "paragraph")
    assert para.text.endswith("\\cite{robertson2009bm25}.")


def test_citation_edit_cursor_selection_slot_and_existing():
    # caret only: the citation goes to the sentence end before the period (LaTeX: ~)
    pos = TEX.index(", e.g.")
    out = textops.apply_edit(TEX, textops.citation_edit(TEX, pos, pos, "k1", textops.LATEX))
    assert "with BERT~\\cite{k1}. BM25" in out
    # selection: inserted before the sentence's final period
    start, end = 0, TEX.index("BERT.") + len("BERT.")
    out = textops.apply_edit(TEX, textops.citation_edit(TEX, start, end, "k1", textops.LATEX))
    assert "with BERT~\\cite{k1}. BM25" in out
    # an empty \cite{} slot in the sentence is filled
    pos = TEX.index("slower")
    out = textops.apply_edit(TEX, textops.citation_edit(TEX, pos, pos, "k2", textops.LATEX))
    assert "accurate \\cite{k2}. Final" in out
    # cursor inside an existing \cite: the key is added to it
    pos = TEX.index("robertson2009bm25") + 3
    out = textops.apply_edit(TEX, textops.citation_edit(TEX, pos, pos, "k3", textops.LATEX))
    assert "\\cite{robertson2009bm25,k3}" in out
    md = "Transformers changed NLP."
    out = textops.apply_edit(
        md, textops.citation_edit(md, 0, len(md), "vaswani2017", textops.MARKDOWN)
    )
    assert out == "Transformers changed NLP [@vaswani2017]."
    out = textops.apply_edit(
        md, textops.citation_edit(md, 0, len(md), "x", textops.NUMERIC, number=3)
    )
    assert out == "Transformers changed NLP [3]."


def test_manuscript_meta_and_bib_detection(tmp_path):
    tex = (
        "\\documentclass{article}\\title{Citation Recommendation\n for Drafts}\\begin{document}"
        "\\begin{abstract} We study it. \\end{abstract}\\bibliography{refs}\\end{document}"
    )
    assert textops.manuscript_meta(tex, textops.LATEX) == (
        "Citation Recommendation for Drafts",
        "We study it.",
    )
    assert (
        textops.bib_from_manuscript(tex, tmp_path / "paper.tex", textops.LATEX)
        == (tmp_path / "refs.bib").resolve()
    )
    md = "---\ntitle: My Paper\nbibliography: lib.bib\n---\nText."
    assert textops.manuscript_meta(md, textops.MARKDOWN)[0] == "My Paper"
    assert textops.bib_from_manuscript(md, tmp_path / "p.md", textops.MARKDOWN).name == "lib.bib"


def test_append_keeps_a_latin1_crlf_file_as_it_is(tmp_path):
    """An older LaTeX project's cp1252/CRLF .bib: old bytes untouched, the new entry in the same
    encoding and line endings; what cp1252 cannot store becomes a LaTeX macro."""
    bib = tmp_path / "legacy.bib"
    old = "% Literatur\r\n@book{mueller1990,\r\n  title={Caf\xe9 Soci\xe9t\xe9},\r\n  author={M\xfcller, A.},\r\n}\r\n"
    bib.write_bytes(old.encode("cp1252"))
    entry = ENTRY_A.replace("Oguz, Barlas", "Ko\u010di, Ond\u0159ej and M\u00fcller, J\u00f6rg")
    assert append_entry(bib, entry).status == "added"
    data = bib.read_bytes()
    assert data.startswith(old.encode("cp1252"))
    added = data[len(old.encode("cp1252")) :].decode("cp1252")
    assert "\n" not in added.replace("\r\n", "")  # CRLF throughout
    assert (
        "Ko{\\v{c}}i, Ond{\\v{r}}ej and M\u00fcller, J\u00f6rg" in added
    )  # ü/ö exist in cp1252, č/ř do not
    assert [e.key for e in read_bib(bib)] == ["mueller1990", "karpukhin2020dense"]


def test_append_keeps_one_utf8_bom_and_refuses_binary(tmp_path):
    bib = tmp_path / "bom.bib"
    bib.write_bytes(b"\xef\xbb\xbf" + USER_BIB.encode("utf-8"))
    append_entry(bib, ENTRY_B)
    data = bib.read_bytes()
    assert (
        data.startswith(b"\xef\xbb\xbf" + USER_BIB.encode("utf-8"))
        and data.count(b"\xef\xbb\xbf") == 1
    )
    binary = tmp_path / "binary.bib"
    binary.write_bytes(b"\x00\x01\x02PK" * 50)
    with pytest.raises(BibFileError, match="binary file"):
        append_entry(binary, ENTRY_B)
    assert binary.read_bytes() == b"\x00\x01\x02PK" * 50


def test_text_file_round_trip_formats():
    from assistant.textfile import TextFormat, decode_text, encode_text, unencodable

    for data in (
        b"a\r\nb\r\n",
        "\ufeffCaf\u00e9\n".encode("utf-8"),
        "Caf\u00e9\r\n".encode("cp1252"),
        "\ufeffx\ny\n".encode("utf-16-le"),
    ):
        text, fmt = decode_text(data)
        assert "\r" not in text and encode_text(text, fmt) == data
    assert decode_text(b"x\r\ny\n")[1] == TextFormat("utf-8", "\r\n")  # ties go to CRLF
    assert unencodable("Ko\u010di M\u00fcller \u010d", TextFormat("cp1252")) == ["\u010d"]
