"""Stable citekeys from a Better-BibTeX-like pattern, with ``a``, ``b``, ... suffixes on clashes.

The default pattern ``[auth:lower][year][shorttitle:1:lower]`` gives ``lastnameYYYYfirstword``;
a library may configure another one (:func:`format_key`). A key is assigned once, when a paper is
first stored, and changes only on an explicit "regenerate" (never for a pinned key). A key
the user already chose in their own BibTeX file (``@article{smith20, ...}``) is kept when it
is a valid, unused key, so the ``\\cite{}`` commands of their manuscripts keep working;
machine keys such as ACM's DOIs (``10.1145/...``) are replaced by generated ones.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from itertools import count

from assistant.errors import AssistantError
from assistant.fold import fold
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
    words = _WORD.findall(_ascii(title))  # already folded: lower-case ASCII words
    first = next((w for w in words if w and w not in _STOPWORDS), words[0] if words else "untitled")
    return f"{last[:24]}{year if year else 'nd'}{first[:20]}"


DEFAULT_PATTERN = "[auth:lower][year][shorttitle:1:lower]"
_PART = re.compile(r"\[([^\]]+)\]|([^\[]+)")
_FIELDS = (
    "auth",
    "Auth",
    "authors",
    "authEtAl",
    "authorsAlpha",
    "year",
    "shortyear",
    "title",
    "shorttitle",
    "veryshorttitle",
    "firstpage",
    "journal",
    "type",
)


class PatternError(AssistantError, ValueError):
    """A citekey pattern that cannot be used (the message names the bad part)."""


def _lastnames(authors: list[str]) -> list[str]:
    return [a.split(",")[0].strip() for a in authors if a.split(",")[0].strip()]


def _title_words(title: str, skip_stopwords: bool) -> list[str]:
    words = _WORD.findall(" ".join(_fold_keep_case(w) for w in title.split()))
    kept = [w for w in words if not skip_stopwords or w.lower() not in _STOPWORDS]
    return kept or words


def _fold_keep_case(text: str) -> str:
    """ASCII letters/digits with case kept (accents removed)."""
    return re.sub(r"[^A-Za-z0-9]+", "", fold(text))


def _field_value(name: str, paper) -> list[str] | str:
    lasts = [_fold_keep_case(n) for n in _lastnames(paper.authors or getattr(paper, "editors", []))]
    lasts = [n for n in lasts if n and n.lower() != "others"]
    if name in ("auth", "Auth"):
        value = lasts[0] if lasts else "anon"
        return value[:1].upper() + value[1:] if name == "Auth" else value
    if name == "authors":
        return "".join(lasts) or "anon"
    if name == "authEtAl":
        if not lasts:
            return "anon"
        if len(lasts) == 1:
            return lasts[0]
        return lasts[0] + (lasts[1] if len(lasts) == 2 else "EtAl")
    if name == "authorsAlpha":
        if not lasts:
            return "Anon"
        if len(lasts) == 1:
            return lasts[0][:3]
        return "".join(n[:1] for n in lasts[:4]) + ("+" if len(lasts) > 4 else "")
    if name == "year":
        return str(paper.year) if paper.year else "nd"
    if name == "shortyear":
        return f"{paper.year % 100:02d}" if paper.year else "nd"
    if name == "title":
        return _title_words(paper.title or "", False) or ["untitled"]
    if name == "shorttitle":
        return _title_words(paper.title or "", True)[:3] or ["untitled"]
    if name == "veryshorttitle":
        return _title_words(paper.title or "", True)[:1] or ["untitled"]
    if name == "firstpage":
        pages = str(getattr(paper, "extra", {}).get("pages", ""))
        return re.split(r"[^0-9A-Za-z]+", pages)[0] if pages else ""
    if name == "journal":
        return _title_words(paper.venue or "", True)[:3]
    if name == "type":
        return paper.entry_type or "misc"
    raise PatternError(f"unknown citekey field [{name}] (known: {', '.join(_FIELDS)})")


def _apply(value: list[str] | str, filt: str) -> list[str] | str:
    if filt.isdigit():
        words = value if isinstance(value, list) else [value]
        return words[: int(filt)]
    text = "".join(value) if isinstance(value, list) else value
    if filt == "lower":
        return text.lower()
    if filt == "upper":
        return text.upper()
    if filt == "capitalize":
        words = value if isinstance(value, list) else [value]
        return "".join(w[:1].upper() + w[1:] for w in words)
    if filt == "fold":
        return ascii_fold(text)
    if filt.startswith("substring,"):
        try:
            _, start, length = filt.split(",")
            return text[int(start) - 1 : int(start) - 1 + int(length)]
        except ValueError as exc:
            raise PatternError(f"bad filter :{filt} (use :substring,START,LENGTH)") from exc
    raise PatternError(
        f"unknown citekey filter :{filt} (known: lower, upper, capitalize, fold, N, substring,S,L)"
    )


def check_pattern(pattern: str) -> None:
    """Raise :class:`PatternError` naming the bad part of ``pattern``."""
    from assistant.library.models import Paper

    if not pattern.strip():
        raise PatternError("empty citekey pattern")
    key = format_key(pattern, Paper(title="A Test Title", authors=["Doe, Jane"], year=2020))
    if not _VALID_KEY.match(key):
        raise PatternError(f"pattern {pattern!r} gives {key!r}, not a valid BibTeX key")


def format_key(pattern: str, paper) -> str:
    """The key ``pattern`` gives for ``paper`` (Better BibTeX legacy syntax, a useful subset):
    fields ``[auth]``, ``[Auth]``, ``[authors]``, ``[authEtAl]``, ``[authorsAlpha]``, ``[year]``,
    ``[shortyear]``, ``[title]``, ``[shorttitle]`` (3 words), ``[veryshorttitle]``, ``[firstpage]``,
    ``[journal]``, ``[type]``; filters ``:lower``, ``:upper``, ``:capitalize``, ``:fold``, ``:N``
    (first N words), ``:substring,START,LENGTH``; text outside brackets is kept as is."""
    out = []
    for match in _PART.finditer(pattern):
        if match.group(2) is not None:
            out.append(re.sub(r"[^A-Za-z0-9_:.+\-]", "", match.group(2)))
            continue
        name, *filters = match.group(1).split(":")
        value = _field_value(name.strip(), paper)
        for filt in filters:
            value = _apply(value, filt.strip())
        if isinstance(value, list):
            value = "".join(w[:1].upper() + w[1:] if i else w for i, w in enumerate(value))
        out.append(value)
    key = "".join(out)[:80]
    if key and not key[0].isalpha():
        key = "k" + key
    return key or "anon"


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


def key_for(paper, pattern: str | None = None) -> str:
    """The base key (before clash suffixes) for ``paper`` under ``pattern`` (default: the built-in)."""
    if not pattern or pattern == DEFAULT_PATTERN:
        return base_key(
            paper.authors or getattr(paper, "editors", []), paper.year, paper.title or ""
        )
    return format_key(pattern, paper)
