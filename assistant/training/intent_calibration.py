"""Post-hoc calibration of the intent classifier on dev: temperature and per-class logit bias.

- ``fit_temperature``: T minimising dev NLL of ``softmax(logits / T)`` (Guo et al., 2017).
- ``fit_class_bias``: additive logit offsets (background fixed at 0) maximising dev macro-F1 on a
  grid; ``cv_bias_gain`` estimates by k-fold cross-validation on dev whether the offsets help on
  unseen data, and the trainer applies them only if that held-out gain is positive.
"""

from __future__ import annotations

import math

import numpy as np

GRID = np.round(np.arange(-1.5, 1.51, 0.1), 2)


def fit_temperature(logits: np.ndarray, y: np.ndarray) -> float:
    """Temperature minimising dev NLL (bounded 1-D search over log T)."""
    from scipy.optimize import minimize_scalar

    def nll(log_t: float) -> float:
        z = logits / math.exp(log_t)
        z = z - z.max(1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(1, keepdims=True))
        return float(-logp[np.arange(len(y)), y].mean())

    res = minimize_scalar(nll, bounds=(math.log(0.05), math.log(20.0)), method="bounded")
    return float(math.exp(res.x))


def macro_f1(y: np.ndarray, pred: np.ndarray, n_classes: int) -> float:
    f1s = []
    for k in range(n_classes):
        tp = np.sum((pred == k) & (y == k))
        denom = np.sum(pred == k) + np.sum(y == k)
        f1s.append(0.0 if denom == 0 else 2 * tp / denom)
    return float(np.mean(f1s))


def fit_class_bias(logits: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Offsets (first class fixed at 0) maximising macro-F1; ties prefer the smallest offsets."""
    n = logits.shape[1]
    best, best_key = np.zeros(n), (macro_f1(y, logits.argmax(1), n), 0.0)
    if n != 3:
        return best
    for b1 in GRID:
        for b2 in GRID:
            bias = np.array([0.0, b1, b2])
            key = (macro_f1(y, (logits + bias).argmax(1), n), -float(abs(b1) + abs(b2)))
            if key > best_key:
                best, best_key = bias, key
    return best


def cv_bias_gain(logits: np.ndarray, y: np.ndarray, folds: int = 5, seed: int = 0) -> float:
    """Mean held-out macro-F1 gain of ``fit_class_bias`` over no bias (k-fold on dev)."""
    rng = np.random.default_rng(seed)
    idx = rng.permutation(len(y))
    gains = []
    for f in range(folds):
        test = idx[f::folds]
        train = np.setdiff1d(idx, test)
        bias = fit_class_bias(logits[train], y[train])
        n = logits.shape[1]
        gains.append(
            macro_f1(y[test], (logits[test] + bias).argmax(1), n)
            - macro_f1(y[test], logits[test].argmax(1), n)
        )
    return float(np.mean(gains))
