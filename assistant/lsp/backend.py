"""The language server's one door into the product's core.

Recommendations, the manuscript finder, queries and library entries come from the application
service (``assistant.service``: the same ``Service``, ``query_for_selection`` and
``analyse_manuscript`` the CLI and the GUI use); the citation grammar, .bib parsing and draft
sentences from the documents layer. Nothing else in ``assistant/lsp`` imports the core, and
nothing here knows about LSP types.

Thread use: :meth:`Backend.prepare` runs on a loader thread; :meth:`recommend` and
:meth:`find_missing` on worker threads; the quick lookups (:meth:`keys`, :meth:`paper`) on
any thread (they use their own read connection, never the engine's lock).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from assistant.documents import markers as _markers
from assistant.library import bibfile as _bibfile
from assistant.service import (
    MANUSCRIPT_K,
    AssistantError,
    Progress,
    RequestOptions,
    check_cancelled,
    chip_texts,
)
from assistant.service import textops as _textops

log = logging.getLogger(__name__)

# --- the citation grammar and manuscript helpers (documents layer, GUI text operations) -------
LATEX = _textops.LATEX
MARKDOWN = _textops.MARKDOWN
LATEX_CITE_RE = _markers.LATEX_CITE_RE
LATEX_CITE_OPEN_RE = _markers.LATEX_CITE_OPEN_RE
PANDOC_RE = _markers.PANDOC_RE
PANDOC_KEY_RE = _markers.PANDOC_KEY_RE
PANDOC_OPEN_RE = _markers.PANDOC_OPEN_RE
style_for_path = _textops.style_for_path
paragraph_bounds = _textops.paragraph_bounds
sentence_bounds = _textops.sentence_bounds
citation_edit = _textops.citation_edit
manuscript_meta = _textops.manuscript_meta
bib_files_from_manuscript = _textops.bib_files_from_manuscript

# --- .bib files --------------------------------------------------------------------------------
BibEntryInfo = _bibfile.BibEntryInfo
BibFileError = _bibfile.BibFileError
parse_bib_entries = _bibfile.parse_entries
find_bib_duplicate = _bibfile.find_duplicate
appended_bib_text = _bibfile.appended_text
normalize_doi = _bibfile.normalize_doi


def read_text_file(path: Path) -> str:
    """A text file's content with the product's decoder (legacy encodings, BOMs)."""
    return read_text_and_newline(path)[0]


def read_text_and_newline(path: Path) -> tuple[str, str]:
    """A text file's content (``\\n`` line ends) and the line end it is stored with. Only a
    regular file within the size cap is read (a FIFO, a device or a 3 GB file raise
    ``FileRefused`` without blocking or filling memory)."""
    from assistant.textfile import decode_text, read_file

    text, fmt = decode_text(read_file(path))
    return text, fmt.newline


def escape_for_file(entry_text: str, path: Path) -> str:
    """``entry_text`` as it can be stored in ``path``'s encoding (LaTeX macros for what a
    Latin-1/cp1252 file cannot hold); unchanged for a new or UTF-8 file."""
    from assistant.textfile import decode_text, latex_escape_unencodable

    if not path.is_file():
        return entry_text
    try:
        _, fmt = decode_text(path.read_bytes())
        return latex_escape_unencodable(entry_text, fmt)
    except (OSError, ValueError):
        return entry_text


# --- library ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class KeyEntry:
    """What completion shows for one library paper before anything else is loaded."""

    key: str
    title: str
    authors: tuple[str, ...]
    year: int | None
    venue: str
    doi: str | None


@dataclass
class LibraryKeys:
    """The keys completion offers (newest first) and ``alias -> citekey`` of merged keys."""

    entries: list[KeyEntry]
    aliases: dict[str, str] = field(default_factory=dict)


@dataclass
class Suggestion:
    """One recommended paper for a citation slot."""

    key: str
    paper_id: int
    title: str
    authors: tuple[str, ...]
    year: int | None
    venue: str
    doi: str | None
    score: float
    intent: str | None = None
    intent_confidence: float | None = None
    #: the service's chip text (``method 87%`` / ``method? uncertain``), as the GUI shows it
    intent_chip: str | None = None


@dataclass
class PaperInfo:
    """A paper's fields for hover and completion documentation."""

    key: str
    title: str
    authors: list[str]
    year: int | None
    venue: str
    abstract: str
    doi: str | None
    entry_type: str = "article"
    extra: dict[str, str] = field(default_factory=dict)


@dataclass
class CitationQuery:
    """The service's query for a citation slot, with the sentence it was built from."""

    query: object  # assistant.service.Query
    sentence: str
    exclude_keys: tuple[str, ...] = ()

    def cache_key(self) -> tuple:
        q = self.query
        return (q.text, q.mode, q.context, q.title, q.abstract, q.cited_ids, self.exclude_keys)


