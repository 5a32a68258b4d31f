"""The score matrix of a BM25 index and its files, in bm25s's format, without bm25s.

The index used ``bm25s.BM25`` only as a container (our own code tokenises, counts and scores;
``retrieval.bm25``), but importing bm25s pulls in scipy.sparse, tqdm (and through it asyncio and
email) and probes for numba and jax: about a third of the command line's start-up. The files
are the ones ``bm25s.BM25.save`` writes and ``bm25s.BM25.load`` reads (``method="lucene"``),
so an index written before this module, or by bm25s, loads here and the other way round
(``tests/test_bm25_files.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from assistant import filewrite

DATA = "data.csc.index.npy"
INDICES = "indices.csc.index.npy"
INDPTR = "indptr.csc.index.npy"
VOCAB = "vocab.index.json"
PARAMS = "params.index.json"
#: what bm25s's ``params.index.json`` holds besides k1, b and the document count
BM25S_PARAMS = {
    "delta": 0.5,
    "method": "lucene",
    "idf_method": "lucene",
    "dtype": "float32",
    "int_dtype": "int32",
    "version": "0.3.16",  # the bm25s release whose format this is
    "backend": "numpy",
}
#: bm25s's English stop words (``bm25s.stopwords.STOPWORDS_EN``, Lucene's list)
STOPWORDS_EN = (
    "a",
    "an",
    "and",
    "are",
    "as",
    "at",
    "be",
    "but",
    "by",
    "for",
    "if",
    "in",
    "into",
    "is",
    "it",
    "no",
    "not",
    "of",
    "on",
    "or",
    "such",
    "that",
    "the",
    "their",
    "then",
    "there",
    "these",
    "they",
    "this",
    "to",
    "was",
    "will",
    "with",
)


class ScoreMatrix:
    """``scores`` (``data``/``indices``/``indptr`` of the CSC word x paper matrix and
    ``num_docs``) and ``vocab_dict`` (word -> column), as ``bm25s.BM25`` names them."""

    def __init__(
        self,
        k1: float,
        b: float,
        scores: dict,
        vocab: dict[str, int],
        vocab_file: Path | None = None,
    ) -> None:
        self.k1 = float(k1)
        self.b = float(b)
        self.scores = scores
        self.vocab_dict = vocab
        #: a file holding exactly ``vocab`` (the one it was read from): saved by copying its
        #: bytes instead of encoding 100k words again (an update that added no word), unless
        #: the file changed since it was read (its size, mtime or inode)
        self.vocab_file = vocab_file
        self._vocab_stamp = _stamp(vocab_file) if vocab_file is not None else None

    def same_vocabulary_as(self, other: ScoreMatrix) -> None:
        """``other``'s vocabulary file holds this matrix's vocabulary too (an update that added
        no word): :meth:`save` copies it."""
        self.vocab_file, self._vocab_stamp = other.vocab_file, other._vocab_stamp

    def save(self, directory: str | Path) -> None:
        """The files ``bm25s.BM25.save`` writes (no corpus)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        for name, key in ((DATA, "data"), (INDICES, "indices"), (INDPTR, "indptr")):
            np.save(directory / name, self.scores[key], allow_pickle=False)
        source, stamp = self.vocab_file, self._vocab_stamp
        if source is not None and stamp is not None and _stamp(source) == stamp:
            filewrite.write_bytes(directory / VOCAB, source.read_bytes())
        else:
            vocab = json.dumps(self.vocab_dict, ensure_ascii=False, separators=(",", ":"))
            filewrite.write_text(directory / VOCAB, vocab)
        params = {"k1": self.k1, "b": self.b, "num_docs": int(self.scores["num_docs"])}
        filewrite.write_text(directory / PARAMS, json.dumps({**BM25S_PARAMS, **params}, indent=4))

    @classmethod
    def load(cls, directory: str | Path, mmap: bool = False) -> ScoreMatrix:
        """The matrix saved in ``directory`` (by :meth:`save` or by bm25s); a missing or
        unreadable file raises (the caller turns it into ``IndexDamagedError``)."""
        directory = Path(directory)
        params = json.loads((directory / PARAMS).read_text(encoding="utf-8"))
        vocab = json.loads((directory / VOCAB).read_text(encoding="utf-8"))
        if not isinstance(params, dict) or not isinstance(vocab, dict):
            raise ValueError("not a bm25s index")
        if params.get("method", "lucene") != "lucene":
            raise ValueError(f"a {params.get('method')!r} BM25 index, not lucene")
        mode = "r" if mmap else None
        scores = {
            key: np.load(directory / name, allow_pickle=False, mmap_mode=mode)
            for name, key in ((DATA, "data"), (INDICES, "indices"), (INDPTR, "indptr"))
        }
        if scores["data"].shape != scores["indices"].shape or scores["indptr"].ndim != 1:
            raise ValueError("the score arrays do not match")
        scores["num_docs"] = params.get("num_docs")
        if not isinstance(scores["num_docs"], int | None) or isinstance(scores["num_docs"], bool):
            raise ValueError(f"num_docs is {scores['num_docs']!r}")
        return cls(params.get("k1", 1.5), params.get("b", 0.75), scores, vocab, directory / VOCAB)


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino)
