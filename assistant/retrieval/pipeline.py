"""The recommendation pipeline: dense + BM25 prefilter, fusion, optional cross-encoder reranking,
optional intent labelling, filters and de-duplication.

``Recommender`` loads the encoder and the index once and is reused; one ``recommend`` call
runs at a time (a lock), and ``cancelled()`` is checked between stages.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, fields, replace

import numpy as np

from assistant.library.models import Paper
from assistant.library.normalize import title_key
from assistant.progress import check_cancelled
from assistant.retrieval import fusion as fusion_mod
from assistant.retrieval.intent_stage import label_recommendations
from assistant.retrieval.protocols import IntentLabeller, Reranker
from assistant.retrieval.protocols import Searcher as SearcherProtocol
from assistant.retrieval.query import Query, QueryParts, as_query
from assistant.retrieval.searcher import Searcher
from assistant.retrieval.stages import StageClock

log = logging.getLogger(__name__)

#: (BM25 weight, dense weight) of the supporting text (context + title/abstract) per mode, tuned on
#: the ACM-CR dev set for local/paragraph (assistant/models/BENCHMARKS.md); "global" is not covered by the dev set.
DEFAULT_SUPPORT = {"local": (0.1, 0.75), "paragraph": (0.1, 0.75), "global": (0.3, 0.3)}


#: reranked heads remembered (a head is ~20 papers' texts: a few MB at most)
RERANK_CACHE = 64

#: the message of the ``Cancelled`` raised when ``cancelled()`` turns true between two stages
STOPPED = "recommendation cancelled"


@dataclass
class PipelineConfig:
    """How the pipeline runs. Two parts: the **set-up** (models, fusion, depths and weights: the
    user's settings or an evaluation's, built by :func:`pipeline_config`) and the
    **per-request** fields of :class:`RequestOptions` (``k``, filters, exclusions, the intent
    preference), which a face sets for one query (``RequestOptions.apply``)."""

    k: int = 10
    candidates: int = 100  # fused candidates handed to the reranker
    use_dense: bool = True
    use_bm25: bool = True
    fusion: str = "weighted"  # "weighted" (normalised score sum) | "rrf"
    reranker: str | None = None  # cross-encoder folder or model name
    ranker: str | None = None  # learned-ranker folder/file (retrieval.ranker; resolved, not "auto")
    use_intent: bool = True
    exclude_ids: Collection[int] = ()
    #: drop what the manuscript already cites (the service's rule, ``service.exclusions``)
    exclude_cited: bool = True
    max_year: int | None = None
    only_ids: Collection[int] | None = None  # recommend only from these papers
    collection_ids: Collection[int] = ()  # ... or only from these library collections
    intent_preference: str | None = None  # "background" | "method" | "result"
    intent_pool: int = 30  # with a preference, candidates re-ordered by intent before the top k
    filter_by_year: bool = True  # use Query.year as max_year when max_year is None
    depth: int = 400  # candidates taken from each side before fusion (tuned)
    dense_weight: float = fusion_mod.DEFAULT_DENSE_WEIGHT
    rrf_k: int = fusion_mod.DEFAULT_RRF_K
    norm: str = fusion_mod.DEFAULT_NORM
    support: dict[str, tuple[float, float]] = field(default_factory=lambda: dict(DEFAULT_SUPPORT))
    bm25_query_tf: bool = True  # repeated query terms count again (tuned: helps paragraphs)
    rerank_weight: float = 1.0  # final = w * z(rerank) + (1 - w) * z(score before reranking)
    rerank_top: int | None = None  # rerank only this head of the order (None: every candidate)
    dedupe: bool = True


@dataclass(frozen=True)
class RequestOptions:
    """The per-request part of a :class:`PipelineConfig`: what one face asks for one query
    (everything else is the set-up, the same for every request of a session)."""

    k: int = 10
    max_year: int | None = None
    intent_preference: str | None = None  # "background" | "method" | "result"
    collection_ids: tuple[int, ...] = ()
    only_ids: tuple[int, ...] | None = None
    exclude_ids: tuple[int, ...] = ()
    #: leave out what the manuscript already cites (the GUI's "Hide cited"); the manuscript
    #: itself is always left out (``service.exclusions``)
    exclude_cited: bool = True

    def apply(self, config: PipelineConfig) -> PipelineConfig:
        """``config``'s set-up with this request."""
        return replace(config, **{f.name: getattr(self, f.name) for f in fields(self)})


