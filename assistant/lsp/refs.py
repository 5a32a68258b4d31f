"""A key across the workspace, as texlab and citar offer it: find references, rename, document
and workspace symbols of ``.bib`` entries, and ``.bib`` diagnostics (duplicate keys, entries no
manuscript cites).

The workspace is the open documents plus the manuscripts (``.tex``, ``.md`` …) and ``.bib``
files under the client's root folder (hidden folders skipped, at most :data:`MAX_FILES` files
in :data:`MAX_DIRS` folders,
each read only when it is a regular file under :data:`MAX_FILE_BYTES`); an open document's
editor text wins over its file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from lsprotocol import types

from assistant.lsp import backend
from assistant.lsp.bibfiles import BibFile, parse_bib
from assistant.lsp.citations import key_spans
from assistant.lsp.text import DocState, LineIndex, path_to_uri, style_for

MAX_FILES = 2000
MAX_DIRS = 2000
MAX_UNUSED_CHECK = 5000
MAX_BIB_DIAGNOSTICS = 1000
MAX_FILE_BYTES = 8 * 1024 * 1024
_MANUSCRIPT = (".tex", ".ltx", ".latex", ".md", ".markdown", ".rmd", ".qmd")
_SKIP_DIRS = {"node_modules", "__pycache__", "build", "dist", "venv"}
SOURCE = "cite-assist"
DUPLICATE_ENTRY = "duplicate-entry"
UNUSED_ENTRY = "unused-entry"


@dataclass
class Source:
    """One file of the workspace: its URI, text (``\\n`` lines as the editor or disk has it)
    and LaTeX/Markdown style (None for a ``.bib``)."""

    uri: str
    text: str
    style: str | None
    encoding: str = "utf-16"

    @property
    def lines(self) -> LineIndex:
        return LineIndex(self.text, self.encoding)


def _files(root: Path | None) -> list[Path]:
    if root is None or not root.is_dir():
        return []
    out: list[Path] = []
    for walked, (folder, dirs, names) in enumerate(os.walk(root)):
        if walked >= MAX_DIRS:  # a root like the home folder: stop, never walk it all
            break
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS]
        for name in names:
            if name.lower().endswith((*_MANUSCRIPT, ".bib")):
                out.append(Path(folder) / name)
                if len(out) >= MAX_FILES:
                    return out
    return out


def sources(docs: list[DocState], root: Path | None, encoding: str) -> list[Source]:
    """Open documents, then the workspace files that are not open."""
    out = [Source(d.uri, d.text, d.style, encoding) for d in docs]
    open_paths = {d.path.resolve() for d in docs if d.path is not None}
    for path in _files(root):
        resolved = path.resolve()
        if resolved in open_paths:
            continue
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                continue
            text = backend.read_text_file(path)
        except (OSError, backend.AssistantError):
            continue
        uri = path_to_uri(resolved)
        style = None if path.suffix.lower() == ".bib" else style_for(uri, None, text)
        out.append(Source(uri, text, style, encoding))
    return out


def _bib_of(source: Source) -> BibFile:
    return parse_bib(Path(source.uri), source.text)


def _entry_ranges(source: Source, key: str | None) -> list[tuple[str, types.Range]]:
    """``(key, range)`` of the entry keys of a ``.bib`` source (only ``key``'s when given,
    compared case-insensitively as BibTeX does)."""
    lines = source.lines
    out = []
    for entry in _bib_of(source).entries:
        if key is not None and entry.key.lower() != key.lower():
            continue
        start = lines.starts[entry.line] if entry.line < len(lines.starts) else 0
        out.append((entry.key, lines.range(start + entry.start, start + entry.end)))
    return out


def key_under_cursor(source: Source, offset: int) -> str | None:
    """The cited key at ``offset`` in a manuscript, or the entry key in a ``.bib``."""
    if source.style is not None:
        from assistant.lsp.citations import key_at

        span = key_at(source.text, offset, source.style)
        return span.key if span else None
    for entry in _bib_of(source).entries:
        start = source.lines.starts[entry.line] if entry.line < len(source.lines.starts) else 0
        if start + entry.start <= offset <= start + entry.end:
            return entry.key
    return None


def references(
    key: str, all_sources: list[Source], declaration: bool = True
) -> list[types.Location]:
    """Every citation of ``key`` in the workspace's manuscripts (and its ``.bib`` entries)."""
    out = []
    for source in all_sources:
        if source.style is None:
            if declaration and key.lower() in source.text.lower():
                out += [
                    types.Location(uri=source.uri, range=rng)
                    for _, rng in _entry_ranges(source, key)
                ]
            continue
        if key not in source.text:
            continue
        lines = source.lines
        out += [
            types.Location(uri=source.uri, range=lines.range(s.start, s.end))
            for s in key_spans(source.text, source.style, bare=False)
            if s.key == key
        ]
    return out


