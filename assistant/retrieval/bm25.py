"""Tunable BM25 over ``Paper.lexical_text()`` (title + abstract + keywords), built with bm25s.

Tokens: lower-cased ``\\w\\w+`` words, English stopwords dropped, Snowball-stemmed (PyStemmer).
Queries are weighted bags of tokens so that the focus sentence and its supporting text
(title/abstract, neighbouring sentences) can contribute with different weights.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import bm25s
import numpy as np
from bm25s.stopwords import STOPWORDS_EN

from assistant import filewrite

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


class BM25Index:
    """A BM25 index over papers; rows map to ``ids`` (library paper ids)."""

    def __init__(self, model: bm25s.BM25, ids: np.ndarray, params: BM25Params):
        self.model = model
        self.ids = np.asarray(ids, dtype=np.int64)
        self.params = params
        self.analyzer = Analyzer(stem=params.stem)
        self._row_of = {int(pid): row for row, pid in enumerate(self.ids)}

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
        model = bm25s.BM25(k1=params.k1, b=params.b, method="lucene")
        model.index(bm25s.tokenization.Tokenized(ids=docs, vocab=vocab), show_progress=False)
        return cls(model, np.asarray(ids, dtype=np.int64), params)

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
        self.model.save(str(directory), show_progress=False)
        np.save(directory / "ids.npy", self.ids)
        meta = {
            "format": FORMAT_VERSION,
            "k1": self.params.k1,
            "b": self.params.b,
            "stem": self.params.stem,
        }
        filewrite.write_text(directory / "bm25.json", json.dumps(meta, indent=1))

    @classmethod
    def load(cls, directory: Path | str, mmap: bool = False) -> BM25Index:
        """The index saved in ``directory``; a damaged or foreign file raises
        :class:`IndexDamagedError` (checked with ``lstat`` first: never a hang on a FIFO)."""
        from assistant.retrieval import index_files

        directory = Path(directory)
        meta_path = directory / "bm25.json"
        if not index_files.check_folder(directory) or not index_files.is_regular(meta_path):
            raise FileNotFoundError(f"no BM25 index in {directory} (run `assistant index`)")
        meta = index_files.load_json(meta_path)
        with index_files.reading(directory):
            model = bm25s.BM25.load(str(directory), mmap=mmap, show_progress=False, verbosity=0)
            params = BM25Params(float(meta["k1"]), float(meta["b"]), bool(meta.get("stem", True)))
        ids = index_files.load_npy(directory / "ids.npy")
        n_docs = (
            int(model.scores.get("num_docs", len(ids))) if hasattr(model, "scores") else len(ids)
        )
        index_files.expect(
            ids.ndim == 1 and ids.dtype.kind in "iu" and len(ids) == n_docs,
            directory / "ids.npy",
            f"{len(ids)} paper ids for {n_docs} BM25 documents",
        )
        return cls(model, ids, params)

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
        return self._row_of.get(int(paper_id))


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
