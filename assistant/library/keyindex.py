"""The citekey index: a paper by its key or by an alias (a key merged into it or renamed away),
the key list an editor completes, the signature that tells when that list changed, and free
keys for new papers under the library's pattern."""

from __future__ import annotations

import sqlite3
from typing import NamedTuple

from assistant.library import citekeys
from assistant.library.meta import GENERATION
from assistant.library.models import Paper
from assistant.library.rows import LIVE, SELECT, paper_from_row


class KeyRow(NamedTuple):
    """One completable key: the paper's fields an editor shows (authors as stored, JSON)."""

    citekey: str
    title: str | None
    authors_json: str | None
    year: int | None
    venue: str | None
    doi: str | None
    added_at: str | None


class PapersSignature(NamedTuple):
    """Changes whenever a paper is added, edited, renamed, trashed, restored, merged or removed
    by this or any other process, also within one second (and when collection membership
    changes: it moves the same counter); settings and exports leave it alone."""

    generation: str | None  # the change counter bumped in the changing commit
    papers: int
    max_id: int | None
    last_update: str | None  # for writers that bypass ``Library`` (to the second only)


class KeyIndex:
    """Citekey lookups of :class:`~assistant.library.store.Library` (which provides ``conn``
    and ``get_meta``)."""

    conn: sqlite3.Connection

    def get_by_citekey(self, key: str, include_trashed: bool = False) -> Paper | None:
        """The paper with citekey ``key`` or with ``key`` as an alias (a key merged into it)."""
        live = "" if include_trashed else f" AND {LIVE}"
        row = self.conn.execute(f"{SELECT} WHERE p.citekey = ?{live}", (key,)).fetchone()
        if row is None:
            row = self.conn.execute(
                f"{SELECT} WHERE p.id = (SELECT paper_id FROM citekey_aliases WHERE alias = ?){live}",
                (key,),
            ).fetchone()
        return paper_from_row(row) if row else None

    def citekey_rows(self, limit: int = -1) -> tuple[list[KeyRow], dict[str, str]]:
        """What an editor completes: the papers outside the trash, newest first (``limit`` of
        them; -1: all), and ``alias -> citekey`` for the keys merged into them (old ``\\cite{}``s)."""
        rows = self.conn.execute(
            "SELECT p.citekey, p.title, p.authors, p.year, p.venue, p.doi, p.added_at "
            # "+": walk the rowids newest first and stop at the limit (not the deleted_at index)
            "FROM papers p WHERE p.citekey IS NOT NULL AND +p.deleted_at IS NULL "
            "ORDER BY p.id DESC LIMIT ?",
            (limit,),
        ).fetchall()
        aliases = dict(
            self.conn.execute(
                "SELECT a.alias, p.citekey FROM citekey_aliases a JOIN papers p ON p.id = a.paper_id "
                f"WHERE {LIVE}"
            ).fetchall()
        )
        return [KeyRow(*r) for r in rows], aliases

    def papers_signature(self) -> PapersSignature:
        """See :class:`PapersSignature`: compare two to know whether the key list is stale."""
        row = self.conn.execute(
            "SELECT (SELECT value FROM meta WHERE key = ?), count(*), max(id), max(updated_at) "
            "FROM papers",
            (GENERATION,),
        ).fetchone()
        return PapersSignature(None if row[0] is None else str(row[0]), *row[1:])

    def _citekey_taken(self, key: str) -> bool:
        return (
            self.conn.execute(
                "SELECT 1 FROM papers WHERE citekey = ? UNION ALL "
                "SELECT 1 FROM citekey_aliases WHERE alias = ?",
                (key, key),
            ).fetchone()
            is not None
        )

    def citekey_pattern(self) -> str:
        """The library's citekey pattern (``meta`` key ``citekey_pattern``; default built in)."""
        return self.get_meta("citekey_pattern") or citekeys.DEFAULT_PATTERN

    def new_citekey(self, paper: Paper) -> str:
        """A free key for ``paper`` under the library's pattern."""
        return citekeys.unique_key(
            citekeys.key_for(paper, self.citekey_pattern()), self._citekey_taken
        )
