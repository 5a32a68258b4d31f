"""Draft reader (LaTeX/Markdown/text), missing-citation finder and the manuscript command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from assistant.cli import main
from assistant.cli.manuscript import manuscript
from assistant.documents.citeworthiness import CueScorer, LearnedScorer, default_scorer
from assistant.documents.draft import parse_draft
from assistant.documents.manuscript import find_missing_citations

FIX = Path(__file__).parent / "fixtures" / "documents"


def _check_offsets(doc, source: str) -> None:
    for s in doc.sentences():
        assert source[s.start : s.end] == s.text


def test_latex_draft():
    src = (FIX / "draft.tex").read_text()
    doc = parse_draft(FIX / "draft.tex")
    assert doc.format == "latex"
    assert doc.title == "Neural Re-ranking for Citation Recommendation"
    assert doc.abstract == "We study citation recommendation with a two-stage pipeline."
    assert [s.heading for s in doc.sections] == ["Introduction", "Related Work"]
    _check_offsets(doc, src)
    cited = [(m.kind, m.labels) for s in doc.sentences() for m in s.markers]
    assert cited == [
        ("latex", ["he2010context", "bhagavatula2018content"]),
        ("latex", ["robertson2009bm25"]),
    ]
    texts = [s.text for s in doc.sentences()]
    assert not any("nothing" in t or "mathbf" in t for t in texts)  # comments and equations masked


def test_markdown_draft_from_text():
    src = (FIX / "draft.md").read_text()
    doc = parse_draft(src, fmt="markdown")
    assert doc.title == "Citation Recommendation: A Draft"
    assert [s.heading for s in doc.sections] == ["Introduction", "Related Work"]
    _check_offsets(doc, src)
    keys = [m.labels for s in doc.sentences() for m in s.markers]
    assert keys == [
        ["he2010context", "bhagavatula2018content"],
        ["jeong2020"],
    ]  # code block ignored


def test_plain_text_draft_with_reference_list():
    doc = parse_draft(FIX / "draft.txt")
    assert doc.title == "Citation Contexts in Practice"
    assert [r.number for r in doc.references] == [1, 2, 3, 4]
    resolved = {
        s.text[:20]: [doc.references[i].number for i in s.reference_indices()]
        for s in doc.citing_sentences()
    }
    assert resolved == {
        "Citation recommendat": [1, 2],
        "Smith et al. (2019) ": [3],
        "Previous studies hav": [4, 3],
    }


@pytest.mark.parametrize("scorer", [CueScorer(), None])
def test_missing_citations_in_drafts(scorer):
    for name in ("draft.tex", "draft.md", "draft.txt"):
        missing = find_missing_citations(FIX / name, scorer=scorer)
        sentences = [m.sentence for m in missing]
        assert any(s.startswith("It has been shown that dense retrieval") for s in sentences), (
            name,
            sentences,
        )
        assert not any(
            "We describe our own method" in s or "described in Section 3" in s or "We thank" in s
            for s in sentences
        ), (name, sentences)
        for m in missing:
            assert 0.5 <= m.score <= 1.0 and m.start is not None


def test_shipped_scorer_is_learned_and_ranks_claims_higher():
    scorer = default_scorer()
    assert isinstance(scorer, LearnedScorer)
    claim, own = scorer.score(
        [
            "Previous studies have shown that neural rankers outperform BM25 on many benchmarks.",
            "We report the results of our method in Table 3.",
        ]
    )
    assert claim.probability > 0.5 > own.probability


class FakeService:
    """The part of ``Service`` manuscript analysis uses: a real library, a recorded recommend."""

    def __init__(self, library):
        self.library = library
        self.queries = []
        self.recommender = object()

    def reader(self):
        return self.library

    def default_config(self, **overrides):
        from assistant.retrieval.pipeline import PipelineConfig

        return PipelineConfig(**overrides)

    def recommend(self, query, config=None, cancelled=None, *, request=None):
        from types import SimpleNamespace

        from assistant.library.models import Paper
        from assistant.retrieval.pipeline import Recommendation

        self.queries.append((query, request.apply(self.default_config())))
        paper = Paper(
            "Dense Passage Retrieval", id=7, year=2020, doi="10.1/dpr", citekey="karpukhin2020dense"
        )
        rec = Recommendation(paper=paper, score=0.9, intent="background")
        return SimpleNamespace(items=[rec])


def test_missing_citations_get_typed_suggestions_from_the_selection_query(tmp_path):
    """Manuscript analysis asks the service with the editor's query for each flagged sentence
    (LaTeX stripped before the mode is chosen; the manuscript itself and what it cites out)."""
    from assistant.library.models import Paper
    from assistant.library.store import Library
    from assistant.service import (
        SuggestedPaper,
        analyse_manuscript,
        excluded_ids,
        query_for_selection,
        textops,
    )

    src = (FIX / "draft.tex").read_text()
    with Library(tmp_path / "lib.sqlite") as library:
        own = library.add_paper(
            Paper("Neural re-ranking for citation recommendation", authors=["Doe, J."])
        ).id
        other = library.add_paper(
            Paper("Neural ranking for citation recommendation", authors=["Roe, R."])
        ).id
        service = FakeService(library)
        analysis = analyse_manuscript(service, src, fmt="latex", k=3)
        assert analysis.missing and all(
            isinstance(m.recommendations[0], SuggestedPaper)
            and m.recommendations[0].title == "Dense Passage Retrieval"
            for m in analysis.missing
        )
        assert len(service.queries) == len(analysis.missing)
        for item, (query, config) in zip(
            sorted(analysis.missing, key=lambda m: -m.score), service.queries
        ):
            same, _ = query_for_selection(src, item.start, item.end, "auto", textops.LATEX)
            assert query == same and "\\" not in query.text and query.mode == "local"
            assert config.k == 3 and config.exclude_cited
            excluded = excluded_ids(library, query, config)
            assert own in excluded and other not in excluded


def test_manuscript_cli_json_on_drafts_and_pdf(tmp_path):
    runner = CliRunner()
    for name in ("draft.tex", "draft.md", "draft.txt"):
        result = runner.invoke(
            manuscript,
            [str(FIX / name), "--json", "--no-recommend", "--db", str(tmp_path / "none.sqlite")],
        )
        assert result.exit_code == 0, result.output
        data = json.loads(result.output)
        assert data["missing"] and data["sentences"] >= 4 and data["citing_sentences"] >= 1
    bib = tmp_path / "unmatched.bib"
    result = runner.invoke(
        manuscript,
        [
            str(FIX / "draft.txt"),
            "--db",
            str(tmp_path / "none.sqlite"),
            "--unmatched-bib",
            str(bib),
        ],
    )
    assert result.exit_code == 0 and "may need a citation" in result.output
    assert "no recommendations" in result.output and "4 unmatched reference(s)" in result.output
    assert bib.read_text().count("@inproceedings{") == 4


@pytest.mark.slow
def test_manuscript_cli_with_real_recommender(tmp_path):
    """End to end: a small library, its index (builds the default encoder), recommendations per sentence."""
    from assistant.cli.retrieval import index as index_cmd
    from assistant.library.models import Paper
    from assistant.library.store import Library

    db = tmp_path / "lib.sqlite"
    lib = Library(db)
    for title, abstract in [
        (
            "Dense passage retrieval for open-domain question answering",
            "Dense retrieval outperforms BM25.",
        ),
        ("Passage re-ranking with BERT", "BERT cross-encoders re-rank passages; state of the art."),
        ("The probabilistic relevance framework: BM25 and beyond", "The BM25 ranking function."),
    ]:
        lib.add_paper(Paper(title, abstract=abstract, year=2019))
    lib.close()
    runner = CliRunner()
    assert runner.invoke(index_cmd, ["--db", str(db), "-q"]).exit_code == 0
    result = runner.invoke(
        manuscript, [str(FIX / "draft.tex"), "--db", str(db), "--json", "-k", "2"]
    )
    assert result.exit_code == 0, result.output
    missing = json.loads(result.output)["missing"]
    dense = next(
        m for m in missing if m["sentence"].startswith("It has been shown that dense retrieval")
    )
    assert dense["recommendations"][0]["title"].startswith("Dense passage retrieval")


def test_latex_cite_keys_resolve_to_bibitems():
    src = r"""\documentclass{article}
