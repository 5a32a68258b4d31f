"""Ranking metrics (binary relevance) and TREC run/qrels files, through ir-measures.

Conventions (the ACM-CR protocol): Recall@k = |relevant in top k| / |relevant|;
nDCG@k with binary gain and log2 discount, ideal = all relevant first; MRR = 1/rank of
the first relevant document within the top 100 (0 if none); queries without any relevant
document are skipped by the caller. ir-measures (trec_eval underneath) computes them: ``R@10``,
``nDCG@10``, ``RR@100`` and ``R@100`` give, query by query, the same floats as the
hand-written formulas they replaced (tests/test_metrics.py holds those values).
"""

from __future__ import annotations

import io
from collections.abc import Hashable, Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

#: our metric name -> ir-measures measure name
MEASURES = {"R@10": "R@10", "nDCG@10": "nDCG@10", "MRR": "RR@100", "R@100": "R@100"}


def _ir_measures():
    try:
        import ir_measures
    except ImportError as exc:  # an optional dependency: `pip install cite-assist[eval]`
        raise ImportError(
            "ranking metrics need the ir-measures package (pip install 'cite-assist[eval]')"
        ) from exc
    return ir_measures


def run_metrics(
    runs: Mapping[str, Sequence[Hashable]], qrels: Mapping[str, Iterable[Hashable]]
) -> dict[str, dict[str, float]]:
    """``{qid: {"R@10", "nDCG@10", "MRR", "R@100"}}`` of ranked lists ``runs`` against the
    relevant documents ``qrels``, for every query of ``qrels`` (a query missing from ``runs``
    retrieved nothing). A document listed twice in a ranking counts at its first rank."""
    irm = _ir_measures()
    measures = {irm.parse_measure(ours): name for name, ours in MEASURES.items()}
    qrel_rows, run_rows = [], []
    for qid, relevant in qrels.items():
        relevant = set(relevant)
        if not relevant:
            raise ValueError(f"query {qid!r}: metrics are undefined without relevant documents")
        qrel_rows += [irm.Qrel(str(qid), str(doc), 1) for doc in relevant]
        ranking = list(dict.fromkeys(str(doc) for doc in runs.get(qid, ())))
        # strictly falling scores: trec_eval orders by score, so the ranks are kept
        run_rows += [
            irm.ScoredDoc(str(qid), doc, float(len(ranking) - i)) for i, doc in enumerate(ranking)
        ]
    out = {str(qid): dict.fromkeys(MEASURES, 0.0) for qid in qrels}
    for value in irm.iter_calc(list(measures), qrel_rows, run_rows):
        out[value.query_id][measures[value.measure]] = float(value.value)
    return out


def query_metrics(ranking: Sequence[Hashable], relevant: set) -> dict[str, float]:
    """R@10, nDCG@10, MRR (cut at 100) and R@100 of one ranking."""
    return run_metrics({"q": ranking}, {"q": relevant})["q"]


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
    """Read a TREC run (ir-measures' reader) into ``{qid: [docid, ...]}``, best score first;
    equal scores keep the file's order (our writer writes in rank order)."""
    irm = _ir_measures()
    text = Path(path).read_text(encoding="utf-8")
    for lineno, line in enumerate(text.splitlines(), start=1):
        if line.strip() and len(line.split()) != 6:  # named here: the reader would not say where
            raise ValueError(
                f"{path}:{lineno}: expected 6 fields 'qid Q0 docid rank score tag', "
                f"got {len(line.split())}"
            )
    rows: dict[str, list[tuple[float, str]]] = {}
    for doc in irm.read_trec_run(io.StringIO(text)):
        rows.setdefault(doc.query_id, []).append((-doc.score, doc.doc_id))
    return {
        qid: [doc for _, doc in sorted(entries, key=lambda e: e[0])]
        for qid, entries in rows.items()
    }


def classification_metrics(y_true, y_pred, labels: Sequence[str] | None = None) -> dict:
    """Accuracy, macro-F1, per-class P/R/F1/support and the confusion matrix (scikit-learn);
    ``labels`` default to the intent model's."""
    from sklearn.metrics import (
        accuracy_score,
        confusion_matrix,
        f1_score,
        precision_recall_fscore_support,
    )

    if labels is None:
        from assistant.inference.intent import LABELS as labels
    ids = list(range(len(labels)))
    p, r, f, s = precision_recall_fscore_support(y_true, y_pred, labels=ids, zero_division=0)
    return {
        "n": len(y_true),
        "accuracy": float(accuracy_score(y_true, y_pred)),
        "macro_f1": float(f1_score(y_true, y_pred, labels=ids, average="macro", zero_division=0)),
        "per_class": {
            lab: {
                "precision": float(p[i]),
                "recall": float(r[i]),
                "f1": float(f[i]),
                "support": int(s[i]),
            }
            for i, lab in enumerate(labels)
        },
        "confusion_matrix": {
            "labels": list(labels),
            "rows_true_cols_pred": confusion_matrix(y_true, y_pred, labels=ids).tolist(),
        },
    }
