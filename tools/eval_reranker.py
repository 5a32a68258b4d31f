"""Dev-set evaluation of trained models on ACM-CR (reranker α sweep, encoder comparison).

Uses the retrieval engineer's protocol pieces (``assistant.evaluation.acm_cr``: candidate
map, queries, the pipeline's prefilter) and caches each query's fused candidates and raw
model scores, so the interpolation ``final = α·z(reranker) + (1−α)·z(fused)`` (the
pipeline's ``rerank_weight``) is swept over α without re-running the model.

``python -m tools.eval_reranker reranker --db LIB --model DIR [--level paragraph]``
prints JSON.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import click
import numpy as np

from assistant.progress import ProgressEvent

#: a development checkout's research data (../shared/data), when $ASSISTANT_SHARED_DATA is unset
TOOLS_SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

ALPHAS = (0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0)


def collect_candidates(
    library,
    dev_dir: Path,
    levels=("paragraph",),
    candidates: int = 100,
    limit: int | None = None,
    recommender=None,
    progress=None,
    use_dense: bool = True,
) -> tuple[list[dict], dict]:
    """Each dev query's fused top ``candidates`` (ids, fused scores, the reranker's query text)."""
    from assistant.evaluation.acm_cr import protocol_setup
    from assistant.retrieval.pipeline import Recommender, pipeline_config

    setup = protocol_setup(library, dev_dir, abbreviations=False)
    queries = setup.queries(levels, limit)
    config = pipeline_config(reranker=None, ranker=None, use_intent=False, use_dense=use_dense)
    recommender = recommender or Recommender(library, config)
    run_config = setup.run_config(config, candidates=candidates, depth=candidates)
    rows = []
    for n, q in enumerate(queries, 1):
        pre = recommender.prefilter(setup.query(q, "plain"), run_config)
        items = recommender._candidates(pre, run_config)[:candidates]
        rows.append(
            {
                "qid": q.qid,
                "level": q.level,
                "focus": pre.parts.focus,
                "ids": [int(it.paper.id) for it in items],
                "fused": [float(it.scores.get("fused", it.score)) for it in items],
                "texts": [it.paper.encoder_text() for it in items],
                "relevant": sorted(setup.relevant(q)),
            }
        )
        if progress:
            progress(ProgressEvent(n, len(queries), "prefilter", "prefilter"))
    return rows, setup.doi_of


def collect_candidates_bm25(
    library, dev_dir: Path, levels=("paragraph",), candidates: int = 100, limit: int | None = None
) -> tuple[list[dict], dict]:
    """Fallback when the library has no index yet: BM25 (bm25s) over the protocol's candidates."""
    from assistant.evaluation.acm_cr import protocol_setup
    from assistant.training.data import Bm25Candidates, Corpus, DocRecord, strip_markers

    setup = protocol_setup(library, dev_dir, abbreviations=False)
    doi_of = setup.doi_of
    papers = {p.id: p for p in library.get_many(list(doi_of))}
    corpus = Corpus(
        {
            i: DocRecord(i, p.title or "", p.abstract or "", list(p.keywords or []))
            for i, p in papers.items()
        }
    )
    bm25 = Bm25Candidates(corpus)
    queries = setup.queries(levels, limit)
    rows = []
    texts = [strip_markers(q.text) for q in queries]
    for q, text, ids in zip(queries, texts, bm25.batch(texts, candidates)):
        n = len(ids)
        rows.append(
            {
                "qid": q.qid,
                "level": q.level,
                "focus": text,
                "ids": ids,
                "fused": [float(n - r) for r in range(n)],  # rank-based stand-in score
                "texts": [papers[i].encoder_text() for i in ids],
                "relevant": sorted(setup.relevant(q)),
            }
        )
    return rows, doi_of


def _metrics(
    rows: list[dict], doi_of: dict[int, str], scores_key: str | None, alpha: float
) -> dict:
    from assistant.evaluation.metrics import mean_metrics, query_metrics
    from assistant.retrieval.fusion import blend

    out: dict[str, list] = {}
    for r in rows:
        fused = np.asarray(r["fused"], dtype=np.float64)
        final = fused if scores_key is None or alpha == 0.0 else blend(r[scores_key], fused, alpha)
        order = sorted(range(len(final)), key=lambda i: (-final[i], i))
        ranking = [doi_of.get(r["ids"][i], f"x{r['ids'][i]}") for i in order]
        out.setdefault(r["level"], []).append(query_metrics(ranking, set(r["relevant"])))
    return {
        level: {k: round(v, 4) for k, v in mean_metrics(v).items()} | {"queries": len(v)}
        for level, v in out.items()
    }


