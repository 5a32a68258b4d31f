"""Bibliographic signals of a candidate paper relative to the manuscript being written.

Text models miss who wrote what: about a fifth of the papers a manuscript cites share an author
with it, their co-authors are cited too, and recent papers of the same field are cited more. The
signals here are features of the learned ranker (``retrieval.ranker``), computed from the
library's own records; no network, no external data.

Names are compared as ``surname + first initial`` (ASCII-folded, lower case), so "Lin, Jimmy",
"Jimmy Lin" and "J. Lin" meet; a surname shared by many library authors ("Wang", "Li") weighs less
(inverse document frequency of the name key over the library's papers).
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from assistant.fold import fold

#: feature names, in the order of :func:`signals` columns
SIGNALS = (
    "author_overlap",
    "author_overlap_idf",
    "coauthor_overlap",
    "year_gap",
    "year_known",
    "newer_than_manuscript",
    "library_citations",
)


def name_key(name: str) -> str:
    """``"Lin, Jimmy"`` / ``"Jimmy Lin"`` / ``"J. Lin"`` → ``"lin j"`` ("" when no surname)."""
    text = fold(name or "", ascii_only=False)
    if "," in text:
        last, _, first = text.partition(",")
    else:
        words = text.split()
        if not words:
            return ""
        last, first = words[-1], " ".join(words[:-1])
    last = re.sub(r"[^a-z\- ]", "", last.lower()).strip()
    first = re.sub(r"[^a-z ]", "", first.lower()).strip()
    if not last:
        return ""
    return f"{last} {first[:1]}".strip()


def name_keys(names: Iterable[str]) -> set[str]:
    return set(_name_keys(tuple(names)))


@lru_cache(maxsize=65536)
def _name_keys(names: tuple[str, ...]) -> frozenset[str]:
    """The keys of one author list (cached: the same library papers come back query after
    query; a pure function of the names, so an edited author list is simply another key)."""
    return frozenset(k for k in (name_key(n) for n in names) if k)


@dataclass
class LibraryStats:
    """What the signals need from the whole library, built once per opened library."""

    papers: int = 0
    name_df: Counter = field(default_factory=Counter)  # name key -> papers with that author
    coauthors: dict[str, set[str]] = field(default_factory=dict)
    cited_count: dict[int, int] = field(default_factory=dict)  # paper id -> citing manuscripts
    #: the manuscript's authors -> their co-author neighbourhood (asked for on every query)
    _near: dict[frozenset[str], frozenset[str]] = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, library, citations: bool = True) -> LibraryStats:
        """One pass over the library's authors and (``citations``) citation edges (about 2 CPU-s
        per 100k papers: ``retrieval.authorstats`` caches the author part)."""
        stats = cls()
        co: dict[str, set[str]] = defaultdict(set)
        for authors in library.author_lists():
            try:
                keys = name_keys(authors)
            except TypeError:  # a damaged list (not names)
                continue
            stats.papers += 1
            stats.name_df.update(keys)
            if 1 < len(keys) <= 30:  # a 500-author consortium paper says nothing about anyone
                for key in keys:
                    co[key].update(keys)
        stats.coauthors = dict(co)
        stats.cited_count = library.citing_counts() if citations else {}
        return stats

    def idf(self, key: str) -> float:
        return math.log((1 + self.papers) / (1 + self.name_df.get(key, 0)))

    def near(self, mine: frozenset[str]) -> frozenset[str]:
        """:func:`neighbourhood` of the manuscript's author keys (remembered per author set)."""
        near = self._near.get(mine)
        if near is None:
            near = frozenset(neighbourhood(set(mine), self)) if mine else frozenset()
            if len(self._near) > 256:
                self._near.clear()
            self._near[mine] = near
        return near

    def cited_counts(self, paper_ids: Iterable[int]) -> dict[int, int]:
        """``paper id -> citing papers`` for ``paper_ids``."""
        return {int(i): self.cited_count.get(int(i), 0) for i in paper_ids}


def neighbourhood(authors: set[str], stats: LibraryStats) -> set[str]:
    """Everyone who wrote a library paper with one of ``authors`` (the authors themselves excluded)."""
    out: set[str] = set()
    for key in authors:
        out |= stats.coauthors.get(key, set())
    return out - authors


def signals(
    candidates: Sequence,
    stats: LibraryStats,
    authors: Sequence[str] = (),
    year: int | None = None,
) -> list[list[float]]:
    """One row of :data:`SIGNALS` per candidate paper (``id``, ``authors``, ``year`` attributes).

    ``stats``: a :class:`LibraryStats` or anything with its ``idf``, ``near`` and
    ``cited_counts`` (``retrieval.authorstats.LibraryView``, which reads the author statistics
    only when ``authors`` names someone)."""
    mine = _name_keys(tuple(authors))
    near = stats.near(mine) if mine else frozenset()
    cited = stats.cited_counts([int(p.id) for p in candidates])
    rows = []
    for paper in candidates:
        theirs = _name_keys(tuple(paper.authors or ()))
        shared = mine & theirs
        gap = float(year - paper.year) if year and paper.year else 0.0
        rows.append(
            [
                float(len(shared)),
                sum(stats.idf(k) for k in shared),
                float(len((theirs - shared) & near)),
                math.copysign(math.log1p(abs(gap)), gap),
                1.0 if year and paper.year else 0.0,
                1.0 if year and paper.year and paper.year > year else 0.0,
                math.log1p(cited[int(paper.id)]),
            ]
        )
    return rows
