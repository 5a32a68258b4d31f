"""Auto-export: keep chosen files in sync with a collection or the whole library.

Every committed change of the library's papers bumps the library's *generation* (``meta`` key
``generation``, in the same transaction) and then calls :func:`run_all`, which, under a file lock
shared by every process using the library, renders each registered file whose recorded
generation is behind (once per collection and format, from one read snapshot), writes it
atomically when its text changed and records the generation it now shows. A process killed
between its commit and the export leaves the files one generation behind: the next open of the
library (:func:`catch_up`) or the next change brings them in step.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from filelock import FileLock, Timeout

from assistant.library.export import FORMATS, render
from assistant.library.groups import LibraryEditError, collection_paper_ids
from assistant.textfile import FileRefused, write_atomic

GENERATION = "generation"
_WRITTEN = "auto_export_generation:"  # meta key prefix: the generation a file shows
LOCK_TIMEOUT_S = 120.0


@dataclass
class AutoExport:
    path: str
    collection_id: int | None  # None = the whole library
    format: str
    last_written_at: str | None


def list_auto_exports(lib) -> list[AutoExport]:
    return [
        AutoExport(*row)
        for row in lib.conn.execute(
            "SELECT path, collection_id, format, last_written_at FROM auto_exports ORDER BY path"
        )
    ]


def _check_target(target: Path) -> None:
    """Refuse a folder, a FIFO, a device or a socket at once (reading one hangs or never ends)."""
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise LibraryEditError(f"cannot use it: {exc.strerror or exc}", file=target) from exc
    if stat.S_ISDIR(st.st_mode):
        raise LibraryEditError("is a folder; give a file name", file=target)
    if not stat.S_ISREG(st.st_mode):
        raise LibraryEditError("is not a regular file (a pipe or a device?)", file=target)


def add_auto_export(
    lib, path: str | Path, collection_id: int | None = None, fmt: str = "bibtex"
) -> AutoExport:
    """Register ``path`` (written now, then after every change)."""
    if fmt not in FORMATS:
        raise LibraryEditError(f"unknown format '{fmt}' (use one of {', '.join(FORMATS)})")
    target = Path(path).expanduser().resolve()
    _check_target(target)
    if not target.parent.is_dir():
        raise LibraryEditError("its folder does not exist", file=target)
    entry = AutoExport(str(target), collection_id, fmt, None)
    write_one(lib, entry)  # fails before anything is registered if the file cannot be written
    with lib.transaction():
        lib.conn.execute(
            "INSERT INTO auto_exports (path, collection_id, format, last_written_at) "
            "VALUES (?, ?, ?, ?) ON CONFLICT(path) DO UPDATE SET collection_id = excluded.collection_id, "
            "format = excluded.format, last_written_at = excluded.last_written_at",
            (entry.path, collection_id, fmt, _now()),
        )
    run_all(lib)  # records the generation the new file shows
    return entry


def remove_auto_export(lib, path: str | Path) -> bool:
    """Stop keeping ``path`` in sync (the file itself is left as it is)."""
    target = str(Path(path).expanduser().resolve())
    with lib.transaction():
        lib.conn.execute("DELETE FROM meta WHERE key = ?", (_WRITTEN + target,))
        return lib.conn.execute("DELETE FROM auto_exports WHERE path = ?", (target,)).rowcount > 0


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def bump_generation(conn) -> None:
    """Inside the changing transaction: one more generation of the library's papers."""
    conn.execute(
        "INSERT INTO meta(key, value) VALUES (?, '1') ON CONFLICT(key) DO UPDATE SET "
        "value = CAST(value AS INTEGER) + 1",
        (GENERATION,),
    )


def generation(lib) -> int:
    row = lib.conn.execute("SELECT value FROM meta WHERE key = ?", (GENERATION,)).fetchone()
    return int(row[0]) if row and str(row[0]).isdigit() else 0


