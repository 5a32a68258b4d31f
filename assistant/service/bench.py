"""The latency budget of one whole product recommendation (``assistant bench query --stages``):
each stage's wall and CPU time, p50/p95 over real queries, as JSON.

The product query is what the GUI, the CLI and the language server run: prefilter (query
encoder, BM25, FAISS, fusion), the learned ranker, the cross-encoder on the ranker's head and
the intent of the shown results, with the settings' defaults. Queries are the sentences of a
draft (as the GUI builds them: the manuscript's title, abstract, authors and abbreviations) or
ACM-CR dev citation contexts (the eval's ``product`` protocol).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from assistant.retrieval.query import Query


def draft_queries(draft: Path, limit: int | None = None) -> list[Query]:
    """One query per prose sentence of a LaTeX/Markdown draft, built as the GUI builds it."""
    from assistant.documents import textops
    from assistant.documents.draft import parse_draft
    from assistant.service.writing import query_for_selection

    text = draft.read_text(encoding="utf-8")
    style = textops.LATEX if draft.suffix.lower() == ".tex" else textops.PANDOC_MERGED
    kind = "latex" if style == textops.LATEX else "markdown"
    queries = []
    for sentence in parse_draft(text, kind).sentences():
        queries.append(query_for_selection(text, sentence.start, sentence.end, "auto", style)[0])
    return queries[:limit] if limit else queries


def acm_cr_queries(papers_dir: Path, n: int) -> list[Query]:
    """``n`` ACM-CR dev citation contexts as product queries (authors, year, abbreviations)."""
    from assistant.evaluation.acm_cr import abbreviations_by_paper, protocol_query
    from assistant.evaluation.acm_cr_data import build_queries, load_collection

    papers = load_collection(papers_dir)
    abbreviations = abbreviations_by_paper(papers)
    qs = build_queries(papers)
    picked = [qs[i] for i in np.random.default_rng(0).permutation(len(qs))[:n]]
    return [protocol_query(q, "product", abbreviations.get(q.paper, ())) for q in picked]


def _summary(rows: list[dict[str, float]]) -> dict[str, dict[str, float]]:
    names: list[str] = []
    for row in rows:
        names += [k for k in row if k not in names]
    out = {}
    for name in names:
        values = np.asarray([row.get(name, 0.0) for row in rows], dtype=np.float64)
        out[name] = {
            "p50_ms": round(float(np.percentile(values, 50)), 2),
            "p95_ms": round(float(np.percentile(values, 95)), 2),
        }
    return out


def _stages(walls: list[dict], cpus: list[dict]) -> dict:
    wall, cpu = _summary(walls), _summary(cpus)
    return {
        name: {
            "wall_p50_ms": wall[name]["p50_ms"],
            "wall_p95_ms": wall[name]["p95_ms"],
            "cpu_p50_ms": cpu.get(name, {}).get("p50_ms"),
            "cpu_p95_ms": cpu.get(name, {}).get("p95_ms"),
            "cpu_s": round(sum(row.get(name, 0.0) for row in cpus) / 1000, 3),
        }
        for name in wall
    }


def cold_recommend_s(db: Path, text: str, runs: int = 2) -> list[float]:
    """Wall seconds of ``assistant recommend TEXT`` in a fresh process (imports, models, query)."""
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "assistant.cli", "--db", str(db), "recommend", text, "-k", "10"],
            check=True,
            capture_output=True,
            env=dict(os.environ),
        )
        out.append(round(time.perf_counter() - t, 2))
    return out


def run_stage_bench(
    db: Path,
    queries: list[Query],
    formatter: Callable | None = None,
    rounds: int = 2,
    cold_runs: int = 2,
) -> dict:
    """Per-stage wall/CPU p50/p95 of the whole product query on ``db`` (see module docstring).

    Round 1 asks each query once (nothing of it cached: the uncached cost); later rounds ask
    them again (what an editor re-asking for the same sentence costs). ``formatter`` (e.g. the
    CLI's JSON view of a result) is timed as the ``format`` stage. The quality tier is the
    user's (``$ASSISTANT_QUALITY``, the app's Settings, else auto; the cold runs inherit it)."""
    from assistant.config import quality_setting
    from assistant.service.engine import Service, ServiceSettings

    service = Service(ServiceSettings(db_path=db, quality=quality_setting()))
    try:
        t = time.perf_counter()
        service.recommend("citation recommendation warm-up query")  # loads every model
        load_s = time.perf_counter() - t
        config = service.default_config(k=10)
        out: dict = {
            "queries": len(queries),
            "papers": service.reader().count(),
            "config": {
                "ranker": bool(config.ranker),
                "reranker": config.reranker and Path(config.reranker).name,
                "rerank_top": config.rerank_top,
                "intent": config.use_intent,
            },
            "first_query_with_loads_s": round(load_s, 2),
            "quality": {
                "tier": service.tier().active,
                "reason": service.tier().reason,
                "encoder": service.recommender.encoder.name,
                "dim": service.recommender.encoder.dim,
            },
        }
        for rnd in range(1, rounds + 1):
            walls, cpus = [], []
            for query in queries:
                result = service.recommend(query, config)
                wall, cpu = dict(result.timings_ms), dict(result.cpu_ms)
                if formatter is not None:
                    t, c = time.perf_counter(), time.process_time()
                    formatter(result)
                    wall["format"] = (time.perf_counter() - t) * 1000
                    cpu["format"] = (time.process_time() - c) * 1000
                    wall["total"] += wall["format"]
                    cpu["total"] += cpu["format"]
                walls.append(wall)
                cpus.append(cpu)
            out["uncached" if rnd == 1 else f"round_{rnd}"] = _stages(walls, cpus)
    finally:
        service.close()
    if cold_runs and queries:
        out["cold_recommend_s"] = cold_recommend_s(db, queries[0].text or "query", cold_runs)
    out["load_avg"] = [round(x, 2) for x in os.getloadavg()]
    return out
