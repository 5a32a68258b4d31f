"""Tunable BM25 over ``Paper.lexical_text()`` (title + abstract + keywords), stored in bm25s's
file format (``retrieval.bm25_files``; bm25s itself is not imported).

Tokens: lower-cased ``\\w\\w+`` words, English stopwords dropped, Snowball-stemmed (PyStemmer).
Queries are weighted bags of tokens so that the focus sentence and its supporting text
(title/abstract, neighbouring sentences) can contribute with different weights.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path

import numpy as np

from assistant import filewrite
from assistant.retrieval.bm25_files import STOPWORDS_EN, ScoreMatrix

try:  # PyStemmer: the stemmer bm25s recommends
    import Stemmer as _pystemmer
except ImportError:  # pragma: no cover - optional, but tuned defaults assume stemming
    _pystemmer = None

#: Defaults tuned on the ACM-CR dev set (see assistant/models/BENCHMARKS.md, query section).
DEFAULT_K1 = 2.0
DEFAULT_B = 0.75

_TOKEN = re.compile(r"(?u)\b\w\w+\b")
_STOP = frozenset(STOPWORDS_EN) | frozenset(
    [
        "et",
        "al",
        "also",
        "using",
        "used",
        "use",
        "based",
        "via",
        "however",
        "thus",
        "paper",
        "propose",
        "proposed",
        "show",
        "shown",
        "results",
    ]
)
FORMAT_VERSION = 1
#: ``BM25Index.updated``: up to this many new (word, paper) entries are put in place column by
#: column; more are merged in one pass over the whole matrix.
FEW_ENTRIES = 200_000


class Analyzer:
    """Text -> tokens (lower-case, stopwords removed, stemmed); cached stems."""

    def __init__(self, stem: bool = True):
        self.stem = bool(stem and _pystemmer is not None)
        self._stemmer = _pystemmer.Stemmer("english") if self.stem else None
        self._cache: dict[str, str] = {}  # word -> its stem, "" for a stopword

    def __call__(self, text: str) -> list[str]:
        cache, out = self._cache, []
        for w in _TOKEN.findall((text or "").lower()):
            s = cache.get(w)
            if s is None:  # one dict lookup a word once seen (indexing tokenises every paper)
                s = cache[w] = (
                    "" if w in _STOP else self._stemmer.stemWord(w) if self._stemmer else w
                )
            if s:
                out.append(s)
        return out


@dataclass
class BM25Params:
    k1: float = DEFAULT_K1
    b: float = DEFAULT_B
    stem: bool = True


class TermCounts:
    """The term frequencies behind the score matrix, in its order (columns = vocabulary ids, rows
    ascending within a column), and each row's length in tokens: what an update needs to score a
    changed corpus exactly as a rebuild would (saved as ``tf.npy`` / ``doclen.npy``)."""

    def __init__(self, tf: np.ndarray, indices: np.ndarray, indptr: np.ndarray, doclen: np.ndarray):
        self.tf = np.asarray(tf, dtype=np.int32)
        self.indices = np.asarray(indices, dtype=np.int32)
        self.indptr = np.asarray(indptr, dtype=np.int64)
        self.doclen = np.asarray(doclen, dtype=np.int32)

    @classmethod
    def from_docs(cls, docs: list[list[int]], n_vocab: int, chunk: int = 20_000) -> TermCounts:
        """Counts of token-id lists (one per row), counted a chunk of rows at a time (the
        temporary arrays hold one chunk's tokens, not the corpus's)."""
        lens = np.fromiter((len(d) for d in docs), np.int64, count=len(docs))
        keys, tfs = [], []
        for start in range(0, len(docs), chunk):
            part = lens[start : start + chunk]
            tokens = np.fromiter(
                chain.from_iterable(docs[start : start + chunk]), np.int64, count=int(part.sum())
            )
            rows = np.repeat(np.arange(start, start + len(part), dtype=np.int64), part)
            k, c = np.unique((tokens << 32) | rows, return_counts=True)
            keys.append(k)
            tfs.append(c.astype(np.int32))
        if len(keys) <= 1:
            key = keys[0] if keys else np.empty(0, np.int64)
            return cls.from_keys(key, tfs[0] if tfs else np.empty(0, np.int32), lens, n_vocab)
        key = np.concatenate(keys)
        order = np.argsort(key, kind="stable")  # column-major over all the chunks
        return cls.from_keys(key[order], np.concatenate(tfs)[order], lens, n_vocab)

    @classmethod
    def from_keys(
        cls, keys: np.ndarray, tf: np.ndarray, doclen: np.ndarray, n_vocab: int
    ) -> TermCounts:
        """From sorted ``column << 32 | row`` keys and their counts."""
        cols = keys >> 32
        indptr = np.zeros(n_vocab + 1, dtype=np.int64)
        np.cumsum(np.bincount(cols, minlength=n_vocab), out=indptr[1:])
        return cls(tf, keys & 0xFFFFFFFF, indptr, doclen)

    def keys(self) -> np.ndarray:
        cols = np.repeat(np.arange(len(self.indptr) - 1, dtype=np.int64), np.diff(self.indptr))
        return (cols << 32) | self.indices

    def scores(self, k1: float, b: float) -> np.ndarray:
        """Lucene BM25 of every entry, float32, computed as bm25s computes it (idf from
        ``math.log`` per document frequency, the length norm per row in float64 then float32)."""
        n = len(self.doclen)
        df = np.diff(self.indptr)
        distinct, where = np.unique(df, return_inverse=True)
        idf = np.asarray(
            [math.log(1 + (n - d + 0.5) / (d + 0.5)) if d else 0.0 for d in distinct.tolist()],
            dtype=np.float32,
        )[where]
        avg = self.doclen.astype(np.int64).mean() if n else 1.0
        with np.errstate(divide="ignore", invalid="ignore"):
            norm = (k1 * ((1 - b) + b * self.doclen.astype(np.float64) / avg)).astype(np.float32)
        # idf[col] * (tf / (norm[row] + tf)), the same float32 operations as one expression,
        # in three arrays instead of seven (an update pays for every fresh page it touches)
        tf = self.tf.astype(np.float32)
        den = norm[self.indices]
        den += tf
        np.divide(tf, den, out=tf)
        out = np.repeat(idf, df)  # idf of each entry's column
        out *= tf
        return out


class BM25Index:
    """A BM25 index over papers; rows map to ``ids`` (library paper ids)."""

    def __init__(
        self,
        model: ScoreMatrix,
        ids: np.ndarray,
        params: BM25Params,
        counts: TermCounts | None = None,
    ):
        self.model = model
        self.ids = np.asarray(ids, dtype=np.int64)
        self.params = params
        self.counts = counts  # None for an index saved without them (then rebuilt, not updated)
        self.analyzer = Analyzer(stem=params.stem)
        self._row_of: dict[int, int] | None = None  # made on the first row_of (not per query)

    # --- building ---------------------------------------------------------------------------
    @staticmethod
    def tokenize_corpus(
        texts: Sequence[str], stem: bool = True
    ) -> tuple[list[list[int]], dict[str, int]]:
        """Token-id lists + vocabulary for ``texts`` (reusable across k1/b settings)."""
        analyzer = Analyzer(stem=stem)
        vocab: dict[str, int] = {"": 0}
        docs = []
        for text in texts:
            docs.append([vocab.setdefault(tok, len(vocab)) for tok in analyzer(text)])
        return docs, vocab

    @classmethod
    def from_tokens(
        cls, ids: Sequence[int], docs: list[list[int]], vocab: dict[str, int], params: BM25Params
    ) -> BM25Index:
        return cls.from_counts(ids, TermCounts.from_docs(docs, len(vocab)), vocab, params)

    @classmethod
    def from_counts(
        cls, ids: Sequence[int], counts: TermCounts, vocab: dict[str, int], params: BM25Params
    ) -> BM25Index:
        """The score matrix of these counts (the same matrix ``bm25s.BM25.index`` builds,
        ``method="lucene"``, vectorised: no Python loop over the documents)."""
        scores = {
            "data": counts.scores(params.k1, params.b),
            "indices": counts.indices,
            "indptr": counts.indptr,
            "num_docs": len(counts.doclen),
        }
        model = ScoreMatrix(params.k1, params.b, scores, vocab)
        return cls(model, np.asarray(ids, dtype=np.int64), params, counts)

    def updated(
        self, drop: Iterable[int], new_ids: Sequence[int], new_texts: Sequence[str]
    ) -> BM25Index:
        """This index with the papers ``drop`` removed and ``new_ids`` (re)added with
        ``new_texts``: the scores a rebuild over the resulting corpus gives, from the stored
        counts plus the new texts alone (rows stay in id order; new words extend the
        vocabulary, words no paper holds any more keep an empty column)."""
        if self.counts is None or (len(self.ids) > 1 and np.any(np.diff(self.ids) <= 0)):
            raise ValueError("this BM25 index cannot be updated in place: rebuild it")
        counts, vocab = self.counts, dict(self.model.vocab_dict)
        order = np.argsort(np.asarray(new_ids, dtype=np.int64), kind="stable")
        new_ids = np.asarray(new_ids, dtype=np.int64)[order]
        gone = np.isin(self.ids, np.fromiter(drop, np.int64)) | np.isin(self.ids, new_ids)
        ids = np.union1d(self.ids[~gone], new_ids)
        new_row = np.full(len(self.ids), -1, np.int64)
        new_row[~gone] = np.searchsorted(ids, self.ids[~gone])
        kept = ~gone[counts.indices]
        doclen = np.zeros(len(ids), np.int64)
        doclen[new_row[~gone]] = counts.doclen[~gone]
        add_keys, add_tf = [], []
        for i, row in zip(order.tolist(), np.searchsorted(ids, new_ids).tolist()):
            toks = [vocab.setdefault(t, len(vocab)) for t in self.analyzer(new_texts[i])]
            doclen[row] = len(toks)
            tally = sorted(Counter(toks).items())
            add_keys.append(np.asarray([(t << 32) | row for t, _ in tally], np.int64))
            add_tf.append(np.asarray([c for _, c in tally], np.int64))
        add_k = np.concatenate(add_keys) if add_keys else np.empty(0, np.int64)
        add_t = np.concatenate(add_tf) if add_tf else np.empty(0, np.int64)
        by_key = np.argsort(add_k, kind="stable")
        add_k, add_t = add_k[by_key], add_t[by_key]
        moved = None if np.array_equal(ids, self.ids) else new_row
        if len(add_k) <= FEW_ENTRIES:
            merged = _insert_few(counts, kept, moved, add_k, add_t, doclen, len(vocab))
        else:  # many new entries: one merge of the whole key array
            keys = counts.keys()
            keys = (keys[kept] & ~0xFFFFFFFF) | new_row[counts.indices[kept]]
            where = np.searchsorted(keys, add_k)
            keys = np.insert(keys, where, add_k)
            tf = np.insert(counts.tf[kept], where, add_t)
            merged = TermCounts.from_keys(keys, tf, doclen, len(vocab))
        index = BM25Index.from_counts(ids, merged, vocab, self.params)
        if len(vocab) == len(self.model.vocab_dict):  # no new word: the same vocabulary file
            index.model.same_vocabulary_as(self.model)
        return index

    @classmethod
    def build(
        cls, ids: Sequence[int], texts: Sequence[str], params: BM25Params | None = None
    ) -> BM25Index:
        params = params or BM25Params()
        if len(ids) != len(texts):
            raise ValueError(f"{len(ids)} ids but {len(texts)} texts")
        docs, vocab = cls.tokenize_corpus(texts, stem=params.stem)
        return cls.from_tokens(ids, docs, vocab, params)

    # --- persistence ------------------------------------------------------------------------
    def save(self, directory: Path | str) -> None:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.model.save(directory)
        np.save(directory / "ids.npy", self.ids)
        if self.counts is not None:
            np.save(directory / "tf.npy", self.counts.tf)
            np.save(directory / "doclen.npy", self.counts.doclen)
        meta = {
            "format": FORMAT_VERSION,
            "k1": self.params.k1,
            "b": self.params.b,
            "stem": self.params.stem,
        }
        filewrite.write_text(directory / "bm25.json", json.dumps(meta, indent=1))

    @classmethod
    def load(cls, directory: Path | str, mmap: bool = False, counts: bool = False) -> BM25Index:
        """The index saved in ``directory``; a damaged or foreign file raises
        :class:`IndexDamagedError` (checked with ``lstat`` first: never a hang on a FIFO).
        ``counts``: also the term counts an update needs (None when the files are not there)."""
        from assistant.retrieval import index_files

        directory = Path(directory)
        meta_path = directory / "bm25.json"
        if not index_files.check_folder(directory, top=False) or not index_files.is_regular(
            meta_path
        ):
            raise FileNotFoundError(f"no BM25 index in {directory} (run `assistant index`)")
        meta = index_files.load_json(meta_path)
        with index_files.reading(directory):
            model = ScoreMatrix.load(directory, mmap=mmap)
            params = BM25Params(float(meta["k1"]), float(meta["b"]), bool(meta.get("stem", True)))
        ids = index_files.load_npy(directory / "ids.npy")
        n_docs = int(model.scores.get("num_docs") or len(ids))
        index_files.expect(
            ids.ndim == 1 and ids.dtype.kind in "iu" and len(ids) == n_docs,
            directory / "ids.npy",
            f"{len(ids)} paper ids for {n_docs} BM25 documents",
        )
        return cls(model, ids, params, cls._load_counts(directory, model) if counts else None)

    @staticmethod
    def _load_counts(directory: Path, model: ScoreMatrix) -> TermCounts | None:
        from assistant.retrieval import index_files

        tf_path, len_path = directory / "tf.npy", directory / "doclen.npy"
        if not (index_files.is_regular(tf_path) and index_files.is_regular(len_path)):
            return None
        tf, doclen = index_files.load_npy(tf_path), index_files.load_npy(len_path)
        indices, indptr = model.scores["indices"], model.scores["indptr"]
        index_files.expect(
            tf.shape == indices.shape and doclen.shape == (int(model.scores["num_docs"]),),
            tf_path,
            "term counts do not match the BM25 matrix",
        )
        return TermCounts(tf, indices, indptr, doclen)

    # --- scoring ----------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.ids)

    def query_weights(
        self, focus: str, support: str = "", support_weight: float = 0.0, unique: bool = False
    ) -> dict[int, float]:
        """Token id -> weight for a focus text plus a down-weighted supporting text."""
        vocab = self.model.vocab_dict
        weights: Counter = Counter()
        for text, w in ((focus, 1.0), (support, support_weight)):
            if not text or w <= 0:
                continue
            toks = [vocab[t] for t in self.analyzer(text) if t in vocab and vocab[t] != 0]
            counts = Counter(toks)
            for tok, n in counts.items():
                weights[tok] += w * (1.0 if unique else n)
        return dict(weights)

    def scores(self, weights: dict[int, float]) -> np.ndarray:
        """BM25 score of every row for a weighted token query (float32, length ``len(self)``)."""
        out = np.zeros(len(self.ids), dtype=np.float32)
        data, indices, indptr = (self.model.scores[k] for k in ("data", "indices", "indptr"))
        for tok, w in weights.items():
            start, end = indptr[tok], indptr[tok + 1]
            out[indices[start:end]] += w * data[start:end]
        return out

    def search(
        self,
        focus: str,
        support: str = "",
        support_weight: float = 0.0,
        k: int = 100,
        mask: np.ndarray | None = None,
        query_tf: bool = True,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` (paper ids, scores); ``mask`` (bool per row) keeps allowed rows only.

        ``query_tf``: a term repeated in the query counts each time (like FTS5's OR query);
        this helped paragraph queries on the dev set.
        """
        scores = self.scores(
            self.query_weights(focus, support, support_weight, unique=not query_tf)
        )
        return top_k(scores, self.ids, k, mask)

    def row_of(self, paper_id: int) -> int | None:
        if self._row_of is None:
            self._row_of = {int(pid): row for row, pid in enumerate(self.ids.tolist())}
        return self._row_of.get(int(paper_id))


