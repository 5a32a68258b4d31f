"""Sequence classifier head (e.g. citation intent): texts -> class probabilities."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from assistant.inference.session import OnnxTextModel, ProgressFn, clean_texts


def softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    return exp / exp.sum(axis=1, keepdims=True)


class SequenceClassifier(OnnxTextModel):
    """``predict_proba(texts)`` -> ``(n, len(labels))`` rows summing to 1; ``labels`` in column order."""

    kind = "classifier"

    @property
    def labels(self) -> list[str]:
        labels = self.manifest.labels
        if not labels:
            width = self.session.get_outputs()[0].shape[1]
            return [str(i) for i in range(width if isinstance(width, int) else 0)]
        return list(labels)

    def predict_logits(
        self,
        texts: Sequence[str] | str,
        batch_size: int | None = None,
        progress: ProgressFn | None = None,
    ) -> np.ndarray:
        texts = clean_texts(texts)
        if not texts:
            return np.zeros((0, len(self.labels)), dtype=np.float32)
        return self._run(texts, batch_size, progress)

    def predict_proba(
        self,
        texts: Sequence[str] | str,
        batch_size: int | None = None,
        progress: ProgressFn | None = None,
    ) -> np.ndarray:
        """Class probabilities (softmax over the logits); texts are truncated to ``max_length``."""
        logits = self.predict_logits(texts, batch_size, progress)
        if logits.shape[0] == 0:
            return logits
        return softmax(logits.astype(np.float64)).astype(np.float32)

    def predict(self, texts: Sequence[str] | str, batch_size: int | None = None) -> list[str]:
        """The most probable label per text."""
        proba = self.predict_proba(texts, batch_size)
        return [self.labels[i] for i in proba.argmax(axis=1)]

    def __repr__(self) -> str:
        return f"SequenceClassifier({self.name!r}, labels={self.labels}, {self.info.describe()})"


def load_classifier(
    path_or_name: str | os.PathLike,
    device: str = "auto",
    precision: str = "auto",
    *,
    threads: int | None = None,
    max_length: int | None = None,
) -> SequenceClassifier:
    """Load a classifier folder (``kind: classifier`` with ``labels``) by path or name."""
    return SequenceClassifier(
        path_or_name, device=device, precision=precision, threads=threads, max_length=max_length
    )
