"""The quality tiers (``fast`` MiniLM, ``best`` mpnet) on ACM-CR dev, stage by stage, every
tuned choice held out by leave-one-citing-paper-out CV; prints JSON.

    python -m tools.eval_tier collect --db LIB --papers DEV --quality fast --out fast.npz
    python -m tools.eval_tier collect --db LIB --papers DEV --quality best --out best.npz
    python -m tools.eval_tier report fast.npz best.npz [--reranker auto] > tiers.json
    python -m tools.eval_tier fit best.npz --out assistant/models/ranker-best
    python -m tools.eval_tier compare best.npz best-ce.npz   # two reports of the same queries

``collect`` runs every dev query (paragraph and sentence; plain, enhanced and product) through
the tier's prefilter at the product's depth (``evaluate_acm_cr(collect=...)``: the BM25 and
dense runs, the fused order, the learned ranker's features of the 200-candidate pool).
``report`` gives per tier, for each stage, R@10 / nDCG@10 / R@100:

* ``bm25``, ``dense``: the runs as retrieved (nothing tuned);
* ``fused``: the product's dense weight; ``fused-cv``: the weight chosen on the other papers;
* ``ranked-shipped``: the tier's shipped ranker as it is (in sample for the tier it was fit on);
* ``ranked-cv``: a ranker fitted on the other citing papers (its ``C`` by grouped CV inside);
* ``reranked-cv``: the tier's cross-encoder on the held-out ranker's head, weight and head size
  chosen on the other citing papers;

and, between two tiers, the per-query difference of the final stage (mean, sd, a paired
bootstrap 95% interval, wins/losses). ``fit`` writes the tier's shipped ranker (every query);
``compare`` pairs two reports already made (e.g. one tier with two cross-encoders).
"""

from __future__ import annotations

import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import click
import numpy as np

from assistant.evaluation.metrics import mean_metrics, query_metrics

WEIGHTS = (0.3, 0.4, 0.5, 0.6, 0.7)
ALPHAS = (0.1, 0.2, 0.3, 0.5, 0.7, 1.0)
TOPS = (10, 20)
ROUND = 4


# --- the collected rows, saved without pickle (arrays + one JSON document) ------------------
ARRAYS = ("ids", "x", "y", "bm25_ids", "bm25_scores", "dense_ids", "dense_scores")


def save_rows(path: Path, rows: list[dict], meta: dict) -> None:
    arrays, plain = {}, []
    for i, r in enumerate(rows):
        flat = dict(r)
        flat["bm25_ids"], flat["bm25_scores"] = flat.pop("bm25")
        flat["dense_ids"], flat["dense_scores"] = flat.pop("dense")
        for name in ARRAYS:
            arrays[f"{i}:{name}"] = np.asarray(flat.pop(name))
        plain.append(flat)
    doc = json.dumps({"meta": meta, "rows": plain})
    np.savez_compressed(path, __json__=np.frombuffer(doc.encode(), np.uint8), **arrays)


def load_rows(path: Path) -> tuple[list[dict], dict]:
    with np.load(path, allow_pickle=False) as z:
        doc = json.loads(bytes(z["__json__"]).decode())
        rows = doc["rows"]
        for i, r in enumerate(rows):
            for name in ARRAYS:
                r[name] = z[f"{i}:{name}"]
            r["bm25"] = (r.pop("bm25_ids"), r.pop("bm25_scores"))
            r["dense"] = (r.pop("dense_ids"), r.pop("dense_scores"))
    return rows, doc["meta"]


# --- stages -----------------------------------------------------------------------------
def _metrics(ranking: list, relevant) -> dict:
    """As ``evaluate_acm_cr``: the first 100, non-candidates left out."""
    return query_metrics([d for d in ranking[:100] if d], set(relevant))


def run_metrics(r: dict, doi_of: dict, run) -> dict:
    ids, _scores = run
    return _metrics([doi_of.get(int(i)) for i in ids], r["relevant"])


def fused_metrics(r: dict, doi_of: dict, weight: float) -> dict:
    from assistant.retrieval.fusion import fuse

    fused = fuse({"dense": r["dense"], "bm25": r["bm25"]}, dense_weight=weight)
    return _metrics([doi_of.get(pid) for pid, _ in fused], r["relevant"])


def lopo(rows: list[dict], per: dict, choices) -> tuple[list[dict], list]:
    """Leave one citing paper out: for each paper the choice with the best summed R@10 +
    nDCG@10 over the other papers' queries; returns each query's held-out metrics."""
    groups = sorted({r["group"] for r in rows})
    held: list[dict] = [{} for _ in rows]
    chosen = []
    for g in groups:
        train = [i for i, r in enumerate(rows) if r["group"] != g]
        best = max(
            choices, key=lambda c: sum(per[c][i]["R@10"] + per[c][i]["nDCG@10"] for i in train)
        )
        chosen.append(best)
        for i, r in enumerate(rows):
            if r["group"] == g:
                held[i] = per[best][i]
    return held, chosen


