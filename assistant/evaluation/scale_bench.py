"""``assistant bench scale --papers N``: a synthetic library of N realistic records through the
real importer and indexer (vectors made without the encoder), then query latency, memory, disk
and the recall of the approximate FAISS indexes against exact search, as JSON.

What is real: the importer (BibTeX files, worker processes, one transaction), ``build_index``
(BM25, FAISS of the kind ``--kind auto`` picks, every file write), the searcher, the learned
ranker, the cross-encoder and the intent stage (the shipped models). What is not: the records
(drawn from the ACM-DL statistics, ``evaluation.synthetic``) and the vectors (bag of hashed word
vectors instead of the transformer: the query encoder's own cost, ~15-40 ms a query whatever the
library size, is in ``bench query --stages``).
"""

from __future__ import annotations

import os
import resource
import shutil
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

from assistant.evaluation.synthetic import PaperGenerator, SyntheticEncoder, write_bibtex


def _rss_mb() -> float:
    import psutil

    return round(psutil.Process().memory_info().rss / 2**20, 1)


def _peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _disk_mb(*paths: Path) -> float:
    total = 0
    for path in paths:
        if path.is_file():
            total += path.stat().st_size
        elif path.is_dir():
            total += sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    return round(total / 2**20, 1)


def _pct(values: list[float]) -> dict:
    return {
        "p50_ms": round(float(np.percentile(values, 50)), 1),
        "p95_ms": round(float(np.percentile(values, 95)), 1),
    }


def _time_queries(rec, queries, config) -> tuple[dict, dict]:
    rec.recommend(queries[0], config)  # loads the stage's models
    totals, stages = [], {}
    for q in queries:
        result = rec.recommend(q, config)
        totals.append(result.timings_ms["total"])
        for name, ms in result.timings_ms.items():
            stages.setdefault(name, []).append(ms)
    return _pct(totals), {k: _pct(v) for k, v in stages.items() if k != "total"}


def synthetic_queries(gen: PaperGenerator, n: int) -> list:
    """``n`` query passages of 25 words, each with two authors and a year, as the bench asks."""
    from assistant.retrieval.query import Query

    return [
        Query(gen.sentence(25), mode="local", authors=tuple(gen.paper(i).authors[:2]), year=2020)
        for i in range(n)
    ]


