"""SQLite schema of the library and its forward migrations.

The schema version lives in ``PRAGMA user_version``. ``MIGRATIONS[i]`` brings a database
from version ``i`` to ``i + 1``; opening a library applies the missing ones in order, each
in its own transaction, so an old file is upgraded in place and never downgraded.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from assistant.errors import AssistantError

if TYPE_CHECKING:  # imported by the migrations that need it (~0.1 s: not on every start)
    import sqlite_utils

_V1 = """
CREATE TABLE papers (
    id INTEGER PRIMARY KEY,
    citekey TEXT NOT NULL UNIQUE,
    entry_type TEXT NOT NULL DEFAULT 'article',
    doi TEXT,
    arxiv_id TEXT,
    title TEXT NOT NULL DEFAULT '',
    abstract TEXT NOT NULL DEFAULT '',
    authors TEXT NOT NULL DEFAULT '[]',      -- JSON list of "Last, First"
    year INTEGER,
    venue TEXT NOT NULL DEFAULT '',
    keywords TEXT NOT NULL DEFAULT '[]',     -- JSON list
    url TEXT,
    pdf_path TEXT,
    source_file TEXT,
    extra TEXT NOT NULL DEFAULT '{}',        -- JSON object of other fields
    title_key TEXT NOT NULL DEFAULT '',      -- dedup key parts
    author_key TEXT NOT NULL DEFAULT '',
    content_hash TEXT NOT NULL DEFAULT '',   -- hash of the indexed text (incremental indexing)
    added_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE UNIQUE INDEX papers_doi ON papers(doi) WHERE doi IS NOT NULL;
CREATE INDEX papers_dedup ON papers(title_key, year, author_key);
CREATE INDEX papers_arxiv ON papers(arxiv_id) WHERE arxiv_id IS NOT NULL;

-- Every imported record text, verbatim; a merge adds a row and never drops one.
CREATE TABLE paper_records (
    id INTEGER PRIMARY KEY,
    paper_id INTEGER NOT NULL REFERENCES papers(id) ON DELETE CASCADE,
    format TEXT NOT NULL,                    -- bibtex | ris | csljson | zotero | pdf
    source_file TEXT,
    line INTEGER,
    record_hash TEXT NOT NULL UNIQUE,
    text TEXT NOT NULL,
    added_at TEXT NOT NULL
);
CREATE INDEX paper_records_paper ON paper_records(paper_id);

CREATE TABLE citations (
    id INTEGER PRIMARY KEY,
    citing_id INTEGER NOT NULL REFERENCES papers(id) ON DELETE CASCADE,
    cited_id INTEGER NOT NULL REFERENCES papers(id) ON DELETE CASCADE,
    context TEXT NOT NULL DEFAULT '',
    section TEXT NOT NULL DEFAULT '',
    intent TEXT,
    intent_confidence REAL,
    added_at TEXT NOT NULL
);
CREATE INDEX citations_citing ON citations(citing_id);
CREATE INDEX citations_cited ON citations(cited_id);

CREATE VIRTUAL TABLE papers_fts USING fts5(
    title, abstract, keywords, content='papers', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
);
{fts_triggers}
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
"""

#: The schema-v1 triggers keeping ``papers_fts`` in sync (v2 replaces them: ``FTS_TRIGGERS_V2``).
FTS_TRIGGERS = {
    "papers_fts_ai": """CREATE TRIGGER papers_fts_ai AFTER INSERT ON papers BEGIN
    INSERT INTO papers_fts(rowid, title, abstract, keywords) VALUES (new.id, new.title, new.abstract, new.keywords);
END;""",
    "papers_fts_ad": """CREATE TRIGGER papers_fts_ad AFTER DELETE ON papers BEGIN
    INSERT INTO papers_fts(papers_fts, rowid, title, abstract, keywords)
    VALUES ('delete', old.id, old.title, old.abstract, old.keywords);
END;""",
    "papers_fts_au": """CREATE TRIGGER papers_fts_au AFTER UPDATE OF title, abstract, keywords ON papers BEGIN
    INSERT INTO papers_fts(papers_fts, rowid, title, abstract, keywords)
    VALUES ('delete', old.id, old.title, old.abstract, old.keywords);
    INSERT INTO papers_fts(rowid, title, abstract, keywords) VALUES (new.id, new.title, new.abstract, new.keywords);
END;""",
}
_V1 = _V1.replace("{fts_triggers}", "\n".join(FTS_TRIGGERS.values()))

#: The columns of the full-text index from schema v2 on (the GUI's search-as-you-type covers them all).
FTS_COLUMNS = ("title", "abstract", "keywords", "authors", "citekey", "doi")
FTS_TOKENIZE = "unicode61 remove_diacritics 2"


_COLS = ", ".join(FTS_COLUMNS)
_NEW = ", ".join(f"new.{c}" for c in FTS_COLUMNS)
_OLD = ", ".join(f"old.{c}" for c in FTS_COLUMNS)
#: The v2 triggers keeping ``papers_fts`` in sync; ``Library.bulk_fts`` drops and re-creates them.
FTS_TRIGGERS_V2 = {
    "papers_ai": f"""CREATE TRIGGER papers_ai AFTER INSERT ON papers BEGIN
    INSERT INTO papers_fts(rowid, {_COLS}) VALUES (new.id, {_NEW});
END""",
    "papers_ad": f"""CREATE TRIGGER papers_ad AFTER DELETE ON papers BEGIN
    INSERT INTO papers_fts(papers_fts, rowid, {_COLS}) VALUES ('delete', old.id, {_OLD});
END""",
    "papers_au": f"""CREATE TRIGGER papers_au AFTER UPDATE OF {_COLS} ON papers BEGIN
    INSERT INTO papers_fts(papers_fts, rowid, {_COLS}) VALUES ('delete', old.id, {_OLD});
    INSERT INTO papers_fts(rowid, {_COLS}) VALUES (new.id, {_NEW});
END""",
}

#: column -> SQL of the ``(deleted_at, column)`` index the library table sorts by
SORT_INDEXES = {
    "year": "year",
    "title": "title COLLATE NOCASE",
    "citekey": "citekey COLLATE NOCASE",
    "author": "author_key",
    "venue": "venue COLLATE NOCASE",
    "added": "added_at",
}


def _v2(db: sqlite_utils.Database) -> None:
    """Trash, edit history, citekey aliases and pins, editors, collections, tags, auto-exports;
    the full-text index grows authors, citekey and DOI, with prefix indexes."""
    papers = db["papers"]
    papers.add_column("deleted_at", str)
    papers.add_column("pinned", int, not_null_default=0)
    papers.add_column("editors", str, not_null_default="[]")
    db.execute("CREATE INDEX papers_deleted ON papers(deleted_at) WHERE deleted_at IS NOT NULL")
    # covering indexes: the table view sorts 100k+ live papers by any of these in ~0.1 s
    for name, column in SORT_INDEXES.items():
        db.execute(f"CREATE INDEX papers_live_{name} ON papers(deleted_at, {column})")
    db["paper_history"].create(
        {"id": int, "paper_id": int, "changed_at": str, "action": str, "before": str, "after": str},
        pk="id",
        foreign_keys=[("paper_id", "papers", "id")],
        not_null={"paper_id", "changed_at", "action", "before", "after"},
    )
    db["paper_history"].create_index(["paper_id"])
    db["citekey_aliases"].create(
        {"alias": str, "paper_id": int, "added_at": str},
        pk="alias",
        foreign_keys=[("paper_id", "papers", "id")],
        not_null={"paper_id"},
    )
    db["citekey_aliases"].create_index(["paper_id"])
    db["collections"].create(
        {
            "id": int,
            "name": str,
            "parent_id": int,
            "source": str,
            "source_key": str,
            "added_at": str,
        },
        pk="id",
        foreign_keys=[("parent_id", "collections", "id")],
        not_null={"name", "source"},
        defaults={"source": "user"},
    )
    db["collections"].create_index(["source", "source_key"], unique=True)
    db["collection_items"].create(
        {"collection_id": int, "paper_id": int},
        pk=("collection_id", "paper_id"),
        foreign_keys=[("collection_id", "collections", "id"), ("paper_id", "papers", "id")],
    )
    db["collection_items"].create_index(["paper_id"])
    db["paper_tags"].create(
        {"paper_id": int, "tag": str},
        pk=("paper_id", "tag"),
        foreign_keys=[("paper_id", "papers", "id")],
    )
    db["paper_tags"].create_index(["tag"])
    db["auto_exports"].create(
        {"path": str, "collection_id": int, "format": str, "last_written_at": str},
        pk="path",
        foreign_keys=[("collection_id", "collections", "id")],
        not_null={"format"},
        defaults={"format": "bibtex"},
    )
    for name in FTS_TRIGGERS:
        db.execute(f"DROP TRIGGER IF EXISTS {name}")
    db.execute("DROP TABLE papers_fts")
    # sqlite-utils' enable_fts() cannot declare FTS5 prefix indexes, which make 2- and
    # 3-letter prefixes (search as you type) fast on 100k+ papers; so the table is ours.
    db.execute(
        f"CREATE VIRTUAL TABLE papers_fts USING fts5({', '.join(FTS_COLUMNS)}, "
        f"tokenize='{FTS_TOKENIZE}', prefix='2 3', content='papers', content_rowid='id')"
    )
    for sql in FTS_TRIGGERS_V2.values():
        db.execute(sql)
    db.execute("INSERT INTO papers_fts(papers_fts) VALUES ('rebuild')")


#: MIGRATIONS[i] upgrades version i to i + 1 (an SQL script or a function of the database).
MIGRATIONS: list[str | Callable[[sqlite_utils.Database], None]] = [_V1, _v2]
SCHEMA_VERSION = len(MIGRATIONS)


class LibraryOpenError(AssistantError, RuntimeError):
    """The file cannot be opened as a Cite-Assist library (the message names it and says why)."""


class LibraryBusyError(LibraryOpenError):
    """Another process holds the library's write lock longer than the busy timeout."""


#: How long a writer waits for another process's write lock before giving up (seconds).
BUSY_TIMEOUT_S = 15.0


def database_error(exc: BaseException, path: Path | str) -> LibraryOpenError | None:
    """:func:`sqlite_error` for an SQLite ``OperationalError`` (locked, read-only, full) raised
    outside an open; None for any other exception (the faces need not know SQLite)."""
    return sqlite_error(exc, path) if isinstance(exc, sqlite3.OperationalError) else None


def sqlite_error(exc: sqlite3.Error, path: Path | str) -> LibraryOpenError:
    """One clear line for an SQLite failure on the library file (locked, read-only, disk full,
    damaged), instead of SQLite's terse text or a traceback."""
    text = str(exc)
    low = text.lower()
    if "locked" in low or "busy" in low:
        return LibraryBusyError(
            f"the library is in use by another Cite-Assist process (still locked after "
            f"{BUSY_TIMEOUT_S:.0f} s); nothing was changed, try again when it has finished",
            file=path,
        )
    if "readonly" in low or "read-only" in low or "unable to open" in low:
        return LibraryOpenError(
            f"cannot write the library: the file or its folder is read-only or not accessible "
            f"({text}); nothing was changed",
            file=path,
        )
    if "disk is full" in low or "disk i/o" in low:
        return LibraryOpenError(
            f"cannot write the library: {text}; the last change was rolled back, nothing was lost",
            file=path,
        )
    if "malformed" in low or "not a database" in low:
        return LibraryOpenError(f"the library file is damaged ({text})", file=path)
    return LibraryOpenError(f"library database error: {text}", file=path)


class SchemaTooNewError(LibraryOpenError):
    """The file was written by a newer Cite-Assist."""


def check_library_file(path: Path) -> None:
    """Refuse a folder before anything opens it.

    The header of a file is checked by SQLite itself (:func:`check_not_foreign`), never with a
    plain ``open()``: closing any descriptor of the database file drops every POSIX lock this
    process holds on it, so another program would then think it is the last one and delete the
    ``-wal``/``-shm`` under our open connections (issue 31)."""
    path = Path(path)
    if path.is_dir():
        raise LibraryOpenError(f"{path} is a folder; the library is one .sqlite file")


def check_not_foreign(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse, before anything is written, an SQLite database of another program (a ``zotero.sqlite``
    given as the library): migrating it would add our tables to it."""
    try:
        # one read transaction: another process creating the library must not be seen half-way
        # (its tables already committed after our read of a version 0)
        conn.execute("BEGIN")
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            tables = {r[0] for r in rows}
        finally:
            conn.execute("COMMIT")
    except sqlite3.DatabaseError as exc:
        if "locked" in str(exc).lower() or "busy" in str(exc).lower():
            raise  # another process is creating it: the caller waits and retries
        if "not a database" in str(exc).lower():
            raise LibraryOpenError(
                f"{path} is not a Cite-Assist library (not an SQLite database)"
            ) from exc
        raise LibraryOpenError(f"{path} is not a readable SQLite database ({exc})") from exc
    if version == 0 and tables - {"sqlite_sequence"}:
        names = ", ".join(sorted(tables)[:5])
        raise LibraryOpenError(
            f"{path} is an SQLite database of another program (tables: {names}); it was not changed. "
            "Give a new file or an existing Cite-Assist library; to bring in a Zotero database use "
            "`assistant library import zotero.sqlite`"
        )


def migrate(conn: sqlite3.Connection) -> int:
    """Apply the missing migrations; returns the resulting schema version."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise SchemaTooNewError(
            f"library schema version {version} is newer than this program supports ({SCHEMA_VERSION})"
        )
    for target in range(version + 1, SCHEMA_VERSION + 1):
        conn.execute("BEGIN IMMEDIATE")
        # another process may have created/migrated the file between our first look and the
        # write lock (two processes opening a new library at once): re-read under the lock
        if conn.execute("PRAGMA user_version").fetchone()[0] >= target:
            conn.execute("COMMIT")
            continue
        try:
            step = MIGRATIONS[target - 1]
            if callable(step):
                import sqlite_utils

                step(sqlite_utils.Database(conn))
            else:
                for statement in _statements(step):
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {target}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    return SCHEMA_VERSION


def _statements(script: str) -> list[str]:
    """Split a migration script into complete statements (triggers contain ';')."""
    out, buf = [], ""
    for line in script.splitlines(keepends=True):
        if line.strip().startswith("--") and not buf.strip():
            continue
        buf += line
        if sqlite3.complete_statement(buf):
            out.append(buf.strip())
            buf = ""
    if buf.strip():
        out.append(buf.strip())
    return out