def _fold(rows: list[dict], group: str):
    """The ranker of one fold: fitted on every citing paper but ``group`` (C by grouped CV)."""
    from assistant.training.ranker import choose_c, fit

    train = [r for r in rows if r["group"] != group]
    c = choose_c(train)
    return c, fit(train, c)


def ranker_cv(rows: list[dict], jobs: int = 2) -> tuple[list[np.ndarray], list[float]]:
    """Each query's pool scored by a ranker fitted on the other citing papers (C chosen by
    grouped CV on those papers, as ``training.ranker.cross_validate`` does); the folds run in
    ``jobs`` processes."""
    from joblib import Parallel, delayed

    from assistant.retrieval.ranker import FEATURES

    groups = sorted({r["group"] for r in rows})
    fitted = Parallel(n_jobs=jobs, verbose=5)(delayed(_fold)(rows, g) for g in groups)
    scores: list[np.ndarray] = [np.zeros(0) for _ in rows]
    for g, (_c, model) in zip(groups, fitted):
        cols = [FEATURES.index(f) for f in model.features]
        for i, r in enumerate(rows):
            if r["group"] == g and len(r["ids"]):
                scores[i] = model.score(r["x"][:, cols])
    return scores, [c for c, _ in fitted]


def _order(score: np.ndarray) -> list[int]:
    return sorted(range(len(score)), key=lambda i: (-score[i], i))


def rerank_scores(rows, orders, library, reranker: str, head: int) -> list[float]:
    """The cross-encoder's scores of each query's held-out head (one batch per query, as the
    product scores its head); returns each query's scoring time in ms."""
    from assistant.inference.cross_encoder import load_cross_encoder

    model = load_cross_encoder(reranker, device="cpu")
    times = []
    for n, (r, order) in enumerate(zip(rows, orders), 1):
        top = [int(r["ids"][i]) for i in order[:head]]
        papers = {p.id: p for p in library.get_many(top)}
        texts = [papers[pid].encoder_text() for pid in top]
        t = time.perf_counter()
        r["rerank"] = np.asarray(model.score(r["focus"], texts), dtype=np.float64) if texts else []
        times.append((time.perf_counter() - t) * 1000)
        print(f"\rreranking {n}/{len(rows)}", end="", file=sys.stderr)
    print(file=sys.stderr)
    return times


def reranked_metrics(r: dict, order: list[int], base: np.ndarray, alpha: float, top: int):
    from assistant.retrieval.fusion import blend

    order = list(order)
    n = min(top, len(r.get("rerank", [])))
    if alpha > 0 and n:
        final = blend(np.asarray(r["rerank"][:n]), base[order[:n]], alpha)
        order = [order[i] for i in _order(final)] + order[n:]
    return _metrics([r["dois"][i] for i in order], r["relevant"])


def tier_report(
    rows: list[dict], doi_of: dict, library, rconfig, ranker: str | None = None
) -> dict:
    """Every stage of one tier, with each query's final metrics (for the paired comparison);
    ``ranker``: the tier's shipped ranker, measured as it is (``ranked-shipped``)."""
    from assistant.retrieval.fusion import DEFAULT_DENSE_WEIGHT

    per: dict[str, list[dict]] = {
        "bm25": [run_metrics(r, doi_of, r["bm25"]) for r in rows],
        "dense": [run_metrics(r, doi_of, r["dense"]) for r in rows],
    }
    by_weight = {w: [fused_metrics(r, doi_of, w) for r in rows] for w in WEIGHTS}
    per["fused"] = by_weight[DEFAULT_DENSE_WEIGHT]
    per["fused-cv"], weights = lopo(rows, by_weight, WEIGHTS)
    if ranker:  # the ranker shipped for this tier today (in sample for the tier it was fit on)
        from assistant.retrieval.ranker import FEATURES, load_ranker

        model = load_ranker(ranker)
        cols = [FEATURES.index(f) for f in model.features]
        per["ranked-shipped"] = [
            _metrics([r["dois"][i] for i in _order(model.score(r["x"][:, cols]))], r["relevant"])
            for r in rows
        ]
    scores, cs = ranker_cv(rows)
    orders = [_order(s) for s in scores]
    per["ranked-cv"] = [
        _metrics([r["dois"][i] for i in o], r["relevant"]) for r, o in zip(rows, orders)
    ]
    out: dict = {"chosen": {"dense_weight": weights, "C": cs}}
    if rconfig.reranker:
        times = rerank_scores(rows, orders, library, rconfig.reranker, max(TOPS))
        shipped = (rconfig.rerank_weight, rconfig.rerank_top or max(TOPS))
        settings = list(dict.fromkeys([(a, t) for a in ALPHAS for t in TOPS] + [shipped]))
        by_setting = {
            s: [reranked_metrics(r, o, sc, *s) for r, o, sc in zip(rows, orders, scores)]
            for s in settings
        }
        per["reranked"] = by_setting[shipped]  # the shipped weight and head
        per["reranked-cv"], chosen = lopo(rows, by_setting, settings)
        out["chosen"]["rerank (weight, top)"] = [f"{a}/{t}" for a, t in chosen]
        prefilter = [r["prefilter_ms"] for r in rows]
        total = [p + t for p, t in zip(prefilter, times)]
        out["latency_ms"] = {
            name: {
                "p50": round(float(np.percentile(v, 50)), 1),
                "p95": round(float(np.percentile(v, 95)), 1),
            }
            for name, v in (
                ("prefilter", prefilter),
                ("rerank", times),
                ("prefilter+rerank", total),
            )
        }
    out["stages"] = _table(rows, per)
    out["per_query"] = per
    return out