def measure_serving(db: Path, n_queries: int = 40) -> dict:
    """A library kept by :func:`run_scale_bench` (``keep=True``), served by this process as a
    fresh one would: open time, prefilter + ranker p50/p95 on the first and on a second pass,
    the whole product, and the RSS after each (the bench's own RSS includes what import and
    indexing left in its process)."""
    from assistant.library.store import Library
    from assistant.retrieval.pipeline import PipelineConfig, Recommender
    from assistant.retrieval.ranker import resolve_ranker
    from assistant.retrieval.reranker_setting import resolve_reranker

    out: dict = {"rss_start_mb": _rss_mb()}
    reader = Library(db)
    try:
        t, cpu = time.perf_counter(), time.process_time()
        rec = Recommender(reader, PipelineConfig(use_intent=False), encoder=SyntheticEncoder())
        out["open_s"] = round(time.perf_counter() - t, 2)
        queries = synthetic_queries(PaperGenerator(seed=2), n_queries)
        ranked = replace(rec.config, ranker=resolve_ranker("auto"), reranker=None, use_intent=False)
        out["prefilter_ranker_first_pass"] = _time_queries(rec, queries, ranked)[0]
        out["prefilter_ranker_warm"] = _time_queries(rec, queries, ranked)[0]
        out["rss_after_ranker_mb"] = _rss_mb()
        full = replace(resolve_reranker("auto").apply(ranked), use_intent=True)
        out["product"] = _time_queries(rec, queries[: max(10, n_queries // 2)], full)[0]
        out["rss_after_product_mb"] = _rss_mb()
        out["cpu_s"] = round(time.process_time() - cpu, 1)
    finally:
        reader.close()
    out["load_avg"] = [round(x, 2) for x in os.getloadavg()]
    return out


def approximate_recall(
    vectors: np.ndarray,
    ids: np.ndarray,
    queries: np.ndarray,
    kinds: tuple[str, ...] = ("hnsw", "ivfpq"),
    k: int = 100,
    depth: int = 400,
    ef_search: tuple[int, ...] = (),
    built: dict | None = None,
) -> dict:
    """recall@k of each approximate FAISS index against exact search, build and search time;
    searched as the prefilter searches (``depth`` candidates, of which the top ``k`` count).
    ``ef_search``: HNSW is searched again with each of these search lists (same graph).
    ``built``: indexes already made, by kind (the library's own), measured as they are."""
    import faiss

    from assistant.retrieval.index_layout import make_faiss

    faiss.omp_set_num_threads(2)
    exact = make_faiss(vectors, ids, "flat")
    times = []
    truth = []
    for q in queries:
        t = time.perf_counter()
        truth.append(exact.search(q[None, :], depth)[1][0][:k])
        times.append((time.perf_counter() - t) * 1000)
    out = {"flat": {"search": _pct(times)}}
    for kind in kinds:
        t = time.perf_counter()
        if built and kind in built:  # measured as it is: no build time
            index, build_s = built[kind], None
        else:
            index = make_faiss(vectors, ids, kind)
            build_s = round(time.perf_counter() - t, 1)
        out[kind] = {"build_s": build_s, **_recall(index, queries, truth, k, depth)}
        if kind == "hnsw" and ef_search:
            hnsw = faiss.downcast_index(index.index).hnsw
            default_ef = hnsw.efSearch
            for ef in ef_search:
                hnsw.efSearch = int(ef)
                out[kind][f"ef_search_{ef}"] = _recall(index, queries, truth, k, depth)
            hnsw.efSearch = default_ef
        del index
    return out


def _recall(index, queries: np.ndarray, truth: list, k: int, depth: int) -> dict:
    times, found = [], []
    for q in queries:
        t = time.perf_counter()
        _, got = index.search(q[None, :], depth)
        times.append((time.perf_counter() - t) * 1000)
        found.append(got[0][:k])
    recall = np.mean([len(set(f) & set(e)) / k for f, e in zip(found, truth)])
    return {"recall_at_100": round(float(recall), 4), "search": _pct(times)}


def run_scale_bench(
    n: int,
    workdir: Path,
    n_queries: int = 40,
    kind: str = "auto",
    recall_kinds: tuple[str, ...] = ("hnsw", "ivfpq"),
    product: bool = True,
    keep: bool = False,
    say: Callable[[str], None] = lambda m: None,
    ef_search: tuple[int, ...] = (),
    checkpoint: Callable[[dict], None] = lambda out: None,
) -> dict:
    """Build an ``n``-paper synthetic library in ``workdir`` and measure it (module docstring);
    ``checkpoint`` gets the figures so far after each step (a long run that dies keeps them)."""
    # long: a benchmark script: one measured step after another (import, index, queries, RSS, disk)
    from assistant.config import index_dir_for
    from assistant.library.importers import import_paths
    from assistant.library.store import Library
    from assistant.retrieval.index import build_index
    from assistant.retrieval.pipeline import PipelineConfig, Recommender
    from assistant.retrieval.ranker import resolve_ranker
    from assistant.retrieval.reranker_setting import resolve_reranker

    workdir.mkdir(parents=True, exist_ok=True)
    db = workdir / "library.sqlite"
    for old in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        old.unlink(missing_ok=True)
    shutil.rmtree(index_dir_for(db), ignore_errors=True)
    out: dict = {"papers": n, "cpus": os.cpu_count()}

    say(f"writing {n} synthetic records")
    t = time.perf_counter()
    files = write_bibtex(n, workdir / "bib")
    out["generate_s"] = round(time.perf_counter() - t, 1)

    say("importing them")
    library = Library(db)
    report = import_paths(library, files)
    out["import"] = {
        "s": round(report.elapsed_s, 1),
        "cpu_s": round(report.cpu_s, 1),
        "added": report.added,
        "records_per_s": round(report.added / max(report.elapsed_s, 1e-9)),
    }
    shutil.rmtree(workdir / "bib", ignore_errors=True)

    checkpoint(out)
    say("indexing (BM25 + FAISS, vectors without the encoder)")
    encoder = SyntheticEncoder()
    t, cpu = time.perf_counter(), time.process_time()
    index = build_index(library, encoder, kind=kind, chunk_size=4096, batch_size=4096)
    out["index"] = {
        "s": round(time.perf_counter() - t, 1),
        "cpu_s": round(time.process_time() - cpu, 1),
        "kind": index.kind,
        "requested": kind,
    }
    out["disk_mb"] = {"library": _disk_mb(db), "index": _disk_mb(index_dir_for(db))}
    checkpoint(out)
    say("re-indexing after one edited record")
    from assistant.library.editing import edit_paper

    edited = library.get(max(1, n // 2))
    edit_paper(library, edited.id, {"abstract": (edited.abstract or "") + " Revised."})
    t, cpu = time.perf_counter(), time.process_time()
    again = build_index(library, encoder, kind=kind, chunk_size=4096, batch_size=4096)
    out["reindex_one_changed_s"] = round(time.perf_counter() - t, 2)
    out["reindex_one_changed_cpu_s"] = round(time.process_time() - cpu, 2)
    assert again.updated == 1, again
    library.close()

    checkpoint(out)
    say("querying")
    reader = Library(db)
    rss0 = _rss_mb()
    t = time.perf_counter()
    rec = Recommender(reader, PipelineConfig(use_intent=False), encoder=encoder)
    out["open_index_s"] = round(time.perf_counter() - t, 2)
    gen = PaperGenerator(seed=1)
    queries = synthetic_queries(gen, n_queries)
    base = replace(rec.config, ranker=None, reranker=None, use_intent=False)
    prefilter, _ = _time_queries(rec, queries, base)
    ranked_cfg = replace(base, ranker=resolve_ranker("auto"))
    ranked, ranked_stages = _time_queries(rec, queries, ranked_cfg)
    out["query"] = {"prefilter": prefilter, "prefilter_ranker": ranked, "stages": ranked_stages}
    if product:
        full = replace(resolve_reranker("auto").apply(ranked_cfg), use_intent=True)
        whole, stages = _time_queries(rec, queries[: max(10, n_queries // 2)], full)
        out["query"]["product"] = whole
        out["query"]["product_stages"] = stages
    out["rss_mb"] = {
        "before_open": rss0,
        "after_queries": _rss_mb(),
        "peak_whole_run": _peak_rss_mb(),
    }

    checkpoint(out)
    if recall_kinds:
        say("recall of the approximate indexes")
        paths = rec.searcher.paths
        vectors = np.load(paths.dense / "vectors.npy")
        ids = np.load(paths.dense / "ids.npy")
        qv = encoder.encode([q.text for q in queries] + [gen.sentence(25) for _ in range(160)])
        kinds = tuple(k for k in recall_kinds if not (k == "ivfpq" and n < 10_000))
        own = {index.kind: rec.searcher.faiss_index} if rec.searcher.faiss_index else {}
        out["recall"] = approximate_recall(vectors, ids, qv, kinds, ef_search=ef_search, built=own)
        del vectors
    reader.close()
    checkpoint(out)
    out["load_avg"] = [round(x, 2) for x in os.getloadavg()]
    if not keep:
        shutil.rmtree(index_dir_for(db), ignore_errors=True)
        for f in workdir.glob("library.sqlite*"):
            f.unlink()
    return out
