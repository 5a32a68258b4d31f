"""Word-start search over many short texts (authors, title, year of each paper): one string of
`` word word …\\n`` per text and a C-speed ``str.find`` loop, no per-keystroke Python scan."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable

_WORD_RE = re.compile(r"\w+")


def words(text: str) -> list[str]:
    return _WORD_RE.findall(text)


class WordIndex:
    """Texts by position; :meth:`search` finds those with a word starting with each query word."""

    def __init__(self, texts: Iterable[str]) -> None:
        parts, starts, pos = [], [], 0
        for text in texts:
            line = " " + " ".join(_WORD_RE.findall(text.lower())) + "\n"
            starts.append(pos)
            parts.append(line)
            pos += len(line)
        self.hay = "".join(parts)
        self.starts = starts

    def search(self, query: list[str], limit: int) -> tuple[list[int], bool]:
        """Positions (in order) of the texts matching every word of ``query``, at most ``limit``;
        True when there are more."""
        query = [w.lower() for w in query if w]
        if not query or not self.starts:
            return [], False
        hay, starts = self.hay, self.starts
        lead = max(query, key=len)
        needle, others = " " + lead, [" " + w for w in query if w != lead]
        out: list[int] = []
        pos, last = hay.find(needle), -1
        while pos >= 0:
            n = bisect.bisect_right(starts, pos) - 1
            if n != last:
                last = n
                end = starts[n + 1] if n + 1 < len(starts) else len(hay)
                if all(hay.find(w, starts[n], end) >= 0 for w in others):
                    if len(out) == limit:
                        return out, True
                    out.append(n)
                pos = hay.find(needle, end)
            else:
                pos = hay.find(needle, pos + 1)
        return out, False
