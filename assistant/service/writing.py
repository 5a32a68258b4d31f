"""The service's writing operations: the query for a text or an editor selection, a citation to
insert (as data the GUI applies), and the analysis of a manuscript. No Qt, no click."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from assistant.documents import textops
from assistant.documents.draft import parse_draft
from assistant.documents.manuscript import (
    DEFAULT_THRESHOLD,
    MissingCitation,
    find_missing_citations,
)
from assistant.documents.markers import strip_latex
from assistant.documents.model import Document, SuggestedPaper
from assistant.errors import Cancelled
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
from assistant.retrieval.pipeline import RequestOptions
from assistant.retrieval.query import Query, build_query, detect_mode
from assistant.service.chips import chip_texts
from assistant.service.engine import Service
from assistant.service.exclusions import manuscript_cited_ids, own_ids
from assistant.service.queries import query_for_text  # noqa: F401  (re-exported here too)

log = logging.getLogger(__name__)

#: papers suggested per flagged sentence (CLI ``manuscript -k``, the GUI's marks, the LSP)
MANUSCRIPT_K = 5
#: flagged sentences that get suggestions (the likeliest first)
MAX_RECOMMEND = 40


# --- queries ---------------------------------------------------------------------------------
def query_for_selection(
    document: str,
    sel_start: int,
    sel_end: int,
    mode: str = "auto",
    style: str = textops.NUMERIC,
    meta: tuple[str, str] | None = None,
    cited_ids: tuple[int, ...] = (),
    authors: Sequence[str] | None = None,
    *,
    year: int | None = None,
    doi: str | None = None,
) -> tuple[Query, textops.QuerySpec]:
    """The query for an editor's selection (or the sentence at the cursor): the GUI, the
    language server, manuscript analysis and ``recommend --manuscript`` all send this one.

    ``mode="auto"`` picks the mode with the same rule as the CLI, on the selection's prose (a
    LaTeX selection after ``strip_latex``). ``meta`` is the manuscript's (title, abstract) (read
    from the text when None), ``authors`` its authors (``\\author{}`` / YAML ``author:`` when
    None), ``year``/``doi`` what is known of a parsed PDF. A local query carries the paragraph's
    other sentences as context; a global one is the title + abstract when the manuscript has
    them.
    """
    spec = textops.query_at(document, sel_start, sel_end)
    if mode != "auto":
        spec = textops.context_for_mode(document, spec, mode)
    title, abstract = meta if meta is not None else textops.manuscript_meta(document, style)
    latex = style == textops.LATEX  # \section{Method}, \begin{itemize}, \label{..}: not prose
    if mode == "auto":  # the one rule, on what is searched for (not on the raw LaTeX)
        spec.mode = detect_mode(strip_latex(spec.text) if latex else spec.text, title, abstract)
    p_start, p_end = textops.paragraph_bounds(document, spec.start)
    context = None
    if spec.mode == "local":  # the neighbouring sentences of the paragraph
        context = (document[p_start : spec.start] + " " + document[spec.end : p_end]).strip()
    text = spec.text if spec.mode != "global" or not (title or abstract) else ""
    query = build_query(
        text,
        spec.mode,
        latex=latex,
        title=title,
        abstract=abstract,
        context=context,
        cited_ids=cited_ids,
        year=year,
        doi=doi,
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
    reference list cites (hidden by "Hide cited"); links the references on the way (the rule:
    :mod:`assistant.service.exclusions`)."""
    reader = service.reader()
    self_ids = own_ids(reader, doc.title, doc.doi, doc.year)
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
    k: int = MANUSCRIPT_K,
    threshold: float | None = None,
    link: bool = True,
    cancelled: Callable[[], bool] | None = None,
    max_recommend: int = MAX_RECOMMEND,
) -> ManuscriptAnalysis:
    """Find the sentences of ``document`` (a parsed Document or a draft's text in ``fmt``) that
    need a citation; with a ``service``, link its references to the library (``link``) and
    suggest ``k`` papers for each of the ``max_recommend`` likeliest from the last committed
    index (never waiting for a job). Each suggestion list is what the GUI shows for that
    sentence selected in the manuscript: the same query (:func:`query_for_selection`), the same
    exclusions and :meth:`Service.recommend` (and so the author signals)."""
    doc = document if isinstance(document, Document) else parse_draft(document, fmt=fmt)
    notes: list[str] = []
    missing = find_missing_citations(
        doc, threshold=DEFAULT_THRESHOLD if threshold is None else threshold
    )
    if service is None:
        return ManuscriptAnalysis(doc, missing, notes)
    if link and doc.references and any(r.paper_id is None for r in doc.references):
        link_references(doc.references, service.reader())
    if recommend and missing:
        try:
            service.recommender  # noqa: B018 -- opens the index: a missing one is a note
        except Exception as exc:  # missing index / models: explain, keep going
            notes.append(f"no recommendations: recommender unavailable: {exc}")
        else:
            _suggest(service, doc, missing, k, max_recommend, cancelled)
    return ManuscriptAnalysis(doc, missing, notes)


