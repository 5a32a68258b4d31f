"""Abbreviations a manuscript defines ("learning to rank (LTR)") and their expansion in queries.

Detection is scispaCy's ``AbbreviationDetector`` (the Schwartz & Hearst algorithm) on a blank
English spaCy pipeline with a sentencizer: scispaCy's trained models are not installable here, and
the detector needs only tokens. Only the windows of text just before a ``(SF`` are parsed, so a
long draft costs milliseconds. :func:`expand` then writes the long form after a short form the
query uses ("IPS (inverse propensity scoring) weights clicks"), which lets BM25 and the encoder
match papers that spell the term out.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable
from functools import lru_cache

#: a short form worth expanding: one token of 2-10 characters with at least two capitals
#: (LTR, IPS, RNNs, LogOpt); lowercase words the detector sometimes pairs are left out
_SHORT = re.compile(r"[A-Za-z][A-Za-z0-9&\-]{1,9}")
_WINDOW = 400  # characters before "(SF" handed to the detector
_MAX_LONG_WORDS = 8
_AFTER_SHORT = re.compile(r"\(\s*([A-Za-z][A-Za-z0-9&\-]{1,9})\s*[;,][^()]*\)")


#: window text -> the detector's (short, long) pairs in it: a draft being edited keeps most of
#: its windows, so only the changed ones go through spaCy again
_DETECTED: dict[str, tuple[tuple[str, str], ...]] = {}
_DETECTED_SIZE = 4096


def _is_short_form(text: str) -> bool:
    return bool(_SHORT.fullmatch(text)) and sum(c.isupper() for c in text) >= 2


@lru_cache(maxsize=1)
def _pipeline():
    import spacy
    from scispacy.abbreviation import AbbreviationDetector  # noqa: F401 - registers the factory

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("abbreviation_detector")
    return nlp


def _windows(text: str, wanted: Iterable[str] | None) -> list[str]:
    """The stretches of ``text`` that may define an abbreviation (those of ``wanted`` only)."""
    if wanted is not None:
        names = "|".join(re.escape(w) for w in sorted(set(wanted), key=len, reverse=True))
        if not names:
            return []
        pattern = re.compile(rf"\(\s*(?:{names})\b")
    else:
        pattern = re.compile(r"\(\s*[A-Za-z][A-Za-z0-9&\-]{1,9}\s*[);,]")
    spans: list[tuple[int, int]] = []
    for m in pattern.finditer(text):
        start, end = max(0, m.start() - _WINDOW), text.find(")", m.start())
        end = end + 1 if end != -1 else min(len(text), m.end() + 20)
        if spans and start <= spans[-1][1]:
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((start, end))
    # "(IPS; Joachims 2017)" / "(IPS, see [3])": the detector wants the short form alone
    return [_AFTER_SHORT.sub(r"(\1)", text[a:b]) for a, b in spans]


def find_abbreviations(text: str, wanted: Iterable[str] | None = None) -> dict[str, str]:
    """Short form -> long form for the abbreviations ``text`` defines (first definition wins).

    ``wanted``: only look for these short forms (e.g. the capitalised tokens of a query)."""
    found: dict[str, str] = {}
    wanted = None if wanted is None else set(wanted)
    windows = _windows(text, wanted)
    if not windows:
        return found
    pairs = {w: _DETECTED[w] for w in windows if w in _DETECTED}
    todo = [w for w in dict.fromkeys(windows) if w not in pairs]
    if todo:
        nlp = _pipeline()
        with warnings.catch_warnings():  # W036: the detector's unused matcher has no patterns
            warnings.simplefilter("ignore", UserWarning)
            for window, doc in zip(todo, nlp.pipe(todo)):
                pairs[window] = _DETECTED[window] = tuple(
                    (short.text, " ".join(short._.long_form.text.split()))
                    for short in doc._.abbreviations
                )
        while len(_DETECTED) > _DETECTED_SIZE:
            _DETECTED.pop(next(iter(_DETECTED)), None)  # another thread may have taken it
    for window in windows:
        for sf, long in pairs[window]:
            if (
                _is_short_form(sf)
                and sf not in found
                and (wanted is None or sf in wanted)
                and len(long.split()) <= _MAX_LONG_WORDS
                and long.lower() != sf.lower()
            ):
                found[sf] = long
    return found


@lru_cache(maxsize=32)
def _defined(source: str, wanted: frozenset[str]) -> tuple[tuple[str, str], ...]:
    return tuple(find_abbreviations(source, wanted).items())


def defined_in(source: str, passage: str) -> tuple[tuple[str, str], ...]:
    """The (short, long) pairs ``source`` defines for the short forms ``passage`` uses (cached:
    a query's texts are split several times per recommendation)."""
    used = short_forms_in(passage) if source else set()
    return _defined(source, frozenset(used)) if used else ()


def short_forms_in(text: str) -> set[str]:
    """Tokens of ``text`` that look like abbreviations (candidates for :func:`find_abbreviations`)."""
    return {t for t in re.findall(r"[A-Za-z][A-Za-z0-9&\-]{1,9}", text) if _is_short_form(t)}


def expand(text: str, abbreviations: dict[str, str] | Iterable[tuple[str, str]]) -> str:
    """``text`` with each defined short form it uses followed once by its long form, unless the
    long form is already there."""
    pairs = abbreviations.items() if isinstance(abbreviations, dict) else abbreviations
    for short, long in pairs:
        if long.lower() in text.lower():
            continue
        match = re.search(rf"(?<![\w-]){re.escape(short)}(?![\w-])", text)
        if match:
            text = f"{text[: match.end()]} ({long}){text[match.end() :]}"
    return text
