"""What the ranker's bibliographic signals read from the whole library, for one query at a time.

:class:`~assistant.retrieval.bibsignals.LibraryStats` holds every author name key, its paper
count and its co-authors in Python dicts: building it reads and folds every author list (2.2
CPU-s at 112k papers), which a cold ``assistant recommend`` paid on every start although one
query needs a handful of entries. Here:

- :class:`AuthorTable` holds the same author statistics as sorted arrays (name keys, paper
  counts, a CSR list of co-authors), saved next to the index as ``authors.npz`` with the
  library's :meth:`~assistant.library.store.Library.papers_signature`: it is rebuilt only when
  a paper was added, edited, trashed or removed since (any writer moves the signature);
- :class:`LibraryView` is what the recommender hands to ``bibsignals.signals``: the citation
  counts of the candidates from SQL, and the author table only when the query names authors
  (a query without authors reads none of it).

Both give exactly the numbers ``LibraryStats`` gives (``tests/test_authorstats.py``).
"""

from __future__ import annotations

import json
import logging
import math
import os
import stat
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from assistant import filewrite
from assistant.retrieval.bibsignals import LibraryStats

log = logging.getLogger(__name__)

#: the cache file in the index folder
CACHE_FILE = "authors.npz"
#: bump when the arrays or the name keys change meaning (an older file is rebuilt)
FORMAT = 1


@dataclass
class AuthorTable:
    """The author part of :class:`LibraryStats` as arrays (``keys`` sorted, ASCII bytes)."""

    papers: int
    keys: np.ndarray  # |S| name keys, sorted
    df: np.ndarray  # int64: papers with that author
    co_ptr: np.ndarray  # int64, len(keys) + 1: co-authors of keys[i] are co_idx[ptr[i]:ptr[i+1]]
    co_idx: np.ndarray  # int32 rows of ``keys``

    @classmethod
    def from_stats(cls, stats: LibraryStats) -> AuthorTable:
        names = sorted(stats.name_df, key=lambda k: k.encode())
        row = {k: i for i, k in enumerate(names)}
        ptr = np.zeros(len(names) + 1, dtype=np.int64)
        idx: list[int] = []
        for i, key in enumerate(names):
            idx.extend(sorted(row[k] for k in stats.coauthors.get(key, ())))
            ptr[i + 1] = len(idx)
        return cls(
            papers=stats.papers,
            keys=np.array([k.encode() for k in names], dtype=bytes)
            if names
            else np.zeros(0, dtype="S1"),
            df=np.array([stats.name_df[k] for k in names], dtype=np.int64),
            co_ptr=ptr,
            co_idx=np.array(idx, dtype=np.int32),
        )

    def _row(self, key: str) -> int | None:
        try:
            needle = key.encode("ascii")
        except UnicodeEncodeError:  # name keys are ASCII: not in the table
            return None
        i = int(np.searchsorted(self.keys, needle))
        return i if i < len(self.keys) and self.keys[i] == needle else None

    def idf(self, key: str) -> float:
        """``LibraryStats.idf``: log((1 + papers) / (1 + papers naming ``key``))."""
        row = self._row(key)
        return math.log((1 + self.papers) / (1 + (int(self.df[row]) if row is not None else 0)))

    def coauthors(self, key: str) -> set[str]:
        """``LibraryStats.coauthors[key]`` (the key itself included, as there)."""
        row = self._row(key)
        if row is None:
            return set()
        rows = self.co_idx[self.co_ptr[row] : self.co_ptr[row + 1]]
        return {k.decode() for k in self.keys[rows].tolist()}

    def save(self, path: Path, signature: Iterable) -> None:
        meta = json.dumps({"format": FORMAT, "signature": list(signature), "papers": self.papers})
        arrays = {
            "meta": np.array(meta),
            "keys": self.keys,
            "df": self.df,
            "co_ptr": self.co_ptr,
            "co_idx": self.co_idx,
        }
        filewrite.save_with(path, lambda tmp: _savez(tmp, arrays))

    @classmethod
    def load(cls, path: Path, signature: Iterable) -> AuthorTable | None:
        """The table saved at ``path`` for this ``signature`` (None: missing, stale, unreadable,
        or not a regular file: a FIFO or a link is never opened)."""
        try:
            if not stat.S_ISREG(os.lstat(path).st_mode):
                return None
            with np.load(path, allow_pickle=False) as data:
                meta = json.loads(str(data["meta"]))
                if meta.get("format") != FORMAT or meta.get("signature") != list(signature):
                    return None
                table = cls(
                    int(meta["papers"]),
                    data["keys"],
                    data["df"],
                    data["co_ptr"],
                    data["co_idx"],
                )
        except FileNotFoundError:
            return None
        except Exception as exc:  # a damaged cache is rebuilt, never an error
            log.debug("author statistics %s unreadable (%s): rebuilt", path, exc)
            return None
        n = len(table.keys)
        if table.df.shape != (n,) or table.co_ptr.shape != (n + 1,) or table.keys.dtype.kind != "S":
            return None
        if n and (int(table.co_ptr[-1]) != len(table.co_idx) or table.co_idx.max() >= n):
            return None
        return table


def _savez(name: str, arrays: dict) -> None:
    with open(name, "wb") as fh:  # np.savez would add ".npz" to a bare name
        np.savez(fh, **arrays)


def author_table(library, cache: Path | None) -> AuthorTable:
    """The library's author table: read from ``cache`` when it matches the library, else built
    (one pass over every author list) and saved there (best effort: a read-only folder or a
    failed write only costs the next start the same build)."""
    signature = tuple(library.papers_signature())
    if cache is not None:
        table = AuthorTable.load(cache, signature)
        if table is not None:
            return table
    table = AuthorTable.from_stats(LibraryStats.build(library, citations=False))
    if cache is not None and cache.parent.is_dir():
        try:
            table.save(cache, signature)
        except (OSError, filewrite.WriteRefused) as exc:
            log.debug("author statistics not cached in %s: %s", cache, exc)
    return table


class LibraryView:
    """The library-wide numbers of ``bibsignals.signals`` read on demand (see module docstring):
    built once per opened index, like the ``LibraryStats`` it stands in for."""

    def __init__(self, library, cache: Path | None = None) -> None:
        self.library = library
        self.cache = cache
        self._table: AuthorTable | None = None
        self._cited: dict[int, int] = {}
        self._near: dict[frozenset[str], frozenset[str]] = {}
        self._lock = threading.Lock()

    def authors(self) -> AuthorTable:
        with self._lock:
            if self._table is None:
                self._table = author_table(self.library, self.cache)
            return self._table

    def idf(self, key: str) -> float:
        return self.authors().idf(key)

    def near(self, mine: frozenset[str]) -> frozenset[str]:
        """Everyone who wrote a library paper with one of ``mine`` (``mine`` excluded)."""
        if not mine:
            return frozenset()
        near = self._near.get(mine)
        if near is None:
            table = self.authors()
            out: set[str] = set()
            for key in mine:
                out |= table.coauthors(key)
            near = frozenset(out - mine)
            if len(self._near) > 256:
                self._near.clear()
            self._near[mine] = near
        return near

    def cited_counts(self, paper_ids: Iterable[int]) -> dict[int, int]:
        """``paper id -> distinct papers citing it`` for ``paper_ids`` (counted once each)."""
        ids = [int(i) for i in paper_ids]
        missing = [i for i in ids if i not in self._cited]
        if missing:
            counts = self.library.citing_counts_of(missing)
            with self._lock:
                self._cited.update({i: counts.get(i, 0) for i in missing})
        return {i: self._cited[i] for i in ids}
