"""Sentence splitting for scientific text (rule-based, offsets preserved).

Why not pysbd: it is correct on most of this but costs ~1.5 s per 10-page paper
(it compiles a regex per abbreviation per call), which alone breaks the 1 s
budget. This splitter handles what matters in papers: "et al.", "e.g.", "i.e.",
"Fig. 3", "Eq. (2)", "Sec. 4", "vs.", initials ("W. B. Croft"), decimals
("3.5"), version numbers, and sentences that start with a citation marker
("[7] studied ...") or a number. A boundary is a ``.?!`` (plus closing quotes or
brackets) followed by whitespace and an upper-case letter, digit, quote or "[".
"""

from __future__ import annotations

import re

from assistant.documents.markers import strip_citation_markers

ABBREVIATIONS = {
    "al",
    "e.g",
    "i.e",
    "cf",
    "vs",
    "viz",
    "fig",
    "figs",
    "eq",
    "eqs",
    "sec",
    "secs",
    "tab",
    "ref",
    "refs",
    "no",
    "nos",
    "resp",
    "approx",
    "ca",
    "pp",
    "vol",
    "alg",
    "def",
    "thm",
    "prop",
    "ch",
    "chap",
    "app",
    "dr",
    "mr",
    "mrs",
    "ms",
    "prof",
    "st",
    "jr",
    "sr",
    "inc",
    "ltd",
    "corp",
    "dept",
    "univ",
    "proc",
    "conf",
    "intl",
    "int",
    "assoc",
    "eds",
    "ed",
    "ph.d",
    "u.s",
    "u.k",
    "a.k.a",
    "w.r.t",
    "incl",
    "est",
    "min",
    "max",
    "avg",
    "std",
    "sect",
    "para",
    "lem",
    "cor",
    "ex",
    "n.b",
    "p",
    "et",
    "c.f",
}
_BOUNDARY = re.compile(r"[.?!][\"”’')\]]*(?=\s+(?:[\"“‘'(\[]?[A-Z0-9\[(\\•]|[a-z]+[A-Z]))")
_TOKEN_BEFORE = re.compile(r"(\S+)$")


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans ``(start, end)`` in ``text``, without surrounding whitespace."""
    spans: list[tuple[int, int]] = []
    start = 0
    n = len(text)
    while start < n and text[start].isspace():
        start += 1
    for m in _BOUNDARY.finditer(text):
        end = m.end()
        if end <= start:
            continue
        if m.group(0)[0] == "." and _is_abbreviation(text, m.start(), start):
            continue
        spans.append((start, end))
        start = end
        while start < n and text[start].isspace():
            start += 1
    tail = text[start:].rstrip()
    if tail:
        spans.append((start, start + len(tail)))
    return [(s, e) for s, e in spans if text[s:e].strip()]


def _is_abbreviation(text: str, dot: int, sent_start: int) -> bool:
    m = _TOKEN_BEFORE.search(text, sent_start, dot)
    if not m:
        return False
    token = m.group(1).lstrip("([\"“'")
    low = token.lower()
    if low in ABBREVIATIONS:
        return True
    if len(token) == 1 and token.isupper():  # an initial: "W. Bruce Croft"
        return True
    if re.fullmatch(r"(?:[A-Za-z]\.)+[A-Za-z]?", token):  # "U.S", "e.g" variants, "J.C"
        return True
    # the next word follows directly as a number reference: "No. 5", "Eq. (3)" handled above
    nxt = text[dot + 1 : dot + 4].lstrip()
    if low.endswith("et al"):
        return True
    return bool(
        nxt[:1].isdigit() and low in {"fig", "eq", "table", "sec", "section", "step", "line"}
    )


def sentences(text: str) -> list[str]:
    return [text[s:e] for s, e in split_sentences(text)]


def detect_mode(text: str, title: str | None = None, abstract: str | None = None) -> str:
    """Pick ``local``/``paragraph``/``global`` for an ``auto`` query: the ONE rule of the product
    (the CLI's ``--mode auto`` and the GUI's selection/cursor both use it).

    Empty text (after stripping citation markers) with a title or abstract -> ``global``; one or
    two sentences (a citation context) -> ``local``; three or more -> ``paragraph``.
    """
    cleaned = strip_citation_markers(text)
    if not cleaned:
        return "global" if (title or abstract) else "local"
    return "local" if len(sentences(cleaned)) <= 2 else "paragraph"
