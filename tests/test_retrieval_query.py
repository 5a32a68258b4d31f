"""Query parsing: marker stripping, mode detection, focus/support construction."""

import pytest

from assistant.documents.sentences import sentences as split_sentences
from assistant.retrieval.query import (
    EmptyQueryError,
    Query,
    detect_mode,
    strip_citation_markers,
)


@pytest.mark.parametrize(
    "raw, expected",
    [
        (
            "Early studies focused on needs [12] and approaches [6].",
            "Early studies focused on needs and approaches.",
        ),
        ("Ranges [3-5], lists [3, 4], mixed [12, 14–16] go.", "Ranges, lists, mixed go."),
        ("BM25 (Robertson et al., 2009) is strong.", "BM25 is strong."),
        ("Two refs (Smith and Jones 2019a; Lee, 2018) here.", "Two refs here."),
        ("As (e.g., Lee, 2018) shows.", "As shows."),
        ("Smith et al. (2020) showed it.", "Smith et al. showed it."),
        ("LaTeX \\citep[p.~3]{rob09} and~\\cite{a,b} too.", "LaTeX and too."),
        ("Keeps (Table 2) and 2019 and [x].", "Keeps (Table 2) and 2019 and [x]."),
    ],
)
def test_strip_markers(raw, expected):
    assert strip_citation_markers(raw) == expected


def test_split_sentences_keeps_abbreviations():
    sents = split_sentences(
        "We use BM25 (Robertson et al. 2009). It is good. E.g. Smith et al. 2020 shows it."
    )
    assert sents == [
        "We use BM25 (Robertson et al. 2009).",
        "It is good.",
        "E.g. Smith et al. 2020 shows it.",
    ]
    assert split_sentences("") == []


def test_detect_mode():
    assert detect_mode("One sentence [3].") == "local"
    assert detect_mode("One. Two. Three sentences here.") == "paragraph"
    assert detect_mode("", title="A title") == "global"


def test_parts_per_mode():
    q = Query(
        "Dense retrieval [3] works.", mode="local", title="T", abstract="A", context="Before."
    )
    parts = q.parts()
    assert (parts.mode, parts.focus) == ("local", "Dense retrieval works.")
    assert parts.support == "Before. T A"
    assert Query("x [1]", mode="local", title="T", enhance=False).parts().support == ""
    g = Query("", mode="auto", title="T", abstract="A").parts()
    assert (g.mode, g.focus, g.support) == ("global", "T A", "")
    p = Query("S1. S2. S3.", title="T").parts()
    assert (p.mode, p.support) == ("paragraph", "T")


def test_empty_query_message():
    with pytest.raises(EmptyQueryError, match="empty"):
        Query("  [12] ").parts()
    with pytest.raises(ValueError, match="unknown query mode"):
        Query("x", mode="sideways")