@dataclass
class Missing:
    """A sentence that reads as needing a citation (the manuscript finder's verdict)."""

    start: int
    end: int
    sentence: str
    score: float
    reasons: list[str]
    keys: list[str]
    titles: list[str]


class Backend:
    """One library file: quick key lookups at once, the recommender once :meth:`prepare` is done."""

    def __init__(
        self, db_path: Path | str | None = None, device: str = "auto", quality: str | None = None
    ) -> None:
        from assistant.config import default_db_path

        self.db_path = Path(db_path or default_db_path())
        self.device = device
        #: the quality tier asked for (``--quality``, the editor's initialization option); None:
        #: $ASSISTANT_QUALITY, the app's saved Settings, else auto
        self.quality = quality
        self._listeners: list = []
        self._quick = None  # a Library for lookups, separate from the engine's connection
        self._quick_lock = threading.Lock()
        self._svc = None
        self._signature: tuple | None = None

    # --- quick lookups ------------------------------------------------------------------------
    def _library(self):
        with self._quick_lock:
            if self._quick is None:
                from assistant.service import open_library

                self._quick = open_library(self.db_path)
            return self._quick

    def keys(self, limit: int = -1) -> LibraryKeys:
        """The library papers with a citekey outside the trash, newest first (title, authors,
        year; no abstracts; ``limit`` of them, -1: all), and the aliases of merged keys."""
        if limit < 0:  # read before the rows: a change in between is seen by the next check
            self._signature = self._library_signature()
        rows, aliases = self._library().citekey_rows(limit)
        out = [
            KeyEntry(key, title or "", tuple(_authors(authors)), _year(year), venue or "", doi)
            for key, title, authors, year, venue, doi, _added in rows
        ]
        return LibraryKeys(out, aliases)

    def append_bib_entry(self, path: Path, entry_text: str):
        """Append one entry to a .bib the editor cannot write itself (kept in the file's own
        encoding and line ends; a ``.bak`` of the old file). The one place the server writes."""
        return _bibfile.append_entry(path, entry_text)

    def _library_signature(self) -> tuple | None:
        """What changes when papers are added, changed, trashed or removed (not on other writes),
        also within one second (the library's change counter, not time stamps)."""
        try:
            return self._library().papers_signature()
        except Exception:  # a closed or odd connection: treat as unchanged
            return None

    def library_changed(self) -> bool:
        """True when papers changed (an import from the CLI or the GUI) since the last :meth:`keys`."""
        current = self._library_signature()
        return current is not None and current != self._signature

    def _get(self, key: str):
        try:
            return self._library().get_by_citekey(key)
        except Exception as exc:  # an unreadable library was reported at start-up
            log.debug("lookup of %s failed: %s", key, exc)
            return None

    def _cited_ids(self, text: str, style: str) -> tuple[int, ...]:
        """Library ids of what the manuscript already cites (``service.manuscript_cited_ids``)."""
        from assistant.service import manuscript_cited_ids

        try:
            return manuscript_cited_ids(self._library(), text, style)
        except Exception as exc:  # an unreadable library was reported at start-up
            log.debug("cited keys lookup failed: %s", exc)
            return ()

    def paper(self, key: str) -> PaperInfo | None:
        """The library paper with citekey ``key`` (None if none)."""
        paper = self._get(key)
        return _info(paper) if paper is not None else None

    def bibtex(self, key: str) -> str | None:
        """The BibTeX entry of library paper ``key`` with its stable citekey (None if unknown)."""
        from assistant.service import paper_bibtex

        paper = self._get(key)
        return paper_bibtex(paper) if paper is not None else None

    # --- models ---------------------------------------------------------------------------
    def _service(self):
        if self._svc is None:
            from assistant.config import quality_setting
            from assistant.service import Service, ServiceSettings

            settings = ServiceSettings(
                db_path=self.db_path,
                device=self.device,
                quality=quality_setting(self.quality),
                background=True,  # the other tier's index is built beside, never blocking
            )
            self._svc = Service(settings)
            for listener in self._listeners:
                self._svc.on_change(listener)
        return self._svc

    def set_quality(self, value) -> str | None:
        """Ask for the quality tier ``value`` (before the models load); a message when it is
        not one of auto, fast, best (the setting is then left as it was)."""
        from assistant.service import QUALITIES

        quality = str(value).strip().lower()
        if quality not in QUALITIES:
            return f"ignoring quality {value!r}: expected one of {', '.join(QUALITIES)}"
        self.quality = quality
        return None

    def on_change(self, listener) -> None:
        """``listener()`` (from a build thread) when the quality tier or its build changes."""
        self._listeners.append(listener)
        if self._svc is not None:
            self._svc.on_change(listener)

    def serving_tier(self) -> str:
        """The quality tier whose index answers now ("" before the models are loaded)."""
        return self._svc.serving_tier() if self._svc is not None else ""

    def describe(self) -> str:
        """The one status line: papers, encoder + reranker, device, quality tier and why."""
        return self._svc.status().describe() if self._svc is not None else "not loaded"

    @property
    def ready(self) -> bool:
        """True once recommendations can be served (stays true while a reload runs)."""
        return self._svc is not None and self._svc.ready

    def prepare(
        self,
        progress: Progress | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> str:
        """Load the encoder, (incrementally) index the library and open the recommender on it.

        Blocking: call it on a loader thread. Returns a one-line status; raises
        :class:`EmptyLibrary`, ``Cancelled`` or the service's ``AssistantError``s.
        """
        service = self._service()
        status = service.prepare(progress or (lambda event: None), cancelled or (lambda: False))
        check_cancelled(cancelled)
        if not status.ready:
            raise EmptyLibrary(
                f"{self.db_path}: the library is empty, so there is nothing to recommend yet "
                "(import papers with `assistant library import`)"
            )
        return status.describe()

    def query(
        self,
        text: str,
        style: str,
        start: int,
        end: int,
        meta: tuple[str, str],
        exclude_keys: tuple[str, ...] = (),
    ) -> CitationQuery:
        """The product's query for the cursor (``start == end``: the sentence there, the rest of
        its paragraph as context) or a selection, with the manuscript's title and abstract."""
        from assistant.service import query_for_selection

        # the one exclusion rule: everything the manuscript cites (and the keys of this slot)
        slot = tuple(p.id for p in (self._get(key) for key in exclude_keys) if p)
        cited = tuple(dict.fromkeys(slot + self._cited_ids(text, style)))
        query, spec = query_for_selection(
            text, start, end, mode="auto", style=style, meta=meta, cited_ids=cited
        )
        return CitationQuery(query, spec.text, tuple(exclude_keys))

    def recommend(
        self, query: CitationQuery, k: int = 10, cancelled: Callable[[], bool] | None = None
    ) -> list[Suggestion]:
        """The top ``k`` papers for a query; raises ``Cancelled`` when asked to stop."""
        if not self.ready:
            raise NotReady("recommendations are still loading")
        service = self._service()
        check_cancelled(cancelled)
        request = RequestOptions(k=k)  # Hide cited: the manuscript's citations are left out
        result = service.recommend(query.query, request=request, cancelled=cancelled)
        out = []
        for item, chip in zip(result.items, chip_texts(result.items)):
            paper = item.paper
            if not paper.citekey:
                continue
            out.append(
                Suggestion(
                    key=paper.citekey,
                    paper_id=int(paper.id),
                    title=paper.title,
                    authors=tuple(paper.authors),
                    year=paper.year,
                    venue=paper.venue or "",
                    doi=paper.doi,
                    score=float(item.score),
                    intent=item.intent,
                    intent_confidence=item.intent_confidence,
                    intent_chip=chip,
                )
            )
        return out

    def find_missing(
        self,
        text: str,
        style: str,
        k: int = MANUSCRIPT_K,
        cancelled: Callable[[], bool] | None = None,
    ) -> list[Missing]:
        """Sentences of a manuscript that read as needing a citation (the service's manuscript
        analysis), each with the top ``k`` recommendations once the recommender is ready."""
        from assistant.service import analyse_manuscript

        fmt = "latex" if style == LATEX else "markdown" if style == MARKDOWN else "text"
        analysis = analyse_manuscript(
            self._service(), text, fmt=fmt, recommend=self.ready, k=k, cancelled=cancelled
        )
        check_cancelled(cancelled)
        out = []
        for item in analysis.missing:
            if item.start is None or item.end is None:
                continue
            recs = [r for r in item.recommendations if r.citekey]
            out.append(
                Missing(
                    start=item.start,
                    end=item.end,
                    sentence=item.sentence,
                    score=float(item.score),
                    reasons=list(item.reasons),
                    keys=[r.citekey for r in recs],
                    titles=[r.title or "" for r in recs],
                )
            )
        return out

    def close(self) -> None:
        if self._svc is not None:
            self._svc.close()
            self._svc = None
        with self._quick_lock:
            if self._quick is not None:
                self._quick.close()
                self._quick = None


class EmptyLibrary(AssistantError, RuntimeError):
    """The library has no papers to recommend."""


class NotReady(AssistantError, RuntimeError):
    """Recommendations were asked for before :meth:`Backend.prepare` finished."""


def _authors(value) -> list[str]:
    import json

    if not value:
        return []
    if isinstance(value, list):
        return [str(a) for a in value]
    try:
        parsed = json.loads(value)
    except (TypeError, ValueError):
        return [str(value)]
    return [str(a) for a in parsed] if isinstance(parsed, list) else [str(parsed)]


def _year(value) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _info(paper) -> PaperInfo:
    return PaperInfo(
        key=paper.citekey or "",
        title=paper.title or "",
        authors=list(paper.authors),
        year=paper.year,
        venue=paper.venue or "",
        abstract=paper.abstract or "",
        doi=paper.doi,
        entry_type=paper.entry_type or "article",
        extra=dict(paper.extra or {}),
    )
