"""The paper library: one SQLite file (WAL) managed with sqlite-utils.

``Library.add_paper`` deduplicates (DOI, then normalised title + year + first author),
merges into the richer record and keeps every original record text in ``paper_records``.
Batch imports wrap many ``add_paper`` calls in ``Library.transaction()`` so that an import
is all-or-nothing: a crash or ``kill -9`` mid-import leaves the previous state intact.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import sqlite_utils

from assistant import faults
from assistant.library import citekeys
from assistant.library.models import Citation, ImportOutcome, Paper
from assistant.library.normalize import author_key, normalize_doi, title_key
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

_PAPER_COLUMNS = (
    "id, citekey, entry_type, doi, arxiv_id, title, abstract, authors, year, venue, keywords, url, "
    "pdf_path, source_file, extra, added_at, updated_at, editors, deleted_at, pinned"
)
_SELECT = (
    f"SELECT {', '.join('p.' + c.strip() for c in _PAPER_COLUMNS.split(','))}, "
    "(SELECT text FROM paper_records r WHERE r.paper_id = p.id ORDER BY r.id LIMIT 1) FROM papers p"
)
_SELECT_FIELDS = _SELECT.split(", (SELECT text")[0] + ", NULL FROM papers p"
_LIVE = "p.deleted_at IS NULL"
_FTS_COLS = ", ".join(FTS_COLUMNS)
_FTS_TRIGGERS = tuple(FTS_TRIGGERS_V2)
_FTS_SPECIAL = re.compile(r'["*:()^]|\b(AND|OR|NOT|NEAR)\b')
_TOKEN = re.compile(r"\w+", re.UNICODE)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _json(value, kind: type):
    """A JSON list/object column; a damaged value (not JSON, another type) is read as its text
    (one list item, or ``{"damaged": text}``) rather than failing every reader of the library."""
    try:
        out = json.loads(value) if isinstance(value, str | bytes) else value
    except ValueError:
        out = None
    if isinstance(out, kind):
        return out
    if value in (None, "", b""):
        return kind()
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    return [text] if kind is list else {"damaged": text}


def content_hash(paper: Paper) -> str:
    """Hash of what the indexes see (title, abstract, keywords): changes iff re-indexing is needed."""
    text = "\x1f".join((paper.title or "", paper.abstract or "", "\x1e".join(paper.keywords)))
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


def record_hash(fmt: str, text: str) -> str:
    return hashlib.sha1(f"{fmt}\x00{text.strip()}".encode()).hexdigest()


def merge_papers(old: Paper, new: Paper) -> Paper:
    """The richer of two records of the same work, field by field (``old`` wins ties)."""
    merged = replace(old)
    for name in ("title", "venue", "doi", "arxiv_id", "url", "pdf_path", "year", "source_file"):
        if not getattr(merged, name) and getattr(new, name):
            setattr(merged, name, getattr(new, name))
    if (  # the old record names a PDF that is not there, the new one a file that is
        new.pdf_path
        and new.pdf_path != old.pdf_path
        and Path(new.pdf_path).is_file()
        and not Path(old.pdf_path or "").is_file()
    ):
        merged.pdf_path = new.pdf_path
    if len(new.abstract or "") > len(old.abstract or ""):
        merged.abstract = new.abstract
    if len(new.authors) > len(old.authors):
        merged.authors = list(new.authors)
    if len(new.editors) > len(old.editors):
        merged.editors = list(new.editors)
    if new.entry_type and (old.entry_type in ("misc", "") or (new.doi and not old.doi)):
        merged.entry_type = new.entry_type  # the record carrying the DOI is the canonical version
    seen = {k.lower() for k in old.keywords}
    merged.keywords = list(old.keywords) + [k for k in new.keywords if k.lower() not in seen]
    merged.extra = {**new.extra, **old.extra}
    return merged


class Library:
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
        self.db = sqlite_utils.Database(conn)
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

    # -- reading ------------------------------------------------------------------------
    @staticmethod
    def _paper(row: tuple) -> Paper:
        return Paper(
            id=row[0],
            citekey=row[1],
            entry_type=row[2],
            doi=row[3],
            arxiv_id=row[4],
            title=row[5],
            abstract=row[6],
            authors=_json(row[7], list),
            year=row[8],
            venue=row[9],
            keywords=_json(row[10], list),
            url=row[11],
            pdf_path=row[12],
            source_file=row[13],
            extra=_json(row[14], dict),
            added_at=row[15],
            updated_at=row[16],
            editors=_json(row[17], list),
            deleted_at=row[18],
            pinned=bool(row[19]),
            original_text=row[20] or "",
        )

    def generation(self) -> tuple[int, int]:
        """Changes whenever anything in the library file changes: a commit by another connection
        (``PRAGMA data_version``) or a write through this one (``total_changes``). Caches of
        values derived from the library key on it."""
        return (
            self.conn.execute("PRAGMA data_version").fetchone()[0],
            self.conn.total_changes,
        )

    def count(self) -> int:
        """Papers in the library (the trash not counted)."""
        return self.conn.execute(
            "SELECT count(*) FROM papers p WHERE p.deleted_at IS NULL"
        ).fetchone()[0]

    def get(self, paper_id: int) -> Paper | None:
        row = self.conn.execute(f"{_SELECT} WHERE p.id = ?", (paper_id,)).fetchone()
        return self._paper(row) if row else None

    def get_many(self, ids: Iterable[int]) -> list[Paper]:
        """Papers for ``ids`` in the given order (missing ids are left out)."""
        ids = list(ids)
        found: dict[int, Paper] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for row in self.conn.execute(f"{_SELECT} WHERE p.id IN ({marks})", chunk):
                found[row[0]] = self._paper(row)
        return [found[i] for i in ids if i in found]

    def get_by_doi(self, doi: str) -> Paper | None:
        doi = normalize_doi(doi)
        row = (
            self.conn.execute(f"{_SELECT} WHERE p.doi = ? AND {_LIVE}", (doi,)).fetchone()
            if doi
            else None
        )
        return self._paper(row) if row else None

    def same_work_ids(
        self, title: str | None, doi: str | None = None, year: int | None = None
    ) -> list[int]:
        """Papers that are this work: the same DOI, or the same normalised title (of at least 8
        characters) with a year at most one apart when both are known. Keeps a manuscript that is
        already in the library out of its own recommendations."""
        ids: set[int] = set()
        doi = normalize_doi(doi)
        if doi:
            ids.update(
                r[0]
                for r in self.conn.execute(
                    "SELECT id FROM papers WHERE doi = ? AND deleted_at IS NULL", (doi,)
                )
            )
        tkey = title_key(title or "")
        if len(tkey) >= 8:
            for pid, other in self.conn.execute(
                "SELECT id, year FROM papers WHERE title_key = ? AND deleted_at IS NULL", (tkey,)
            ):
                if year is None or other is None or abs(int(other) - int(year)) <= 1:
                    ids.add(pid)
        return sorted(ids)

    def get_by_citekey(self, key: str, include_trashed: bool = False) -> Paper | None:
        """The paper with citekey ``key`` or with ``key`` as an alias (a key merged into it)."""
        live = "" if include_trashed else f" AND {_LIVE}"
        row = self.conn.execute(f"{_SELECT} WHERE p.citekey = ?{live}", (key,)).fetchone()
        if row is None:
            row = self.conn.execute(
                f"{_SELECT} WHERE p.id = (SELECT paper_id FROM citekey_aliases WHERE alias = ?){live}",
                (key,),
            ).fetchone()
        return self._paper(row) if row else None

    def citekey_rows(self, limit: int = -1) -> tuple[list[tuple], dict[str, str]]:
        """What an editor completes: ``(citekey, title, authors_json, year, venue, doi,
        added_at)`` of the papers outside the trash, newest first (``limit`` of them; -1: all),
        and ``alias -> citekey`` for the keys merged into them (old ``\\cite{}``s)."""
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
                f"WHERE {_LIVE}"
            ).fetchall()
        )
        return rows, aliases

    def iter_papers(self, batch_size: int = 1000, with_record: bool = True) -> Iterator[Paper]:
        """All papers by id (the trash left out), fetched in batches (safe on a 100k-paper library).
        ``with_record=False`` leaves ``original_text`` empty (exports do not need it: 2x faster)."""
        last = -1
        select = _SELECT if with_record else _SELECT_FIELDS
        while True:
            rows = self.conn.execute(
                f"{select} WHERE p.id > ? AND {_LIVE} ORDER BY p.id LIMIT ?", (last, batch_size)
            ).fetchall()
            if not rows:
                return
            for row in rows:
                yield self._paper(row)
            last = rows[-1][0]

    def trashed_ids(self) -> list[int]:
        """Ids of the papers in the trash."""
        return [
            r[0] for r in self.conn.execute("SELECT id FROM papers WHERE deleted_at IS NOT NULL")
        ]

    def paper_versions(self) -> dict[int, str]:
        """``id -> content hash`` of the indexed text, for incremental index updates."""
        return dict(
            self.conn.execute("SELECT id, content_hash FROM papers WHERE deleted_at IS NULL")
        )

    def records(self, paper_id: int) -> list[dict]:
        """Every original record merged into a paper (format, source_file, line, text)."""
        cur = self.conn.execute(
            "SELECT format, source_file, line, text, added_at FROM paper_records WHERE paper_id = ? ORDER BY id",
            (paper_id,),
        )
        return [dict(zip(("format", "source_file", "line", "text", "added_at"), r)) for r in cur]

    def search(self, query: str, limit: int = 20) -> list[Paper]:
        """Full-text search (FTS5, BM25 ranked) over title, abstract and keywords.

        Plain words must all match; if nothing does, any word may match. FTS5 syntax
        (quotes, AND/OR/NOT, prefix*) is honoured when present.
        """
        tokens = _TOKEN.findall(query)
        if not tokens:
            return []
        attempts = []
        if _FTS_SPECIAL.search(query):
            attempts.append(query)
        quoted = [f'"{t}"' for t in tokens]
        attempts += [" ".join(quoted), " OR ".join(quoted)]
        for fts_query in attempts:
            try:
                rows = self.conn.execute(
                    "SELECT f.rowid FROM papers_fts f JOIN papers p ON p.id = f.rowid "
                    f"WHERE papers_fts MATCH ? AND {_LIVE} "
                    "ORDER BY bm25(papers_fts, 4.0, 1.0, 2.0, 2.0, 2.0, 1.0) LIMIT ?",
                    (fts_query, limit),
                ).fetchall()
            except sqlite3.OperationalError:
                continue
            if rows:
                return self.get_many([r[0] for r in rows])
        return []

    # -- writing ------------------------------------------------------------------------
    def _find_duplicate(self, paper: Paper, tkey: str, akey: str) -> int | None:
        if paper.doi:
            row = self.conn.execute("SELECT id FROM papers WHERE doi = ?", (paper.doi,)).fetchone()
            if row:
                return row[0]
        if len(tkey) < 8:
            return None  # too short to identify a work ("Keynote", "Preface")
        rows = self.conn.execute(
            "SELECT id, doi FROM papers WHERE title_key = ? AND year IS ? AND author_key = ?",
            (tkey, paper.year, akey),
        ).fetchall()
        for pid, doi in rows:
            if doi is None or paper.doi is None:
                return pid
        return None

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
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'citekey_pattern'").fetchone()
        return row[0] if row and row[0] else citekeys.DEFAULT_PATTERN

    def set_meta(self, key: str, value: str | None) -> None:
        with self.transaction():
            if value is None:
                self.conn.execute("DELETE FROM meta WHERE key = ?", (key,))
            else:
                self.conn.execute(
                    "INSERT INTO meta(key, value) VALUES (?, ?) "
                    "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    (key, value),
                )

    def new_citekey(self, paper: Paper) -> str:
        """A free key for ``paper`` under the library's pattern."""
        return citekeys.unique_key(
            citekeys.key_for(paper, self.citekey_pattern()), self._citekey_taken
        )

    def add_paper(
        self, paper: Paper, record_format: str = "bibtex", line: int | None = None
    ) -> ImportOutcome:
        """Store ``paper``, merging it into an existing record of the same work if there is one.

        Re-adding an identical record (same original text) is a no-op (``unchanged``).
        """
        doi = normalize_doi(paper.doi)
        if doi != paper.doi:
            paper = replace(paper, doi=doi)
        with self.transaction():
            rhash = record_hash(record_format, paper.original_text) if paper.original_text else None
            if rhash:
                row = self.conn.execute(
                    "SELECT p.id, p.citekey FROM paper_records r JOIN papers p ON p.id = r.paper_id "
                    "WHERE r.record_hash = ?",
                    (rhash,),
                ).fetchone()
                if row:
                    return ImportOutcome("unchanged", row[0], row[1])
            tkey, akey = title_key(paper.title or ""), author_key(paper.authors)
            existing_id = self._find_duplicate(paper, tkey, akey)
            now = _now()
            if existing_id is None:
                key = (
                    paper.citekey
                    if citekeys.is_user_key(paper.citekey)
                    and not self._citekey_taken(paper.citekey)
                    else self.new_citekey(paper)
                )
                cur = self.conn.execute(
                    "INSERT INTO papers (citekey, entry_type, doi, arxiv_id, title, abstract, authors, year, venue, "
                    "keywords, url, pdf_path, source_file, extra, title_key, author_key, content_hash, added_at, "
                    "updated_at, editors) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        key,
                        paper.entry_type or "misc",
                        paper.doi,
                        paper.arxiv_id,
                        paper.title or "",
                        paper.abstract or "",
                        json.dumps(paper.authors, ensure_ascii=False),
                        paper.year,
                        paper.venue or "",
                        json.dumps(paper.keywords, ensure_ascii=False),
                        paper.url,
                        paper.pdf_path,
                        paper.source_file,
                        json.dumps(paper.extra, ensure_ascii=False),
                        tkey,
                        akey,
                        content_hash(paper),
                        now,
                        now,
                        json.dumps(paper.editors, ensure_ascii=False),
                    ),
                )
                outcome = ImportOutcome("added", cur.lastrowid, key)
                self.mark_changed([cur.lastrowid])
            else:
                old = self.get(existing_id)
                merged = merge_papers(old, paper)
                if merged != old:
                    self._update(merged, now)
                outcome = ImportOutcome(
                    "merged" if (merged != old or rhash) else "unchanged", existing_id, old.citekey
                )
            if rhash:
                self.conn.execute(
                    "INSERT INTO paper_records (paper_id, format, source_file, line, record_hash, text, added_at) "
                    "VALUES (?,?,?,?,?,?,?)",
                    (
                        outcome.id,
                        record_format,
                        paper.source_file,
                        line,
                        rhash,
                        paper.original_text,
                        now,
                    ),
                )
            if paper.tags or paper.collections:
                from assistant.library import groups

                groups.apply_import_hints(self, outcome.id, paper.tags, paper.collections)
            return outcome

    def _update(self, paper: Paper, now: str) -> None:
        self.mark_changed([paper.id])
        self._fts_delete(paper.id)
        self.conn.execute(
            "UPDATE papers SET entry_type=?, doi=?, arxiv_id=?, title=?, abstract=?, authors=?, year=?, venue=?, "
            "keywords=?, url=?, pdf_path=?, source_file=?, extra=?, title_key=?, author_key=?, content_hash=?, "
            "updated_at=?, editors=? WHERE id=?",
            (
                paper.entry_type,
                paper.doi,
                paper.arxiv_id,
                paper.title,
                paper.abstract,
                json.dumps(paper.authors, ensure_ascii=False),
                paper.year,
                paper.venue,
                json.dumps(paper.keywords, ensure_ascii=False),
                paper.url,
                paper.pdf_path,
                paper.source_file,
                json.dumps(paper.extra, ensure_ascii=False),
                title_key(paper.title),
                author_key(paper.authors),
                content_hash(paper),
                now,
                json.dumps(paper.editors, ensure_ascii=False),
                paper.id,
            ),
        )
        self._fts_insert(paper.id)

    def update_paper(self, paper: Paper) -> None:
        """Overwrite the stored fields of ``paper`` (by id); the citekey never changes."""
        if paper.id is None:
            raise ValueError("update_paper needs a stored paper (id is None)")
        with self.transaction():
            self._update(replace(paper, doi=normalize_doi(paper.doi)), _now())

    def remove(self, paper_id: int) -> bool:
        """Delete a paper, its original records and its citation edges (explicit user action)."""
        with self.transaction():
            self.mark_changed([paper_id])
            self._fts_delete(paper_id)
            cur = self.conn.execute("DELETE FROM papers WHERE id = ?", (paper_id,))
        return cur.rowcount > 0

    # -- citations ----------------------------------------------------------------------
    def add_citation(self, citation: Citation) -> int:
        with self.transaction():
            cur = self.conn.execute(
                "INSERT INTO citations (citing_id, cited_id, context, section, intent, intent_confidence, added_at) "
                "VALUES (?,?,?,?,?,?,?)",
                (
                    citation.citing_id,
                    citation.cited_id,
                    citation.context or "",
                    citation.section or "",
                    citation.intent,
                    citation.intent_confidence,
                    _now(),
                ),
            )
        return cur.lastrowid

    def _citations(self, where: str, value: int) -> list[Citation]:
        cur = self.conn.execute(
            "SELECT citing_id, cited_id, context, section, intent, intent_confidence, id FROM citations "
            f"WHERE {where} = ? ORDER BY id",
            (value,),
        )
        return [Citation(*row) for row in cur]

    def citations_from(self, paper_id: int) -> list[Citation]:
        return self._citations("citing_id", paper_id)

    def citations_to(self, paper_id: int) -> list[Citation]:
        return self._citations("cited_id", paper_id)

    def set_citation_intent(
        self, citation_id: int, intent: str | None, confidence: float | None
    ) -> None:
        with self.transaction():
            self.conn.execute(
                "UPDATE citations SET intent = ?, intent_confidence = ? WHERE id = ?",
                (intent, confidence, citation_id),
            )

    # -- statistics ---------------------------------------------------------------------
    def stats(self) -> dict:
        """Counts for ``assistant library stats``."""
        q = lambda sql: self.conn.execute(sql).fetchone()[0]  # noqa: E731
        size = sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal")) if p.exists())
        return {
            "path": str(self.path),
            "papers": self.count(),
            "by_entry_type": dict(
                self.conn.execute(
                    "SELECT entry_type, count(*) FROM papers GROUP BY entry_type ORDER BY count(*) DESC"
                )
            ),
            "with_abstract": q("SELECT count(*) FROM papers WHERE abstract != ''"),
            "without_abstract": q("SELECT count(*) FROM papers WHERE abstract = ''"),
            "with_doi": q("SELECT count(*) FROM papers WHERE doi IS NOT NULL"),
            "without_doi": q("SELECT count(*) FROM papers WHERE doi IS NULL"),
            "with_pdf": q("SELECT count(*) FROM papers WHERE pdf_path IS NOT NULL"),
            "records": q("SELECT count(*) FROM paper_records"),
            "citations": q("SELECT count(*) FROM citations"),
            "citations_with_intent": q("SELECT count(*) FROM citations WHERE intent IS NOT NULL"),
            "schema_version": self.schema_version,
            "db_size_bytes": size,
        }


__all__ = ["SCHEMA_VERSION", "Library", "LibraryOpenError", "content_hash", "merge_papers"]
