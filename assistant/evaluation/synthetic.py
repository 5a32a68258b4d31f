"""Synthetic libraries for ``assistant bench scale``: N realistic paper records drawn from the
statistics of the ACM-DL archive (``assistant/resources/acm_stats.json.gz``, made by
``tools/acm_stats.py``: word and bigram frequencies, names, venues, years, lengths; no record is
copied), written as BibTeX for the real importer, and an encoder stand-in that makes vectors
without a transformer (bag of hashed word vectors: papers sharing words are near, as with a real
encoder, so approximate indexes are measured on structured data, not on noise).
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from assistant.bibwriter import entry_text
from assistant.config import RESOURCES_DIR

STATS_FILE = RESOURCES_DIR / "acm_stats.json.gz"
_WORD = re.compile(r"[a-z][a-z0-9\-]+|[0-9]+")


@lru_cache(maxsize=2)
def load_stats(path: Path = STATS_FILE) -> dict:
    return json.loads(gzip.decompress(Path(path).read_bytes()))


def _p(counts) -> np.ndarray:
    """The cumulative distribution of ``counts`` (drawn from with ``searchsorted``)."""
    arr = np.cumsum(np.asarray(counts, dtype=np.float64))
    return arr / arr[-1]


@dataclass
class SyntheticPaper:
    key: str
    entry_type: str
    title: str
    abstract: str
    authors: list[str]
    venue: str
    year: int
    doi: str

    def bibtex(self) -> str:
        venue_field = "journal" if self.entry_type == "article" else "booktitle"
        fields = [
            ("title", self.title),
            ("author", " and ".join(self.authors)),
            (venue_field, self.venue),
            ("year", str(self.year)),
            ("doi", self.doi),
        ]
        if self.abstract:
            fields.append(("abstract", self.abstract))
        # the archive's words as drawn (unescaped: the benchmark library stays as it was)
        return entry_text(self.entry_type, self.key, [(k, "{" + v + "}") for k, v in fields if v])


class PaperGenerator:
    """Draws papers from the archive's statistics (seeded: the same N gives the same library)."""

    def __init__(self, seed: int = 0, stats: dict | None = None) -> None:
        s = stats or load_stats()
        self.rng = np.random.default_rng(seed)
        self.vocab = np.asarray(s["vocab"], dtype=object)
        self.words = np.asarray(s["vocab"], dtype=str)
        self.p_word = _p(s["word_counts"])
        self.p_title = _p(np.asarray(s["title_counts"]) + 1)
        big = np.asarray(s["bigrams"], dtype=np.int64)
        self.bigrams, self.p_bigram = big[:, :2], _p(big[:, 2])
        self.surnames = [n for n, _ in s["surnames"] if n]
        self.p_surname = _p([c for n, c in s["surnames"] if n])
        self.given = [n for n, _ in s["given"]]
        self.p_given = _p([c for _, c in s["given"]])
        self.venues = [v.split("|", 1) for v, _ in s["venues"]]
        self.p_venue = _p([c for _, c in s["venues"]])
        self.years = np.asarray([y for y, _ in s["years"]])
        self.p_year = _p([c for _, c in s["years"]])
        self.p_title_len = _p(s["title_len"])
        self.p_abstract_len = _p(s["abstract_len"])
        self.p_authors = _p(s["authors_len"])
        self.with_abstract = float(s["with_abstract"])

    def _draw(self, cdf: np.ndarray, size: int | None = None):
        """Indices drawn from a cumulative distribution (one index when ``size`` is None)."""
        u = self.rng.random(size)
        return np.minimum(np.searchsorted(cdf, u, side="right"), len(cdf) - 1)

    def _text(self, n: int, p_word: np.ndarray) -> str:
        """``n`` words: about two thirds from frequent bigrams, the rest single words."""
        n = max(1, int(n))
        n_pairs = n // 3
        units = np.full((n_pairs + n - 2 * n_pairs, 2), -1, dtype=np.int64)
        units[:n_pairs] = self.bigrams[self._draw(self.p_bigram, n_pairs)]
        units[n_pairs:, 0] = self._draw(p_word, n - 2 * n_pairs)
        flat = units[self.rng.permutation(len(units))].ravel()
        return " ".join(self.words[flat[flat >= 0]].tolist())

    def paper(self, i: int) -> SyntheticPaper:
        rng = self.rng
        title = self._text(max(3, self._draw(self.p_title_len)), self.p_title)
        abstract = ""
        if rng.random() < self.with_abstract:
            tens = self._draw(self.p_abstract_len)
            abstract = self._text(10 * tens + rng.integers(0, 10), self.p_word)
        n_auth = max(1, int(self._draw(self.p_authors)))
        authors = [
            f"{self.surnames[s]}, {self.given[g]}"
            for s, g in zip(
                self._draw(self.p_surname, n_auth),
                self._draw(self.p_given, n_auth),
            )
        ]
        entry_type, venue = self.venues[self._draw(self.p_venue)]
        if entry_type not in ("article", "inproceedings"):
            entry_type = "inproceedings"
        year = int(self.years[self._draw(self.p_year)])
        return SyntheticPaper(
            f"syn{i}",
            entry_type,
            title[:1].upper() + title[1:],
            abstract,
            authors,
            venue,
            year,
            f"10.5555/syn.{i}",
        )

    def sentence(self, words: int = 25) -> str:
        """A query-like passage drawn from the same statistics."""
        return self._text(words, self.p_word) + "."

    def papers(self, n: int) -> Iterator[SyntheticPaper]:
        for i in range(n):
            yield self.paper(i)


