"""Reference parsing, entry splitting, BibTeX stubs and linking to the library."""

from __future__ import annotations

import pytest

from assistant.documents.model import Reference
from assistant.documents.references import join_lines, parse_reference, split_authors, split_entries
from assistant.library.linking import link_reference, title_score
from assistant.library.models import Paper


def test_acm_style_entry():
    r = parse_reference(
        "Ricardo A. Baeza-Yates and Berthier A. Ribeiro-Neto. 1999. Modern Information Retrieval. "
        "ACM Press / Addison-Wesley.",
        3,
    )
    assert r.number == 3
    assert r.authors == ["Baeza-Yates, Ricardo A.", "Ribeiro-Neto, Berthier A."]
    assert r.year == 1999 and r.title == "Modern Information Retrieval"
    assert r.venue == "ACM Press / Addison-Wesley"


def test_acm_entry_with_question_title_doi_and_particles():
    r = parse_reference(
        "Rianne van den Berg, Thomas N Kipf, and Max Welling. 2017. Where to Stop Reading a Ranked "
        "List?: Threshold Optimization. In Proceedings of SIGIR '09. ACM, 524–531. "
        "https://doi.org/10.1145/1571941.1572031"
    )
    assert r.authors[0] == "van den Berg, Rianne" and r.authors[2] == "Welling, Max"
    assert r.title == "Where to Stop Reading a Ranked List?: Threshold Optimization"
    assert r.venue.startswith("Proceedings of SIGIR")
    assert r.doi == "10.1145/1571941.1572031"


def test_entry_without_authors_and_with_url():
    r = parse_reference(
        "2020. What is Elasticsearch? https://www.elastic.co/what-is/elasticsearch. [Online]"
    )
    assert r.authors == [] and r.year == 2020
    assert r.title.startswith("What is Elasticsearch?")
    assert r.url == "https://www.elastic.co/what-is/elasticsearch"


def test_initials_first_style_year_at_end():
    r = parse_reference(
        "D. Bohus and A. I. Rudnicky. Ravenclaw: Dialog management using hierarchical task "
        "decomposition and an expectation agenda. In Eighth European Conference on Speech "
        "Communication and Technology, 2003."
    )
    assert r.authors == ["Bohus, D.", "Rudnicky, A. I."]
    assert r.title.startswith("Ravenclaw: Dialog management") and r.title.endswith(
        "expectation agenda"
    )
    assert r.year == 2003


def test_arxiv_ids():
    r = parse_reference(
        "Rewon Child, Scott Gray, Alec Radford, and Ilya Sutskever. 2019. Generating Long Sequences "
        "with Sparse Transformers. arXiv:1904.10509 [cs.LG]"
    )
    assert (
        r.arxiv_id == "1904.10509"
        and r.title == "Generating Long Sequences with Sparse Transformers"
    )
    r = parse_reference(
        "Nabiha Asghar. 2016. Automatic Extraction of Causal Relations. CoRR abs/1605.07895 (2016)."
    )
    assert r.arxiv_id == "1605.07895"


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Hal Daumé III and John Smith", ["Daumé III, Hal", "Smith, John"]),
        ("Smith, J., Lee, K.", ["Smith, J.", "Lee, K."]),
        ("Antoine Bordes et al.", ["Bordes, Antoine"]),
        ("Yoshua Bengio and Yann LeCun (Eds.)", ["Bengio, Yoshua", "LeCun, Yann"]),
    ],
)
def test_split_authors(text, expected):
    assert split_authors(text) == expected


def test_split_entries_numbered_and_hanging_indent():
    lines = [
        ("[1] A. Smith. 2019. A title that wraps onto", 54, 54),
        ("the next line. In X.", 64, 54),
        ("[2] B. Jones. 2018. Second. In Y.", 54, 54),
    ]
    assert split_entries(lines) == [
        (1, "A. Smith. 2019. A title that wraps onto the next line. In X."),
        (2, "B. Jones. 2018. Second. In Y."),
    ]
    unnumbered = [
        ("Smith, A. 2019. One", 54, 54),
        ("continued. In X.", 64, 54),
        ("Jones, B. 2018. Two.", 54, 54),
    ]
    assert [n for n, _ in split_entries(unnumbered)] == [None, None]


def test_join_lines_dehyphenates_and_keeps_urls():
    assert join_lines(["Learning to Read-", "ing Lists"]) == "Learning to Reading Lists"
    assert join_lines(["Multi-", "Task Learning"]) == "Multi-Task Learning"
    assert (
        join_lines(["at http://dl.acm.org/citation.cfm?id=", "3060621.3060699 ok"])
        == "at http://dl.acm.org/citation.cfm?id=3060621.3060699 ok"
    )


