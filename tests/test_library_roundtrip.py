"""Writers that round-trip: a stored record exported as BibTeX, RIS or CSL-JSON re-imports to
the same record (hypothesis property over odd values: braces in URLs/DOIs/paths, TeX specials,
control characters, non-ASCII text)."""

from __future__ import annotations

import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assistant.library.export import paper_to_bibtex
from assistant.library.formats import paper_to_ris, papers_to_csljson
from assistant.library.importers.bibtex import parse_bibtex_text
from assistant.library.importers.csljson import parse_csljson_text
from assistant.library.importers.ris import parse_ris_text
from assistant.library.models import Paper
from assistant.library.normalize import clean_text, format_name, normalize_doi, split_keywords

_TEXT = string.ascii_letters + string.digits + " {}%$#_~&^.,;:!?'()[]-+/" + "éüßçøłЖ中"
_CONTROL = "\x00\x07\x08\x1b\x7f"
words = st.text(alphabet=_TEXT + _CONTROL, min_size=1, max_size=40)
keyword = st.text(alphabet=_TEXT.replace(",", "").replace(";", ""), min_size=1, max_size=20)
url_tail = st.text(alphabet=string.ascii_letters + string.digits + "{}%_~-./?=&#", max_size=20)


def _clean(text: str) -> str:
    """What the importers store for a field value (the library never holds raw text)."""
    return clean_text(text)


@st.composite
def papers(draw) -> Paper:
    title = _clean(draw(words))
    name = st.tuples(
        st.text(alphabet=string.ascii_letters + "éüßł", min_size=1, max_size=12),
        st.text(alphabet=string.ascii_letters + "éüß. ", min_size=1, max_size=12),
    )
    people = [format_name(f"{_clean(a)}, {_clean(b)}") for a, b in draw(st.lists(name, max_size=4))]
    people = [p for p in people if p.strip(", ") and "," in p and p.split(",")[1].strip()]
    odd = draw(st.text(alphabet="0123456789.{}()-_;<>", max_size=10))
    doi = normalize_doi(f"10.1145/{draw(st.integers(0, 9999))}{odd}{draw(st.integers(0, 9))}")
    return Paper(
        citekey="k" + draw(st.text(alphabet=string.ascii_lowercase + string.digits, max_size=8)),
        entry_type=draw(st.sampled_from(["article", "inproceedings", "book"])),
        title=title,
        authors=people,
        year=draw(st.one_of(st.none(), st.integers(1900, 2030))),
        venue=_clean(draw(st.one_of(st.just(""), words))),
        doi=doi,
        url=draw(st.one_of(st.none(), url_tail.map(lambda t: "https://example.org/" + t))),
        abstract=_clean(draw(st.one_of(st.just(""), words))),
        # a keyword holding "," or ";" cannot survive any "a, b" keyword list: not generated
        keywords=split_keywords([_clean(w) for w in draw(st.lists(keyword, max_size=3))]),
        extra={k: v for k, v in {"note": _clean(draw(words))}.items() if v},
    )


def _fields(p: Paper, names) -> dict:
    return {n: getattr(p, n) for n in names}


_CORE = ("title", "authors", "year", "venue", "doi", "url", "abstract", "keywords")
_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(papers())
def test_bibtex_round_trip(paper):
    if not paper.title:
        return
    parsed = parse_bibtex_text(paper_to_bibtex(paper), "rt.bib")
    assert not parsed.issues, parsed.issues
    (rec,) = parsed.records
    names = (*_CORE, "citekey", "entry_type", "extra")
    assert _fields(rec.paper, names) == _fields(paper, names)


@_SETTINGS
@given(papers())
def test_ris_round_trip(paper):
    if not paper.title:
        return
    parsed = parse_ris_text(paper_to_ris(paper) + "\n", "rt.ris")
    (rec,) = parsed.records
    assert _fields(rec.paper, _CORE) == _fields(paper, _CORE)


@_SETTINGS
@given(papers())
def test_csljson_round_trip(paper):
    if not paper.title:
        return
    parsed = parse_csljson_text(papers_to_csljson([paper]), "rt.json")
    (rec,) = parsed.records
    assert _fields(rec.paper, _CORE) == _fields(paper, _CORE)
