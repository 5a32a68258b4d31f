"""Auto-export: keep chosen files in sync with a collection or the whole library.

After every committed change of the library's papers (``Library.transaction`` calls
:func:`run_all`), each registered file is rendered again, sorted by citekey so that an edit
changes only its own entry, and written atomically only when its text changed.

A target is the user's setting, not data of the library file: a row of a library received from
someone else stays inert until the user confirms it on this machine (:mod:`.export_trust`); a
registration made here is confirmed at once. Dotfiles, system folders and the library's own files
are never targets.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from assistant import filewrite
from assistant.library import export_trust
from assistant.library.export import FORMATS, render
from assistant.library.groups import LibraryEditError, collection_paper_ids


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
    if target.is_dir():
        raise LibraryEditError("is a folder; give a file name", file=target)
    if not target.parent.is_dir():
        raise LibraryEditError("its folder does not exist", file=target)
    problem = export_trust.target_problem(target, lib.path, new=True)
    if problem:
        raise LibraryEditError(problem, file=target)
    entry = AutoExport(str(target), collection_id, fmt, None)
    write_one(lib, entry)  # fails before anything is registered if the file cannot be written
    export_trust.confirm(lib.path, entry.path)  # registered by this user here: confirmed
    with lib.transaction():
        lib.conn.execute(
            "INSERT INTO auto_exports (path, collection_id, format, last_written_at) "
            "VALUES (?, ?, ?, ?) ON CONFLICT(path) DO UPDATE SET collection_id = excluded.collection_id, "
            "format = excluded.format, last_written_at = excluded.last_written_at",
            (entry.path, collection_id, fmt, _now()),
        )
    return entry


def remove_auto_export(lib, path: str | Path) -> bool:
    """Stop keeping ``path`` in sync (the file itself is left as it is)."""
    target = str(Path(path).expanduser().resolve())
    export_trust.forget(lib.path, target)
    with lib.transaction():
        return lib.conn.execute("DELETE FROM auto_exports WHERE path = ?", (target,)).rowcount > 0


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def export_text(lib, collection_id: int | None, fmt: str) -> str:
    """The file text: the collection's (or all) non-trashed papers, sorted by citekey."""
    if collection_id is None:
        papers = list(lib.iter_papers())
    else:
        papers = lib.get_many(collection_paper_ids(lib, [collection_id]))
    papers.sort(key=lambda p: (p.citekey or "").lower())
    return render(papers, fmt)


def write_one(lib, entry: AutoExport) -> bool:
    """Write ``entry``'s file if its text changed; returns True when it was written (never
    through a link, never a dotfile, a system file or one of the library's own files)."""
    path = Path(entry.path)
    problem = export_trust.target_problem(path, lib.path)
    if problem:
        raise LibraryEditError(f"{problem}; it was not written", file=path)
    text = export_text(lib, entry.collection_id, entry.format)
    data = text.encode("utf-8")
    try:
        filewrite.check_target(path, lib.path)
        if _same_bytes(path, data):
            return False
        filewrite.write_bytes(path, data, library=lib.path)
    except OSError as exc:
        raise LibraryEditError(
            f"cannot write the auto-export: {exc.strerror or exc}", file=path
        ) from exc
    return True


def _same_bytes(path: Path, data: bytes) -> bool:
    from assistant.textfile import FileRefused, read_file

    try:
        return read_file(path, limit=len(data)) == data
    except FileRefused:  # missing, larger, unreadable: written again
        return False


def run_all(lib) -> list[str]:
    """Refresh every confirmed file; returns the failures (and the targets left inert because
    they are not confirmed on this machine) as one-line messages.

    Rendering and writing happen under a per-library lock: two processes changing the library
    at once write in turn, and the last one renders after both commits (without it the slower
    one could write its older text last: 2 of 12 rounds of ``tools/race_autoexport.py``)."""
    entries = list_auto_exports(lib)
    errors = [
        f"{e.path}: not confirmed on this machine, not written (the library came from "
        "elsewhere?); check it with `assistant library auto-export --list` and confirm it with "
        "`--confirm PATH`"
        for e in entries
        if not e.confirmed
    ]
    confirmed = [e for e in entries if e.confirmed]
    if not confirmed:
        return errors
    written = []
    with filewrite.locked(export_trust.lock_path(lib.path)):
        for entry in confirmed:
            try:
                if write_one(lib, entry):
                    written.append(entry.path)
            except LibraryEditError as exc:
                errors.append(str(exc))
        if written:
            with lib.transaction():
                for path in written:
                    lib.conn.execute(
                        "UPDATE auto_exports SET last_written_at = ? WHERE path = ?", (_now(), path)
                    )
    return errors