def _table(rows: list[dict], per: dict[str, list[dict]]) -> dict:
    out: dict = {}
    for stage, metrics in per.items():
        groups = defaultdict(list)
        for r, m in zip(rows, metrics):
            groups[(r["level"], r["variant"])].append(m)
        for (level, variant), ms in groups.items():
            cell = out.setdefault(level, {}).setdefault(variant, {"queries": len(ms)})
            cell[stage] = {k: round(v, ROUND) for k, v in mean_metrics(ms).items()}
    return out


def paired(rows: list[dict], a: list[dict], b: list[dict], metric: str, seed: int = 7) -> dict:
    """Per (level, variant): the per-query difference b − a of ``metric``."""
    rng = np.random.default_rng(seed)
    groups = defaultdict(list)
    for r, ma, mb in zip(rows, a, b):
        groups[f"{r['level']}/{r['variant']}"].append(mb[metric] - ma[metric])
    out = {}
    for key, d in groups.items():
        d = np.asarray(d)
        boots = rng.choice(d, size=(2000, len(d))).mean(axis=1)
        out[key] = {
            "mean": round(float(d.mean()), ROUND),
            "sd": round(float(d.std(ddof=1)), ROUND) if len(d) > 1 else 0.0,
            "ci95": [round(float(np.percentile(boots, q)), ROUND) for q in (2.5, 97.5)],
            "better": int((d > 0).sum()),
            "worse": int((d < 0).sum()),
            "queries": len(d),
        }
    return out


@click.group()
def main() -> None:
    """Quality tiers on ACM-CR dev."""


@main.command("collect")
@click.option("--db", required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--papers", required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--quality", type=click.Choice(["fast", "best"]), required=True)
@click.option("--out", required=True, type=click.Path(dir_okay=False))
def collect_cmd(db, papers, quality, out):
    """Run the dev queries through the tier's prefilter and save what the report needs."""
    from assistant.evaluation.acm_cr import VARIANTS, evaluate_acm_cr, protocol_setup
    from assistant.library.store import Library
    from assistant.retrieval.pipeline import Recommender, pipeline_config
    from assistant.service.quality import QualityError, measured_tier

    try:
        tier, index = measured_tier(quality, "auto", db)
    except QualityError as exc:
        raise click.ClickException(str(exc)) from exc
    config = pipeline_config(reranker=None, ranker="auto", use_intent=False, tier=tier.active)
    library = Library(db)
    rows: list[dict] = []
    t = time.perf_counter()
    try:
        rec = Recommender(library, config, index_dir=index)
        result = evaluate_acm_cr(
            papers,
            library,
            config,
            variants=VARIANTS,
            recommender=rec,
            collect=rows,
            progress=lambda e: print(f"\r{e.message}", end="", file=sys.stderr),
        )
        encoder = rec.encoder.fingerprint
        seen = {
            int(i) for r in rows for run in (r["ids"], r["bm25"][0], r["dense"][0]) for i in run
        }
        by_doi = protocol_setup(library, papers, abbreviations=False).by_doi
    finally:
        library.close()
    meta = {
        "doi_of": {str(pid): doi for doi, pid in by_doi.items() if pid in seen},
        "quality": tier.active,
        "encoder": encoder,
        "ranker_shipped": config.ranker,
        "collect_s": round(time.perf_counter() - t, 1),
        "shipped_stages": result["levels"],
        "latency_ms": result["latency_ms"],
    }
    save_rows(Path(out), rows, meta)
    print(
        json.dumps(
            {k: v for k, v in meta.items() if k not in ("shipped_stages", "doi_of")}, indent=1
        )
    )