def score_rows(rows: list[dict], model_dir: str, key: str = "rerank", progress=None) -> dict:
    """Score every query's candidates with a cross-encoder; returns p50/p95 latency (ms) per query."""
    from assistant.inference.cross_encoder import load_cross_encoder

    model = load_cross_encoder(model_dir, device="cpu")
    times = []
    for n, r in enumerate(rows, 1):
        t = time.perf_counter()
        r[key] = [float(s) for s in model.score(r["focus"], r["texts"])]
        times.append((time.perf_counter() - t) * 1000)
        if progress:
            progress(ProgressEvent(n, len(rows), "rerank", "reranking"))
    return {
        "p50_ms": round(float(np.percentile(times, 50)), 1),
        "p95_ms": round(float(np.percentile(times, 95)), 1),
        "n": len(times),
        "precision": model.info.precision,
        "threads": model.info.threads,
    }


def sweep(rows: list[dict], doi_of: dict[int, str], key: str = "rerank", alphas=ALPHAS) -> dict:
    """Metrics of the fused prefilter and of the interpolation at each α (1.0 = pure reranking)."""
    result = {"fused": _metrics(rows, doi_of, None, 0.0), "alpha": {}}
    for a in alphas:
        if a > 0:
            result["alpha"][str(a)] = _metrics(rows, doi_of, key, a)
    return result


def encoder_rescoring(rows: list[dict], doi_of: dict[int, str], encoder_names: list[str]) -> dict:
    """Rank each query's fused candidates by cosine with each encoder (base vs adapted)."""
    from assistant.inference.encoder import load_encoder

    result = {}
    for name in encoder_names:
        enc = load_encoder(name, device="cpu")
        for r in rows:
            q = enc.encode([r["focus"]])[0]
            d = enc.encode(r["texts"])
            r[f"enc:{name}"] = (d @ q).tolist()
        result[name] = _metrics(rows, doi_of, f"enc:{name}", 1.0)
    return result


def collect_ranked(
    library, dev_dir: Path, variants=("plain", "product"), head: int = 40, progress=None
) -> tuple[list[dict], dict]:
    """Each dev query's final order from the full pipeline (prefilter + the shipped learned
    ranker), as ``evaluate_acm_cr`` builds the queries: top 100 ids, the ranker's scores and
    the texts of the ``head`` a reranker would see."""
    from assistant.evaluation.acm_cr import protocol_setup
    from assistant.retrieval.pipeline import Recommender, pipeline_config

    setup = protocol_setup(library, dev_dir, pdf_meta=True)
    queries = setup.queries(("paragraph", "sentence"))
    config = pipeline_config(reranker=None, ranker="auto", use_intent=False)
    recommender = Recommender(library, config)
    run_config = setup.run_config(config, candidates=100, depth=config.depth)
    rows = []
    total = len(queries) * len(variants)
    for variant in variants:
        for q in queries:
            query = setup.query(q, variant)
            pre = recommender.prefilter(query, run_config)
            items = recommender.rank(pre, query, run_config)
            rows.append(
                {
                    "qid": q.qid,
                    "group": q.paper,
                    "level": q.level,
                    "variant": variant,
                    "focus": pre.parts.focus,
                    "ids": [int(it.paper.id) for it in items],
                    "base": [float(it.score) for it in items],
                    "texts": [it.paper.encoder_text() for it in items[:head]],
                    "relevant": sorted(setup.relevant(q)),
                }
            )
            if progress:
                progress(ProgressEvent(len(rows), total, "prefilter", "ranking"))
    return rows, setup.doi_of


def _ranked_metrics(r: dict, doi_of: dict, key: str | None, alpha: float, top: int) -> dict:
    from assistant.evaluation.metrics import query_metrics
    from assistant.retrieval.fusion import blend

    ids = r["ids"]
    order = list(range(len(ids)))
    if key and alpha > 0:
        n = min(top, len(r[key]))
        final = blend(r[key][:n], r["base"][:n], alpha)
        order = sorted(range(n), key=lambda i: (-final[i], i)) + order[n:]
    ranking = [doi_of.get(ids[i], f"x{ids[i]}") for i in order]
    return query_metrics(ranking, set(r["relevant"]))


