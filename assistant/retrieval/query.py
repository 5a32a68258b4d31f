"""Recommendation queries: citation-marker stripping, mode detection, query text construction.

Query kinds:

- ``local``: a sentence or two around a citation slot (optionally enhanced with the
  manuscript's title and abstract, and with neighbouring sentences in ``context``);
- ``paragraph``: a paragraph (topic sentence + following ones), plus title/abstract;
- ``global``: the manuscript's title + abstract (``text`` may be empty).

``auto`` picks one of them from the input (see :func:`detect_mode`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from assistant.documents.abbreviations import expand
from assistant.errors import AssistantError

MODES = ("auto", "local", "paragraph", "global")

# --- citation markers -------------------------------------------------------------------------
# numeric: [12], [3, 4], [3-5], [3–5], [12, 14–16], [12; 13]
_NUMERIC = re.compile(r"\s*\[\s*\d+[a-z]?(?:\s*[,;\-–—]\s*\d+[a-z]?)*\s*\]")
# LaTeX: \cite{a,b}, \citep[p.~3]{a}, \citet*{a}, \parencite{a}, ~\cite{a}
_LATEX = re.compile(
    r"~?\s*\\(?:[a-zA-Z]*cite[a-zA-Z]*|nocite)\*?(?:\s*\[[^\]]*\]){0,2}\s*\{[^}]*\}"
)
# author-year inside parentheses: (Smith et al., 2020), (Smith and Jones 2019a; Lee, 2018),
# (e.g., Smith, 2020), (see Smith et al. 2020, p. 3)
_NAME = r"(?:[A-Z][\w'’\-]+(?:\s+(?:van|von|de|der|da|del|di|le|la)\s+[A-Z][\w'’\-]+)?)"
_AUTHORS = rf"{_NAME}(?:\s+et\s+al\.?|\s*(?:,|and|&)\s*{_NAME})*(?:\s+et\s+al\.?)?"
_YEAR = r"(?:19|20)\d{2}[a-z]?"
_ONE_REF = rf"(?:(?:e\.g\.|see|cf\.|i\.e\.)\s*,?\s*)?{_AUTHORS},?\s+{_YEAR}(?:\s*,\s*{_YEAR})*(?:\s*,\s*p+\.\s*\d+(?:[-–]\d+)?)?"
_AUTHOR_YEAR = re.compile(rf"\s*\(\s*{_ONE_REF}(?:\s*;\s*{_ONE_REF})*\s*\)")
# narrative form: "Smith et al. (2020)" -> keep the names, drop the year
_NARRATIVE_YEAR = re.compile(rf"(?<=[A-Za-z.])\s*\(\s*{_YEAR}(?:\s*[,;]\s*{_YEAR})*\s*\)")
_SPACES = re.compile(r"\s+")
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([.,;:!?)])")
_EMPTY_PARENS = re.compile(r"\(\s*[,;]?\s*\)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[\"'])")


def strip_citation_markers(text: str) -> str:
    """Remove citation markers (``[12]``, ``(Smith et al., 2020)``, ``\\cite{..}``) from ``text``."""
    if not text:
        return ""
    out = _LATEX.sub("", text)
    out = _NUMERIC.sub("", out)
    out = _AUTHOR_YEAR.sub("", out)
    out = _NARRATIVE_YEAR.sub("", out)
    out = _EMPTY_PARENS.sub("", out)
    out = _SPACES.sub(" ", out)
    out = _SPACE_BEFORE_PUNCT.sub(r"\1", out)
    return out.strip()


def split_sentences(text: str) -> list[str]:
    """A light sentence splitter (period/question/exclamation followed by a capital)."""
    text = _SPACES.sub(" ", text or "").strip()
    if not text:
        return []
    # protect common abbreviations so that "et al. 2020" or "e.g. Smith" do not split
    protected = re.sub(
        r"\b(et al|e\.g|i\.e|cf|Fig|Eq|Sec|vs|resp)\.",
        lambda m: m.group(0).replace(".", "\x00"),
        text,
        flags=re.I,
    )
    return [s.replace("\x00", ".").strip() for s in _SENTENCE_END.split(protected) if s.strip()]


def detect_mode(text: str, title: str | None = None, abstract: str | None = None) -> str:
    """Pick ``local``/``paragraph``/``global`` for an ``auto`` query: the ONE rule of the product
    (the CLI's ``--mode auto`` and the GUI's selection/cursor both use it).

    Empty text (after stripping citation markers) with a title or abstract -> ``global``; one or
    two sentences (a citation context) -> ``local``; three or more -> ``paragraph``.
    """
    cleaned = strip_citation_markers(text)
    if not cleaned:
        return "global" if (title or abstract) else "local"
    return "local" if len(split_sentences(cleaned)) <= 2 else "paragraph"


@dataclass
class Query:
    """A recommendation request.

    ``text`` is the passage (markers are stripped when the query is built). ``title``/
    ``abstract`` describe the manuscript being written. ``context`` holds neighbouring
    sentences for local queries. ``manuscript_id``/``cited_ids``/``year`` feed the filters.
    """

    text: str
    mode: str = "auto"
    title: str | None = None
    abstract: str | None = None
    context: str | None = None
    manuscript_id: int | None = None
    cited_ids: tuple[int, ...] = ()
    year: int | None = None
    #: the manuscript's authors ("Last, First"), for the bibliographic signals of the ranker
    authors: tuple[str, ...] = ()
    enhance: bool = True  # add the manuscript's title/abstract to local queries
    extra: dict[str, str] = field(default_factory=dict)
    #: (short form, long form) the manuscript defines ("LTR", "learning to rank"): a short form
    #: in the passage gets its long form written after it (documents.abbreviations)
    abbreviations: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(
                f"unknown query mode {self.mode!r}; expected one of {', '.join(MODES)}"
            )

    def resolved_mode(self) -> str:
        """The concrete mode (``auto`` resolved from the input)."""
        return (
            detect_mode(self.text, self.title, self.abstract) if self.mode == "auto" else self.mode
        )

    def parts(self) -> QueryParts:
        """Split the query into focus, context and background texts, markers stripped."""
        mode = self.resolved_mode()
        text = strip_citation_markers(self.text)
        context = strip_citation_markers(self.context or "")
        if self.abbreviations:
            text, context = expand(text, self.abbreviations), expand(context, self.abbreviations)
        title_abstract = " ".join(
            p.strip() for p in (self.title or "", self.abstract or "") if p and p.strip()
        )
        if mode == "global":
            focus, context, background = (
                (title_abstract, text, "") if title_abstract else (text, context, "")
            )
        elif mode == "paragraph":
            focus, background = text, title_abstract
        else:  # local
            focus, background = text, (title_abstract if self.enhance else "")
        if not focus.strip() and context.strip():
            focus, context = context, ""
        elif not focus.strip():
            focus, background = background, ""
        if not focus.strip():
            raise EmptyQueryError(
                "the query is empty: give a passage, or a title/abstract for a global query"
            )
        return QueryParts(mode=mode, focus=focus, context=context, background=background)

    def display_text(self) -> str:
        return strip_citation_markers(self.text) or (self.title or "")


class EmptyQueryError(AssistantError, ValueError):
    """The query has no usable text."""


@dataclass(frozen=True)
class QueryParts:
    """What the retrievers see: ``focus`` (weight 1), and down-weighted supporting texts:
    ``context`` (neighbouring sentences) and ``background`` (the manuscript's title + abstract,
    the same for every query of a manuscript, so its scores/embedding are cached)."""

    mode: str
    focus: str
    context: str = ""
    background: str = ""

    @property
    def support(self) -> str:
        return " ".join(p for p in (self.context, self.background) if p)

    def joined(self) -> str:
        return " ".join(p for p in (self.focus, self.context, self.background) if p)


def as_query(query: Query | str, mode: str = "auto") -> Query:
    """Accept a plain string wherever a :class:`Query` is expected."""
    return query if isinstance(query, Query) else Query(text=str(query), mode=mode)