def _insert_few(
    counts: TermCounts,
    kept: np.ndarray,
    new_row: np.ndarray | None,
    add_k: np.ndarray,
    add_t: np.ndarray,
    doclen: np.ndarray,
    n_vocab: int,
) -> TermCounts:
    """``counts`` without the entries not ``kept``, rows renumbered by ``new_row`` (None: rows
    stay), plus the sorted ``column << 32 | row`` entries ``add_k`` (counts ``add_t``), each put
    in its column by a search of that column alone."""
    rows = counts.indices[kept]
    if new_row is not None:
        rows = new_row[rows].astype(np.int32)
    indptr = counts.indptr.copy()
    removed = np.flatnonzero(~kept)
    if len(removed):
        cols = np.searchsorted(counts.indptr, removed, side="right") - 1
        indptr[1:] -= np.cumsum(np.bincount(cols, minlength=len(indptr) - 1))
    indptr = np.concatenate([indptr, np.full(n_vocab + 1 - len(indptr), indptr[-1])])
    cols, add_rows = add_k >> 32, add_k & 0xFFFFFFFF
    where = [
        indptr[c] + np.searchsorted(rows[indptr[c] : indptr[c + 1]], r)
        for c, r in zip(cols.tolist(), add_rows.tolist())
    ]
    rows = np.insert(rows, where, add_rows.astype(np.int32))
    tf = np.insert(counts.tf[kept], where, add_t)
    indptr[1:] += np.cumsum(np.bincount(cols, minlength=n_vocab))
    return TermCounts(tf, rows, indptr, doclen)


def top_k(
    scores: np.ndarray, ids: np.ndarray, k: int, mask: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Highest-scoring ``k`` rows with a positive score (ties broken by row order)."""
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    k = min(k, len(scores))
    if k <= 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
    part = np.argpartition(-scores, k - 1)[:k]
    order = part[np.lexsort((part, -scores[part]))]
    order = order[scores[order] > 0]
    return ids[order], scores[order].astype(np.float32)


def content_words(text: str) -> list[str]:
    """The words of ``text`` a search can use (the BM25 analyser's, stop words dropped, and
    question/pronoun words that carry no topic)."""
    return [w for w in Analyzer(stem=False)(text) if w not in _FUNCTION_WORDS]


_FUNCTION_WORDS = frozenset(
    [
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "here",
        "there",
        "something",
        "anything",
        "everything",
        "one",
        "ones",
        "thing",
        "things",
        "way",
        "ways",
        "lot",
        "much",
        "many",
    ]
)
