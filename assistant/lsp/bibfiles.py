"""A manuscript's .bib files: where they are, what keys they define (with locations), and the
edit that adds an entry.

Where entries go: the files the manuscript names (``\\bibliography{a,b}``,
``\\addbibresource{refs.bib}``, YAML ``bibliography:``), resolved against its folder; a named
file outside that folder is used when it exists, never created. When none is named, the only
``.bib`` file in the manuscript's own folder, if there is exactly one; otherwise none.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from assistant.lsp import backend
from assistant.lsp.text import DocState

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BibEntry:
    """One entry of a .bib file; ``line``/``start``/``end`` locate its key (0-based line,
    character offsets in that line)."""

    key: str
    doi: str | None
    title: str
    path: Path
    line: int
    start: int
    end: int


@dataclass
class BibFile:
    """One .bib file as the editor or the disk has it."""

    path: Path
    text: str
    exists: bool
    entries: list[BibEntry] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@dataclass
class BibSet:
    """The .bib files of one manuscript; the first is where new entries go."""

    files: list[BibFile]

    @property
    def target(self) -> BibFile | None:
        return self.files[0] if self.files else None

    @cached_property
    def _by_key(self) -> tuple[dict[str, BibEntry], dict[str, BibEntry], dict[str, str]]:
        exact: dict[str, BibEntry] = {}
        lowered: dict[str, BibEntry] = {}
        dois: dict[str, str] = {}
        for bib in self.files:
            for entry in bib.entries:
                exact.setdefault(entry.key, entry)
                lowered.setdefault(entry.key.lower(), entry)
                if entry.doi:
                    dois.setdefault(entry.doi, entry.key)
        return exact, lowered, dois

    def find(self, key: str) -> BibEntry | None:
        """The entry for ``key`` (exact, else case-insensitive as BibTeX compares keys)."""
        exact, lowered, _ = self._by_key
        return exact.get(key) or lowered.get(key.lower())

    def key_for_doi(self, doi: str | None) -> str | None:
        doi = backend.normalize_doi(doi)
        return self._by_key[2].get(doi) if doi else None

    def keys(self) -> set[str]:
        return {e.key for bib in self.files for e in bib.entries}


def _locate(text: str, line_starts: list[int], info) -> BibEntry | None:
    line = max(0, info.line - 1)
    if line >= len(line_starts):
        return None
    pos = line_starts[line]
    m = re.compile(r"@\s*\w+\s*[{(]\s*(" + re.escape(info.key) + r")\s*,").search(text, pos)
    if m is None or m.start() - pos > 2000:
        return BibEntry(info.key, info.doi, info.title, Path(), line, 0, 0)
    key_line = line + text.count("\n", pos, m.start(1))
    col = m.start(1) - (text.rfind("\n", 0, m.start(1)) + 1)
    return BibEntry(info.key, info.doi, info.title, Path(), key_line, col, col + len(info.key))


def parse_bib(path: Path, text: str, exists: bool = True) -> BibFile:
    """Entries of a .bib text with the location of each key."""
    try:
        infos, errors = backend.parse_bib_entries(text, str(path))
    except Exception as exc:  # a file bibtexparser cannot read at all
        return BibFile(path, text, exists, [], [f"{path}: {exc}"])
    starts = [0] + [m.end() for m in re.finditer(r"\n", text)]
    entries = []
    for info in infos:
        entry = _locate(text, starts, info)
        if entry is not None:
            entries.append(
                BibEntry(
                    entry.key, entry.doi, entry.title, path, entry.line, entry.start, entry.end
                )
            )
    return BibFile(path, text, exists, entries, errors)


class BibCache:
    """Parsed .bib files, re-read when the editor's buffer or the file on disk changes.

    ``open_text(path)`` returns ``(text, version)`` of a .bib open in the editor, else None.
    """

    def __init__(self, open_text: Callable[[Path], tuple[str, int | None] | None]) -> None:
        self._open_text = open_text
        self._cache: dict[Path, tuple[tuple, BibFile]] = {}
        self._lock = threading.Lock()

    def get(self, path: Path) -> BibFile:
        path = Path(path)
        opened = self._open_text(path)
        if opened is not None:
            stamp: tuple = ("editor", opened[1], len(opened[0]), hash(opened[0]))
        else:
            try:
                st = path.stat()
                stamp = ("disk", st.st_mtime_ns, st.st_size)
            except OSError:
                stamp = ("missing",)
        with self._lock:
            cached = self._cache.get(path)
            if cached is not None and cached[0] == stamp:
                return cached[1]
        if opened is not None:
            bib = parse_bib(path, opened[0], True)
        elif stamp[0] == "disk":
            try:
                bib = parse_bib(path, backend.read_text_file(path), True)
            except Exception as exc:  # unreadable: report, define nothing
                bib = BibFile(path, "", True, [], [f"{path}: {exc}"])
        else:
            bib = BibFile(path, "", False)
        with self._lock:
            self._cache[path] = (stamp, bib)
        return bib

    def invalidate(self, path: Path) -> None:
        with self._lock:
            self._cache.pop(Path(path), None)


def bib_paths(doc: DocState) -> list[Path]:
    """The .bib files of a manuscript (see the module docstring)."""
    named = doc.bib_paths
    if named:
        return named
    if doc.path is None:
        return []
    try:
        found = sorted(p for p in doc.path.parent.glob("*.bib") if p.is_file())
    except OSError:
        return []
    return [found[0].resolve()] if len(found) == 1 else []


def bib_set(doc: DocState, cache: BibCache) -> BibSet:
    return BibSet([cache.get(p) for p in bib_paths(doc)])


@dataclass
class BibAddition:
    """Text to add at the end of ``path`` (``offset`` = the end of its current text)."""

    path: Path
    create: bool
    offset: int
    text: str
    key: str


def addition_for(bibs: BibSet, key: str, entry_text: str, doi: str | None) -> BibAddition | None:
    """The text that adds ``entry_text`` to the manuscript's .bib, or None when an entry with
    this key or DOI is already there (or the manuscript has no .bib)."""
    target = bibs.target
    if target is None:
        return None
    if bibs.find(key) is not None or bibs.key_for_doi(doi) is not None:
        return None
    entry_text = backend.escape_for_file(entry_text, target.path)
    return BibAddition(
        path=target.path,
        create=not target.exists,
        offset=len(target.text),
        text=backend.appended_bib_text(target.text, entry_text),
        key=key,
    )