_STYLES = {"latex": textops.LATEX, "markdown": textops.MARKDOWN}


def manuscript_style(doc: Document) -> str:
    """The citation style the text of ``doc`` is read in (``textops``)."""
    return _STYLES.get(doc.format, textops.NUMERIC)


def find_passage(doc: Document, passage: str) -> tuple[int, int] | None:
    """``[start, end)`` of ``passage`` in ``doc.display_text()`` (line breaks and runs of spaces
    match any whitespace), or None."""
    words = (passage or "").split()
    if not words:
        return None
    found = re.search(r"\s+".join(map(re.escape, words)), doc.display_text())
    return (found.start(), found.end()) if found else None


def query_in_manuscript(
    library: Library,
    doc: Document,
    start: int,
    end: int,
    mode: str = "auto",
    cited_ids: tuple[int, ...] | None = None,
) -> tuple[Query, textops.QuerySpec]:
    """The query for ``doc.display_text()[start:end]``, as the GUI builds it for that selection
    in the manuscript's tab (a draft's own text; a PDF's text with its parsed title, abstract,
    year and DOI); ``cited_ids``: :func:`manuscript_cited_ids` when None."""
    text = doc.display_text()
    style = manuscript_style(doc)
    pdf = not doc.text
    if cited_ids is None:
        cited_ids = manuscript_cited_ids(library, text, style, doc)
    return query_for_selection(
        text,
        start,
        end,
        mode,
        style,
        meta=(doc.title, doc.abstract) if pdf else None,
        cited_ids=cited_ids,
        year=doc.year if pdf else None,
        doi=doc.doi if pdf else None,
    )


def _suggest(
    service: Service,
    doc: Document,
    missing: list[MissingCitation],
    k: int,
    max_recommend: int,
    cancelled: Callable[[], bool] | None,
) -> None:
    """Fill ``recommendations`` of the ``max_recommend`` highest-scoring sentences."""
    reader = service.reader()
    text = doc.display_text()
    cited = manuscript_cited_ids(reader, text, manuscript_style(doc), doc)
    request = RequestOptions(k=k)  # the manuscript's citations left out, as in the GUI
    for item in sorted(missing, key=lambda m: -m.score)[:max_recommend]:
        if cancelled is not None and cancelled():
            break
        span = _span(doc, item)
        if span is None:
            continue
        query, _spec = query_in_manuscript(reader, doc, *span, cited_ids=cited)
        try:
            result = service.recommend(query, request=request, cancelled=cancelled)
        except Cancelled:
            break
        except Exception as exc:  # one failed query must not lose the whole list
            log.warning("recommendation failed for %r: %s", item.sentence[:60], exc)
            continue
        item.recommendations = [
            SuggestedPaper(
                paper_id=int(rec.paper.id),
                title=rec.paper.title,
                year=rec.paper.year,
                doi=rec.paper.doi,
                citekey=rec.paper.citekey,
                score=round(float(rec.score), 4),
                intent=rec.intent,
                intent_chip=chip,
            )
            for rec, chip in zip(result.items[:k], chip_texts(result.items[:k]))
        ]


def _span(doc: Document, item: MissingCitation) -> tuple[int, int] | None:
    """Where the flagged sentence is in ``doc.display_text()`` (a draft's own offsets)."""
    if doc.text and item.start is not None and item.end is not None:
        return item.start, item.end
    return find_passage(doc, item.sentence)
