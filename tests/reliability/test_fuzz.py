"""Property fuzzing of every parser of user text (hypothesis): whatever the input, a parser
returns a result or raises an ``AssistantError`` (one clear line) — never another exception.

The default run is bounded (a few dozen examples per parser, seconds in all); the ``slow`` run
tries thousands per parser. Inputs are built from the syntax each parser cares about (braces,
``@``, ``#``, tags, brackets, JSON punctuation) mixed with arbitrary Unicode.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assistant.errors import AssistantError

SYNTAX = list("@{}\"#,=\\ \n\t[];()-:_.%~^$&'/<>*+|`")
FRAGMENTS = [
    "@article{",
    "@string{s = ",
    "@comment",
    "title = ",
    "author = {A and B}",
    "crossref = ",
    " # ",
    "\\cite{",
    "\\section{",
    "\\begin{thebibliography}{9}",
    "\\bibitem{",
    "[@",
    "; @",
    "(Smith et al., 2020",
    "Smith and Lee (2019)",
    "[1, 2-4]",
    "¹²",
    "evalua-\ntion",
    "\\\\",
    "\x00",
    "\ud800",
    "\x1b[31m",
    "TY  - JOUR\n",
    "TI  - ",
    "AU  - ",
    "ER  - \n",
    '{"title": ',
    '[{"id": 1, ',
    "]",
    "}",
    "null",
    "---\ntitle: x\n---\n",
    "# Heading\n",
    "doi:10.1145/",
    "https://doi.org/10.",
]
TEXT = st.one_of(
    st.text(st.sampled_from(SYNTAX) | st.characters(codec="utf-8"), max_size=400),
    st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=12), max_size=40).map("".join),
)


def _json_values():
    scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
    return st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
        ),
        max_leaves=20,
    )


CSL_KEYS = ["id", "type", "title", "author", "issued", "DOI", "URL", "keyword", "container-title",
            "abstract", "number", "page", "volume", "citation-key", "editor", "event"]  # fmt: skip
CSL_ITEMS = st.lists(
    st.dictionaries(st.sampled_from(CSL_KEYS), _json_values(), max_size=8), max_size=5
)


def _bibtex(text: str) -> None:
    from assistant.library.importers.bibtex import parse_bibtex_text

    result = parse_bibtex_text(text, "fuzz.bib")
    for record in result.records:
        assert record.paper.title and "\x00" not in record.paper.title


def _ris(text: str) -> None:
    from assistant.library.importers.ris import parse_ris_text

    parse_ris_text(text, "fuzz.ris")


def _csljson_text(text: str) -> None:
    from assistant.library.importers.csljson import parse_csljson_text

    parse_csljson_text(text, "fuzz.json")


def _draft(text: str) -> None:
    from assistant.documents.draft import parse_draft

    for fmt in ("latex", "markdown", "text"):
        doc = parse_draft(text, fmt=fmt)
        for sentence in doc.sentences():
            if sentence.start is not None:
                assert 0 <= sentence.start <= sentence.end <= len(text)


def _markers(text: str) -> None:
    from assistant.documents.markers import find_markers, strip_markers
    from assistant.documents.textops import citation_spans

    found = find_markers(text, kinds=("latex", "pandoc", "numeric", "author-year"), max_number=99)
    strip_markers(text, found)
    citation_spans(text)


def _references(text: str) -> None:
    from assistant.documents.references import parse_reference, split_entries

    parse_reference(text, 1)
    rows = [(line, 10.0 + (i % 3), 10.0, float(i % 4)) for i, line in enumerate(text.splitlines())]
    for _, entry in split_entries(rows):
        parse_reference(entry)


def _sentences(text: str) -> None:
    from assistant.documents.sentences import split_sentences

    for start, end in split_sentences(text):
        assert 0 <= start <= end <= len(text)


def _normalize(text: str) -> None:
    from assistant.library.importers.bibtex import concatenate
    from assistant.library.normalize import (
        clean_text,
        normalize_doi,
        parse_year,
        split_authors,
        split_keywords,
    )

    clean_text(text)
    split_authors(text)
    normalize_doi(text)
    parse_year(text)
    split_keywords(text)
    concatenate(text, {"acm": "ACM"})


def _dehyphenate(text: str) -> None:
    from assistant.documents.text import Dehyphenator

    out = Dehyphenator({"evaluation"}).join(text.splitlines())
    assert "\n" not in out


def _bibfile(text: str) -> None:
    from assistant.library.bibfile import parse_entries, unclosed_brace_line

    parse_entries(text, "fuzz.bib")
    unclosed_brace_line(text)


TEXT_PARSERS = {
    "bibtex": _bibtex,
    "ris": _ris,
    "csljson-text": _csljson_text,
    "draft": _draft,
    "markers": _markers,
    "references": _references,
    "sentences": _sentences,
    "normalize": _normalize,
    "dehyphenate": _dehyphenate,
    "bibfile": _bibfile,
}


def _check(parser, value) -> None:
    try:
        parser(value)
    except AssistantError:
        pass  # a clear one-line refusal is a fine answer to garbage


def _fuzz_text(name: str, examples: int) -> None:
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(TEXT)
    def run(text):
        _check(TEXT_PARSERS[name], text)

    run()


def _fuzz_csl(examples: int) -> None:
    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(CSL_ITEMS)
    def run(items):
        from assistant.library.importers.csljson import parse_csljson_text

        result = parse_csljson_text(json.dumps(items, allow_nan=True), "fuzz.json")
        titled = [i for i in items if isinstance(i.get("title"), str) and i["title"].strip()]
        assert len(result.records) >= sum(
            1 for i in titled if any(c.isalnum() for c in i["title"])
        ) - sum(1 for i in titled if "\\" in i["title"] or "<" in i["title"] or "&" in i["title"])

    run()


def _fuzz_bytes(examples: int) -> None:
    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(st.binary(max_size=600) | TEXT.map(lambda t: t.encode("utf-16-le", "replace")))
    def run(data):
        from assistant.textfile import BinaryFileError, decode_text

        try:
            text, _ = decode_text(data)
        except BinaryFileError:
            return
        assert isinstance(text, str) and "\r\n" not in text

    run()


@pytest.mark.parametrize("name", sorted(TEXT_PARSERS))
def test_fuzz_parser_bounded(name):
    _fuzz_text(name, 40)


def test_fuzz_csljson_items_bounded():
    _fuzz_csl(30)


def test_fuzz_decode_text_bounded():
    _fuzz_bytes(100)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TEXT_PARSERS))
def test_fuzz_parser_long(name):
    _fuzz_text(name, 1000)


@pytest.mark.slow
def test_fuzz_csljson_and_decode_long():
    _fuzz_csl(1000)
    _fuzz_bytes(3000)
