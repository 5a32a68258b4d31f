"""Auto-export: keep chosen files in sync with a collection or the whole library.

Every committed change of the library's papers bumps the library's *generation* (``meta`` key
``generation``, in the same transaction) and then calls :func:`run_all`, which, under a file lock
shared by every process using the library, renders each registered file whose recorded
generation is behind (once per collection and format, from one read snapshot), writes it
atomically when its text changed and records the generation it now shows. A process killed
between its commit and the export leaves the files one generation behind: the next open of the
library (:func:`catch_up`) or the next change brings them in step.

Each commit also logs which papers it changed (``meta`` key ``changes:GEN``). A file whose text
is still what was written (size and mtime recorded with its entry index) is updated in place:
only the entries of the papers changed since its generation are rendered again, the others are
copied from the file. A collection, a file edited by hand or an unknown change renders it whole.

A target is the user's setting, not data of the library file: a row of a library received from
someone else stays inert until the user confirms it on this machine (:mod:`.export_trust`); a
registration made here is confirmed at once. Dotfiles, system folders and the library's own files
are never targets.
"""

from __future__ import annotations

import bisect
import json
import os
import stat
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from filelock import FileLock, Timeout

from assistant import faults, filewrite
from assistant.library import export_trust
from assistant.library.export import FORMATS, paper_to_bibtex
from assistant.library.groups import LibraryEditError, collection_paper_ids
from assistant.library.meta import GENERATION
from assistant.textfile import FileRefused

_WRITTEN = "auto_export_generation:"  # meta key prefix: the generation a file shows
_INDEX = "auto_export_index:"  # meta key prefix: the file's entries (paper id, sort key, length)
_CHANGES = "changes:"  # meta key prefix: the paper ids a generation changed ("*": unknown)
_KEEP_CHANGES = 256  # generations of change log kept
_MAX_INCREMENTAL = 5000  # changed papers above which a file is rendered whole
LOCK_TIMEOUT_S = 120.0


@dataclass
class AutoExport:
    path: str
    collection_id: int | None  # None = the whole library
    format: str
    last_written_at: str | None
    confirmed: bool = True  # confirmed on this machine (an unconfirmed row is never written)


