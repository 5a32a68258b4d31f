"""Does ``--need INTENT`` help, and do the per-paper intent chips differ? Prints JSON.

For the ACM-CR dev sentence queries whose relevant papers are in the library:

* the sentence's intent is classified (shipped int8 model); per class, R@10 of the queries of that
  intent is measured without a need and with ``need = that class`` (the author asks for what the
  sentence says it needs) — does the intent-aware re-ordering lift the cited papers?
* over all queries (no need): how often the per-paper chip differs from the sentence's label
  across the top 10, how many distinct chips a result list shows, and the share flagged uncertain.

Usage: ``python tools/intent_need_eval.py --db LIBRARY.sqlite [--papers ../shared/data/acm-cr/dev]``
(the library must be indexed: ``assistant index``).
"""

from __future__ import annotations

import json
import sys
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import click
import numpy as np

#: a development checkout's research data (../shared/data), when $ASSISTANT_SHARED_DATA is unset
TOOLS_SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@click.command()
@click.option("--db", type=click.Path(exists=True, dir_okay=False), required=True)
@click.option("--papers", type=click.Path(exists=True, file_okay=False), default=None)
@click.option("--limit", type=int, default=None, help="Use only the first N queries.")
@click.option("--pool", type=int, default=30, show_default=True, help="PipelineConfig.intent_pool")
@click.option("--bm25-only", is_flag=True, help="No dense stage (a library indexed with --budget).")
@click.option(
    "--need-profile",
    type=float,
    default=None,
    help="Override the paper profile's weight in p(k*|d) (default: paper_profile.json's).",
)
@click.option(
    "--label-profile",
    type=float,
    default=None,
    help="Override the paper profile's weight in the per-paper label (default: the file's).",
)
def main(db, papers, limit, pool, bm25_only, need_profile, label_profile) -> None:
    from assistant.evaluation.acm_cr import protocol_setup
    from assistant.inference.intent import LABELS, IntentClassifier
    from assistant.library.store import Library
    from assistant.retrieval.pipeline import PipelineConfig, Recommender
    from assistant.retrieval.query import Query
    from assistant.training.data import shared_data_dir

    papers_dir = (
        Path(papers) if papers else (shared_data_dir() or TOOLS_SHARED_DATA) / "acm-cr" / "dev"
    )
    library = Library(db)
    setup = protocol_setup(library, papers_dir, abbreviations=False)
    doi_of = setup.doi_of
    queries = setup.queries(("sentence",), limit)
    if not queries:
        raise click.ClickException(f"no ACM-CR dev sentence query cites a paper of {db}")
    base = setup.run_config(PipelineConfig(k=10, intent_pool=pool, use_dense=not bm25_only))
    rec = Recommender(library, base)
    clf = IntentClassifier()
    from assistant.inference.paper_intent import load_paper_profile

    profile = load_paper_profile()
    if profile is not None and need_profile is not None:
        profile.combine.need_profile = need_profile
    if profile is not None and label_profile is not None:
        profile.combine.profile = label_profile
    sent = clf.classify([q.text for q in queries])
    recall = defaultdict(lambda: {"without": [], "with": []})
    chips = {"differs": [], "distinct": [], "uncertain": []}
    start = time.perf_counter()
    for q, pred in zip(queries, sent):
        rel = setup.relevant(q)
        query = Query(text=q.text, mode="local")
        plain = rec.recommend(query, base).items
        need = rec.recommend(query, replace(base, intent_preference=pred.label)).items

        def r10(items, rel=rel):
            return len({doi_of.get(it.paper.id) for it in items[:10]} & rel) / len(rel)

        recall[pred.label]["without"].append(r10(plain))
        recall[pred.label]["with"].append(r10(need))
        if plain:
            top = max(plain[0].intent_probs, key=plain[0].intent_probs.get)
            chips["differs"].append(np.mean([it.intent != top for it in plain]))
            chips["distinct"].append(len({it.intent for it in plain}))
            chips["uncertain"].append(np.mean([bool(it.intent_uncertain) for it in plain]))
    out = {
        "db": str(db),
        "queries": len(queries),
        "candidates": len(setup.by_doi),
        "intent_pool": pool,
        "bm25_only": bm25_only,
        "need_profile_weight": profile.combine.need_profile if profile is not None else None,
        "label_profile_weight": profile.combine.profile if profile is not None else None,
        "sentence_intents": {lab: sum(p.label == lab for p in sent) for lab in LABELS},
        "r_at_10": {
            lab: {
                "queries": len(v["without"]),
                "without_need": round(float(np.mean(v["without"])), 4),
                "with_need": round(float(np.mean(v["with"])), 4),
                "queries_up": int(sum(w > o for o, w in zip(v["without"], v["with"]))),
                "queries_down": int(sum(w < o for o, w in zip(v["without"], v["with"]))),
            }
            for lab, v in sorted(recall.items())
        },
        "chips_top10": {
            "share_differing_from_first": round(float(np.mean(chips["differs"])), 4),
            "queries_with_more_than_one_chip": round(
                float(np.mean([d > 1 for d in chips["distinct"]])), 4
            ),
            "mean_distinct_chips": round(float(np.mean(chips["distinct"])), 3),
            "share_uncertain": round(float(np.mean(chips["uncertain"])), 4),
        },
        "seconds": round(time.perf_counter() - start, 1),
        "intent_model": clf.version,
    }
    json.dump(out, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
