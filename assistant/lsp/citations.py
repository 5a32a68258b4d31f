"""Citation markers in an open document: the slot under the cursor and every cited key.

The grammar is the documents layer's (``\\cite``/``\\citep``/``\\parencite``/``\\autocite``/...
and Pandoc ``[@key]``); this module only locates keys by offset.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from assistant.lsp import backend

#: How far back from the cursor an unfinished marker may start.
_LOOKBACK = 600
_LATEX_KEY_STOP = set(",{}% \t\r\n\\")
_PANDOC_KEY_CHAR = re.compile(r"[\w:.#$%&\-+?<>~/]")
#: any ``\cite``-like command: ``\cite``, ``\Cite``, ``\parencite*``, biblatex ``\cites`` ...
_LATEX_CMD = r"\\(?P<cmd>[a-zA-Z]*[cC]ite[a-zA-Z]*)\*?"
_LATEX_OPTS = r"(?:\s*\([^()]*\)){0,2}(?:\s*\[[^\]]*\]){0,2}\s*"
#: an unfinished key list ending where the text ends; multicite commands (``\cites{a}[p]{b``)
#: may have closed groups before it
_LATEX_OPEN_RE = re.compile(
    _LATEX_CMD + _LATEX_OPTS + r"(?:\{[^{}]*\}(?:\s*\[[^\]]*\]){0,2}\s*)*\{(?P<keys>[^{}]*)$"
)
#: a complete command: its first key group, then (multicite) further ``[..]{..}`` groups
_LATEX_FULL_RE = re.compile(_LATEX_CMD + _LATEX_OPTS + r"\{(?P<keys>[^{}]*)\}")
_LATEX_MORE_RE = re.compile(r"(?:\s*\[[^\]]*\]){0,2}\s*\{([^{}]*)\}")
#: a Pandoc narrative citation being typed: ``@key`` at a word start (not an e-mail address)
_PANDOC_BARE_OPEN_RE = re.compile(r"(?<![\w@.\-+])@([\w:.#$%&\-+?<>~/]*)$")
_PANDOC_BARE_RE = re.compile(r"(?<![\w@.\-+\[;])@([\w][\w:.#$%&\-+?<>~/]*[\w]|[\w])")
_LATEX_COMMENT = re.compile(r"(?<!\\)%[^\n]*")
_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.DOTALL | re.MULTILINE)


@dataclass
class CiteSlot:
    """The citation marker being typed at the cursor.

    ``prefix`` is the key typed so far, ``[replace_start, replace_end)`` the key under the
    cursor (replaced by a completion), ``marker_start``/``marker_end`` the whole marker as far
    as it is written, ``keys`` the other keys already in it.
    """

    style: str
    prefix: str
    replace_start: int
    replace_end: int
    marker_start: int
    marker_end: int
    keys: list[str]


@dataclass(frozen=True)
class KeySpan:
    """One cited key: ``text[start:end] == key``, inside the marker ``[marker_start, marker_end)``."""

    key: str
    start: int
    end: int
    marker_start: int
    marker_end: int


def _in_latex_comment(text: str, offset: int) -> bool:
    line_start = text.rfind("\n", 0, offset) + 1
    return re.search(r"(?<!\\)%", text[line_start:offset]) is not None


def slot_at(text: str, offset: int, style: str) -> CiteSlot | None:
    """The citation slot the cursor at ``offset`` is in (None when it is not in one)."""
    offset = max(0, min(offset, len(text)))
    window_start = max(0, offset - _LOOKBACK)
    before = text[window_start:offset]
    if style == backend.LATEX:
        if _in_latex_comment(text, offset):
            return None
        m = _LATEX_OPEN_RE.search(before)
        if not m:
            return None
        parts = m.group("keys").split(",")
        prefix = parts[-1].lstrip()
        keys = [p.strip() for p in parts[:-1]]
        end = offset
        while end < len(text) and text[end] not in _LATEX_KEY_STOP:
            end += 1
        close, reopen = text.find("}", end), text.find("{", end)
        closed = close >= 0 and (reopen < 0 or close < reopen)
        if closed:
            keys += [p.strip() for p in text[end:close].split(",")]
        return CiteSlot(
            style=style,
            prefix=prefix,
            replace_start=offset - len(prefix),
            replace_end=end,
            marker_start=window_start + m.start(),
            marker_end=close + 1 if closed else end,
            keys=[k for k in keys if k],
        )
    if style == backend.MARKDOWN:
        m = backend.PANDOC_OPEN_RE.search(before)
        if not m:
            return _bare_slot(text, offset, before, window_start)
        end = offset
        while end < len(text) and _PANDOC_KEY_CHAR.match(text[end]):
            end += 1
        close, paragraph_end = text.find("]", end), text.find("\n\n", end)
        closed = close >= 0 and (paragraph_end < 0 or close < paragraph_end)
        keys = backend.PANDOC_KEY_RE.findall(m.group("before"))
        if closed:
            keys += backend.PANDOC_KEY_RE.findall(text[end:close])
        prefix = m.group("key")
        return CiteSlot(
            style=style,
            prefix=prefix,
            replace_start=offset - len(prefix),
            replace_end=end,
            marker_start=window_start + m.start(),
            marker_end=close + 1 if closed else end,
            keys=keys,
        )
    return None


def _bare_slot(text: str, offset: int, before: str, window_start: int) -> CiteSlot | None:
    """A Pandoc narrative citation ``@key`` being typed outside brackets."""
    m = _PANDOC_BARE_OPEN_RE.search(before)
    if not m:
        return None
    end = offset
    while end < len(text) and _PANDOC_KEY_CHAR.match(text[end]):
        end += 1
    prefix = m.group(1)
    return CiteSlot(
        style=backend.MARKDOWN,
        prefix=prefix,
        replace_start=offset - len(prefix),
        replace_end=end,
        marker_start=window_start + m.start(),
        marker_end=end,
        keys=[],
    )


def _latex_groups(scan: str):
    """``(group_start, group_text, marker_start, marker_end)`` for each key group of each cite
    command (every group of a multicite ``\\cites{a}[p]{b}``)."""
    for m in _LATEX_FULL_RE.finditer(scan):
        groups = [(m.start("keys"), m.group("keys"))]
        end = m.end()
        if m.group("cmd").lower().endswith("cites"):
            while (more := _LATEX_MORE_RE.match(scan, end)) is not None:
                groups.append((more.start(1), more.group(1)))
                end = more.end()
        for start, body in groups:
            yield start, body, m.start(), end


def _masked(text: str, style: str) -> str:
    """``text`` with LaTeX comments / Markdown code blocks blanked (offsets kept)."""
    chars = None
    pattern = _LATEX_COMMENT if style == backend.LATEX else _FENCE
    for m in pattern.finditer(text):
        if chars is None:
            chars = list(text)
        for i in range(m.start(), m.end()):
            if chars[i] != "\n":
                chars[i] = " "
    return "".join(chars) if chars is not None else text


def key_spans(text: str, style: str, bare: bool = False) -> list[KeySpan]:
    """Every key cited in ``text`` (comments and code blocks excluded), in order; with ``bare``
    also Pandoc's narrative ``@key`` outside brackets."""
    scan = _masked(text, style)
    spans: list[KeySpan] = []
    if style == backend.LATEX:
        for pos, body, marker_start, marker_end in _latex_groups(scan):
            for part in body.split(","):
                words = part.split()
                # an unclosed \cite{ab runs into the next lines: only its first word is a key
                key = words[0] if words else ""
                if key and key != "*":
                    start = pos + part.index(key)
                    spans.append(KeySpan(key, start, start + len(key), marker_start, marker_end))
                if len(words) > 1 and "\n" in part:
                    break
                pos += len(part) + 1
    elif style == backend.MARKDOWN:
        for m in backend.PANDOC_RE.finditer(scan):
            for km in backend.PANDOC_KEY_RE.finditer(scan, m.start(1), m.end(1)):
                at = km.start() + (1 if scan[km.start()] == "-" else 0)
                if at > 0 and (scan[at - 1].isalnum() or scan[at - 1] == "_"):
                    continue  # an e-mail address, not a citation
                spans.append(KeySpan(km.group(1), km.start(1), km.end(1), m.start(), m.end()))
        if bare:
            inside = {(s.marker_start, s.marker_end) for s in spans}
            for m in _PANDOC_BARE_RE.finditer(scan):
                if not any(a <= m.start() < b for a, b in inside):
                    spans.append(KeySpan(m.group(1), m.start(1), m.end(1), m.start(), m.end()))
            spans.sort(key=lambda s: s.start)
    return spans


def key_at(text: str, offset: int, style: str) -> KeySpan | None:
    """The cited key under the cursor (also right after its last character)."""
    line_start = text.rfind("\n", 0, offset) + 1
    line_end = text.find("\n", offset)
    lo = max(0, line_start - 300)
    hi = len(text) if line_end < 0 else min(len(text), line_end + 300)
    # markers may span lines: scan a window around the line, shifted back to document offsets
    for span in key_spans(text[lo:hi], style, bare=True):
        if lo + span.start <= offset <= lo + span.end:
            return KeySpan(
                span.key,
                lo + span.start,
                lo + span.end,
                lo + span.marker_start,
                lo + span.marker_end,
            )
    return None
