"""The ``.bib`` contract of a saved manuscript (issue 31), in one place for every program.

After :func:`sync_bib` the ``.bib`` file

- holds an entry for every key the manuscript cites that the library knows (citations that were
  in the draft before the app opened it included), under the cited key;
- holds no entry the app added for a key the manuscript no longer cites: an entry counts as the
  app's when its text is exactly what the app writes for that library paper (so an entry the
  user typed or edited is theirs and stays);
- leaves everything else byte for byte (the user's entries, comments, formatting, encoding).

Cited keys that neither the file nor the library know are listed in the report (``unresolved``).
No backup copy is written; the file is replaced atomically (a kill leaves the old one).
Numeric citations (``[1]``) name positions, not keys: they only get their queued entries.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import bibtexparser

from assistant.documents import textops
from assistant.library.bibfile import (
    BibFileError,
    _read,
    _rename_entry,
    appended_text,
    parse_entries,
    unclosed_brace_line,
)
from assistant.textfile import TextFormat, encode_text, latex_escape_unencodable, write_atomic

#: key -> the BibTeX entry the app writes for it (None: the library does not know the key)
Lookup = Callable[[str], str | None]


@dataclass
class BibSyncReport:
    """What saving did to the ``.bib``: keys added, app entries removed, keys nobody knows."""

    path: Path
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)
    written: bool = False

    def message(self) -> str:
        """One line for a status bar ("" when nothing happened)."""
        parts = []
        if self.added:
            parts.append(f"{len(self.added)} added to {self.path.name}")
        if self.removed:
            parts.append(f"{len(self.removed)} no longer cited removed ({', '.join(self.removed)})")
        if self.unresolved:
            parts.append(f"not in the library or {self.path.name}: {', '.join(self.unresolved)}")
        return "; ".join(parts)


def cited_keys(document: str, style: str) -> list[str]:
    """The keys ``document`` cites in ``style`` (LaTeX ``\\cite{}``, pandoc ``[@key]``), in the
    order of their first citation."""
    keys: dict[str, None] = {}
    for span in textops.citation_spans(document, style):
        if span.style == style:
            keys.update(dict.fromkeys(span.keys))
    return list(keys)


def _norm(entry_text: str) -> str:
    return " ".join(entry_text.split())


def _entry_spans(text: str) -> list[tuple[str, int, int]]:
    """``(key, start, end)`` of each entry of ``text`` (character offsets of its raw text)."""
    library = bibtexparser.parse_string(text)
    line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
    spans = []
    for entry in library.entries:
        raw = getattr(entry, "raw", None)
        line = entry.start_line
        if not raw or line >= len(line_starts):
            continue
        start = text.find(raw, line_starts[line])
        if start >= 0:
            spans.append((entry.key, start, start + len(raw)))
    return spans


def _remove(text: str, start: int, end: int) -> str:
    """``text`` without ``[start, end)``, its line end and the blank line that separated it."""
    if text[end : end + 1] == "\n":
        end += 1
    if start >= 2 and text[start - 2 : start] == "\n\n":
        start -= 1
    elif start == 0 and text[end : end + 1] == "\n":
        end += 1
    return text[:start] + text[end:]


def plan_sync(
    text: str, cited: Sequence[str], lookup: Lookup, fmt: TextFormat, source: str = "<bib>"
) -> tuple[str, BibSyncReport]:
    """The new text of a ``.bib`` holding ``text`` (see the module docstring); raises
    ``BibFileError`` when the file cannot be changed safely."""
    report = BibSyncReport(Path(source))
    open_line = unclosed_brace_line(text)
    if open_line is not None:
        raise BibFileError(
            f"{source}:{open_line}: an entry there is not closed (unbalanced braces); "
            "fix the file first, it was left unchanged"
        )
    old_entries, old_errors = parse_entries(text, source)
    cited_lower = {k.lower() for k in cited}
    new = text
    for key, start, end in reversed(_entry_spans(text)):
        if key.lower() in cited_lower:
            continue
        ours = _app_entry(lookup, key, fmt)
        if ours is not None and _norm(new[start:end]) == _norm(ours):
            new = _remove(new, start, end)
            report.removed.insert(0, key)
    present = {e.key.lower() for e in old_entries}
    for key in cited:
        if key.lower() in present:
            continue
        entry = _app_entry(lookup, key, fmt)
        if entry is None:
            report.unresolved.append(key)
            continue
        new += appended_text(new, entry)
        present.add(key.lower())
        report.added.append(key)
    check, errors = parse_entries(new, source)
    expected = len(old_entries) - len(report.removed) + len(report.added)
    keys_after = {e.key.lower() for e in check}
    if (
        len(check) != expected
        or len(errors) > len(old_errors)
        or not all(k.lower() in keys_after for k in report.added)
    ):
        raise BibFileError(
            f"{source}: updating the entries would not yield a valid file (entries before "
            f"{len(old_entries)}, after {len(check)}, expected {expected}); it was left unchanged"
        )
    return new, report


def _app_entry(lookup: Lookup, key: str, fmt: TextFormat) -> str | None:
    """The entry the app writes for ``key`` in a file of ``fmt`` (under ``key`` itself)."""
    entry = lookup(key)
    if not entry:
        return None
    found, _ = parse_entries(entry, "<library>")
    if len(found) != 1:
        return None
    if found[0].key != key:  # cited by an alias or another spelling: the entry gets the cited key
        entry = _rename_entry(entry, found[0].key, key)
    try:
        return latex_escape_unencodable(entry, fmt).strip()
    except ValueError:
        return None


def sync_bib(
    bib_path: Path | str, document: str, style: str, lookup: Lookup, protect: Iterable = ()
) -> BibSyncReport:
    """Bring ``bib_path`` in line with the citations of ``document`` (see the module docstring);
    writes only when something changes. Raises ``BibFileError`` (the file stays as it was)."""
    path = Path(bib_path)
    cited = cited_keys(document, style)
    if path.exists():
        text, fmt, old = _read(path)
    elif not cited:
        return BibSyncReport(path)
    else:
        if not path.parent.is_dir():
            raise BibFileError(f"{path}: the folder {path.parent} does not exist")
        text, fmt, old = "", TextFormat(), b""
    new, report = plan_sync(text, cited, lookup, fmt, str(path))
    report.path = path
    if new == text:
        return report
    if new.startswith(text):  # only additions: the old bytes stay exactly as they were
        data = old + encode_text(new[len(text) :], fmt, whole_file=not old)
    else:
        data = encode_text(new, fmt, whole_file=True)
    write_bib(path, data, protect)
    report.written = True
    return report


def write_bib(path: Path, data: bytes, protect: Iterable = ()) -> None:
    """The one write of a ``.bib`` file (atomic replace, never a backup copy)."""
    write_atomic(path, data, protect)
