"""Open documents: their text, version, citation style, and offset <-> LSP position mapping.

LSP positions count lines and, by default, UTF-16 code units; Python strings count code
points. pygls' :class:`~pygls.workspace.PositionCodec` converts the characters of one line;
:class:`LineIndex` finds the line: line starts found once per text version (LSP's line breaks
only: ``\n``, ``\r\n``, ``\r``), bisect per lookup, instead of pygls' ``TextDocument.lines``,
which re-splits the whole document for every position and also breaks lines at ``\f``, ``\v``
or U+2028 (an editor does not). URIs are pygls' (:mod:`pygls.uris`).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from lsprotocol import types
from pygls import uris
from pygls.workspace import PositionCodec

from assistant.lsp import backend

_NEWLINE = re.compile(r"\r\n|\n|\r")

#: languageId -> citation style
_LANGUAGE_STYLES = {
    "latex": backend.LATEX,
    "tex": backend.LATEX,
    "plaintex": backend.LATEX,
    "context": backend.LATEX,
    "bibtex": None,
    "markdown": backend.MARKDOWN,
    "pandoc": backend.MARKDOWN,
    "rmd": backend.MARKDOWN,
    "rmarkdown": backend.MARKDOWN,
    "quarto": backend.MARKDOWN,
}


class LineIndex:
    """Offsets into ``text`` <-> ``Position(line, character)`` in ``encoding`` code units."""

    def __init__(self, text: str, encoding: str = "utf-16") -> None:
        self.text = text
        self.encoding = encoding
        self.codec = PositionCodec(encoding)
        self.starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]

    def _units(self, chars: str) -> int:
        return len(chars) if chars.isascii() else self.codec.client_num_units(chars)

    def _line_end(self, line: int) -> int:
        """Offset of the end of ``line``'s content (before its line break)."""
        end = self.starts[line + 1] if line + 1 < len(self.starts) else len(self.text)
        while end > self.starts[line] and self.text[end - 1] in "\r\n":
            end -= 1
        return end

    def position(self, offset: int) -> types.Position:
        offset = max(0, min(offset, len(self.text)))
        line = bisect.bisect_right(self.starts, offset) - 1
        start = self.starts[line]
        return types.Position(line, self._units(self.text[start:offset]))

    def range(self, start: int, end: int) -> types.Range:
        return types.Range(self.position(start), self.position(end))

    def offset(self, position: types.Position) -> int:
        if position.line >= len(self.starts):
            return len(self.text)
        start = self.starts[position.line]
        end = self._line_end(position.line)
        line = self.text[start:end]
        if line.isascii():
            return start + min(position.character, len(line))
        if position.character >= self._units(line):  # past the end: clamped to the line
            return end
        # (a copy: pygls writes a clamped character back into the position it is given)
        at = self.codec.position_from_client_units([line], types.Position(0, position.character))
        return start + at.character


def uri_to_path(uri: str) -> Path | None:
    """The local file of a ``file://`` URI (None for unsaved buffers and other schemes)."""
    if uri.startswith("file://localhost/"):  # the host part of a local file's URI (RFC 8089)
        uri = "file:///" + uri[len("file://localhost/") :]
    path = uris.to_fs_path(uri)
    return Path(path) if path else None


def path_to_uri(path: Path) -> str:
    return uris.from_fs_path(str(Path(path).resolve()))


def style_for(uri: str, language_id: str | None, text: str = "") -> str:
    """The citation style of a document: from its extension (``.tex``, ``.md`` ...: one Eglot
    entry for both modes sends ``latex`` for Markdown files), else its languageId, else its
    text."""
    path = uri_to_path(uri)
    by_ext = backend.style_for_path(path.name if path else uri)
    if by_ext in (backend.LATEX, backend.MARKDOWN):
        return by_ext
    style = _LANGUAGE_STYLES.get((language_id or "").lower())
    if style:
        return style
    if "\\cite" in text or "\\begin{document}" in text:
        return backend.LATEX
    return backend.MARKDOWN


@dataclass
class DocState:
    """One open document at one version. ``generation`` grows with every change (cancellation)."""

    uri: str
    text: str
    version: int | None
    style: str
    encoding: str = "utf-16"
    generation: int = 0
    meta: dict = field(default_factory=dict)

    @cached_property
    def lines(self) -> LineIndex:
        return LineIndex(self.text, self.encoding)

    @cached_property
    def path(self) -> Path | None:
        return uri_to_path(self.uri)

    @cached_property
    def manuscript(self) -> tuple[str, str]:
        """The manuscript's (title, abstract), as the product reads them."""
        return backend.manuscript_meta(self.text, self.style)

    @cached_property
    def bib_paths(self) -> list[Path]:
        return backend.bib_files_from_manuscript(self.text, self.path, self.style)

    def updated(self, text: str, version: int | None) -> DocState:
        return DocState(self.uri, text, version, self.style, self.encoding, self.generation + 1, {})
