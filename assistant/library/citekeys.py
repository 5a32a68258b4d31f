"""Stable citekeys: ``lastnameYYYYfirstword`` with ``a``, ``b``, ... suffixes on clashes.

A key is assigned once, when a paper is first stored, and never changes afterwards. A key
the user already chose in their own BibTeX file (``@article{smith20, ...}``) is kept when it
is a valid, unused key, so the ``\\cite{}`` commands of their manuscripts keep working;
machine keys such as ACM's DOIs (``10.1145/...``) are replaced by generated ones.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from itertools import count

from assistant.library.normalize import ascii_fold

_VALID_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_:.+\-]{0,79}$")
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "on",
        "of",
        "in",
        "for",
        "to",
        "and",
        "with",
        "from",
        "by",
        "at",
        "as",
        "is",
        "are",
        "be",
        "or",
        "do",
        "does",
        "how",
        "what",
        "when",
        "why",
        "which",
        "towards",
        "toward",
        "using",
        "via",
        "into",
        "its",
        "their",
        "our",
        "your",
        "this",
        "that",
        "these",
        "those",
    ]
)
_WORD = re.compile(r"[A-Za-z0-9]+")


def is_user_key(key: str | None) -> bool:
    """True for a hand-chosen key worth keeping (not a DOI, URL or numeric id)."""
    return bool(key) and bool(_VALID_KEY.match(key)) and not key.lower().startswith(("doi", "http"))


def base_key(authors: list[str], year: int | None, title: str) -> str:
    """``lastnameYYYYfirstword`` in lower-case ASCII (``anon``/``nd`` when unknown)."""
    last = ascii_fold(authors[0].split(",")[0]) if authors else ""
    if not last or last == "others":
        last = "anon"
    words = [ascii_fold(w) for w in _WORD.findall(_ascii(title))]
    first = next((w for w in words if w and w not in _STOPWORDS), words[0] if words else "untitled")
    return f"{last[:24]}{year if year else 'nd'}{first[:20]}"


def _ascii(text: str) -> str:
    return " ".join(ascii_fold(w) for w in text.split())


def _suffixes():
    """a, b, ..., z, aa, ab, ..., zz, then x1, x2, ... (never exhausted)."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    yield from letters
    yield from (a + b for a in letters for b in letters)
    for n in count(1):
        yield f"x{n}"


def unique_key(base: str, taken: Callable[[str], bool]) -> str:
    """``base`` if free, else the first free ``base + suffix`` (a, b, ..., aa, ab, ...)."""
    if not taken(base):
        return base
    for suffix in _suffixes():
        key = base + suffix
        if not taken(key):
            return key
    raise RuntimeError("unreachable")  # pragma: no cover
