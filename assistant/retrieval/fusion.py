"""Fusion of ranked candidate lists (dense + BM25): reciprocal-rank fusion or a weighted sum
of normalised scores."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

FUSIONS = ("rrf", "weighted")

#: Defaults tuned on the ACM-CR dev set (assistant/models/BENCHMARKS.md).
DEFAULT_RRF_K = 60
#: 0.5 with 256-token documents: chosen by leave-one-citing-paper-out CV on ACM-CR dev (19 of 20
#: folds; 0.4 was the single-split optimum at 128 tokens)
DEFAULT_DENSE_WEIGHT = 0.5
DEFAULT_NORM = "zscore"


def normalise(scores: np.ndarray, method: str = DEFAULT_NORM) -> np.ndarray:
    """Normalise one list's scores: ``minmax`` to [0, 1], ``zscore`` (mean 0, sd 1) or ``max``."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.size == 0:
        return scores
    if method == "minmax":
        lo, hi = scores.min(), scores.max()
        return (scores - lo) / (hi - lo) if hi > lo else np.ones_like(scores)
    if method == "zscore":
        sd = scores.std()
        return (scores - scores.mean()) / sd if sd > 0 else np.zeros_like(scores)
    if method == "max":
        hi = np.abs(scores).max()
        return scores / hi if hi > 0 else scores
    raise ValueError(f"unknown normalisation {method!r} (minmax|zscore|max)")


def blend(raw: np.ndarray, before: np.ndarray, weight: float) -> np.ndarray:
    """The cross-encoder's head: ``weight·z(raw) + (1 - weight)·z(before)`` over the reranked
    top (z-scores of each list), ``raw`` alone at weight 1."""
    raw = np.asarray(raw, dtype=np.float64)
    if weight >= 1.0:
        return raw
    return weight * normalise(raw, "zscore") + (1 - weight) * normalise(before, "zscore")


def rrf(
    runs: Mapping[str, tuple[np.ndarray, np.ndarray]],
    k: int = DEFAULT_RRF_K,
    weights: Mapping[str, float] | None = None,
) -> dict[int, float]:
    """Reciprocal-rank fusion: ``sum_w w / (k + rank)`` over the runs each id appears in."""
    fused: dict[int, float] = {}
    for name, (ids, _scores) in runs.items():
        w = 1.0 if weights is None else weights.get(name, 1.0)
        for rank, pid in enumerate(ids, start=1):
            fused[int(pid)] = fused.get(int(pid), 0.0) + w / (k + rank)
    return fused


def weighted_sum(
    runs: Mapping[str, tuple[np.ndarray, np.ndarray]],
    weights: Mapping[str, float],
    norm: str = DEFAULT_NORM,
) -> dict[int, float]:
    """Weighted sum of normalised scores; an id missing from a run gets that run's minimum."""
    normed = {name: (ids, normalise(scores, norm)) for name, (ids, scores) in runs.items()}
    all_ids: set[int] = set()
    for ids, _ in normed.values():
        all_ids.update(int(i) for i in ids)
    fused = dict.fromkeys(all_ids, 0.0)
    for name, (ids, scores) in normed.items():
        w = weights.get(name, 1.0)
        floor = float(scores.min()) if scores.size else 0.0
        present = {int(i): float(s) for i, s in zip(ids, scores)}
        for pid in all_ids:
            fused[pid] += w * present.get(pid, floor)
    return fused


def fuse(
    runs: Mapping[str, tuple[np.ndarray, np.ndarray]],
    method: str = "weighted",
    *,
    dense_weight: float = DEFAULT_DENSE_WEIGHT,
    rrf_k: int = DEFAULT_RRF_K,
    norm: str = DEFAULT_NORM,
) -> list[tuple[int, float]]:
    """Fuse ``{"dense": (ids, scores), "bm25": (ids, scores)}`` into one ranked ``[(id, score)]``."""
    runs = {name: run for name, run in runs.items() if len(run[0])}
    if not runs:
        return []
    weights = {"dense": dense_weight, "bm25": 1.0 - dense_weight}
    if method == "rrf":
        fused = rrf(runs, rrf_k, weights={k: 2 * w for k, w in weights.items()})
    elif method == "weighted":
        fused = weighted_sum(runs, weights, norm)
    else:
        raise ValueError(f"unknown fusion {method!r}; expected one of {', '.join(FUSIONS)}")
    return sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))