def list_auto_exports(lib) -> list[AutoExport]:
    trusted = export_trust.confirmed_targets(lib.path)
    return [
        AutoExport(*row, confirmed=row[0] in trusted)
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


def unconfirmed(lib, confirmable: bool = False) -> list[AutoExport]:
    """The library's targets not confirmed on this machine (a received library's rows); only
    those that may be confirmed (no dotfile, system folder, library file...) if ``confirmable``."""
    return [
        e
        for e in list_auto_exports(lib)
        if not e.confirmed and not (confirmable and export_trust.target_problem(e.path, lib.path))
    ]


def confirm_auto_export(lib, path: str | Path) -> AutoExport:
    """Confirm a registered target on this machine (it is written from the next change on)."""
    target = str(Path(path).expanduser().absolute())
    entries = {e.path: e for e in list_auto_exports(lib)}
    entry = entries.get(target) or entries.get(str(Path(target).resolve()))
    if entry is None:
        raise LibraryEditError("is not an auto-export target of this library", file=target)
    problem = export_trust.target_problem(entry.path, lib.path)
    if problem:
        raise LibraryEditError(f"{problem}; it cannot be confirmed", file=entry.path)
    export_trust.confirm(lib.path, entry.path)
    entry.confirmed = True
    return entry


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
    problem = export_trust.target_problem(target, lib.path, new=True)
    if problem:
        raise LibraryEditError(problem, file=target)
    entry = AutoExport(str(target), collection_id, fmt, None)
    export_trust.confirm(lib.path, entry.path)  # registered by this user here: confirmed
    with lib.transaction():
        lib.conn.execute(
            "INSERT INTO auto_exports (path, collection_id, format, last_written_at) "
            "VALUES (?, ?, ?, ?) ON CONFLICT(path) DO UPDATE SET collection_id = excluded.collection_id, "
            "format = excluded.format, last_written_at = excluded.last_written_at",
            (entry.path, collection_id, fmt, _now()),
        )
        for prefix in (_WRITTEN, _INDEX):
            lib.conn.execute("DELETE FROM meta WHERE key = ?", (prefix + entry.path,))
    errors = run_all(lib, only=entry.path)  # written now: nothing stays registered if it fails
    if errors:
        remove_auto_export(lib, entry.path)
        raise LibraryEditError(errors[0])
    return entry


def remove_auto_export(lib, path: str | Path) -> bool:
    """Stop keeping ``path`` in sync (the file itself is left as it is)."""
    target = str(Path(path).expanduser().resolve())
    export_trust.forget(lib.path, target)
    with lib.transaction():
        for prefix in (_WRITTEN, _INDEX):
            lib.conn.execute("DELETE FROM meta WHERE key = ?", (prefix + target,))
        return lib.conn.execute("DELETE FROM auto_exports WHERE path = ?", (target,)).rowcount > 0


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def record_change(conn, ids: set[int] | None) -> None:
    """Inside the changing transaction: one more generation, and the papers it changed."""
    conn.execute(
        "INSERT INTO meta(key, value) VALUES (?, '1') ON CONFLICT(key) DO UPDATE SET "
        "value = CAST(value AS INTEGER) + 1",
        (GENERATION,),
    )
    gen = int(conn.execute("SELECT value FROM meta WHERE key = ?", (GENERATION,)).fetchone()[0])
    log = "*" if ids is None or len(ids) > _MAX_INCREMENTAL else json.dumps(sorted(ids))
    conn.execute(
        "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (_CHANGES + str(gen), log)
    )
    conn.execute(
        "DELETE FROM meta WHERE key LIKE ? AND CAST(substr(key, ?) AS INTEGER) <= ?",
        (_CHANGES + "%", len(_CHANGES) + 1, gen - _KEEP_CHANGES),
    )


def _changes_since(lib, start: int, end: int) -> set[int] | None:
    """The papers changed after generation ``start`` up to ``end`` (None: unknown)."""
    logs = dict(
        lib.conn.execute(
            "SELECT CAST(substr(key, ?) AS INTEGER), value FROM meta WHERE key LIKE ?",
            (len(_CHANGES) + 1, _CHANGES + "%"),
        )
    )
    ids: set[int] = set()
    for g in range(start + 1, end + 1):
        log = logs.get(g)
        if log is None or log == "*":
            return None
        ids.update(json.loads(log))
    return ids


def generation(lib) -> int:
    row = lib.conn.execute("SELECT value FROM meta WHERE key = ?", (GENERATION,)).fetchone()
    return int(row[0]) if row and str(row[0]).isdigit() else 0


def _sort_key(paper) -> str:
    return (paper.citekey or "").lower()


def _papers(lib, collection_id: int | None) -> list:
    if collection_id is None:
        papers = list(lib.iter_papers(with_record=False))
    else:
        papers = lib.get_many(sorted(collection_paper_ids(lib, [collection_id])))
    papers.sort(key=lambda p: (_sort_key(p), p.id))
    return papers


#: how entries are framed in a file: prefix, separator, suffix, text of an empty file
_FRAME = {
    "bibtex": ("", "", "", ""),
    "ris": ("", "", "", ""),
    "csl-json": ("[\n", ",\n", "\n]\n", "[]\n"),
}


def _part(paper, fmt: str) -> bytes:
    """One paper's entry, encoded (the file is spliced as bytes)."""
    from assistant.library import formats

    if fmt == "bibtex":
        text = paper_to_bibtex(paper) + "\n"
    elif fmt == "ris":
        text = formats.paper_to_ris(paper) + "\n"
    else:
        text = json.dumps(formats.paper_to_csl(paper), ensure_ascii=False)
    return text.encode("utf-8", "surrogateescape")


def _assemble(parts: list[bytes], fmt: str) -> bytes:
    prefix, sep, suffix, empty = (x.encode() for x in _FRAME[fmt])
    return prefix + sep.join(parts) + suffix if parts else empty


def export_text(lib, collection_id: int | None, fmt: str) -> str:
    """The file text: the collection's (or all) non-trashed papers, sorted by citekey."""
    if fmt not in FORMATS:
        raise LibraryEditError(f"unknown format '{fmt}' (use one of {', '.join(FORMATS)})")
    data = _assemble([_part(p, fmt) for p in _papers(lib, collection_id)], fmt)
    return data.decode("utf-8", "surrogateescape")


def _write_bytes(path: Path, data: bytes, library: Path) -> bool:
    try:
        _check_target(path)
        filewrite.check_target(path, library)
        if path.is_file() and path.stat().st_size == len(data) and path.read_bytes() == data:
            return False
        filewrite.write_bytes(path, data, library=library)
    except (OSError, FileRefused) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise LibraryEditError(f"cannot write the auto-export: {reason}", file=path) from exc
    return True


def write_one(lib, entry: AutoExport) -> bool:
    """Write ``entry``'s file if its text changed; returns True when it was written (never
    through a link, never a dotfile, a system file or one of the library's own files)."""
    _check_trusted(lib, entry)
    text = export_text(lib, entry.collection_id, entry.format)
    return _write_bytes(Path(entry.path), text.encode("utf-8", "surrogateescape"), lib.path)


def _check_trusted(lib, entry: AutoExport) -> None:
    """Refuse a target this machine has not confirmed or that may never be one."""
    if not entry.confirmed:
        raise LibraryEditError(
            "not confirmed on this machine, not written (the library came from elsewhere?); "
            "check it with `assistant library auto-export --list` and confirm it with "
            "`--confirm PATH`",
            file=entry.path,
        )
    problem = export_trust.target_problem(Path(entry.path), lib.path)
    if problem:
        raise LibraryEditError(f"{problem}; it was not written", file=entry.path)


def _lock(lib) -> FileLock:
    return filewrite.file_lock(f"{lib.path}.export.lock", timeout=LOCK_TIMEOUT_S)


def run_all(lib, *, force: bool = False, only: str | None = None) -> list[str]:
    """Bring every registered file in step with the library; returns the failures as one-line
    messages. Serialised across processes; a file already showing this generation is skipped."""
    if lib.conn.in_transaction:
        raise RuntimeError("auto-exports run after the commit, not inside a transaction")
    try:
        with _lock(lib):
            return _run_locked(lib, force, only)
    except Timeout:
        return [f"{lib.path}: another process holds the auto-export lock; files catch up later"]
    except OSError as exc:  # the lock file cannot be made (a read-only folder)
        return [f"{lib.path}: cannot take the auto-export lock ({exc.strerror or exc})"]
    except FileRefused as exc:  # a link or a FIFO planted at the lock's name
        return [f"cannot take the auto-export lock: {exc}"]


def _index(lib, path: str) -> dict | None:
    row = lib.conn.execute("SELECT value FROM meta WHERE key = ?", (_INDEX + path,)).fetchone()
    try:
        return json.loads(row[0]) if row else None
    except ValueError:
        return None


def _incremental(lib, entry: AutoExport, gen: int, index: dict | None):
    """``(parts, index rows)`` from the file and the papers changed since it was written, or
    None when the file must be rendered whole."""
    if index is None or entry.collection_id is not None or index.get("format") != entry.format:
        return None
    changed = _changes_since(lib, int(index.get("gen", -1)), gen)
    if changed is None or len(changed) > _MAX_INCREMENTAL:
        return None
    try:
        st = os.stat(entry.path)
        if (st.st_size, st.st_mtime_ns) != (index["bytes"], index["mtime_ns"]):
            return None  # edited by hand or replaced: write it whole
        text = Path(entry.path).read_bytes()
    except (OSError, KeyError):
        return None
    prefix, sep, _suffix, _empty = _FRAME[entry.format]
    rows, parts, pos = [], [], len(prefix)
    for pid, key, n in index["parts"]:
        if pid not in changed:
            rows.append((key, pid))
            parts.append(text[pos : pos + n])
        pos += n + len(sep)
    for p in lib.get_many(sorted(changed)):
        if p.deleted_at is None:
            at = bisect.bisect(rows, (_sort_key(p), p.id))
            rows.insert(at, (_sort_key(p), p.id))
            parts.insert(at, _part(p, entry.format))
    return parts, rows


def _run_locked(lib, force: bool, only: str | None) -> list[str]:
    errors: list[str] = []
    done: list[tuple[str, str]] = []
    whole: dict[tuple, tuple] = {}
    lib.conn.execute("BEGIN")  # one read snapshot: the generation and the papers it names
    try:
        gen = generation(lib)
        stale = set(out_of_step(lib))
        for entry in list_auto_exports(lib):
            if (only and entry.path != only) or (not force and entry.path not in stale):
                continue
            try:
                if entry.format not in FORMATS:
                    raise LibraryEditError(
                        f"unknown format '{entry.format}' (use one of {', '.join(FORMATS)})",
                        file=entry.path,
                    )
                _check_target(Path(entry.path))
                _check_trusted(lib, entry)
                got = None if force else _incremental(lib, entry, gen, _index(lib, entry.path))
                if got is None:
                    scope = (entry.collection_id, entry.format)
                    if scope not in whole:
                        papers = _papers(lib, entry.collection_id)
                        whole[scope] = (
                            [_part(p, entry.format) for p in papers],
                            [(_sort_key(p), p.id) for p in papers],
                        )
                    got = whole[scope]
                parts, rows = got
                data = _assemble(parts, entry.format)
                _write_bytes(Path(entry.path), data, lib.path)
                faults.point("autoexport.written")
                index = {
                    "gen": gen,
                    "format": entry.format,
                    "bytes": len(data),
                    "mtime_ns": os.stat(entry.path).st_mtime_ns,
                    "parts": [[pid, key, len(part)] for (key, pid), part in zip(rows, parts)],
                }
                done.append((entry.path, json.dumps(index, ensure_ascii=False)))
            except LibraryEditError as exc:
                errors.append(str(exc))
    finally:
        lib.conn.execute("COMMIT")
    if done:
        with lib.transaction():
            for path, index in done:
                for key, value in ((_WRITTEN + path, str(gen)), (_INDEX + path, index)):
                    lib.conn.execute(
                        "INSERT INTO meta(key, value) VALUES (?, ?) "
                        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                        (key, value),
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
