"""Citation edges between library papers (``citations``): who cites whom, in which context,
with which intent label."""

from __future__ import annotations

import sqlite3
from typing import NamedTuple

from assistant.library.models import Citation
from assistant.library.rows import now


class CitationContext(NamedTuple):
    """The text around one citation, for the intent classifier."""

    id: int
    context: str | None


class CitationStore:
    """Citation edges of :class:`~assistant.library.store.Library` (which provides ``conn``
    and ``transaction()``)."""

    conn: sqlite3.Connection

    def add_citation(self, citation: Citation) -> int:
        """Store one edge; returns its id."""
        with self.transaction():
            cur = self.conn.execute(
                "INSERT INTO citations (citing_id, cited_id, context, section, intent, "
                "intent_confidence, added_at) VALUES (?,?,?,?,?,?,?)",
                (
                    citation.citing_id,
                    citation.cited_id,
                    citation.context or "",
                    citation.section or "",
                    citation.intent,
                    citation.intent_confidence,
                    now(),
                ),
            )
        return cur.lastrowid

    def _citations(self, where: str, value: int) -> list[Citation]:
        cur = self.conn.execute(
            "SELECT citing_id, cited_id, context, section, intent, intent_confidence, id "
            f"FROM citations WHERE {where} = ? ORDER BY id",
            (value,),
        )
        return [Citation(*row) for row in cur]

    def citations_from(self, paper_id: int) -> list[Citation]:
        """The edges of the papers ``paper_id`` cites."""
        return self._citations("citing_id", paper_id)

    def citations_to(self, paper_id: int) -> list[Citation]:
        """The edges of the papers citing ``paper_id``."""
        return self._citations("cited_id", paper_id)

    def set_citation_intent(
        self, citation_id: int, intent: str | None, confidence: float | None
    ) -> None:
        """Label one edge (None clears the label)."""
        with self.transaction():
            self.conn.execute(
                "UPDATE citations SET intent = ?, intent_confidence = ? WHERE id = ?",
                (intent, confidence, citation_id),
            )

    def citation_contexts(self, unlabelled_only: bool = True) -> list[CitationContext]:
        """Every edge's context by id (only those without an intent label by default)."""
        where = "WHERE intent IS NULL" if unlabelled_only else ""
        rows = self.conn.execute(f"SELECT id, context FROM citations {where} ORDER BY id")
        return [CitationContext(*r) for r in rows]
