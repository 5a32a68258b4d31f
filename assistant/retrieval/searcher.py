"""Loaded index of one library: BM25 + FAISS search with id/year filters and a query-embedding cache."""

from __future__ import annotations

import logging
import time
from collections import OrderedDict

import faiss
import numpy as np

from assistant.config import index_dir_for
from assistant.errors import AssistantError
from assistant.retrieval import index_files
from assistant.retrieval.bm25 import BM25Index, top_k
from assistant.retrieval.index import IndexPaths
from assistant.retrieval.query import QueryParts

log = logging.getLogger(__name__)


class RetrievalError(AssistantError, RuntimeError):
    """A user-facing problem (empty library, missing or stale index)."""


class EmptyLibraryError(RetrievalError):
    pass


class IndexMissingError(RetrievalError):
    pass


class Searcher:
    """BM25 and dense search over the index next to ``library``'s DB."""

    def __init__(
        self,
        paths: IndexPaths,
        bm25: BM25Index,
        years: np.ndarray,
        faiss_index,
        encoder,
        meta: dict,
    ):
        self.paths = paths
        self.bm25 = bm25
        self.years = years  # aligned with bm25.ids; -1 = unknown
        self.faiss_index = faiss_index
        self.encoder = encoder
        self.meta = meta
        self.warnings: list[str] = []
        self.max_id = (
            int(max(bm25.ids.max(initial=0), int(meta.get("max_id", 0)))) if len(bm25.ids) else 0
        )
        self._cache: OrderedDict[tuple, np.ndarray] = OrderedDict()
        if faiss_index is not None:
            faiss.omp_set_num_threads(2)

    @property
    def has_dense(self) -> bool:
        return self.faiss_index is not None and self.encoder is not None

    @classmethod
    def open(cls, library, encoder=None, index_dir=None, need_dense: bool = True) -> Searcher:
        paths = IndexPaths.of(index_dir) if index_dir else IndexPaths(index_dir_for(library.path))
        n_papers = library.count()
        if n_papers == 0:
            raise EmptyLibraryError(
                f"the library {library.path} is empty: import papers first "
                "(`assistant library import FILE`), then run `assistant index`"
            )
        meta = paths.read_meta(strict=True)
        if not meta or not index_files.is_regular(paths.bm25 / "bm25.json"):
            raise IndexMissingError(
                f"no index for {library.path} (expected in {paths.root}): run `assistant index`"
            )
        index_files.check_folder(
            paths.root
        )  # no FIFO, device or link is opened (foreign folders: left alone)
        bm25 = BM25Index.load(paths.bm25)
        years_path = paths.bm25 / "years.npy"
        if index_files.is_regular(years_path):
            years = index_files.load_npy(years_path)
            index_files.expect(
                years.shape == bm25.ids.shape, years_path, "years do not match the BM25 papers"
            )
        else:
            years = np.full(len(bm25.ids), -1, np.int32)
        faiss_index = None
        faiss_path = paths.dense / "faiss.index"
        if need_dense and index_files.is_regular(faiss_path) and meta.get("count", 0):
            with index_files.reading(faiss_path):
                faiss_index = faiss.read_index(str(faiss_path))
            index_files.expect(
                faiss_index.ntotal == meta.get("count"),
                faiss_path,
                f"{faiss_index.ntotal} vectors but meta.json says {meta.get('count')}",
            )
            index_files.expect(
                faiss_index.d == int(meta.get("dim") or faiss_index.d),
                faiss_path,
                f"vectors of {faiss_index.d} dimensions, meta.json says {meta.get('dim')}",
            )
            if encoder is None:
                from assistant.retrieval.index import load_index_encoder

                encoder = load_index_encoder(paths)
            if str(encoder.fingerprint) != meta.get("fingerprint"):
                raise RetrievalError(
                    f"the index in {paths.root} was built with encoder {meta.get('fingerprint')!r} "
                    f"but the active encoder is {encoder.fingerprint!r}: run `assistant index`"
                )
            dim = int(getattr(encoder, "dim", 0) or faiss_index.d)
            index_files.expect(
                faiss_index.d == dim,
                faiss_path,
                f"vectors of {faiss_index.d} dimensions, not {dim}",
            )
        searcher = cls(paths, bm25, years, faiss_index, encoder, meta)
        if meta.get("missing"):
            searcher.warnings.append(
                f"the dense index covers {meta.get('count')} of {meta.get('count', 0) + meta['missing']} "
                "papers (indexing unfinished): run `assistant index` to embed the rest"
            )
        if meta.get("count", 0) + meta.get("missing", 0) != n_papers or len(bm25) != n_papers:
            searcher.warnings.append(
                f"the index covers {meta.get('count')} papers but the library has {n_papers}: "
                "run `assistant index` to update it"
            )
        return searcher

    # --- filters ----------------------------------------------------------------------------
    def allowed_mask(self, excluded: set[int], max_year: int | None) -> np.ndarray | None:
        """Bool array indexed by paper id (None = everything allowed)."""
        if not excluded and max_year is None:
            return None
        allowed = np.ones(self.max_id + 1, dtype=bool)
        if excluded:
            ex = np.fromiter((i for i in excluded if 0 <= i <= self.max_id), dtype=np.int64)
            allowed[ex] = False
        if max_year is not None:
            allowed[self.bm25.ids[self.years > max_year]] = False
        return allowed

    # --- searches ---------------------------------------------------------------------------
    def bm25_scores(
        self, parts: QueryParts, support_weight: float, query_tf: bool = True
    ) -> np.ndarray:
        """BM25 of focus + ``support_weight`` x (context + background); background scores are cached."""
        unique = not query_tf
        scores = self.bm25.scores(
            self.bm25.query_weights(parts.focus, parts.context, support_weight, unique=unique)
        )
        if support_weight > 0 and parts.background:
            key = ("bm25", parts.background, unique)
            background = self._cache.get(key)
            if background is None:
                background = self.bm25.scores(
                    self.bm25.query_weights(parts.background, unique=unique)
                )
                self._remember(key, background)
            scores = scores + support_weight * background
        return scores

    def bm25_search(
        self,
        parts: QueryParts,
        support_weight: float,
        depth: int,
        allowed: np.ndarray | None,
        query_tf: bool = True,
    ):
        mask = allowed[self.bm25.ids] if allowed is not None else None
        return top_k(self.bm25_scores(parts, support_weight, query_tf), self.bm25.ids, depth, mask)

    def _remember(self, key, value) -> None:
        self._cache[key] = value
        if len(self._cache) > 256:
            self._cache.popitem(last=False)

    def embed(self, text: str) -> np.ndarray:
        """L2-normalised embedding of ``text`` (LRU-cached: title/abstract repeat across queries)."""
        key = ("dense", text)
        vec = self._cache.get(key)
        if vec is None:
            vec = np.asarray(self.encoder.encode([text]), dtype=np.float32)[0]
            self._remember(key, vec)
        else:
            self._cache.move_to_end(key)
        return vec

    def query_vector(self, parts: QueryParts, support_weight: float) -> np.ndarray:
        """``e(focus) + w * mean(e(context), e(background))``, normalised."""
        vec = self.embed(parts.focus).astype(np.float64)
        support = [self.embed(t) for t in (parts.context, parts.background) if t]
        if support_weight > 0 and support:
            vec = vec + support_weight * np.mean(support, axis=0)
        norm = np.linalg.norm(vec)
        return (vec / norm if norm > 0 else vec).astype(np.float32)

    def dense_search(
        self,
        parts: QueryParts,
        support_weight: float,
        depth: int,
        allowed: np.ndarray | None,
        timings: dict | None = None,
    ):
        t, cpu = time.perf_counter(), time.process_time()
        q = self.query_vector(parts, support_weight)[None, :]
        if timings is not None:
            timings["encode"] = (time.perf_counter() - t) * 1000
            timings["encode_cpu"] = (time.process_time() - cpu) * 1000
        return self.dense_search_vector(q, depth, allowed)

    def dense_search_vector(self, q: np.ndarray, depth: int, allowed: np.ndarray | None):
        params = None
        if allowed is not None:
            bitmap = np.packbits(allowed, bitorder="little")
            params = faiss.SearchParameters()
            params.sel = faiss.IDSelectorBitmap(len(allowed), faiss.swig_ptr(bitmap))
        k = min(depth, self.faiss_index.ntotal)
        if k <= 0:
            return np.empty(0, np.int64), np.empty(0, np.float32)
        scores, ids = self.faiss_index.search(
            np.ascontiguousarray(q, dtype=np.float32), k, params=params
        )
        keep = ids[0] >= 0
        return ids[0][keep].astype(np.int64), scores[0][keep].astype(np.float32)
