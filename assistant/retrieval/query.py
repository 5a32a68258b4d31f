"""Recommendation queries: citation-marker stripping, mode detection, query text construction.

Query kinds:

- ``local``: a sentence or two around a citation slot (optionally enhanced with the
  manuscript's title and abstract, and with neighbouring sentences in ``context``);
- ``paragraph``: a paragraph (topic sentence + following ones), plus title/abstract;
- ``global``: the manuscript's title + abstract (``text`` may be empty).

``auto`` picks one of them from the input (see :func:`detect_mode`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from assistant.documents.abbreviations import defined_in, expand
from assistant.documents.markers import strip_citation_markers, strip_latex
from assistant.documents.sentences import detect_mode
from assistant.errors import AssistantError

MODES = ("auto", "local", "paragraph", "global")


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
    #: the manuscript's DOI (identifies the manuscript itself in the library: never recommended)
    doi: str | None = None
    #: the manuscript's authors ("Last, First"), for the bibliographic signals of the ranker
    authors: tuple[str, ...] = ()
    enhance: bool = True  # add the manuscript's title/abstract to local queries
    extra: dict[str, str] = field(default_factory=dict)
    #: (short form, long form) the manuscript defines ("LTR", "learning to rank"): a short form
    #: in the passage gets its long form written after it (documents.abbreviations)
    abbreviations: tuple[tuple[str, str], ...] = ()
    #: the manuscript's text: the abbreviations it defines are looked up when the query runs (on
    #: the worker thread: the first lookup loads spaCy), for the short forms the passage uses
    abbreviation_source: str = ""

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

    def abbreviation_pairs(self) -> tuple[tuple[str, str], ...]:
        """The (short, long) forms expanded in this query: ``abbreviations``, else those the
        ``abbreviation_source`` defines for the short forms the passage uses (cached lookup)."""
        if self.abbreviations:
            return self.abbreviations
        text = strip_citation_markers(self.text)
        context = strip_citation_markers(self.context or "")
        return defined_in(self.abbreviation_source, f"{text} {context}")

    def parts(self, pairs: tuple[tuple[str, str], ...] | None = None) -> QueryParts:
        """Split the query into focus, context and background texts, markers stripped
        (``pairs``: the result of :meth:`abbreviation_pairs` when the caller has it)."""
        mode = self.resolved_mode()
        text = strip_citation_markers(self.text)
        context = strip_citation_markers(self.context or "")
        if pairs is None:
            pairs = self.abbreviation_pairs()
        if pairs:
            text, context = expand(text, pairs), expand(context, pairs)
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


def build_query(
    text: str,
    mode: str = "auto",
    *,
    latex: bool = False,
    title: str | None = None,
    abstract: str | None = None,
    context: str | None = None,
    authors: tuple[str, ...] | list[str] = (),
    year: int | None = None,
    doi: str | None = None,
    cited_ids: tuple[int, ...] | list[int] = (),
    abbreviations: tuple[tuple[str, str], ...] = (),
    abbreviation_source: str = "",
    enhance: bool = True,
) -> Query:
    """THE query builder of the product: every face (CLI ``recommend``, the GUI's and the
    language server's selection, manuscript analysis, the ACM-CR protocol) builds its ``Query``
    here. ``latex``: ``text`` and ``context`` are LaTeX, reduced to prose (``strip_latex``)
    first; ``mode="auto"`` is then resolved by :func:`detect_mode` on that prose."""
    if latex:
        text = strip_latex(text or "")
        context = strip_latex(context) if context else context
    if mode == "auto":
        mode = detect_mode(text or "", title, abstract)
    return Query(
        text=text or "",
        mode=mode,
        title=title or None,
        abstract=abstract or None,
        context=context or None,
        cited_ids=tuple(cited_ids),
        year=year,
        doi=doi or None,
        authors=tuple(authors),
        enhance=enhance,
        abbreviations=tuple(abbreviations),
        abbreviation_source=abbreviation_source,
    )


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
