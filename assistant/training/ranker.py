"""Train the learned ranker (``retrieval.ranker``) on labelled queries, with honest figures.

Input: the feature rows ``evaluation.acm_cr.evaluate_acm_cr(collect=...)`` gathers (one dict per
query: ``x`` candidates × features, ``y`` cited or not, ``group`` the citing paper). The model is
scikit-learn's ``LogisticRegression`` on standardised features (class-balanced): with 20 citing
papers a linear model is what the data supports (LightGBM's LambdaMART overfit: see the model
card). Figures are **held out**: ``GroupKFold`` over citing papers, and the regularisation ``C`` is
chosen inside each training fold by a second grouped split (nested), so no figure has seen its
own paper.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from assistant.evaluation.metrics import mean_metrics, query_metrics
from assistant.retrieval.ranker import FEATURES, LearnedRanker

C_GRID = (0.003, 0.01, 0.03, 0.1, 0.3, 1.0)


def _stack(rows: Sequence[dict], features: tuple[str, ...]):
    cols = [FEATURES.index(f) for f in features]
    x = np.vstack([r["x"][:, cols] for r in rows if len(r["ids"])])
    y = np.concatenate([np.asarray(r["y"]) for r in rows if len(r["ids"])])
    return x, y


def fit(rows: Sequence[dict], c: float, features: tuple[str, ...] = FEATURES) -> LearnedRanker:
    """One logistic regression over every candidate row of ``rows``."""
    from sklearn.linear_model import LogisticRegression

    x, y = _stack(rows, features)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    model = LogisticRegression(C=c, class_weight="balanced", max_iter=2000)
    model.fit((x - mean) / scale, y)
    return LearnedRanker(
        tuple(features), mean, scale, model.coef_[0].astype(np.float64), float(model.intercept_[0])
    )


def query_scores(model: LearnedRanker, row: dict) -> dict[str, float]:
    """The metrics of one query re-ranked by ``model`` (ties keep the fused order)."""
    if not len(row["ids"]):
        return query_metrics([], set(row["relevant"]))
    cols = [FEATURES.index(f) for f in model.features]
    score = model.score(row["x"][:, cols])
    order = sorted(range(len(score)), key=lambda i: (-score[i], i))
    return query_metrics([row["dois"][i] for i in order], set(row["relevant"]))


def fused_scores(row: dict) -> dict[str, float]:
    """The metrics of the fused order itself (the baseline of the same candidate pool)."""
    return query_metrics(list(row["dois"]), set(row["relevant"]))


def _mean_r10(model: LearnedRanker, rows: Sequence[dict]) -> float:
    return float(np.mean([query_scores(model, r)["nDCG@10"] for r in rows])) if rows else 0.0


def choose_c(rows: Sequence[dict], folds: int = 4, grid: Sequence[float] = C_GRID) -> float:
    """``C`` with the best grouped-CV nDCG@10 on ``rows`` (inner loop of the nested CV)."""
    from sklearn.model_selection import GroupKFold

    groups = [r["group"] for r in rows]
    n = min(folds, len(set(groups)))
    best, best_c = -1.0, grid[0]
    for c in grid:
        vals = []
        for tr, te in GroupKFold(n_splits=n).split(rows, groups=groups):
            model = fit([rows[i] for i in tr], c)
            vals.append(_mean_r10(model, [rows[i] for i in te]))
        if np.mean(vals) > best:
            best, best_c = float(np.mean(vals)), c
    return best_c


def cross_validate(rows: Sequence[dict], folds: int = 5) -> dict:
    """Held-out metrics per (level, variant): ``{"ranked": ..., "fused": ..., "c": [...]}``."""
    from sklearn.model_selection import GroupKFold

    groups = [r["group"] for r in rows]
    ranked: dict[tuple[str, str], list] = defaultdict(list)
    fused: dict[tuple[str, str], list] = defaultdict(list)
    chosen = []
    for tr, te in GroupKFold(n_splits=min(folds, len(set(groups)))).split(rows, groups=groups):
        train = [rows[i] for i in tr]
        c = choose_c(train)
        chosen.append(c)
        model = fit(train, c)
        for i in te:
            key = (rows[i]["level"], rows[i]["variant"])
            ranked[key].append(query_scores(model, rows[i]))
            fused[key].append(fused_scores(rows[i]))
    out: dict = {"c": chosen, "levels": {}}
    for (level, variant), vals in ranked.items():
        out["levels"].setdefault(level, {})[variant] = {
            "fused": mean_metrics(fused[(level, variant)]),
            "ranked-cv": mean_metrics(vals),
            "queries": len(vals),
        }
    return out
