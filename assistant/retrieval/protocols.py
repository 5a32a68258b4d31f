"""Typed seams of the recommendation pipeline (as pyserini's searchers and inCite's rankers).

:class:`~assistant.retrieval.pipeline.Recommender` talks to its parts only through these
protocols, so a test or a plugin can swap one (a BM25-only searcher, another encoder, a remote
reranker) without touching the pipeline. The shipped implementations are
``retrieval.searcher.Searcher``, ``inference.encoder.Encoder``,
``inference.cross_encoder.CrossEncoder`` and ``retrieval.intent_stage.label_recommendations``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from assistant.progress import Progress
    from assistant.retrieval.query import QueryParts

#: ``(paper ids, scores)``, best first.
Run = tuple[np.ndarray, np.ndarray]


@runtime_checkable
class Encoder(Protocol):
    """Texts -> L2-normalised float32 vectors ``(n, dim)``."""

    name: str

    @property
    def dim(self) -> int: ...

    @property
    def fingerprint(self) -> str:
        """Identifies weights + precision + max length (an index built with another is stale)."""
        ...

    def encode(
        self,
        texts: Sequence[str] | str,
        batch_size: int = 32,
        progress: Progress | None = None,
    ) -> np.ndarray: ...


@runtime_checkable
class Searcher(Protocol):
    """First-stage retrieval over one library's committed index (BM25 + dense)."""

    encoder: Encoder | None
    warnings: list[str]

    @property
    def has_dense(self) -> bool: ...

    def allowed_mask(self, excluded: set[int], max_year: int | None) -> np.ndarray | None: ...

    def bm25_search(
        self,
        parts: QueryParts,
        support_weight: float,
        depth: int,
        allowed: np.ndarray | None,
        query_tf: bool = True,
    ) -> Run: ...

    def dense_search(
        self,
        parts: QueryParts,
        support_weight: float,
        depth: int,
        allowed: np.ndarray | None,
        timings: dict[str, float] | None = None,
    ) -> Run: ...


@runtime_checkable
class Reranker(Protocol):
    """A cross-encoder: one relevance score per ``(query, doc)`` pair."""

    def score(self, query: str, docs: Sequence[str]) -> np.ndarray: ...


class IntentLabeller(Protocol):
    """Fills ``intent``/``intent_confidence``/``intent_probs`` of recommendations (and re-ranks
    them for a ``preference``); returns the items in their new order."""

    def __call__(
        self, query_text: str, items: list[Any], library: Any, preference: str | None = None
    ) -> list[Any]: ...
