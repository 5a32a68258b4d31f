"""The service's writing operations: the query for a text or an editor selection, a citation to
insert (as data the GUI applies), and the analysis of a manuscript. No Qt, no click."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from assistant.documents import textops
from assistant.documents.abbreviations import find_abbreviations
from assistant.documents.draft import parse_draft
from assistant.documents.manuscript import (
    DEFAULT_THRESHOLD,
    MissingCitation,
    find_missing_citations,
    sentence_neighbours,
)
from assistant.documents.markers import strip_latex
from assistant.documents.model import Document
from assistant.library.bibfile import (
    BibChange,
    apply_bib_change,
    entry_number,
    plan_append,
    read_bib,
)
from assistant.library.bibsync import BibSyncReport, sync_bib
from assistant.library.linking import link_references
from assistant.library.models import Paper
from assistant.library.store import Library
from assistant.retrieval.query import Query
from assistant.service.engine import Service

log = logging.getLogger(__name__)


# --- queries ---------------------------------------------------------------------------------
def query_for_text(
    text: str,
    mode: str = "auto",
    title: str | None = None,
    abstract: str | None = None,
    authors: Sequence[str] = (),
    year: int | None = None,
) -> Query:
    """The query for a passage (CLI ``recommend TEXT``); ``auto`` is resolved by the one rule,
    ``retrieval.query.detect_mode``. Raises ``EmptyQueryError`` when there is nothing to search."""
    query = Query(
        text=text or "",
        mode=mode,
        title=title or None,
        abstract=abstract or None,
        authors=tuple(authors),
        year=year,
    )
    query.parts()  # an empty query fails here, before any model loads
    return query


def query_for_selection(
    document: str,
    sel_start: int,
    sel_end: int,
    mode: str = "auto",
    style: str = textops.NUMERIC,
    meta: tuple[str, str] | None = None,
    cited_ids: tuple[int, ...] = (),
    authors: Sequence[str] | None = None,
) -> tuple[Query, textops.QuerySpec]:
    """The query for an editor's selection (or the sentence at the cursor), as the GUI sends it.

    ``mode="auto"`` picks the mode with the same rule as the CLI; a selection the user would send
    with ``recommend TEXT`` gets the same query. ``meta`` is the manuscript's (title, abstract)
    (read from the text when None), ``authors`` its authors (``\\author{}`` / YAML ``author:``
    when None). A local query carries the paragraph's other sentences as context; a global one
    is the title + abstract when the manuscript has them.
    """
    spec = textops.query_at(document, sel_start, sel_end)
    if mode != "auto":
        spec = textops.context_for_mode(document, spec, mode)
    title, abstract = meta if meta is not None else textops.manuscript_meta(document, style)
    p_start, p_end = textops.paragraph_bounds(document, spec.start)
    context = None
    if spec.mode == "local":  # the neighbouring sentences of the paragraph
        context = (document[p_start : spec.start] + " " + document[spec.end : p_end]).strip()
    text = spec.text if spec.mode != "global" or not (title or abstract) else ""
    if style == textops.LATEX:  # \section{Method}, \begin{itemize}, \label{..}: not prose
        text = strip_latex(text)
        context = strip_latex(context) if context else context
    query = Query(
        text=text,
        mode=spec.mode,
        title=title or None,
        abstract=abstract or None,
        context=context or None,
        cited_ids=tuple(cited_ids),
        abbreviation_source=document,  # read when the query runs, off the UI thread
        authors=tuple(
            authors if authors is not None else textops.manuscript_authors(document, style)
        ),
    )
    return query, spec


# --- citations -------------------------------------------------------------------------------
@dataclass
class CitationInsert:
    """What inserting one citation changes, as data the caller applies: the manuscript ``edit``
    (``textops.apply_edit``) and the ``.bib`` change (``apply_bib_change``; may write nothing
    when the entry is already there)."""

    key: str
    edit: textops.Edit
    bib: BibChange


def plan_citation(
    service: Service,
    paper: Paper,
    document: str,
    sel_start: int,
    sel_end: int,
    style: str,
    bib_path: Path,
    command: str = "\\cite",
    markdown_form: str = textops.PANDOC_MERGED,
    pending: Sequence[str] = (),
) -> CitationInsert:
    """How to cite ``paper`` at the selection: its entry for ``bib_path`` (deduplicated by
    key/DOI, renamed on a clash) and the marker edit. Nothing is written.

    Raises ``BibFileError`` when the ``.bib`` cannot be read or the entry cannot be added safely.
    """
    change = plan_append(bib_path, service.paper_bibtex(paper))
    number = None
    if style == textops.NUMERIC:
        number = entry_number(bib_path, change.key) if bib_path.exists() else None
        if number is None:  # appended after the file's entries and the ones queued before it
            queued = list(pending)
            at = queued.index(change.key) if change.key in queued else len(queued)
            number = (len(read_bib(bib_path)) if bib_path.exists() else 0) + at + 1
    edit = textops.citation_edit(
        document,
        sel_start,
        sel_end,
        change.key,
        style,
        number,
        command=command,
        markdown_form=markdown_form,
    )
    return CitationInsert(change.key, edit, change)


def write_pending_entries(
    bib_path: Path, pending: dict[str, str], document: str, style: str
) -> list[str]:
    """On save: append the queued entries (``key -> BibTeX``) whose keys the manuscript still
    cites; returns the keys written (an undone Insert leaves its entry out)."""
    cited = {k for span in textops.citation_spans(document, style) for k in span.keys}
    if style == textops.NUMERIC:
        existing = len(read_bib(bib_path)) if bib_path.exists() else 0
        numbers = {key: str(existing + i) for i, key in enumerate(pending, start=1)}
        cited = {key for key, n in numbers.items() if n in cited}
    written = []
    for key, entry in pending.items():
        if key in cited:
            apply_bib_change(plan_append(bib_path, entry))
            written.append(key)
    return written


def sync_manuscript_bib(
    service: Service,
    bib_path: Path,
    document: str,
    style: str,
    pending: dict[str, str] | None = None,
    library: Library | None = None,
) -> BibSyncReport:
    """On save (GUI) or on request (language server): the ``.bib`` contract of
    :mod:`assistant.library.bibsync` -- every cited key the library knows gets its entry, the
    app's entries for keys no longer cited go, unknown keys are reported. ``pending``: entries
    queued by this session's inserts (``key -> BibTeX``, e.g. a key renamed on a clash);
    ``library``: the connection to read (default :meth:`Service.reader`)."""
    pending = dict(pending or {})
    if style == textops.NUMERIC:  # numbers, not keys: only the queued entries still cited
        added = write_pending_entries(bib_path, pending, document, style) if pending else []
        return BibSyncReport(Path(bib_path), added=added, written=bool(added))
    reader = library or service.reader()

    def lookup(key: str) -> str | None:
        if key in pending:
            return pending[key]
        paper = reader.get_by_citekey(key)
        return service.paper_bibtex(paper) if paper is not None else None

    return sync_bib(bib_path, document, style, lookup, protect=(service.db_path,))


def pdf_exclusions(service: Service, doc: Document) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Library ids of a manuscript PDF itself (never recommended to it) and of the papers its
    reference list cites (hidden by "Hide cited"); links the references on the way."""
    reader = service.reader()
    self_ids = tuple(reader.same_work_ids(doc.title, doi=doc.doi, year=doc.year))
    if doc.references and any(r.paper_id is None for r in doc.references):
        link_references(doc.references, reader)
    cited = tuple(dict.fromkeys(r.paper_id for r in doc.references if r.paper_id is not None))
    return self_ids, cited


