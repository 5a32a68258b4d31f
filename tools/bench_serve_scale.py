"""A fresh process serving a library kept by ``assistant bench scale --keep``: its RSS and query
times, as JSON (the bench's own RSS includes what import and indexing left in its process).

    python tools/bench_serve_scale.py DIR/library.sqlite [--queries 40]
"""

import argparse
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from assistant.evaluation.synthetic import PaperGenerator, SyntheticEncoder
from assistant.library.store import Library
from assistant.retrieval.pipeline import PipelineConfig, Recommender
from assistant.retrieval.query import Query
from assistant.retrieval.ranker import resolve_ranker
from assistant.retrieval.reranker_setting import resolve_reranker


def rss() -> float:
    return round(psutil.Process().memory_info().rss / 2**20, 1)


def run(rec, cfg, qs) -> dict:
    """p50/p95 ms of ``qs`` after one warm-up query."""
    rec.recommend(qs[0], cfg)
    ts = []
    for q in qs:
        t = time.perf_counter()
        rec.recommend(q, cfg)
        ts.append((time.perf_counter() - t) * 1000)
    ts.sort()
    return {"p50_ms": round(ts[len(ts) // 2], 1), "p95_ms": round(ts[int(0.95 * (len(ts) - 1))], 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db", type=Path)
    parser.add_argument("--queries", type=int, default=40)
    args = parser.parse_args()
    out = {"rss_start_mb": rss()}
    reader = Library(args.db)
    t = time.perf_counter()
    cpu = time.process_time()
    rec = Recommender(reader, PipelineConfig(use_intent=False), encoder=SyntheticEncoder())
    out["open_s"] = round(time.perf_counter() - t, 2)
    gen = PaperGenerator(seed=2)
    qs = [
        Query(gen.sentence(25), mode="local", authors=tuple(gen.paper(i).authors[:2]), year=2020)
        for i in range(args.queries)
    ]
    cfg = replace(rec.config, ranker=resolve_ranker("auto"), reranker=None, use_intent=False)

    out["prefilter_ranker_first_pass"] = run(rec, cfg, qs)
    out["prefilter_ranker_warm"] = run(rec, cfg, qs)
    out["rss_after_ranker_mb"] = rss()
    full = replace(resolve_reranker("auto").apply(cfg), use_intent=True)
    out["product"] = run(rec, full, qs[: max(10, args.queries // 2)])
    out["rss_after_product_mb"] = rss()
    out["cpu_s"] = round(time.process_time() - cpu, 1)
    out["load_avg"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
