"""The one boundary between Qt text positions and Python string offsets (no Qt import).

Qt counts UTF-16 code units; Python strings count code points. A character outside the
Basic Multilingual Plane (math italics such as ``𝑀𝑑𝑜𝑐`` from PDFs, emoji) is one code point
but two UTF-16 units, so every position crossing from one side to the other goes through
:func:`to_py` or :func:`to_qt`. Everything behind the widgets (``textops``, the documents
layer, the pipeline) works in code points only.
"""

from __future__ import annotations


def _is_bmp(text: str) -> bool:
    return all(ord(c) < 0x10000 for c in text) if not text.isascii() else True


def to_qt(text: str, pos: int) -> int:
    """Code-point offset ``pos`` of ``text`` → Qt (UTF-16) position."""
    pos = max(0, min(pos, len(text)))
    if _is_bmp(text):
        return pos
    return pos + sum(1 for c in text[:pos] if ord(c) >= 0x10000)


def to_py(text: str, qpos: int) -> int:
    """Qt (UTF-16) position ``qpos`` in ``text`` → code-point offset (a position inside a
    surrogate pair rounds down to the character's start)."""
    if qpos <= 0:
        return 0
    if _is_bmp(text):
        return min(qpos, len(text))
    units = 0
    for i, c in enumerate(text):
        step = 2 if ord(c) >= 0x10000 else 1
        if units + step > qpos:
            return i
        units += step
    return len(text)


def qt_length(text: str) -> int:
    """Length of ``text`` in UTF-16 units (what Qt calls its length)."""
    return to_qt(text, len(text))


def span_to_qt(text: str, start: int, end: int) -> tuple[int, int]:
    """A ``[start, end)`` code-point span → Qt ``(start, length)``."""
    qs = to_qt(text, start)
    return qs, to_qt(text, end) - qs
