"""``assistant bench query``: latency of one recommendation at several library sizes, indexing
throughput and memory, printed as JSON (figures go to assistant/models/BENCHMARKS.md)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from assistant.errors import AssistantError


def _rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def _dir_mb(path: Path) -> float:
    return (
        sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20
        if path.exists()
        else 0.0
    )


def _queries(papers_dir: Path | None, n: int) -> list:
    from assistant.retrieval.query import Query

    if papers_dir and papers_dir.exists():
        from assistant.evaluation.acm_cr_data import build_queries, load_collection

        qs = build_queries(load_collection(papers_dir))
        rng = np.random.default_rng(0)
        picked = [qs[i] for i in rng.permutation(len(qs))[:n]]
        return [
            Query(
                q.text,
                mode="paragraph" if q.level == "paragraph" else "local",
                title=q.title,
                abstract=q.abstract,
                context=q.context or None,
            )
            for q in picked
        ]
    base = [
        "Neural ranking models for ad-hoc retrieval [3].",
        "We study query logs of mobile search (Smith et al., 2019).",
        "Click models estimate document relevance from user behaviour.",
        "Dense retrieval with learned embeddings.",
    ]
    return [Query(base[i % len(base)]) for i in range(n)]


def _subset_searcher(full, library, size: int):
    """An in-memory Searcher over the first ``size`` papers of the full index (real sub-library)."""
    import faiss

    from assistant.retrieval.bm25 import BM25Index, BM25Params
    from assistant.retrieval.index_layout import make_faiss
    from assistant.retrieval.searcher import Searcher

    ids = np.load(full.paths.dense / "ids.npy")[:size]
    vectors = np.load(full.paths.dense / "vectors.npy", mmap_mode="r")[:size]
    papers = library.get_many(ids.tolist())
    t = time.perf_counter()
    bm25 = BM25Index.build(
        [p.id for p in papers],
        [p.lexical_text() for p in papers],
        BM25Params(full.bm25.params.k1, full.bm25.params.b),
    )
    bm25_rate = len(papers) / (time.perf_counter() - t)
    years = np.asarray([p.year or -1 for p in papers], dtype=np.int32)
    index = make_faiss(np.ascontiguousarray(vectors, dtype=np.float32), ids, "flat")
    faiss.omp_set_num_threads(2)
    return Searcher(
        full.paths, bm25, years, index, full.encoder, dict(full.meta, count=len(ids))
    ), bm25_rate


def _time(rec, queries, config, repeats: int = 1) -> dict:
    rec.recommend(queries[0], config)  # warm-up (caches, first-call allocations)
    times = []
    for _ in range(repeats):
        for q in queries:
            t = time.perf_counter()
            rec.recommend(q, config)
            times.append((time.perf_counter() - t) * 1000)
    return {
        "p50_ms": round(float(np.percentile(times, 50)), 1),
        "p95_ms": round(float(np.percentile(times, 95)), 1),
        "n": len(times),
    }


def run_query_bench(
    path: Path,
    papers: Path | None,
    sizes: list[int],
    n_queries: int,
    reranker: str | None = None,
    candidates: int = 100,
    ranker: str | None = "auto",
    embed_docs: int = 256,
) -> dict:
    """Recommendation latency (p50/p95) per library size, with and without the learned ranker
    (and the cross-encoder when ``reranker``), embedding throughput and memory
    (``assistant bench query``). Queries come from the ACM-CR papers in ``papers`` if given."""
    from assistant.config import index_dir_for
    from assistant.library.store import Library
    from assistant.retrieval.pipeline import Recommender, pipeline_config

    if not path.exists():
        raise AssistantError(f"library not found: {path}")
    library = Library(path)
    rss0 = _rss_mb()
    t = time.perf_counter()
    prefilter = pipeline_config(reranker=None, ranker=None, use_intent=False, candidates=candidates)
    full = Recommender(library, prefilter)
    load_s = time.perf_counter() - t
    out: dict = {
        "db": str(path),
        "papers": library.count(),
        "encoder": full.encoder.fingerprint if full.encoder else None,
        "threads": os.environ.get("ASSISTANT_THREADS", "default"),
        "load_s": round(load_s, 2),
        "rss_after_load_mb": round(_rss_mb(), 1),
        "rss_before_load_mb": round(rss0, 1),
        "index_disk_mb": round(_dir_mb(index_dir_for(path)), 1),
        "sizes": {},
    }
    queries = _queries(papers, n_queries)
    # as the product runs them: the learned ranker's order, then the reranked head
    ranked = pipeline_config(reranker=None, ranker=ranker, use_intent=False, candidates=candidates)
    reranked = pipeline_config(
        reranker=reranker, ranker=ranker, use_intent=False, candidates=candidates
    )
    out["ranker"] = ranked.ranker
    out["reranker"] = reranked.reranker and {
        "model": reranked.reranker,
        "top": reranked.rerank_top,
    }
    n_index = len(full.searcher.bm25)
    for size in sorted({min(int(s), n_index) for s in sizes}):
        if size == n_index:
            rec, bm25_rate = full, None
        else:
            searcher, bm25_rate = _subset_searcher(full.searcher, library, size)
            rec = Recommender(library, full.config, encoder=full.encoder, searcher=searcher)
        row = {"prefilter": _time(rec, queries, prefilter)}
        if ranked.ranker:
            row["ranked"] = _time(rec, queries, ranked)
        if bm25_rate:
            row["bm25_build_docs_per_s"] = round(bm25_rate, 1)
        if reranked.reranker:
            row["reranked"] = _time(rec, queries[: max(10, n_queries // 5)], reranked)
        out["sizes"][str(size)] = row
    out["rss_after_queries_mb"] = round(_rss_mb(), 1)
    sample = [
        p.encoder_text()
        for p in library.get_many(
            np.load(full.searcher.paths.dense / "ids.npy")[:embed_docs].tolist()
        )
    ]
    if sample and full.encoder is not None:
        t = time.perf_counter()
        full.encoder.encode(sample, batch_size=32)
        out["embed_docs_per_s"] = round(len(sample) / (time.perf_counter() - t), 1)
    out["load_avg"] = [round(x, 2) for x in os.getloadavg()]
    library.close()
    return out
