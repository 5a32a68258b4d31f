"""The language server's one door into the product's core.

Everything the server needs from the library, the recommendation pipeline, the documents layer
and the .bib helpers goes through this module, so that moving to the shared service layer
(``assistant/service/``) changes only this file. Nothing here knows about LSP types.

Thread use: :meth:`Backend.prepare` runs on a loader thread; :meth:`recommend` and
:meth:`find_missing` on worker threads; the quick lookups (:meth:`keys`, :meth:`paper`) on
any thread (they use their own read connection, never the engine's lock).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from assistant.documents import bibfile as _bibfile
from assistant.documents import markers as _markers
from assistant.documents import textops as _textops
from assistant.errors import Cancelled

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
manuscript_authors = _textops.manuscript_authors
bib_files_from_manuscript = _textops.bib_files_from_manuscript

# --- .bib files --------------------------------------------------------------------------------
BibEntryInfo = _bibfile.BibEntryInfo
BibFileError = _bibfile.BibFileError
parse_bib_entries = _bibfile.parse_entries
find_bib_duplicate = _bibfile.find_duplicate
appended_bib_text = _bibfile.appended_text
append_bib_entry = _bibfile.append_entry
normalize_doi = _bibfile.normalize_doi


def read_text_file(path: Path) -> str:
    """A text file's content with the product's decoder (legacy encodings, BOMs)."""
    from assistant.textfile import decode_text

    return decode_text(Path(path).read_bytes())[0]


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
    """The text around a citation slot and the manuscript it belongs to."""

    sentence: str
    context: str = ""
    title: str = ""
    abstract: str = ""
    authors: tuple[str, ...] = ()
    exclude_keys: tuple[str, ...] = ()

    def cache_key(self) -> tuple:
        return (
            self.sentence,
            self.context,
            self.title,
            self.abstract,
            self.authors,
            self.exclude_keys,
        )


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

    def __init__(self, db_path: Path | str | None = None, device: str = "auto") -> None:
        from assistant.config import default_db_path

        self.db_path = Path(db_path or default_db_path())
        self.device = device
        self._quick = None  # a Library for lookups, separate from the engine's connection
        self._quick_lock = threading.Lock()
        self._engine = None
        self._ready = threading.Event()
        self._signature: tuple | None = None

    # --- quick lookups ------------------------------------------------------------------------
    def _library(self):
        with self._quick_lock:
            if self._quick is None:
                from assistant.library.store import Library

                self._quick = Library(self.db_path)
            return self._quick

    def keys(self) -> list[KeyEntry]:
        """Every library paper with a citekey (title, authors, year; no abstracts)."""
        library = self._library()
        rows = library.conn.execute(
            "SELECT citekey, title, authors, year, venue, doi FROM papers WHERE citekey IS NOT NULL"
        ).fetchall()
        self._signature = self._library_signature()
        out = []
        for key, title, authors, year, venue, doi in rows:
            out.append(
                KeyEntry(key, title or "", tuple(_authors(authors)), _year(year), venue or "", doi)
            )
        return out

    def _library_signature(self) -> tuple | None:
        """What changes when papers are added, changed or removed (not on other writes)."""
        try:
            return tuple(
                self._library()
                .conn.execute("SELECT count(*), max(id), max(updated_at) FROM papers")
                .fetchone()
            )
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

    def paper(self, key: str) -> PaperInfo | None:
        """The library paper with citekey ``key`` (None if none)."""
        paper = self._get(key)
        return _info(paper) if paper is not None else None

    def bibtex(self, key: str) -> str | None:
        """The BibTeX entry of library paper ``key`` with its stable citekey (None if unknown)."""
        from assistant.library.export import paper_to_bibtex

        paper = self._get(key)
        return paper_to_bibtex(paper) if paper is not None else None

    # --- models -------------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        """True once recommendations can be served."""
        return self._ready.is_set()

    def prepare(
        self,
        progress: Callable[[str], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> str:
        """Load the encoder, (incrementally) index the library and load the recommender.

        Blocking: call it on a loader thread. Returns a one-line status; raises
        ``AssistantError`` subclasses / ``RuntimeError`` with a user-facing message.
        """
        from assistant.service.engine import Engine, EngineSettings

        self._ready.clear()
        if self._engine is None:
            self._engine = Engine(EngineSettings(db_path=self.db_path, device=self.device))
        engine = self._engine

        def report(done=0, total=0, message="", *_a, **_k) -> None:
            if progress is not None and message:
                progress(str(message))

        from assistant.service.engine import EngineCancelled

        try:
            status = engine.prepare(report, cancelled or (lambda: False))
        except EngineCancelled as exc:
            raise Cancelled() from exc
        _check(cancelled)
        if not status.ready:
            raise EmptyLibrary(
                f"{self.db_path}: the library is empty, so there is nothing to recommend yet "
                "(import papers with `assistant library import`)"
            )
        self._ready.set()
        return status.describe()

    def recommend(
        self, query: CitationQuery, k: int = 10, cancelled: Callable[[], bool] | None = None
    ) -> list[Suggestion]:
        """The top ``k`` papers for a citation slot; raises :class:`Cancelled` when asked to stop."""
        from assistant.retrieval.pipeline import RecommendationCancelled
        from assistant.retrieval.query import Query

        if not self.ready:
            raise NotReady("recommendations are still loading")
        engine = self._engine
        cited = tuple(p.id for p in (self._get(key) for key in query.exclude_keys) if p)
        q = Query(
            text=query.sentence,
            mode="local",
            title=query.title or None,
            abstract=query.abstract or None,
            context=query.context or None,
            cited_ids=cited,
            extra={"authors": "; ".join(query.authors)} if query.authors else {},
        )
        config = replace(engine.default_config(), k=k, exclude_cited=True)
        _check(cancelled)
        try:
            result = engine.recommend(q, config=config, cancelled=cancelled)
        except RecommendationCancelled as exc:
            raise Cancelled() from exc
        out = []
        for item in result.items:
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
                )
            )
        return out

    def find_missing(
        self,
        text: str,
        style: str,
        k: int = 3,
        cancelled: Callable[[], bool] | None = None,
    ) -> list[Missing]:
        """Sentences of a manuscript that read as needing a citation (the manuscript finder),
        each with the top ``k`` recommendations once the recommender is ready."""
        from assistant.documents.manuscript import find_missing_citations

        fmt = "latex" if style == LATEX else "markdown" if style == MARKDOWN else "text"
        recommender = None
        if self.ready:
            recommender = self._engine.recommender
        found = find_missing_citations(
            text, recommender=recommender, k=k, fmt=fmt, cancelled=cancelled
        )
        _check(cancelled)
        out = []
        for item in found:
            if item.start is None or item.end is None:
                continue
            recs = [r for r in item.recommendations if r.get("citekey")]
            out.append(
                Missing(
                    start=item.start,
                    end=item.end,
                    sentence=item.sentence,
                    score=float(item.score),
                    reasons=list(item.reasons),
                    keys=[r["citekey"] for r in recs],
                    titles=[r.get("title") or "" for r in recs],
                )
            )
        return out

    def plain_sentence(self, text: str, style: str) -> str:
        """A sentence without citation markers or LaTeX macros (what the recommender reads)."""
        from assistant.documents.draft import sentence_plain_text
        from assistant.documents.markers import find_markers
        from assistant.documents.model import Sentence

        kinds = ("latex",) if style == LATEX else ("pandoc",) if style == MARKDOWN else ()
        fmt = "latex" if style == LATEX else "markdown" if style == MARKDOWN else "text"
        sentence = Sentence(text=text, markers=find_markers(text, kinds) if kinds else [])
        return sentence_plain_text(sentence, fmt)

    def sentences(self, text: str, style: str) -> list[tuple[int, int]]:
        """``(start, end)`` of each prose sentence of a (part of a) manuscript, in order."""
        from assistant.documents.draft import parse_draft

        fmt = "latex" if style == LATEX else "markdown" if style == MARKDOWN else "text"
        doc = parse_draft(text, fmt)
        return [
            (s.start, s.end) for s in doc.sentences() if s.start is not None and s.end is not None
        ]

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()
            self._engine = None
        with self._quick_lock:
            if self._quick is not None:
                self._quick.close()
                self._quick = None


class EmptyLibrary(RuntimeError):
    """The library has no papers to recommend."""


class NotReady(RuntimeError):
    """Recommendations were asked for before :meth:`Backend.prepare` finished."""


def _check(cancelled: Callable[[], bool] | None) -> None:
    if cancelled is not None and cancelled():
        raise Cancelled()


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
