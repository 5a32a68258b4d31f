"""Citation markers, their resolution, sentence splitting and text repair."""

from __future__ import annotations

import pytest

from assistant.documents.markers import find_markers, resolve_markers, strip_markers
from assistant.documents.model import Reference
from assistant.documents.sentences import sentences
from assistant.documents.text import Dehyphenator, repair_ligature_glyphs


def labels(text, **kw):
    return [(m.kind, m.labels) for m in find_markers(text, **kw)]


def test_numeric_markers_lists_and_ranges():
    assert labels("as shown [3], [3, 7] and [40–42].") == [
        ("numeric", ["3"]),
        ("numeric", ["3", "7"]),
        ("numeric", ["40", "41", "42"]),
    ]
    assert labels("methods [11, 17, 19–23, 28–30].")[0][1] == [
        "11",
        "17",
        "19",
        "20",
        "21",
        "22",
        "23",
        "28",
        "29",
        "30",
    ]


def test_numeric_markers_reject_intervals_and_out_of_range():
    assert labels("scores in [0, 1] are normalised") == []
    assert labels("see [57]", max_number=30) == []


def test_superscript_markers_need_a_reference_list():
    assert labels("as shown before²˒³ in", max_number=10) == [("superscript", ["2", "3"])]
    assert labels("as shown before²", max_number=None) == []


def test_author_year_markers():
    found = labels("This was shown (Smith et al., 2020; Lee 2019) and by Chen and Wu (2018).")
    assert found == [
        ("author-year", ["Smith et al. 2020", "Lee 2019"]),
        ("author-year", ["Chen and Wu 2018"]),
    ]
    assert labels("(e.g., Smith, 2020a)") == [("author-year", ["Smith 2020a"])]


def test_latex_and_pandoc_markers():
    text = r"As in~\citep[p.~3]{smith2020,lee19} and \citet{chen}. See [@doe2021; -@roe2019, p. 4]."
    assert labels(text, kinds=("latex", "pandoc")) == [
        ("latex", ["smith2020", "lee19"]),
        ("latex", ["chen"]),
        ("pandoc", ["doe2021", "roe2019"]),
    ]


def test_resolution_numeric_and_author_year():
    refs = [
        Reference(raw="", number=1, authors=["Smith, John", "Doe, Ann"], year=2020),
        Reference(raw="", number=2, authors=["Lee, Kim"], year=2019),
        Reference(raw="", number=3, authors=["Smith, John"], year=2020),
        Reference(raw="", number=4, authors=["Smith, John", "Roe, Bo"], year=2020),
    ]
    ms = find_markers(
        "[2, 3] and (Lee, 2019) and Smith and Roe (2020) and (Smith et al., 2020b)", max_number=4
    )
    resolve_markers(ms, refs)
    assert [m.references for m in ms] == [[1, 2], [1], [3], [2]]


def test_strip_markers():
    text = "Dense retrieval helps [3, 4]. Others (Smith et al., 2020) disagree."
    assert strip_markers(text, find_markers(text)) == "Dense retrieval helps. Others disagree."


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Smith et al. [4] showed this. It works.", ["Smith et al. [4] showed this.", "It works."]),
        (
            "We use e.g. BM25 and i.e. a baseline. Fig. 3 shows it.",
            ["We use e.g. BM25 and i.e. a baseline.", "Fig. 3 shows it."],
        ),
        (
            "The score is 3.5 times higher. [7] studied logs.",
            ["The score is 3.5 times higher.", "[7] studied logs."],
        ),
        (
            "W. B. Croft proposed it (see Sec. 4). Then we start.",
            ["W. B. Croft proposed it (see Sec. 4).", "Then we start."],
        ),
        ("Is it good? Yes! \\citet{x} says so.", ["Is it good?", "Yes!", "\\citet{x} says so."]),
    ],
)
def test_sentence_splitter(text, expected):
    assert sentences(text) == expected


def test_dehyphenation_uses_document_vocabulary():
    d = Dehyphenator({"evaluation", "query", "based", "state", "art"})
    assert (
        d.join(["an evalua-", "tion of", "query-", "based", "and state-of-the-", "art models"])
        == "an evaluation of query-based and state-of-the-art models"
    )
    assert d.join(["non-", "negligible"]) == "non-negligible"


def test_ligature_glyph_repair():
    fixed = repair_ligature_glyphs(
        "Te use of gaze paterns. Qery Term. Qi He and Ten others", {"query"}, {"ten"}
    )
    assert fixed == "The use of gaze patterns. Query Term. Qi He and Ten others"
