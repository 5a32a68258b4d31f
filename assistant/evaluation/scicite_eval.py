"""``assistant eval scicite FILE.jsonl``: evaluate the intent classifier on SciCite-format data.

Reports accuracy, macro-F1, per-class precision/recall/F1/support and the confusion matrix
(scikit-learn), plus the expected calibration error of the shipped (temperature-scaled)
probabilities and the throughput.
"""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import numpy as np

from assistant.errors import AssistantError
from assistant.evaluation.metrics import classification_metrics
from assistant.textfile import iter_jsonl


def read_jsonl(path: Path) -> tuple[list[str], list[str]]:
    """``string`` and ``label`` of each line; errors name the file, line and field."""
    texts, labels = [], []
    try:
        for lineno, row in iter_jsonl(path):
            for key in ("string", "label"):
                if not isinstance(row.get(key), str):
                    raise AssistantError(f"{path}:{lineno}: missing or non-string field '{key}'")
            texts.append(row["string"])
            labels.append(row["label"])
    except ValueError as exc:
        raise AssistantError(str(exc)) from exc
    if not texts:
        raise AssistantError(f"{path}: no examples")
    return texts, labels


def expected_calibration_error(probs: np.ndarray, y: np.ndarray, bins: int = 10) -> float:
    conf = probs.max(1)
    correct = probs.argmax(1) == y
    edges = np.linspace(0, 1, bins + 1)
    ece = 0.0
    for lo, hi in itertools.pairwise(edges):
        sel = (conf > lo) & (conf <= hi)
        if sel.any():
            ece += sel.mean() * abs(correct[sel].mean() - conf[sel].mean())
    return float(ece)


def evaluate(path: Path, model: str | None = None) -> dict:
    from assistant.inference.intent import IntentClassifier, load_intent_classifier

    texts, gold = read_jsonl(path)
    clf = IntentClassifier(model) if model else load_intent_classifier()
    unknown = sorted(set(gold) - set(clf.labels))
    if unknown:
        raise AssistantError(f"{path}: labels {unknown} are not among the model's {clf.labels}")
    t0 = time.perf_counter()
    probs = clf.predict_proba(texts)
    seconds = time.perf_counter() - t0
    y = np.array([clf.labels.index(g) for g in gold])
    out = {"file": str(path), "model": clf.version, "temperature": clf.temperature}
    out.update(classification_metrics(y, probs.argmax(1), tuple(clf.labels)))
    out["ece"] = expected_calibration_error(probs, y)
    out["nll"] = float(-np.log(np.clip(probs[np.arange(len(y)), y], 1e-12, 1)).mean())
    out["seconds"] = round(seconds, 2)
    out["contexts_per_s"] = round(len(texts) / max(seconds, 1e-9), 1)
    info = clf.info
    out["runtime"] = info.describe() if info is not None and hasattr(info, "describe") else None
    return out
