"""Missing citations: sentences of a manuscript that read as needing a citation but have none,
each with the top recommendations of the retrieval pipeline when one is given."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from assistant.documents.abbreviations import find_abbreviations
from assistant.documents.citeworthiness import default_scorer
from assistant.documents.draft import parse_draft, sentence_plain_text
from assistant.documents.model import Document, MissingCitation
from assistant.progress import check_cancelled

__all__ = ["find_missing_citations", "load_document", "parse_draft"]

log = logging.getLogger(__name__)

DEFAULT_THRESHOLD = 0.5
_SKIP_SECTIONS = re.compile(
    r"acknowledg|funding|author contributions|conflicts? of interest|"
    r"data availability",
    re.IGNORECASE,
)
#: The paper's own contribution ("we propose", "our method", "In this paper"): it needs no
#: citation, so the finder never flags it.
OWN_WORK_RE = re.compile(
    r"\b(?:in\s+)?this\s+(?:paper|work|article|study|thesis|section|chapter)\b"
    r"|\bhere,?\s+we\b"
    r"|\bwe\s+(?:(?:also|further|then|first|now|additionally)\s+)?"
    r"(?:propose|present|introduce|describe|develop|design|devise|build|implement|evaluate|"
    r"conduct|perform|report|release|make|collect|use|employ|adopt|define|formulate|"
    r"extend|investigate|study|explore|examine|analy[sz]e|compare|find|found|observe|show|"
    r"demonstrate|argue|focus|address|contribute|train|test|measure|run|apply|consider)\b"
    r"|\bour\s+(?:\w+\s+)?(?:method|approach|model|system|framework|work|results?|"
    r"contributions?|experiments?|findings|analysis|study|proposal|technique|algorithm|"
    r"dataset|implementation|evaluation|pipeline|architecture|solution|goal|aim)\b",
    re.IGNORECASE,
)


def own_contribution(sentence: str) -> bool:
    """The sentence states the paper's own work (never flagged as missing a citation)."""
    return bool(OWN_WORK_RE.search(sentence or ""))


def load_document(document_or_path: Document | str | Path, fmt: str | None = None) -> Document:
    """A Document from a parsed document, a PDF or draft ``Path``, or draft text (a ``str``)."""
    if isinstance(document_or_path, Document):
        return document_or_path
    # a Path is a file; a str is always the draft's text (never tried as a file name)
    if isinstance(document_or_path, Path) and document_or_path.suffix.lower() == ".pdf":
        from assistant.documents.pdf import parse_pdf

        return parse_pdf(document_or_path)
    return parse_draft(document_or_path, fmt)


def find_missing_citations(
    document_or_path: Document | str | Path,
    recommender=None,
    threshold: float = DEFAULT_THRESHOLD,
    k: int = 5,
    max_recommend: int = 40,
    scorer=None,
    fmt: str | None = None,
    cancelled: Callable[[], bool] | None = None,
    ignore_markers: bool = False,
    skip_own: bool = True,
) -> list[MissingCitation]:
    """Sentences without a citation marker scoring >= ``threshold``, in document order.

    Never flagged: the abstract, sentences stating the paper's own contribution
    (``skip_own``; "we propose", "our method", "In this paper"), sections such as
    acknowledgements. ``ignore_markers`` scores cited sentences too (evaluation: does the
    finder flag the sentences the authors did cite?).

    With a ``recommender`` (:class:`assistant.retrieval.pipeline.Recommender`), the
    ``max_recommend`` highest-scoring ones get its top-``k`` papers, excluding papers the
    document already cites.
    """
    doc = load_document(document_or_path, fmt)
    scorer = scorer or default_scorer()
    candidates = []
    neighbours: dict[tuple[int, str], str] = {}
    abstract = _squash(doc.abstract) if skip_own else ""
    for section in doc.sections:
        if _SKIP_SECTIONS.search(section.heading or ""):
            continue
        if skip_own and re.match(r"\W*abstract\b", section.heading or "", re.IGNORECASE):
            continue
        for paragraph in section.paragraphs:
            for i, sent in enumerate(paragraph.sentences):
                if sent.markers and not ignore_markers:
                    continue
                if skip_own and (
                    own_contribution(sent.text) or (abstract and _squash(sent.text) in abstract)
                ):
                    continue
                near = [
                    paragraph.sentences[j].text
                    for j in (i - 1, i + 1)
                    if 0 <= j < len(paragraph.sentences)
                ]
                neighbours[(sent.paragraph, sent.text)] = " ".join(near)
                plain = sentence_plain_text(sent, doc.format)
                if len(plain.split()) < 5:
                    continue
                candidates.append((sent, plain, section.heading))
    scores = scorer.score([plain for _, plain, _ in candidates]) if candidates else []
    missing = [
        MissingCitation(
            sentence=sent.text,
            section=heading,
            score=round(sc.probability, 4),
            reasons=sc.reasons,
            paragraph=sent.paragraph,
            start=sent.start,
            end=sent.end,
        )
        for (sent, _, heading), sc in zip(candidates, scores)
        if sc.probability >= threshold
    ]
    if recommender is not None and missing:
        _recommend(doc, missing, recommender, k, max_recommend, cancelled, neighbours)
    return missing


def _squash(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", (text or "").lower())


def _recommend(
    doc: Document,
    missing: list[MissingCitation],
    recommender,
    k: int,
    max_recommend: int,
    cancelled,
    neighbours: dict[tuple[int, str], str],
) -> None:
    from assistant.retrieval.query import Query

    cited = {r.paper_id for r in doc.references if r.paper_id is not None}
    library = getattr(recommender, "library", None)
    if library is not None and hasattr(
        library, "same_work_ids"
    ):  # the manuscript itself, by DOI or title
        cited.update(library.same_work_ids(doc.title, doi=doc.doi, year=doc.year))
    config = getattr(recommender, "config", None)
    if config is not None:
        try:
            config = replace(
                config, k=k, exclude_ids=tuple(set(getattr(config, "exclude_ids", ())) | cited)
            )
        except TypeError:
            config = None
    ranked = sorted(missing, key=lambda m: -m.score)[:max_recommend]
    full_text = " ".join([doc.title, doc.abstract] + [s.text for s in doc.sentences()])
    defined = tuple(find_abbreviations(full_text).items())
    for item in ranked:
        check_cancelled(cancelled, "manuscript analysis cancelled")
        try:
            context = neighbours.get((item.paragraph, item.sentence), "")
            query = Query(
                _query_text(item.sentence, doc.format),
                mode="local",
                title=doc.title or None,
                abstract=doc.abstract or None,
                context=_query_text(context, doc.format) or None,
                cited_ids=tuple(sorted(cited)),
                year=doc.year,
                abbreviations=defined,
            )
            result = (
                recommender.recommend(query, config=config)
                if config is not None
                else recommender.recommend(query)
            )
        except Exception as exc:  # one failed query must not lose the whole list
            log.warning("recommendation failed for %r: %s", item.sentence[:60], exc)
            continue
        item.recommendations = [
            {
                "paper_id": rec.paper.id,
                "title": rec.paper.title,
                "year": rec.paper.year,
                "doi": rec.paper.doi,
                "citekey": rec.paper.citekey,
                "score": round(float(rec.score), 4),
                "intent": rec.intent,
            }
            for rec in result.items[:k]
        ]


def _query_text(sentence: str, fmt: str) -> str:
    if fmt == "latex":
        from assistant.documents.draft import _delatex

        return _delatex(sentence)
    return sentence
