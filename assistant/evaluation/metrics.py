"""Ranking metrics (binary relevance) and TREC run/qrels writers.

Conventions (the ACM-CR protocol): Recall@k = |relevant in top k| / |relevant|;
nDCG@k with binary gain and log2 discount, ideal = all relevant first; MRR = 1/rank of
the first relevant document within the top 100 (0 if none); queries without any relevant
document are skipped by the caller.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np


def recall_at(ranking: Sequence[Hashable], relevant: set, k: int) -> float:
    if not relevant:
        raise ValueError("recall is undefined without relevant documents")
    return len(set(ranking[:k]) & relevant) / len(relevant)


def ndcg_at(ranking: Sequence[Hashable], relevant: set, k: int) -> float:
    if not relevant:
        raise ValueError("nDCG is undefined without relevant documents")
    dcg = sum(1.0 / math.log2(i + 2) for i, doc in enumerate(ranking[:k]) if doc in relevant)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(k, len(relevant))))
    return dcg / ideal


def reciprocal_rank(ranking: Sequence[Hashable], relevant: set, cutoff: int = 100) -> float:
    for i, doc in enumerate(ranking[:cutoff]):
        if doc in relevant:
            return 1.0 / (i + 1)
    return 0.0


def query_metrics(ranking: Sequence[Hashable], relevant: set) -> dict[str, float]:
    """R@10, nDCG@10, MRR (cut at 100) and R@100 of one ranking."""
    return {
        "R@10": recall_at(ranking, relevant, 10),
        "nDCG@10": ndcg_at(ranking, relevant, 10),
        "MRR": reciprocal_rank(ranking, relevant, 100),
        "R@100": recall_at(ranking, relevant, 100),
    }


def mean_metrics(per_query: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """Macro-average of per-query metric dicts (empty input -> empty dict)."""
    rows = list(per_query)
    if not rows:
        return {}
    return {key: float(np.mean([r[key] for r in rows])) for key in rows[0]}


def percentile_ms(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=float), q)) if len(values) else float("nan")


def write_trec_run(
    path: Path | str, runs: Mapping[str, Sequence[tuple[str, float]]], tag: str
) -> Path:
    """Write ``{qid: [(docid, score), ...]}`` (already ranked) as a TREC run file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for qid, ranked in runs.items():
            for rank, (docid, score) in enumerate(ranked, start=1):
                fh.write(f"{qid} Q0 {docid} {rank} {score:.6f} {tag}\n")
    return path


def write_trec_qrels(path: Path | str, qrels: Mapping[str, Iterable[str]]) -> Path:
    """Write ``{qid: relevant docids}`` as a TREC qrels file (binary relevance)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for qid, docs in qrels.items():
            for doc in sorted(docs):
                fh.write(f"{qid} 0 {doc} 1\n")
    return path


def read_trec_run(path: Path | str) -> dict[str, list[str]]:
    """Read a TREC run back into ``{qid: [docid, ...]}`` ordered by rank."""
    rows: dict[str, list[tuple[int, str]]] = {}
    for lineno, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 6:
            raise ValueError(
                f"{path}:{lineno}: expected 6 fields 'qid Q0 docid rank score tag', got {len(parts)}"
            )
        rows.setdefault(parts[0], []).append((int(parts[3]), parts[2]))
    return {qid: [doc for _, doc in sorted(entries)] for qid, entries in rows.items()}