def cv_ranked(rows: list[dict], doi_of: dict, key: str, alphas=ALPHAS, tops=(10, 20, 30, 40)):
    """Held-out figures of ``ranker + α·reranker on the top t``: (α, t) chosen on the other
    citing papers (leave one citing paper out; one setting for every level and variant, as the
    product has one), next to the ranker alone and the in-sample figures of every setting."""
    from assistant.evaluation.metrics import mean_metrics
    from tools.eval_tier import lopo

    settings = [(0.0, 0)] + [(a, t) for a in alphas if a > 0 for t in tops]
    per = {s: [_ranked_metrics(r, doi_of, key, s[0], s[1]) for r in rows] for s in settings}
    held, chosen = lopo(rows, per, settings)

    def table(metrics: list[dict]) -> dict:
        out: dict = {}
        for r, m in zip(rows, metrics):
            out.setdefault(f"{r['level']}/{r['variant']}", []).append(m)
        return {k: {m: round(v, 4) for m, v in mean_metrics(v).items()} for k, v in out.items()}

    return {
        "ranker": table(per[(0.0, 0)]),
        "ranker+reranker (held out)": table(held),
        "chosen (alpha, top) per fold": sorted({f"{a}/{t}" for a, t in chosen}),
        "in_sample": {f"{a}/{t}": table(per[(a, t)]) for a, t in settings if a > 0},
    }


@click.group()
def main() -> None:
    """Dev-set evaluation of trained models."""


@main.command("reranker")
@click.option("--db", required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--model", "model_dir", required=True, help="Cross-encoder folder.")
@click.option(
    "--dev", "dev_dir", default=None, help="ACM-CR dev folder (default ../shared/data/acm-cr/dev)."
)
@click.option("--level", "levels", multiple=True, default=("paragraph",))
@click.option("--limit", type=int, default=None)
@click.option(
    "--cache", type=click.Path(dir_okay=False), default=None, help="JSON cache of candidates."
)
@click.option(
    "--bm25-only",
    is_flag=True,
    help="Candidates from BM25 (no index needed) instead of the fused prefilter.",
)
def reranker_cmd(db, model_dir, dev_dir, levels, limit, cache, bm25_only):
    """α sweep of reranker + fused prefilter on the ACM-CR dev set."""
    from assistant.library.store import Library
    from assistant.training.data import shared_data_dir

    dev = Path(dev_dir) if dev_dir else (shared_data_dir() or TOOLS_SHARED_DATA) / "acm-cr" / "dev"
    lib = Library(db)
    if cache and Path(cache).is_file():
        blob = json.loads(Path(cache).read_text())
        rows, doi_of = blob["rows"], {int(k): v for k, v in blob["doi_of"].items()}
    else:
        collect = collect_candidates_bm25 if bm25_only else collect_candidates
        rows, doi_of = collect(lib, dev, levels, limit=limit)
        if cache:
            Path(cache).write_text(json.dumps({"rows": rows, "doi_of": doi_of}))
    latency = score_rows(rows, model_dir)
    out = sweep(rows, doi_of)
    out["latency_rerank_100"] = latency
    out["prefilter"] = "bm25" if bm25_only else "fused"
    click.echo(json.dumps(out, indent=2))


@main.command("ranked")
@click.option("--db", required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--model", "model_dirs", multiple=True, required=True, help="Cross-encoder folder.")
@click.option("--dev", "dev_dir", required=True, help="ACM-CR dev folder.")
@click.option("--cache", type=click.Path(dir_okay=False), default=None, help="JSON cache of rows.")
@click.option("--head", type=int, default=40, help="Candidates each model scores per query.")
def ranked_cmd(db, model_dirs, dev_dir, cache, head):
    """Reranker on top of the full pipeline (fused prefilter + learned ranker), plain and
    product queries, (α, top) chosen by leave-one-citing-paper-out CV."""
    from assistant.library.store import Library

    if cache and Path(cache).is_file():
        blob = json.loads(Path(cache).read_text())
        rows, doi_of = blob["rows"], {int(k): v for k, v in blob["doi_of"].items()}
    else:
        lib = Library(db)
        rows, doi_of = collect_ranked(lib, Path(dev_dir), head=head)
        lib.close()
    out = {}
    for model_dir in model_dirs:
        key = f"rerank:{Path(model_dir).resolve()}"
        latency = None
        if key not in rows[0]:
            latency = score_rows(rows, model_dir, key=key)
        out[model_dir] = cv_ranked(rows, doi_of, key) | {f"latency_rerank_{head}": latency}
    if cache:
        Path(cache).write_text(json.dumps({"rows": rows, "doi_of": doi_of}))
    click.echo(json.dumps(out, indent=2))


if __name__ == "__main__":  # pragma: no cover
    main()