def write_bibtex(n: int, folder: Path, per_file: int = 5000, seed: int = 0) -> list[Path]:
    """``n`` synthetic papers as BibTeX files of ``per_file`` records in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    gen = PaperGenerator(seed)
    files, buf, count = [], [], 0
    for paper in gen.papers(n):
        buf.append(paper.bibtex())
        count += 1
        if len(buf) == per_file or count == n:
            path = folder / f"synthetic-{len(files):04d}.bib"
            path.write_text("\n".join(buf), encoding="utf-8")
            files.append(path)
            buf = []
    return files


class SyntheticEncoder:
    """Vectors without a transformer: the normalised mean of fixed random vectors of the text's
    hashed words (the same interface as ``inference.encoder.Encoder`` for the index and the
    searcher). ``fingerprint`` names it, so a real index is never mixed with these vectors."""

    name = "synthetic-bow"
    max_length = 256

    def __init__(self, dim: int = 384, buckets: int = 16384, seed: int = 0) -> None:
        self.dim, self.buckets = dim, buckets
        rng = np.random.default_rng(seed)
        # word vectors in a 64-dimensional topic space plus noise: papers sharing topics are near
        # (pairwise cosine median ~0.16, p99 ~0.45 on synthetic ACM papers, close to MiniLM's on
        # real ones); full-rank noise alone would make every paper a stranger to every other
        topics = rng.standard_normal((buckets, 64)) @ rng.standard_normal((64, dim)) / 8.0
        self.table = (topics + 0.3 * rng.standard_normal((buckets, dim))).astype(np.float32)
        # frequent words weigh little (idf squared; as in a trained encoder, "the" does not make papers alike)
        stats = load_stats()
        total = float(sum(stats["word_counts"]))
        self.weights = {
            w: float(np.log(total / c)) ** 2 for w, c in zip(stats["vocab"], stats["word_counts"])
        }
        self.rare = float(np.log(total)) ** 2
        self.fingerprint = f"synthetic-bow-{dim}-{buckets}-{seed}"

    def encode(self, texts: Sequence[str] | str, batch_size: int = 32, progress=None) -> np.ndarray:
        from scipy.sparse import csr_matrix

        texts = [texts] if isinstance(texts, str) else list(texts)
        rows, cols, vals = [], [], []
        for r, text in enumerate(texts):
            words = _WORD.findall((text or "").lower())[: self.max_length]
            cols += [hash_word(w) % self.buckets for w in words]
            vals += [self.weights.get(w, self.rare) for w in words]
            rows += [r] * len(words)
        m = csr_matrix(
            (np.asarray(vals, np.float32), (rows, cols)), shape=(len(texts), self.buckets)
        )
        vecs = np.asarray(m @ self.table, dtype=np.float32)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        return vecs / np.where(norms > 0, norms, 1.0)


def hash_word(word: str) -> int:
    """A stable (not per-process salted) hash of a word."""
    import zlib

    return zlib.crc32(word.encode())