# --- manuscripts -----------------------------------------------------------------------------
@dataclass
class ManuscriptAnalysis:
    """A parsed manuscript and the sentences that read as needing a citation."""

    document: Document
    missing: list[MissingCitation]
    notes: list[str] = field(default_factory=list)


def read_manuscript(
    path: Path | str, fmt: str = "auto", time_limit_s: float | None = None
) -> Document:
    """Parse a PDF, LaTeX, Markdown or text manuscript (``DocumentError`` names the problem);
    ``time_limit_s`` caps PDF parsing (default: the PDF reader's)."""
    path = Path(path)
    if fmt == "pdf" or (fmt == "auto" and path.suffix.lower() == ".pdf"):
        from assistant.documents.pdf import parse_pdf  # PyMuPDF takes ~2 s to import: on use

        return parse_pdf(path) if time_limit_s is None else parse_pdf(path, time_limit_s)
    return parse_draft(path, None if fmt == "auto" else fmt)


def analyse_manuscript(
    service: Service | None,
    document: Document | str,
    *,
    fmt: str | None = None,
    recommend: bool = True,
    k: int = 5,
    threshold: float | None = None,
    link: bool = True,
    cancelled: Callable[[], bool] | None = None,
) -> ManuscriptAnalysis:
    """Find the sentences of ``document`` (a parsed Document or a draft's text in ``fmt``) that
    need a citation; with a ``service``, link its references to the library and suggest ``k``
    papers for each from the last committed index (never waiting for a job)."""
    doc = document if isinstance(document, Document) else parse_draft(document, fmt=fmt)
    notes: list[str] = []
    recommender = None
    if service is not None:
        if link and doc.references:
            link_references(doc.references, service.reader())
        if recommend:
            try:
                recommender = service.recommender
            except Exception as exc:  # missing index / models: explain, keep going
                notes.append(f"no recommendations: recommender unavailable: {exc}")
    missing = find_missing_citations(
        doc, threshold=DEFAULT_THRESHOLD if threshold is None else threshold
    )
    if recommender is not None and missing:
        recommend_for_missing(doc, missing, recommender, k=k, cancelled=cancelled)
    return ManuscriptAnalysis(doc, missing, notes)


def recommend_for_missing(
    doc: Document,
    missing: list[MissingCitation],
    recommender,
    k: int = 5,
    max_recommend: int = 40,
    cancelled: Callable[[], bool] | None = None,
) -> None:
    """Fill the ``recommendations`` of the ``max_recommend`` highest-scoring ``missing`` sentences
    with the ``recommender``'s top-``k`` papers (a :class:`~assistant.retrieval.pipeline.Recommender`),
    excluding papers the document already cites and the manuscript itself."""
    neighbours = sentence_neighbours(doc)
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
        if cancelled is not None and cancelled():
            break
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
