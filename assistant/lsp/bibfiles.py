"""A manuscript's .bib files: where they are, what keys they define (with locations), and the
edit that adds an entry.

Where entries go: the files the manuscript names (``\\bibliography{a,b}``,
``\\addbibresource{refs.bib}``, YAML ``bibliography:``), resolved against its folder; a named
file outside that folder is used when it exists, never created. When none is named, every
``.bib`` file in the manuscript's own folder (new entries go to the first by name).
"""

from __future__ import annotations

import bisect
import gc
import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from assistant.lsp import backend
from assistant.lsp.text import DocState
from assistant.lsp.words import WordIndex

#: .bib files up to this many entries are searchable by author, title word and year
MAX_WORD_INDEXED = 20_000

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class BibEntry:
    """One entry of a .bib file; ``line``/``start``/``end`` locate its key (0-based line,
    character offsets in that line). Title, author and year are read from the entry's text
    when asked for (a 400k-entry file is indexed by keys only)."""

    key: str
    doi: str | None
    path: Path
    line: int
    start: int
    end: int
    span: tuple[int, int] = (0, 0)  # the entry in ``source``
    source: str = field(default="", repr=False, compare=False)

    def field(self, name: str) -> str:
        """A field's value without braces (``""`` when absent)."""
        lo, hi = self.span
        for f in _FIELD_RE.finditer(self.source, lo, hi):
            if f.group(1).lower() == name:
                return _clean(_value(self.source, f.end(), hi))
        return ""

    @property
    def title(self) -> str:
        return self.field("title")

    @property
    def author(self) -> str:
        return self.field("author")

    @property
    def year(self) -> str:
        return self.field("year")


@dataclass
class BibFile:
    """One .bib file as the editor or the disk has it."""

    path: Path
    text: str
    exists: bool
    entries: list[BibEntry] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    newline: str = "\n"  # how the file ends its lines (what the server adds ends them alike)

    @cached_property
    def index(self) -> tuple[dict[str, BibEntry], dict[str, BibEntry], dict[str, str], list]:
        """``key ->``, ``lower-case key ->`` entry, ``doi -> key``, sorted lower-case keys."""
        exact: dict[str, BibEntry] = {}
        lowered: dict[str, BibEntry] = {}
        dois: dict[str, str] = {}
        for entry in self.entries:
            exact.setdefault(entry.key, entry)
            lowered.setdefault(entry.key.lower(), entry)
            if entry.doi:
                dois.setdefault(entry.doi, entry.key)
        return exact, lowered, dois, sorted(lowered)

    word_index: WordIndex | None = field(default=None, repr=False, compare=False)

    def index_words(self) -> None:
        """Build :attr:`word_index` (authors, title, year of each entry) for a file of at most
        :data:`MAX_WORD_INDEXED` entries (reading every entry's fields takes a while)."""
        if self.word_index is None and len(self.entries) <= MAX_WORD_INDEXED:
            self.word_index = WordIndex(f"{e.author} {e.title} {e.year}" for e in self.entries)

    def with_prefix(self, prefix: str, limit: int) -> list[BibEntry]:
        """Up to ``limit`` entries whose key starts with ``prefix`` (case-insensitive)."""
        _, lowered, _, ordered = self.index
        p = prefix.lower()
        out = []
        i = bisect.bisect_left(ordered, p)
        while i < len(ordered) and ordered[i].startswith(p) and len(out) < limit:
            out.append(lowered[ordered[i]])
            i += 1
        return out


@dataclass
class BibSet:
    """The .bib files of one manuscript; the first is where new entries go."""

    files: list[BibFile]

    @property
    def target(self) -> BibFile | None:
        return self.files[0] if self.files else None

    def find(self, key: str) -> BibEntry | None:
        """The entry for ``key`` (exact, else case-insensitive as BibTeX compares keys)."""
        for bib in self.files:
            found = bib.index[0].get(key)
            if found is not None:
                return found
        low = key.lower()
        for bib in self.files:
            found = bib.index[1].get(low)
            if found is not None:
                return found
        return None

    def key_for_doi(self, doi: str | None) -> str | None:
        doi = backend.normalize_doi(doi)
        if not doi:
            return None
        for bib in self.files:
            found = bib.index[2].get(doi)
            if found is not None:
                return found
        return None

    def keys(self) -> set[str]:
        return {e.key for bib in self.files for e in bib.entries}


_ENTRY_RE = re.compile(r"@[ \t]*([A-Za-z]+)\s*[{(]\s*([^\s,{}()\"#%'=\\]+)\s*,")
_FIELD_RE = re.compile(r"(?<![\w-])(title|author|year|doi)\s*=\s*", re.IGNORECASE)
_SIMPLE_RE = re.compile(r'\{([^{}]*)\}|"([^"{}]*)"')
_DOI_RE = re.compile(r"(?<![\w-])doi\s*=\s*[{\"]?\s*([^\s{}\",]+)", re.IGNORECASE)
_BARE_RE = re.compile(r"[^,}\s]*")
_NOT_ENTRIES = {"string", "comment", "preamble"}
_MAX_VALUE = 4000