def rename(key: str, new_key: str, all_sources: list[Source]) -> types.WorkspaceEdit:
    """One edit renaming ``key`` in every citation and ``.bib`` entry of the workspace."""
    changes: dict[str, list[types.TextEdit]] = {}
    for loc in references(key, all_sources, declaration=True):
        changes.setdefault(loc.uri, []).append(types.TextEdit(range=loc.range, new_text=new_key))
    return types.WorkspaceEdit(changes=changes)


def valid_key(key: str) -> bool:
    return bool(key) and not any(c in key for c in " \t\r\n,{}()\"#%'=\\@[];")


def document_symbols(source: Source) -> list[types.DocumentSymbol]:
    """One symbol per ``.bib`` entry: the key, with its title as detail."""
    out = []
    lines = source.lines
    for entry in _bib_of(source).entries:
        start = lines.starts[entry.line] if entry.line < len(lines.starts) else 0
        rng = lines.range(start + entry.start, start + entry.end)
        out.append(
            types.DocumentSymbol(
                name=entry.key,
                detail=entry.title[:120],
                kind=types.SymbolKind.Field,
                range=rng,
                selection_range=rng,
            )
        )
    return out


def workspace_symbols(query: str, all_sources: list[Source], limit: int = 200) -> list:
    """``.bib`` entries of the workspace whose key (or title) contains ``query``."""
    q = query.lower()
    out = []
    for source in all_sources:
        if source.style is not None:
            continue
        lines = source.lines
        for entry in _bib_of(source).entries:
            if q and q not in entry.key.lower() and q not in entry.title.lower():
                continue
            start = lines.starts[entry.line] if entry.line < len(lines.starts) else 0
            out.append(
                types.SymbolInformation(
                    name=entry.key,
                    kind=types.SymbolKind.Field,
                    location=types.Location(
                        uri=source.uri, range=lines.range(start + entry.start, start + entry.end)
                    ),
                    container_name=Path(source.uri).name,
                )
            )
            if len(out) >= limit:
                return out
    return out


def cited_keys(all_sources: list[Source]) -> set[str]:
    """Every key the workspace's manuscripts cite (lower-case, as BibTeX compares them)."""
    out: set[str] = set()
    for source in all_sources:
        if source.style is not None:
            out.update(s.key.lower() for s in key_spans(source.text, source.style, bare=True))
    return out


def bib_diagnostics(bib: Source, cited: set[str] | None) -> list[types.Diagnostic]:
    """Duplicate keys (Warning) and, with ``cited``, entries no manuscript cites (Hint,
    shown faded; only for a file of at most :data:`MAX_UNUSED_CHECK` entries: a shared 400k-entry
    .bib is not a manuscript's own). At most :data:`MAX_BIB_DIAGNOSTICS`."""
    out = []
    seen: dict[str, str] = {}
    ranges = _entry_ranges(bib, None)
    if len(ranges) > MAX_UNUSED_CHECK:
        cited = None
    for key, rng in ranges:
        if len(out) >= MAX_BIB_DIAGNOSTICS:
            break
        low = key.lower()
        if low in seen:
            out.append(
                types.Diagnostic(
                    range=rng,
                    message=f"'{key}' is defined twice in this file (BibTeX keeps the first)",
                    severity=types.DiagnosticSeverity.Warning,
                    source=SOURCE,
                    code=DUPLICATE_ENTRY,
                )
            )
            continue
        seen[low] = key
        if cited is not None and low not in cited:
            out.append(
                types.Diagnostic(
                    range=rng,
                    message=f"'{key}' is cited by no manuscript of the workspace",
                    severity=types.DiagnosticSeverity.Hint,
                    source=SOURCE,
                    code=UNUSED_ENTRY,
                    tags=[types.DiagnosticTag.Unnecessary],
                )
            )
    return out