def _papers(lib, collection_id: int | None) -> list:
    if collection_id is None:
        papers = list(lib.iter_papers(with_record=False))
    else:
        papers = lib.get_many(collection_paper_ids(lib, [collection_id]))
    papers.sort(key=lambda p: (p.citekey or "").lower())
    return papers


def export_text(lib, collection_id: int | None, fmt: str) -> str:
    """The file text: the collection's (or all) non-trashed papers, sorted by citekey."""
    if fmt not in FORMATS:
        raise LibraryEditError(f"unknown format '{fmt}' (use one of {', '.join(FORMATS)})")
    return render(_papers(lib, collection_id), fmt)


def _write(path: Path, text: str) -> bool:
    data = text.encode("utf-8", "surrogateescape")
    try:
        _check_target(path)
        if path.is_file() and path.stat().st_size == len(data) and path.read_bytes() == data:
            return False
        write_atomic(path, data)
    except (OSError, FileRefused) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise LibraryEditError(f"cannot write the auto-export: {reason}", file=path) from exc
    return True


def write_one(lib, entry: AutoExport) -> bool:
    """Write ``entry``'s file if its text changed; returns True when it was written."""
    return _write(Path(entry.path), export_text(lib, entry.collection_id, entry.format))


def _lock(lib) -> FileLock:
    return FileLock(f"{lib.path}.export.lock", timeout=LOCK_TIMEOUT_S)


def run_all(lib, *, force: bool = False) -> list[str]:
    """Bring every registered file in step with the library; returns the failures as one-line
    messages. Serialised across processes; a file already showing this generation is skipped."""
    if lib.conn.in_transaction:
        raise RuntimeError("auto-exports run after the commit, not inside a transaction")
    try:
        with _lock(lib):
            return _run_locked(lib, force)
    except Timeout:
        return [f"{lib.path}: another process holds the auto-export lock; files catch up later"]


def _run_locked(lib, force: bool) -> list[str]:
    errors: list[str] = []
    done: list[tuple[str, int]] = []
    texts: dict[tuple, str] = {}
    papers: dict[int | None, list] = {}
    lib.conn.execute("BEGIN")  # one read snapshot: the generation and the papers it names
    try:
        gen = generation(lib)
        stale = set(out_of_step(lib))
        for entry in list_auto_exports(lib):
            if not force and entry.path not in stale:
                continue
            try:
                if entry.format not in FORMATS:
                    raise LibraryEditError(
                        f"unknown format '{entry.format}' (use one of {', '.join(FORMATS)})",
                        file=entry.path,
                    )
                scope = entry.collection_id
                if (scope, entry.format) not in texts:
                    if scope not in papers:
                        papers[scope] = _papers(lib, scope)
                    texts[(scope, entry.format)] = render(papers[scope], entry.format)
                _write(Path(entry.path), texts[(scope, entry.format)])
                done.append((entry.path, gen))
            except LibraryEditError as exc:
                errors.append(str(exc))
    finally:
        lib.conn.execute("COMMIT")
    if done:
        with lib.transaction():
            for path, g in done:
                lib.conn.execute(
                    "INSERT INTO meta(key, value) VALUES (?, ?) "
                    "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    (_WRITTEN + path, str(g)),
                )
                lib.conn.execute(
                    "UPDATE auto_exports SET last_written_at = ? WHERE path = ?", (_now(), path)
                )
    return errors


def out_of_step(lib) -> list[str]:
    """The registered files whose recorded generation is not the library's."""
    gen = str(generation(lib))
    shown = dict(
        lib.conn.execute(
            "SELECT substr(key, ?), value FROM meta WHERE key LIKE ?",
            (len(_WRITTEN) + 1, _WRITTEN + "%"),
        )
    )
    return [e.path for e in list_auto_exports(lib) if str(shown.get(e.path)) != gen]


def catch_up(lib) -> list[str]:
    """On open: bring files left behind by a killed process in step (no-op when none is)."""
    try:
        if not out_of_step(lib):
            return []
        return run_all(lib)
    except Exception as exc:  # read-only or damaged: the next change reports it
        return [f"{lib.path}: auto-exports could not catch up: {exc}"]
