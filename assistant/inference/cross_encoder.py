"""Cross-encoder reranker: scores (query, document) pairs with one transformer pass each."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from assistant.inference.session import OnnxTextModel, ProgressFn, clean_texts


def logits_to_scores(logits: np.ndarray, mode: str | None = None) -> np.ndarray:
    """One relevance score per row: the logit (1 output) or log-odds of the last class (2+ outputs).

    ``mode="sigmoid"`` maps a single logit to (0, 1) and ``"softmax"`` returns the last
    class probability; both keep the ranking of the default.
    """
    logits = np.asarray(logits, dtype=np.float32)
    if logits.ndim == 1:
        logits = logits[:, None]
    if logits.shape[1] == 1:
        raw = logits[:, 0]
        return 1.0 / (1.0 + np.exp(-raw)) if mode == "sigmoid" else raw
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    if mode == "softmax":
        return np.exp(log_probs[:, -1])
    positive = log_probs[:, -1]
    return positive - np.log(np.maximum(-np.expm1(positive), 1e-12))  # log(p / (1 - p))


class CrossEncoder(OnnxTextModel):
    """``score(query, docs)`` -> float32 ``(len(docs),)``; higher is more relevant."""

    kind = "cross-encoder"

    def score(
        self,
        query: str,
        docs: Sequence[str],
        batch_size: int | None = None,
        progress: ProgressFn | None = None,
    ) -> np.ndarray:
        """Score ``docs`` against ``query``; each pair is truncated to ``max_length`` tokens."""
        docs = clean_texts(docs)
        if not docs:
            return np.zeros(0, dtype=np.float32)
        pairs = [(query or "", d) for d in docs]
        logits = self._run(pairs, batch_size, progress)
        return logits_to_scores(logits, self.manifest.raw.get("score")).astype(np.float32)

    def score_pairs(
        self, pairs: Sequence[tuple[str, str]], batch_size: int | None = None
    ) -> np.ndarray:
        """Score arbitrary (query, doc) pairs."""
        if not pairs:
            return np.zeros(0, dtype=np.float32)
        logits = self._run([(q or "", d or "") for q, d in pairs], batch_size, None)
        return logits_to_scores(logits, self.manifest.raw.get("score")).astype(np.float32)

    def __repr__(self) -> str:
        return f"CrossEncoder({self.name!r}, {self.info.describe()})"


def load_cross_encoder(
    path_or_name: str | os.PathLike,
    device: str = "auto",
    precision: str = "auto",
    *,
    threads: int | None = None,
    max_length: int | None = None,
) -> CrossEncoder:
    """Load a cross-encoder folder (``kind: cross-encoder`` in its manifest) by path or name."""
    return CrossEncoder(
        path_or_name, device=device, precision=precision, threads=threads, max_length=max_length
    )
