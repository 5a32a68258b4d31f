"""Auto-export: keep chosen files in sync with a collection or the whole library.

After every committed change of the library's papers (``Library.transaction`` calls
:func:`run_all`), each registered file is rendered again, sorted by citekey so that an edit
changes only its own entry, and written atomically only when its text changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from assistant.library.export import FORMATS, render
from assistant.library.groups import LibraryEditError, collection_paper_ids
from assistant.textfile import write_atomic


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
    entry = AutoExport(str(target), collection_id, fmt, None)
    write_one(lib, entry)  # fails before anything is registered if the file cannot be written
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
    """Write ``entry``'s file if its text changed; returns True when it was written."""
    text = export_text(lib, entry.collection_id, entry.format)
    path = Path(entry.path)
    data = text.encode("utf-8")
    try:
        if path.exists() and path.read_bytes() == data:
            return False
        write_atomic(path, data)
    except OSError as exc:
        raise LibraryEditError(
            f"cannot write the auto-export: {exc.strerror or exc}", file=path
        ) from exc
    return True


def run_all(lib) -> list[str]:
    """Refresh every registered file; returns the failures as one-line messages."""
    errors = []
    written = []
    for entry in list_auto_exports(lib):
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