def _value(text: str, pos: int, end: int) -> str:
    """The field value starting at ``pos`` (``{…}`` with nesting, ``"…"`` or a bare word)."""
    if pos >= end:
        return ""
    opener = text[pos]
    if opener in '{"':
        depth, i, stop = 0, pos, min(end, pos + _MAX_VALUE)
        while i < stop:
            ch = text[i]
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0 and opener == "{":
                    return text[pos + 1 : i]
                if depth < 0:
                    break
            elif ch == '"' and opener == '"' and i > pos and depth == 0:
                return text[pos + 1 : i]
            i += 1
        return text[pos + 1 : i]
    m = _BARE_RE.match(text, pos, end)
    return m.group(0) if m else ""


def _clean(value: str) -> str:
    return " ".join(value.replace("{", "").replace("}", "").split())


def parse_bib(path: Path, text: str, exists: bool = True, newline: str | None = None) -> BibFile:
    """Entries of a .bib text with the location of each key and its DOI, found by two linear
    scans (what BibTeX reads the same way: ``@type{key,`` …); other fields are read on demand."""
    if newline is None:
        newline = "\r\n" if "\r\n" in text[:65536] else "\n"
    found = [m for m in _ENTRY_RE.finditer(text) if m.group(1).lower() not in _NOT_ENTRIES]
    starts = [m.start() for m in found]
    dois: dict[int, str] = {}
    for d in _DOI_RE.finditer(text):
        n = bisect.bisect_right(starts, d.start()) - 1
        if n >= 0 and n not in dois:
            dois[n] = d.group(1)
    entries = []
    line, last = 0, 0
    for n, m in enumerate(found):
        key_at = m.start(2)
        line += text.count("\n", last, key_at)
        last = key_at
        col = key_at - (text.rfind("\n", 0, key_at) + 1)
        stop = starts[n + 1] if n + 1 < len(starts) else len(text)
        key = m.group(2)
        doi = backend.normalize_doi(dois[n]) or None if n in dois else None
        entries.append(BibEntry(key, doi, path, line, col, col + len(key), (m.end(), stop), text))
    return BibFile(path, text, exists, entries, [], newline)


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
                text, newline = backend.read_text_and_newline(path)
                bib = parse_bib(path, text, True, newline)
            except Exception as exc:  # unreadable: report, define nothing
                bib = BibFile(path, "", True, [], [f"{path}: {exc}"])
        else:
            bib = BibFile(path, "", False)
        bib.index_words()
        if len(bib.entries) > 10_000:
            bib.index  # noqa: B018 (built here, on the I/O thread, not on a keystroke)
            gc.freeze()  # a big index is long-lived: keep it out of the collector's full scans
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
    return [p.resolve() for p in found]


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
    entry_text = house_style(backend.escape_for_file(entry_text, target.path), target.text)
    text = backend.appended_bib_text(target.text.replace("\r\n", "\n"), entry_text)
    return BibAddition(
        path=target.path,
        create=not target.exists,
        offset=len(target.text),
        text=text.replace("\n", target.newline) if target.newline != "\n" else text,
        key=key,
    )


_FIELD_LINE = re.compile(r"^([ \t]+)([A-Za-z][\w-]*)([ \t]*=)", re.MULTILINE)
_ENTRY_TYPE = re.compile(r"^@([A-Za-z]+)(?=\s*[{(])", re.MULTILINE)


def house_style(entry_text: str, file_text: str) -> str:
    """``entry_text`` written like the entries of ``file_text``: the same field indent, field
    names and entry types in the same case (``  title =`` / ``\tTITLE =``, ``@ARTICLE``)."""
    sample = file_text[:65536]
    field_m = _FIELD_LINE.search(sample)
    types_found = [
        t for t in _ENTRY_TYPE.findall(sample) if t.lower() not in ("string", "comment", "preamble")
    ]
    if field_m is None and not types_found:
        return entry_text
    indent = field_m.group(1) if field_m else None
    upper = field_m is not None and field_m.group(2).isupper() and len(field_m.group(2)) > 1

    def field(m: re.Match) -> str:
        name = m.group(2).upper() if upper else m.group(2).lower() if field_m else m.group(2)
        return (indent if indent is not None else m.group(1)) + name + m.group(3)

    out = _FIELD_LINE.sub(field, entry_text)
    if types_found:
        upper_types = all(t.isupper() for t in types_found)
        out = _ENTRY_TYPE.sub(
            lambda m: "@" + (m.group(1).upper() if upper_types else m.group(1).lower()), out
        )
    return out
