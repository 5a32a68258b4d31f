"""Safe appends to a manuscript's ``.bib`` file (no Qt).

Rules: the file is never rewritten from parsed data (the user's formatting and
comments stay byte-for-byte), a new entry is appended as text in the file's own encoding
and line endings (characters a Latin-1 file cannot store become LaTeX macros); the write is
atomic (temp file in the same folder + ``os.replace``; a ``<name>.bak`` copy of the
previous version only when asked, ``backup=True``, off by default); an entry whose key or DOI is already present is not
added again; the result is re-parsed before it replaces the file, so a write
that would lose or break an entry is refused and the file stays untouched.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

import bibtexparser

from assistant import filewrite
from assistant.errors import AssistantError
from assistant.library.normalize import normalize_doi, title_key
from assistant.textfile import (
    BinaryFileError,
    FileRefused,
    TextFormat,
    decode_text,
    encode_text,
    latex_escape_unencodable,
    read_file,
)

log = logging.getLogger(__name__)


class BibFileError(AssistantError, RuntimeError):
    """The .bib file or the entry cannot be handled safely (message names file and line)."""


@dataclass
class BibEntryInfo:
    """What identifies an entry of a .bib file."""

    key: str
    doi: str | None
    title: str
    line: int


@dataclass
class AppendResult:
    """Outcome of :func:`append_entry`.

    ``status``: ``"added"``; ``"duplicate-key"`` / ``"duplicate-doi"`` (already there, nothing
    written); ``"renamed"`` (the key was taken by another paper, added under ``key``).
    ``key`` is the key to cite.
    """

    status: str
    key: str
    path: Path
    backup: Path | None = None

    @property
    def written(self) -> bool:
        return self.status in ("added", "renamed")


def _field(entry, name: str) -> str:
    field = entry.fields_dict.get(name)
    return str(field.value) if field is not None else ""


def parse_entries(text: str, source: str = "<text>") -> tuple[list[BibEntryInfo], list[str]]:
    """Entries of BibTeX ``text`` and the error messages of blocks that failed to parse."""
    library = bibtexparser.parse_string(text)
    entries = [
        BibEntryInfo(e.key, normalize_doi(_field(e, "doi")), _field(e, "title"), e.start_line + 1)
        for e in library.entries
    ]
    errors = [
        f"{source}:{getattr(b, 'start_line', 0) + 1}: {getattr(b, 'error', 'unparseable block')}"
        for b in library.failed_blocks
    ]
    return entries, errors


def read_bib(path: Path | str) -> list[BibEntryInfo]:
    """Entries of an existing .bib file ([] if the file does not exist)."""
    path = Path(path)
    if not path.exists():
        return []
    return parse_entries(_read(path)[0], str(path))[0]


def _read(path: Path) -> tuple[str, TextFormat, bytes]:
    """A .bib file's text, its stored format (encoding, line endings) and its exact bytes."""
    try:
        data = read_file(path)  # a regular file within the size cap: never a FIFO or device
    except FileRefused as exc:
        raise BibFileError(f"{exc}. It was left unchanged.") from exc
    try:
        text, fmt = decode_text(data)
    except BinaryFileError as exc:
        raise BibFileError(
            f"{path}: {exc}; expected a BibTeX file. It was left unchanged."
        ) from exc
    return text, fmt, data


def find_duplicate(entries: list[BibEntryInfo], key: str, doi: str | None) -> BibEntryInfo | None:
    """The entry with the same key (case-insensitive) or the same DOI, if any."""
    doi = normalize_doi(doi)
    for entry in entries:
        if doi and entry.doi == doi:
            return entry
    for entry in entries:
        if entry.key.lower() == key.lower():
            return entry
    return None


def unclosed_brace_line(text: str) -> int | None:
    """Line of the ``@entry`` whose braces are still open at the end of ``text`` (None if balanced)."""
    depth, entry_line, line = 0, None, 1
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "\n":
            line += 1
        elif ch == "@" and depth == 0:
            entry_line = line
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(0, depth - 1)
        i += 1
    return (entry_line or 1) if depth > 0 else None


def _rename_entry(entry_text: str, old: str, new: str) -> str:
    return re.sub(
        r"(@\s*\w+\s*[{(]\s*)" + re.escape(old) + r"\s*,", rf"\g<1>{new},", entry_text, count=1
    )


def appended_text(old_text: str, entry_text: str) -> str:
    """What appending ``entry_text`` to a .bib holding ``old_text`` adds: one blank line between
    entries, a final newline (also used by editors' workspace edits, so both look the same)."""
    if not old_text.strip() or old_text.endswith("\n\n"):
        sep = ""
    elif old_text.endswith("\n"):
        sep = "\n"
    else:
        sep = "\n\n"
    return sep + entry_text.strip() + "\n"


@dataclass
class BibChange:
    """A planned addition to a ``.bib`` file (see :func:`plan_append`); nothing written yet.

    ``addition`` is empty when the entry is already there (``status`` duplicate-*)."""

    status: str
    key: str
    path: Path
    addition: str = ""
    old_bytes: bytes = b""
    fmt: TextFormat = field(default_factory=TextFormat)

    @property
    def writes(self) -> bool:
        return bool(self.addition)


