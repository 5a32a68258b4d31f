"""Train and cross-validate the learned ranker on ACM-CR dev; print held-out figures as JSON.

    python -m tools.train_ranker --db LIB.sqlite --papers ../shared/data/acm-cr/dev \
        [--out assistant/models/ranker] [--rows rows.npz]

Collects the ranker's features for every dev query (levels paragraph + sentence, variants plain,
enhanced, product) with ``evaluate_acm_cr(collect=...)``, reports nested grouped-CV figures
(``training.ranker.cross_validate``) next to the fused order of the same pool, then fits the
shipped model on every query (``C`` by grouped CV) and writes ``ranker.json`` + the figures.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from pathlib import Path


def collect(db: Path, papers: Path, blacklist: Path | None) -> list[dict]:
    from assistant.evaluation.acm_cr import evaluate_acm_cr
    from assistant.library.store import Library
    from assistant.retrieval.pipeline import PipelineConfig

    rows: list[dict] = []
    library = Library(db)
    try:
        evaluate_acm_cr(
            papers,
            library,
            PipelineConfig(use_intent=False),
            ("paragraph", "sentence"),
            variants=("plain", "enhanced", "product"),
            blacklist=blacklist,
            collect=rows,
            progress=lambda e: print(f"\r{e.message}", end="", file=sys.stderr),
        )
    finally:
        library.close()
    print(file=sys.stderr)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--papers", type=Path, required=True, help="ACM-CR dev folder")
    ap.add_argument("--blacklist", type=Path, default=None)
    ap.add_argument("--rows", type=Path, default=None, help="cache of the collected features")
    ap.add_argument("--out", type=Path, default=None, help="write the fitted ranker here")
    args = ap.parse_args()
    from assistant.training.ranker import choose_c, cross_validate, fit

    t = time.perf_counter()
    if args.rows and args.rows.exists():
        rows = pickle.loads(args.rows.read_bytes())
    else:
        rows = collect(args.db, args.papers, args.blacklist)
        if args.rows:
            args.rows.write_bytes(pickle.dumps(rows))
    collected_s = time.perf_counter() - t
    cv = cross_validate(rows)
    result = {"queries": len(rows), "collect_s": round(collected_s, 1), "cv": cv}
    if args.out:
        c = choose_c(rows)
        model = fit(rows, c)
        model.save(
            args.out,
            {
                "enabled_by_default": True,
                "C": c,
                "trained_on": "ACM-CR dev (20 citing papers; plain, enhanced and product queries "
                "at paragraph and sentence level)",
                "held_out": cv["levels"],
            },
        )
        result["fitted"] = {"C": c, "coef": dict(zip(model.features, model.coef.round(3).tolist()))}
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
