"""Missing citations: sentences of a manuscript that read as needing a citation but have none.

Suggesting papers for them is the service's (``service.writing.analyse_manuscript``): this
layer reads documents and knows no retrieval."""

from __future__ import annotations

import logging
import re
from pathlib import Path

from assistant.documents.citeworthiness import default_scorer
from assistant.documents.draft import parse_draft, sentence_plain_text
from assistant.documents.model import Document, MissingCitation

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
    threshold: float = DEFAULT_THRESHOLD,
    scorer=None,
    fmt: str | None = None,
    ignore_markers: bool = False,
    skip_own: bool = True,
) -> list[MissingCitation]:
    """Sentences without a citation marker scoring >= ``threshold``, in document order.

    Never flagged: the abstract, sentences stating the paper's own contribution
    (``skip_own``; "we propose", "our method", "In this paper"), sections such as
    acknowledgements. ``ignore_markers`` scores cited sentences too (evaluation: does the
    finder flag the sentences the authors did cite?).

    The service suggests papers for them (:func:`assistant.service.analyse_manuscript`, with
    the query and the exclusions of every other face).
    """
    doc = load_document(document_or_path, fmt)
    scorer = scorer or default_scorer()
    candidates = []
    abstract = _squash(doc.abstract) if skip_own else ""
    for section in doc.sections:
        if _SKIP_SECTIONS.search(section.heading or ""):
            continue
        if skip_own and re.match(r"\W*abstract\b", section.heading or "", re.IGNORECASE):
            continue
        for paragraph in section.paragraphs:
            for sent in paragraph.sentences:
                if sent.markers and not ignore_markers:
                    continue
                if skip_own and (
                    own_contribution(sent.text) or (abstract and _squash(sent.text) in abstract)
                ):
                    continue
                plain = sentence_plain_text(sent, doc.format)
                if len(plain.split()) < 5:
                    continue
                candidates.append((sent, plain, section.heading))
    scores = scorer.score([plain for _, plain, _ in candidates]) if candidates else []
    return [
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


def _squash(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", (text or "").lower())
