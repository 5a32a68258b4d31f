"""The paper library: one SQLite file (WAL), opened, migrated and written in transactions here.

``Library`` is the only owner of SQL in the program: the statements live in this package, one
module per concept, and the class composes them: papers and search (:mod:`.papers`), the
citekey index with aliases (:mod:`.keyindex`), citation edges (:mod:`.citations`), whole-library
counts for intents, authors and ``library stats`` (:mod:`.statistics`) and settings
(:mod:`.meta`). Other layers call its typed methods and never see a cursor.

``Library.add_paper`` deduplicates (DOI, then normalised title + year + first author),
merges into the richer record and keeps every original record text in ``paper_records``.
Batch imports wrap many ``add_paper`` calls in ``Library.transaction()`` so that an import
is all-or-nothing: a crash or ``kill -9`` mid-import leaves the previous state intact.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from assistant import faults
from assistant.library.citations import CitationContext, CitationStore
from assistant.library.keyindex import KeyIndex, KeyRow, PapersSignature
from assistant.library.meta import MetaStore
from assistant.library.papers import PaperStore
from assistant.library.rows import content_hash, merge_papers
from assistant.library.schema import (
    BUSY_TIMEOUT_S,
    FTS_COLUMNS,
    FTS_TRIGGERS_V2,
    SCHEMA_VERSION,
    LibraryOpenError,
    check_library_file,
    check_not_foreign,
    migrate,
    sqlite_error,
)
from assistant.library.statistics import LibraryStatistics

_FTS_COLS = ", ".join(FTS_COLUMNS)
_FTS_TRIGGERS = tuple(FTS_TRIGGERS_V2)


class Library(PaperStore, KeyIndex, CitationStore, LibraryStatistics, MetaStore):
    """A paper library stored in one SQLite file (created and migrated on open).

    This is the one way every program (CLI, GUI, language server, service, auto-export) opens
    the library, safe with any number of readers and writers in other processes: the file is
    only ever touched through SQLite (no plain ``open()`` of it, see ``check_library_file``),
    WAL is switched on once, every connection waits ``BUSY_TIMEOUT_S`` for locks, and closing
    never vacuums, truncates the WAL or replaces the file."""

    def _connect(self) -> sqlite3.Connection:
        """Connect, set the pragmas and migrate; closes the connection again when that fails."""
        conn = sqlite3.connect(
            str(self.path), isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_S
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            check_not_foreign(conn, self.path)
            if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                conn.execute("PRAGMA journal_mode = WAL")  # persistent: once per file
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            self.schema_version = migrate(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def __init__(self, path: str | Path):
        self.path = Path(path).expanduser()
        check_library_file(self.path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LibraryOpenError(
                f"cannot create the library's folder: {exc.strerror or exc}", file=self.path
            ) from exc
        # Opening a new file races with other processes creating it: SQLite answers "locked" at
        # once, without waiting, when two connections would deadlock (switching to WAL, the first
        # migration), so retry the whole open until the busy timeout has really passed.
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        while True:
            try:
                conn = self._connect()
                break
            except sqlite3.OperationalError as exc:
                low = str(exc).lower()
                if ("locked" in low or "busy" in low) and time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                raise sqlite_error(exc, self.path) from exc
            except sqlite3.Error as exc:
                raise sqlite_error(exc, self.path) from exc
        self.conn = conn
        self._tx_depth = 0
        self._changed = False  # papers changed in the open transaction (auto-export after commit)
        self._changed_ids: set[int] | None = set()  # which ones (None: unknown, all)
        #: the last auto-export failures (``file: reason``); a failed export never undoes a change
        self.auto_export_errors: list[str] = []
        self._bulk_from: int | None = (
            None  # in bulk_fts(): rows with id > this are not in the FTS yet
        )
        self._catch_up_exports()

    def _catch_up_exports(self) -> None:
        """Auto-exports left behind by a process killed after its commit are brought in step."""
        from assistant.library import autoexport

        self.auto_export_errors = autoexport.catch_up(self)

    # -- transactions -------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[Library]:
        """All writes inside are committed together or not at all (re-entrant)."""
        if self._tx_depth:
            self._tx_depth += 1
            try:
                yield self
            finally:
                self._tx_depth -= 1
            return
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise sqlite_error(exc, self.path) from exc
        self._tx_depth = 1
        try:
            yield self
        except BaseException as exc:
            self._tx_depth = 0
            self._changed, self._changed_ids = False, set()
            # SQLite may already have rolled back by itself (disk full, I/O error): a second
            # ROLLBACK would fail with "no transaction is active" and hide the real reason
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.OperationalError):
                raise sqlite_error(exc, self.path) from exc
            raise
        self._tx_depth = 0
        faults.point("library.commit")
        try:
            if self._changed:  # one more generation, in the same commit (auto-export catch-up)
                from assistant.library.autoexport import record_change

                record_change(self.conn, self._changed_ids)
            self.conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise sqlite_error(exc, self.path) from exc
        if self._changed:
            self._changed, self._changed_ids = False, set()
            faults.point("library.committed")
            self._after_change()

    def mark_changed(self, ids: Iterable[int] | None = None) -> None:
        """Note that papers ``ids`` (None: any) changed in the open transaction (auto-exports run
        after the commit and re-render only these papers' entries)."""
        self._changed = True
        if ids is None:
            self._changed_ids = None
        elif self._changed_ids is not None:
            self._changed_ids.update(ids)

    def _after_change(self) -> None:
        from assistant.library import autoexport

        self.auto_export_errors = autoexport.run_all(self)

    @contextmanager
    def bulk_fts(self) -> Iterator[Library]:
        """Inside ``transaction()``: index new rows in FTS with one bulk insert at the end.

        Per-row FTS triggers cost ~0.3 ms a record, the bulk insert a tenth of that. The triggers
        are dropped and re-created inside the transaction, so a crash rolls that back too.
        """
        if not self._tx_depth:
            raise RuntimeError("bulk_fts() must run inside Library.transaction()")
        if self._bulk_from is not None:
            yield self
            return
        self._bulk_from = self.conn.execute("SELECT coalesce(max(id), 0) FROM papers").fetchone()[0]
        try:
            for name in _FTS_TRIGGERS:
                self.conn.execute(f"DROP TRIGGER IF EXISTS {name}")
            yield self
            self.conn.execute(
                f"INSERT INTO papers_fts(rowid, {_FTS_COLS}) "
                f"SELECT id, {_FTS_COLS} FROM papers WHERE id > ?",
                (self._bulk_from,),
            )
            for sql in FTS_TRIGGERS_V2.values():
                self.conn.execute(sql)
        finally:
            self._bulk_from = None

    def _fts_delete(self, paper_id: int) -> None:
        """In bulk mode, remove an already-indexed row from the FTS by hand (triggers are off)."""
        if self._bulk_from is not None and paper_id <= self._bulk_from:
            self.conn.execute(
                f"INSERT INTO papers_fts(papers_fts, rowid, {_FTS_COLS}) "
                f"SELECT 'delete', id, {_FTS_COLS} FROM papers WHERE id = ?",
                (paper_id,),
            )

    def _fts_insert(self, paper_id: int) -> None:
        if self._bulk_from is not None and paper_id <= self._bulk_from:
            self.conn.execute(
                f"INSERT INTO papers_fts(rowid, {_FTS_COLS}) "
                f"SELECT id, {_FTS_COLS} FROM papers WHERE id = ?",
                (paper_id,),
            )

    def close(self) -> None:
        self.conn.close()

    def data_version(self) -> int:
        """A number that changes whenever another connection commits a change to the file
        (``PRAGMA data_version``): poll it to notice other programs' writes."""
        return self.conn.execute("PRAGMA data_version").fetchone()[0]

    def __enter__(self) -> Library:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def generation(self) -> tuple[int, int]:
        """Changes whenever anything in the library file changes: a commit by another connection
        (``PRAGMA data_version``) or a write through this one (``total_changes``). Caches of
        values derived from the library key on it."""
        return (
            self.conn.execute("PRAGMA data_version").fetchone()[0],
            self.conn.total_changes,
        )


__all__ = [
    "SCHEMA_VERSION",
    "CitationContext",
    "KeyRow",
    "Library",
    "LibraryOpenError",
    "PapersSignature",
    "content_hash",
    "merge_papers",
]