def test_bibtex_stub():
    r = parse_reference(
        "Qi He, Jian Pei, and Lee Giles. 2010. Context-aware citation recommendation. In Proceedings "
        "of WWW. 421–430."
    )
    bib = r.to_bibtex()
    assert bib.startswith("@inproceedings{he2010context,")
    assert "author = {He, Qi and Pei, Jian and Giles, Lee}" in bib
    assert "booktitle = {Proceedings of WWW}" in bib and "year = {2010}" in bib


class FakeLibrary:
    def __init__(self, papers):
        self.papers = {p.id: p for p in papers}

    def get_by_doi(self, doi):
        return next((p for p in self.papers.values() if p.doi == doi), None)

    def search(self, query, limit=20):
        return list(self.papers.values())[:limit]


def test_linking_by_doi_then_title_and_year():
    lib = FakeLibrary(
        [
            Paper(
                "Content-Based Citation Recommendation",
                id=1,
                doi="10.18653/v1/n18-1022",
                year=2018,
                authors=["Bhagavatula, Chandra"],
            ),
            Paper("Context-aware Citation Recommendation", id=2, year=2010, authors=["He, Qi"]),
            Paper(
                "A Comparative Study of Click Models for Web Search",
                id=3,
                year=2015,
                authors=["Grotov, Artem"],
            ),
            Paper(
                "Context-aware citation recommendation", id=4, year=2004, authors=["Other, Person"]
            ),
        ]
    )
    r = Reference(raw="", doi="10.18653/v1/n18-1022", title="whatever")
    assert link_reference(r, lib).id == 1 and r.match == "doi"
    r = Reference(
        raw="", title="Context-aware citation recommendation", year=2010, authors=["He, Qi"]
    )
    assert link_reference(r, lib).id == 2 and r.match == "title"
    # a shorter title contained in another one is not the same paper; wrong year never links
    assert (
        link_reference(Reference(raw="", title="Click Models for Web Search", year=2015), lib)
        is None
    )
    assert (
        link_reference(
            Reference(raw="", title="Context-aware citation recommendation", year=1990), lib
        )
        is None
    )


def test_title_score_subtitle_dropped():
    ref = Reference(raw="", title="Where to Stop Reading a Ranked List?")
    paper = Paper(
        "Where to Stop Reading a Ranked List?: Threshold Optimization Using Truncated Score Distributions"
    )
    assert title_score(ref, paper) >= 92


def test_split_entries_by_vertical_gaps():
    """natbib/plainnat style: no labels, no hanging indent, entries separated by extra space."""
    lines = [
        ("Smith, A. (2019). A title that", 54, 54, None),
        ("wraps. In X.", 54, 54, 11.0),
        ("Jones, B. (2018). Second.", 54, 54, 16.0),
        ("Lee, C. (2017). Third", 54, 54, 16.0),
        ("one. In Z.", 54, 54, 11.0),
    ]
    assert split_entries(lines) == [
        (None, "Smith, A. (2019). A title that wraps. In X."),
        (None, "Jones, B. (2018). Second."),
        (None, "Lee, C. (2017). Third one. In Z."),
    ]


def test_bibtex_stub_is_written_by_the_library_writer_and_reads_back():
    """The stub goes through the export's writer (assistant/bibwriter.py): TeX specials and
    braces are escaped, so the entry parses back to the same title, authors and note."""
    from assistant.library.importers.bibtex import parse_bibtex_text

    raw = (
        "Ann Smith and Bo Lee. 2020. Costs & benefits of {braces} at 50% in C_1 #2. "
        "In Proceedings of SIGIR. 1–10."
    )
    r = parse_reference(raw)
    bib = r.to_bibtex()
    assert r"Costs \& benefits of \{braces\} at 50\% in C\_1 \#2" in bib
    parsed = parse_bibtex_text(bib + "\n", "stub.bib")
    assert not parsed.issues, parsed.issues
    (rec,) = parsed.records
    assert rec.paper.title == "Costs & benefits of {braces} at 50% in C_1 #2"
    assert rec.paper.authors == ["Smith, Ann", "Lee, Bo"]
    assert rec.paper.extra["note"] == f"Parsed from: {r.raw}"
    assert rec.paper.citekey == "smith2020costs" and rec.paper.entry_type == "inproceedings"
