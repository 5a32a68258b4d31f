"""The query for a passage of text (``assistant recommend TEXT``): kept apart from
:mod:`assistant.service.writing`, whose manuscript analysis and BibTeX editing the command does
not need at start-up (issue 32: a cold command)."""

from __future__ import annotations

from collections.abc import Sequence

from assistant.retrieval.query import Query, build_query


def query_for_text(
    text: str,
    mode: str = "auto",
    title: str | None = None,
    abstract: str | None = None,
    authors: Sequence[str] = (),
    year: int | None = None,
    context: str | None = None,
) -> Query:
    """The query for a passage (CLI ``recommend TEXT``), built by the one builder
    (``retrieval.query.build_query``: ``auto`` resolved by ``detect_mode``). Raises
    ``EmptyQueryError`` when there is nothing to search."""
    query = build_query(
        text or "",
        mode,
        title=title,
        abstract=abstract,
        context=context,
        authors=tuple(authors),
        year=year,
    )
    query.parts()  # an empty query fails here, before any model loads
    return query
