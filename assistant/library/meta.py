"""The library's ``meta`` table: named settings and markers stored in the library file
(the citekey pattern, the intent model that labelled the citations, ...)."""

from __future__ import annotations

import sqlite3

#: ``meta`` key of the library's change counter: one more on every commit that changed papers
#: (or collection membership), written in that commit (see :mod:`.autoexport`)
GENERATION = "generation"


class MetaStore:
    """``meta`` key/value access of :class:`~assistant.library.store.Library` (which provides
    ``conn`` and ``transaction()``)."""

    conn: sqlite3.Connection

    def get_meta(self, key: str) -> str | None:
        """The value stored under ``key`` (None when absent)."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str | None) -> None:
        """Store ``value`` under ``key`` (None deletes it), in its own or the open transaction."""
        with self.transaction():
            if value is None:
                self.conn.execute("DELETE FROM meta WHERE key = ?", (key,))
            else:
                self.conn.execute(
                    "INSERT INTO meta(key, value) VALUES (?, ?) "
                    "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    (key, value),
                )
