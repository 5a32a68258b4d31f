"""Accent folding, in one place: every key, citekey and name/title comparison folds text here.

``fold("Łukasz Müller-Ørsted")`` → ``"Lukasz Muller-Orsted"``: compatibility decomposition
(NFKD) with the combining marks dropped, plus the letters NFKD leaves alone (ß, ø, æ, ł, ð, þ,
ı ...) spelled out. Case, spacing and punctuation are kept; callers lower-case or strip what
their key needs.
"""

from __future__ import annotations

import unicodedata

#: letters without a decomposition, spelled in ASCII (NFKD would keep them as they are)
TRANSLIT = str.maketrans(
    {
        "ß": "ss",
        "ø": "o",
        "Ø": "O",
        "æ": "ae",
        "Æ": "AE",
        "œ": "oe",
        "Œ": "OE",
        "ł": "l",
        "Ł": "L",
        "đ": "d",
        "Đ": "D",
        "ð": "d",
        "Ð": "D",
        "þ": "th",
        "Þ": "Th",
        "ı": "i",
    }
)


def fold(text: str, ascii_only: bool = True) -> str:
    """``text`` without accents; with ``ascii_only`` (the default) every other non-ASCII
    character is dropped too, else letters of other scripts (中, Ж) are kept."""
    if not text or text.isascii():
        return text or ""
    text = unicodedata.normalize("NFKD", text.translate(TRANSLIT))
    if ascii_only:
        return text.encode("ascii", "ignore").decode("ascii")
    return "".join(ch for ch in text if not unicodedata.combining(ch))