@dataclass
class Recommendation:
    paper: Paper
    score: float
    scores: dict[str, float] = field(default_factory=dict)
    ranks: dict[str, int] = field(default_factory=dict)
    intent: str | None = None
    intent_confidence: float | None = None
    intent_probs: dict[str, float] | None = None
    #: True when the per-paper intent rests on weak evidence (show "uncertain", not a chip)
    intent_uncertain: bool | None = None
    #: what the per-paper intent rests on, e.g. "sentence: method 0.71; paper reads as ..."
    intent_evidence: str | None = None


@dataclass
class RecommendationResult:
    query: Query
    mode: str
    items: list[Recommendation]
    timings_ms: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    #: CPU milliseconds per stage (same keys as ``timings_ms``; see ``retrieval.stages``)
    cpu_ms: dict[str, float] = field(default_factory=dict)


@dataclass
class Prefilter:
    """Every prefilter stage's ranking: ``(ids, scores)`` per side, and the fused list."""

    mode: str
    parts: QueryParts
    bm25: tuple[np.ndarray, np.ndarray]
    dense: tuple[np.ndarray, np.ndarray]
    fused: list[tuple[int, float]]
    timings_ms: dict[str, float]


class Recommender:
    """Recommend papers of ``library`` for a query (see module docstring)."""

    def __init__(
        self,
        library,
        config: PipelineConfig | None = None,
        encoder=None,
        index_dir=None,
        searcher: SearcherProtocol | None = None,
        intent_labeller: IntentLabeller | None = label_recommendations,
        exclusions: Callable[[object, Query, PipelineConfig], Collection[int]] | None = None,
    ):
        """``exclusions(library, query, config)``: the ids a query must not get besides
        ``config.exclude_ids`` (the service passes its one rule,
        :func:`assistant.service.exclusions.excluded_ids`; without it only ``exclude_ids``
        and the trash are left out)."""
        self.library = library
        self._exclusions = exclusions
        self.config = config or PipelineConfig()
        self.searcher: SearcherProtocol = searcher or Searcher.open(
            library, encoder=encoder, index_dir=index_dir, need_dense=self.config.use_dense
        )
        self._lock = threading.Lock()
        self._rerankers: dict[str, Reranker] = {}
        self._rankers: dict[str, object] = {}
        self._stats = None  # authorstats.LibraryView, made on the first ranked query
        self._rerank_cache: OrderedDict[tuple, np.ndarray] = OrderedDict()
        self._intent_fn = intent_labeller

    @property
    def encoder(self):
        return self.searcher.encoder

    # --- stages -----------------------------------------------------------------------------
    def prefilter(
        self,
        query: Query | str,
        config: PipelineConfig | None = None,
        cancelled: Callable[[], bool] | None = None,
        clock: StageClock | None = None,
    ) -> Prefilter:
        """Dense + BM25 candidates (filters applied) and their fusion (each stage's wall/CPU
        time added to ``clock``)."""
        config = config or self.config
        query = as_query(query)
        clock = clock if clock is not None else StageClock()
        with clock.stage("abbreviations"):
            pairs = query.abbreviation_pairs()
        with clock.stage("query"):
            parts = query.parts(pairs)
            allowed = self._only(
                self.searcher.allowed_mask(
                    self._excluded(query, config), self._max_year(query, config)
                ),
                config,
            )
        empty = (np.empty(0, np.int64), np.empty(0, np.float32))
        bm25_w, dense_w = config.support.get(parts.mode, (0.0, 0.0))
        bm25_run = dense_run = empty
        if config.use_bm25:
            with clock.stage("bm25"):
                bm25_run = self.searcher.bm25_search(
                    parts, bm25_w, config.depth, allowed, config.bm25_query_tf
                )
        check_cancelled(cancelled, STOPPED)
        if config.use_dense and self.searcher.has_dense:
            inner: dict[str, float] = {}
            with clock.stage("dense"):
                dense_run = self.searcher.dense_search(parts, dense_w, config.depth, allowed, inner)
            # the query encoder's share (the searcher times it inside dense_search)
            clock.move("dense", "encode", inner.get("encode", 0.0), inner.get("encode_cpu", 0.0))
        check_cancelled(cancelled, STOPPED)
        with clock.stage("fuse"):
            runs = {"dense": dense_run, "bm25": bm25_run}
            fused = fusion_mod.fuse(
                runs,
                config.fusion,
                dense_weight=config.dense_weight,
                rrf_k=config.rrf_k,
                norm=config.norm,
            )
        return Prefilter(parts.mode, parts, bm25_run, dense_run, fused, dict(clock.wall_ms))

    def recommend(
        self,
        query: Query | str,
        config: PipelineConfig | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> RecommendationResult:
        """The top ``config.k`` recommendations with per-stage scores and ranks."""
        config = config or self.config
        query = as_query(query)
        with self._lock:
            clock = StageClock()
            start, cpu_start = time.perf_counter(), time.process_time()
            pre = self.prefilter(query, config, cancelled, clock)
            warnings = list(self.searcher.warnings)
            if config.ranker:
                items = self.rank(pre, query, config, clock)
            else:
                with clock.stage("candidates"):
                    items = self._candidates(pre, config)
            check_cancelled(cancelled, STOPPED)
            if config.reranker and items:
                with clock.stage("rerank"):
                    items = self._rerank(pre.parts, items, config)
                check_cancelled(cancelled, STOPPED)
            need = config.use_intent and self._intent_fn and config.intent_preference
            items = items[: max(config.k, config.intent_pool) if need else config.k]
            for rank, item in enumerate(items, start=1):
                item.ranks["final"] = rank
            if config.use_intent and self._intent_fn and items:
                with clock.stage("intent"):
                    try:
                        items = self._label_intents(pre.parts.focus, items, config)[: config.k]
                    except Exception as exc:  # the intent stage is optional: keep the results
                        log.warning("intent stage failed: %s", exc)
                        warnings.append(f"intent labelling failed: {exc}")
                items = items[: config.k]  # the pool is cut even when labelling failed
            timings = dict(clock.wall_ms)
            timings["total"] = (time.perf_counter() - start) * 1000
            cpu = dict(clock.cpu_ms)
            cpu["total"] = (time.process_time() - cpu_start) * 1000
            return RecommendationResult(
                query=query,
                mode=pre.mode,
                items=items,
                timings_ms=timings,
                warnings=warnings,
                cpu_ms=cpu,
            )

    def library_stats(self):
        """The library-wide author/citation numbers of the bibliographic signals, read on
        demand (``retrieval.authorstats``: the author part cached next to the index)."""
        if self._stats is None:
            from assistant.retrieval.authorstats import CACHE_FILE, LibraryView

            paths = getattr(self.searcher, "paths", None)
            self._stats = LibraryView(self.library, paths.root / CACHE_FILE if paths else None)
        return self._stats

    def ranker_features(self, pre: Prefilter, query: Query, items: list[Recommendation]):
        """``(ids, feature matrix)`` of ``items`` (``retrieval.ranker.FEATURES`` columns)."""
        from assistant.retrieval.ranker import candidate_features

        papers = {it.paper.id: it.paper for it in items}
        return candidate_features(
            pre.fused,
            pre.bm25,
            pre.dense,
            papers,
            self.library_stats(),
            query.authors,
            query.year,
            depth=self.config.depth,
        )

    def rank(
        self,
        pre: Prefilter,
        query: Query,
        config: PipelineConfig,
        clock: StageClock | None = None,
    ) -> list[Recommendation]:
        """The fused head re-ordered by the learned ranker ``config.ranker``; the top
        ``config.candidates`` are kept (for the reranker / the final cut)."""
        from assistant.retrieval.ranker import load_ranker, select

        clock = clock if clock is not None else StageClock()
        model = self._rankers.get(config.ranker)
        if model is None:
            model = self._rankers[config.ranker] = load_ranker(config.ranker)
        with clock.stage("candidates"):
            items = self._candidates(
                pre, replace(config, candidates=max(config.candidates, model.pool))
            )
        if not items:
            return items
        with clock.stage("ranker_features"):
            ids, x = self.ranker_features(pre, query, items)
        with clock.stage("ranker"):
            score = dict(zip(ids, model.score(select(x, model.features)).tolist()))
            order = sorted(items, key=lambda it: (-score.get(it.paper.id, -1e9), it.ranks["fused"]))
            for rank, item in enumerate(order, start=1):
                item.scores["ranker"] = item.score = float(score.get(item.paper.id, -1e9))
                item.ranks["ranker"] = rank
        return order[: config.candidates]

    # --- helpers ----------------------------------------------------------------------------
    def _excluded(self, query: Query, config: PipelineConfig) -> set[int]:
        excluded = {int(i) for i in config.exclude_ids}
        excluded.update(self.library.trashed_ids())  # in the index until the next `index` run
        if self._exclusions is not None:
            excluded.update(int(i) for i in self._exclusions(self.library, query, config))
        return excluded

    def _only(self, allowed: np.ndarray | None, config: PipelineConfig) -> np.ndarray | None:
        """Restrict ``allowed`` to ``only_ids`` / the papers of ``collection_ids``."""
        only: set[int] | None = None
        if config.only_ids is not None:
            only = {int(i) for i in config.only_ids}
        if config.collection_ids:
            from assistant.library.groups import collection_paper_ids

            members = set(collection_paper_ids(self.library, config.collection_ids))
            only = members if only is None else only & members
        if only is None:
            return allowed
        size = self.searcher.max_id + 1
        mask = np.zeros(size, dtype=bool)
        keep = np.fromiter((i for i in only if 0 <= i < size), dtype=np.int64)
        mask[keep] = True
        return mask if allowed is None else allowed & mask

    @staticmethod
    def _max_year(query: Query, config: PipelineConfig) -> int | None:
        if config.max_year is not None:
            return config.max_year
        return query.year if config.filter_by_year else None

    def _candidates(self, pre: Prefilter, config: PipelineConfig) -> list[Recommendation]:
        ranks = {
            name: {int(i): r for r, i in enumerate(run[0], start=1)}
            for name, run in (("bm25", pre.bm25), ("dense", pre.dense))
        }
        scores = {
            name: {int(i): float(s) for i, s in zip(*run)}
            for name, run in (("bm25", pre.bm25), ("dense", pre.dense))
        }
        head = pre.fused[: config.candidates + (20 if config.dedupe else 0)]
        papers = {p.id: p for p in self.library.get_many([pid for pid, _ in head])}
        items, seen = [], set()
        for pid, score in head:
            paper = papers.get(pid)
            if paper is None:  # deleted since the index was built
                continue
            if config.dedupe:
                keys = {
                    k for k in (paper.doi and f"doi:{paper.doi.lower()}", _title_key(paper)) if k
                }
                if keys & seen:
                    continue
                seen.update(keys)
            item = Recommendation(
                paper=paper, score=score, scores={"fused": score}, ranks={"fused": len(items) + 1}
            )
            for name in ("bm25", "dense"):
                if pid in scores[name]:
                    item.scores[name] = scores[name][pid]
                    item.ranks[name] = ranks[name][pid]
            items.append(item)
            if len(items) >= config.candidates:
                break
        return items

    def _rerank(
        self, parts: QueryParts, items: list[Recommendation], config: PipelineConfig
    ) -> list[Recommendation]:
        model = self._rerankers.get(config.reranker)
        if model is None:
            from assistant.inference.cross_encoder import load_cross_encoder

            model = self._rerankers[config.reranker] = load_cross_encoder(config.reranker)
        top = len(items) if config.rerank_top is None else max(0, config.rerank_top)
        items, tail = items[:top], items[top:]
        if not items:
            return tail
        docs = tuple(it.paper.encoder_text() for it in items)
        # int8 scores depend on the whole batch, so the cache holds whole batches: the same
        # focus over the same documents in the same order (an editor asking again)
        key = (config.reranker, parts.focus, docs)
        raw = self._rerank_cache.get(key)
        if raw is None:
            raw = np.asarray(model.score(parts.focus, list(docs)), dtype=np.float64)
            self._rerank_cache[key] = raw
            if len(self._rerank_cache) > RERANK_CACHE:
                self._rerank_cache.popitem(last=False)
        else:
            self._rerank_cache.move_to_end(key)
        # the order so far: the learned ranker's score when it ran, else the fused one
        before = np.array([it.score for it in items], dtype=np.float64)
        final = fusion_mod.blend(raw, before, config.rerank_weight)
        order = sorted(range(len(items)), key=lambda i: (-final[i], i))
        for rank, i in enumerate(sorted(range(len(items)), key=lambda i: -raw[i]), start=1):
            items[i].scores["rerank"] = float(raw[i])
            items[i].ranks["rerank"] = rank
        out = [items[i] for i in order]
        for i, item in zip(order, out):
            item.score = float(final[i])
        return out + tail

    def _label_intents(
        self, text: str, items: list[Recommendation], config: PipelineConfig
    ) -> list[Recommendation]:
        out = self._intent_fn(text, items, self.library, preference=config.intent_preference)
        return list(out) if out is not None else items


def _title_key(paper: Paper) -> str | None:
    key = title_key(paper.title or "")
    return "title:" + key if key else None


def prefilter_candidates(
    recommender: Recommender,
    text: str,
    k: int = 100,
    mode: str = "auto",
    title: str | None = None,
    abstract: str | None = None,
    exclude_ids: Collection[int] = (),
) -> list[tuple[int, float]]:
    """The fused prefilter's top ``k`` ``(paper_id, score)`` for an arbitrary text (hard negatives)."""
    config = replace(recommender.config, exclude_ids=tuple(exclude_ids), filter_by_year=False)
    pre = recommender.prefilter(Query(text=text, mode=mode, title=title, abstract=abstract), config)
    return pre.fused[:k]


def pipeline_config(
    *,
    reranker: str | None = "auto",
    ranker: str | None = "auto",
    use_intent: bool = True,
    tier: str = "fast",
    **overrides,
) -> PipelineConfig:
    """THE pipeline-configuration factory (the service's settings, ``eval acm-cr``,
    ``bench query`` and the evaluation tools): the learned ranker and the cross-encoder resolved
    from their settings (``"auto"``: the shipped ones; ``None``/``"off"``: none; else a folder),
    then ``overrides`` (any :class:`PipelineConfig` field). ``tier``: the quality tier whose
    shipped ranker and cross-encoder ``"auto"`` means (``service.quality``)."""
    from assistant.retrieval.ranker import resolve_ranker
    from assistant.retrieval.reranker_setting import resolve_reranker

    config = PipelineConfig(ranker=resolve_ranker(ranker, tier), use_intent=use_intent)
    return replace(resolve_reranker(reranker, tier).apply(config), **overrides)