@main.command("report")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--db", required=True, type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--reranker", default="auto", help="Cross-encoder (auto: the tier's shipped one; off)."
)
def report_cmd(files, db, reranker):
    """Stage-by-stage held-out figures of each tier's rows (kept in ``FILE.report.json`` and
    reused while the rows and the reranker are the same); the paired difference of the last
    file against the first."""
    from assistant.library.store import Library
    from assistant.retrieval.pipeline import PipelineConfig
    from assistant.retrieval.ranker import resolve_ranker
    from assistant.retrieval.reranker_setting import resolve_reranker

    library = Library(db)
    out, per, all_rows, rconfig = {}, {}, [], None
    try:
        for f in files:
            rows, meta = load_rows(Path(f))
            rconfig = resolve_reranker(reranker, meta["quality"]).apply(PipelineConfig())
            doi_of = {int(pid): doi for pid, doi in meta.pop("doi_of").items()}
            cache = Path(f).with_suffix(".report.json")  # each tier's figures once computed
            fresh = cache.is_file() and cache.stat().st_mtime >= Path(f).stat().st_mtime
            report = json.loads(cache.read_text()) if fresh else {}
            if not fresh or report.get("reranker") != rconfig.reranker:
                shipped = resolve_ranker("auto", meta["quality"])
                report = tier_report(rows, doi_of, library, rconfig, shipped)
                report = {"meta": meta, "reranker": rconfig.reranker, **report}
                cache.write_text(json.dumps(report))
            per[f] = report.pop("per_query")
            out[meta["quality"]] = report
            all_rows.append(rows)
    finally:
        library.close()
    if len(files) > 1:
        _same_queries(all_rows[0], all_rows[-1])
        last = "reranked-cv" if rconfig and rconfig.reranker else "ranked-cv"
        stages = ("dense", "fused", "fused-cv", "ranked-shipped", "ranked-cv", last)
        out["difference (last - first)"] = difference(
            all_rows[0], per[files[0]], per[files[-1]], stages
        )
    click.echo(json.dumps(out, indent=1))


def _same_queries(a: list[dict], b: list[dict]) -> None:
    if [(r["level"], r["variant"], r["qid"]) for r in a] != [
        (r["level"], r["variant"], r["qid"]) for r in b
    ]:
        raise click.ClickException("the two files hold other queries: collect both again")


def difference(rows: list[dict], a: dict, b: dict, stages) -> dict:
    """Per stage both reports have: the paired per-query difference ``b - a``."""
    return {
        stage: {m: paired(rows, a[stage], b[stage], m) for m in ("R@10", "nDCG@10", "R@100")}
        for stage in stages
        if stage in a and stage in b
    }


@main.command("compare")
@click.argument("first", type=click.Path(exists=True, dir_okay=False))
@click.argument("second", type=click.Path(exists=True, dir_okay=False))
def compare_cmd(first, second):
    """SECOND's figures against FIRST's, query by query, from the figures ``report`` kept
    beside each rows file (e.g. one tier's rows reported with two cross-encoders: copy the
    rows file, report each copy with its ``--reranker``, compare the two)."""
    loaded = []
    for f in (Path(first), Path(second)):
        cache = f.with_suffix(".report.json")
        if not cache.is_file() or cache.stat().st_mtime < f.stat().st_mtime:
            raise click.ClickException(f"{f}: no current figures; run `report {f}` first")
        rows, _ = load_rows(f)
        loaded.append((rows, json.loads(cache.read_text())))
    (rows, a), (rows_b, b) = loaded
    _same_queries(rows, rows_b)
    stages = [s for s in a["per_query"] if s in b["per_query"]]
    out = {
        "first": {"file": first, "reranker": a.get("reranker")},
        "second": {"file": second, "reranker": b.get("reranker")},
        "difference (second - first)": difference(rows, a["per_query"], b["per_query"], stages),
    }
    click.echo(json.dumps(out, indent=1))


@main.command("fit")
@click.argument("rows_file", type=click.Path(exists=True, dir_okay=False))
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path))
def fit_cmd(rows_file, out):
    """Fit the tier's ranker on every dev query (C by grouped CV) and write it to OUT."""
    from assistant.training.ranker import choose_c, cross_validate, fit

    rows, meta = load_rows(Path(rows_file))
    c = choose_c(rows)
    model = fit(rows, c)
    cv = cross_validate(rows, folds=len({r["group"] for r in rows}))
    model.save(
        out,
        {
            "enabled_by_default": True,
            "C": c,
            "tier": meta["quality"],
            "encoder": meta["encoder"],
            "trained_on": "ACM-CR dev (20 citing papers; plain, enhanced and product queries "
            f"at paragraph and sentence level), {meta['quality']} tier's dense scores",
            "held_out": cv["levels"],
        },
    )
    click.echo(
        json.dumps({"C": c, "coef": dict(zip(model.features, model.coef.round(3).tolist()))})
    )


if __name__ == "__main__":  # pragma: no cover
    main()