_SURROGATES = re.compile("[\ud800-\udfff]")


def append_entry(path: Path | str, entry_text: str, backup: bool = False) -> AppendResult:
    """Append one BibTeX entry to ``path`` (created if missing) unless it is already there
    (``backup``: keep the previous version as ``<name>.bak``)."""
    return apply_bib_change(plan_append(path, entry_text), backup=backup)


def plan_append(path: Path | str, entry_text: str) -> BibChange:
    """What appending one BibTeX entry to ``path`` would do: the key to cite and the text to add
    (validated: every old entry survives). Raises ``BibFileError``; writes nothing."""
    path = Path(path)
    # a lone surrogate (from a JSON "\ud800" or a non-UTF-8 argument) cannot be written as UTF-8
    entry_text = _SURROGATES.sub("\ufffd", entry_text)
    new_entries, errors = parse_entries(entry_text, "<new entry>")
    if len(new_entries) != 1 or errors:
        raise BibFileError(
            f"expected exactly one valid BibTeX entry to add, got {len(new_entries)}"
            + (f" ({errors[0]})" if errors else "")
        )
    new = new_entries[0]
    old_text, fmt, old_bytes = _read(path) if path.exists() else ("", TextFormat(), b"")
    try:  # a Latin-1 / cp1252 file stays one: what it cannot store becomes a LaTeX macro
        entry_text = latex_escape_unencodable(entry_text, fmt)
    except ValueError as exc:
        raise BibFileError(
            f"{path} is {fmt.encoding}, not UTF-8: {exc}. The file was left unchanged."
        ) from exc
    old_entries, old_errors = parse_entries(old_text, str(path))
    open_line = unclosed_brace_line(old_text)
    if open_line is not None:
        raise BibFileError(
            f"{path}:{open_line}: an entry there is not closed (unbalanced braces); a new entry appended "
            "after it would be swallowed by BibTeX. Fix the file first; it was left unchanged."
        )

    dup = find_duplicate(old_entries, new.key, new.doi)
    key, status = new.key, "added"
    if dup is not None:
        same_paper = (new.doi and dup.doi == new.doi) or (
            title_key(dup.title) and title_key(dup.title) == title_key(new.title)
        )
        if same_paper or dup.key.lower() != new.key.lower():
            status = "duplicate-doi" if (new.doi and dup.doi == new.doi) else "duplicate-key"
            return BibChange(status, dup.key, path)
        # same key, different paper: keep both, the new one under a free key
        taken = {e.key.lower() for e in old_entries}
        suffix = 1
        while f"{new.key}-{suffix}".lower() in taken:
            suffix += 1
        key, status = f"{new.key}-{suffix}", "renamed"
        entry_text = _rename_entry(entry_text, new.key, key)

    addition = appended_text(old_text, entry_text)
    new_text = old_text + addition

    # Validate before touching the file: every old entry survives and the new one parses.
    check, new_errors = parse_entries(new_text, str(path))
    keys_after = [e.key for e in check]
    if (
        len(check) != len(old_entries) + 1
        or key not in keys_after
        or len(new_errors) > len(old_errors)
    ):
        raise BibFileError(
            f"{path}: appending '{key}' would not yield a valid file "
            f"(entries before {len(old_entries)}, after {len(check)}); an unclosed entry near the end "
            "of the file? The file was left unchanged."
        )
    return BibChange(status, key, path, addition, old_bytes, fmt)


def apply_bib_change(change: BibChange, backup: bool = False) -> AppendResult:
    """Write a planned addition (with ``backup``, a ``.bak`` copy of the old file first); the old
    bytes stay as they were. A duplicate writes nothing."""
    path, key, status = change.path, change.key, change.status
    if not change.writes:
        return AppendResult(status, key, path)
    copy = backup
    backup = None
    st = filewrite.check_target(path)  # never through a link: checked before the backup
    if st is not None:
        if copy:
            backup = path.with_name(path.name + ".bak")
            # a kill mid-copy never leaves a half backup; a link or FIFO named .bak is refused
            filewrite.write_bytes(backup, change.old_bytes, mode=st.st_mode & 0o777)
    elif not path.parent.is_dir():
        raise BibFileError(
            f"{path}: the folder {path.parent} does not exist; choose the bibliography file again"
        )
    # the old bytes stay as they were
    filewrite.write_bytes(
        path,
        change.old_bytes
        + encode_text(change.addition, change.fmt, whole_file=not change.old_bytes),
    )
    log.info("added %s to %s", key, path)
    return AppendResult(status, key, path, backup)


def entry_number(path: Path | str, key: str) -> int | None:
    """1-based position of ``key`` in the .bib file (the numeric-style reference number)."""
    for i, entry in enumerate(read_bib(path), start=1):
        if entry.key.lower() == key.lower():
            return i
    return None