\begin{document}
\section{Intro}
Dense retrieval works \cite{smith19, lee20}. Sparse retrieval was studied before.
\begin{thebibliography}{9}
\bibitem{smith19} J.~Smith and A.~Lee. Dense retrieval for everything. In \emph{Proc. SIGIR}, 2019.
\bibitem{lee20} K.~Lee. Sparse retrieval. \emph{Information Retrieval Journal}, 2020.
\end{thebibliography}
\end{document}
"""
    doc = parse_draft(src)
    assert [(r.key, r.title, r.year) for r in doc.references] == [
        ("smith19", "Dense retrieval for everything", 2019),
        ("lee20", "Sparse retrieval", 2020),
    ]
    [cited] = doc.citing_sentences()
    assert cited.reference_indices() == [0, 1]
    assert doc.references[0].venue == "Proc. SIGIR"


def test_manuscript_cli_refuses_binary_and_empty_files_and_reads_legacy_encodings(tmp_path):
    runner = CliRunner()
    db = ["--db", str(tmp_path / "none.sqlite"), "--no-recommend"]
    (tmp_path / "paper.docx").write_bytes(b"PK\x03\x04\x00\x00" * 64)
    (tmp_path / "empty.tex").write_text("  \n")
    # through the root group, as `assistant manuscript`: a DocumentError is one `Error:` line
    result = runner.invoke(main, ["manuscript", str(tmp_path / "paper.docx"), *db])
    assert (
        result.exit_code == 1
        and "paper.docx: binary file" in result.output
        and ".tex" in result.output
    )
    result = runner.invoke(main, ["manuscript", str(tmp_path / "empty.tex"), *db])
    assert result.exit_code == 1 and "empty.tex: empty file" in result.output
    legacy = tmp_path / "legacy.txt"
    legacy.write_bytes(
        "Caf\u00e9 culture has been studied extensively in sociology [1].\r\n".encode("cp1252")
    )
    doc = parse_draft(legacy)
    first = next(doc.sentences())
    assert "Caf\u00e9 culture" in first.text and first.markers
