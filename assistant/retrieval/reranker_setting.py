"""The one reading of a reranker setting (``"auto"``, off, or a model) into pipeline knobs.

A shipped cross-encoder says in its ``manifest.json`` whether it is on by default
(``enabled_by_default``) and how the pipeline uses it (``rerank_weight``: final =
w * z(rerank) + (1 - w) * z(score before reranking); ``rerank_top``: only that head of the order
is reranked). Both were chosen on the ACM-CR dev set by leave-one-citing-paper-out CV.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from assistant.retrieval.pipeline import PipelineConfig

OFF = ("", "none", "off")


@dataclass(frozen=True)
class RerankerSetting:
    """A cross-encoder (folder or name; None = no reranking) and how the pipeline applies it."""

    model: str | None = None
    weight: float | None = None  # None: the pipeline's default (rerank score only)
    top: int | None = None  # None: rerank every candidate

    def apply(self, config: PipelineConfig) -> PipelineConfig:
        """``config`` with this reranker and, where set, its weight and head size."""
        out = replace(config, reranker=self.model)
        if self.weight is not None:
            out = replace(out, rerank_weight=self.weight)
        if self.top is not None:
            out = replace(out, rerank_top=self.top)
        return out


def resolve_reranker(setting: str | None, tier: str = "fast") -> RerankerSetting:
    """``"auto"`` = the shipped cross-encoder of the quality ``tier`` when it is enabled by
    default (with its tuned weight and head), ``None``/``""``/``"none"``/``"off"`` = no
    reranking, anything else = that folder or model name, applied with its manifest's weight
    and head when it names them (a model trained for the pipeline), else every candidate by
    its score only."""
    if setting is None or setting.strip().lower() in OFF:
        return RerankerSetting()
    if setting == "auto":
        return shipped_reranker(tier) or RerankerSetting()
    from assistant.inference.recipes import shipped_recipe
    from assistant.inference.registry import find_model_dir

    folder = find_model_dir(setting)
    meta = _manifest(folder) if folder is not None else {}
    if folder is None and (recipe := shipped_recipe(setting)) is not None:
        meta = recipe[1].get("manifest") or {}  # shipped as a delta, built on first use
    return _setting(setting, meta if isinstance(meta, dict) else {}, tier)


def _manifest(folder: Path) -> dict:
    """A model folder's ``manifest.json`` ({} when it has none or it is unreadable)."""
    try:
        meta = json.loads((folder / "manifest.json").read_text())
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def _setting(model: str, meta: dict, tier: str) -> RerankerSetting:
    """``model`` with the weight and head its manifest gives for ``tier`` (``by_tier``)."""
    knobs = {**meta, **((meta.get("by_tier") or {}).get(tier) or {})}
    weight, top = knobs.get("rerank_weight"), knobs.get("rerank_top")
    return RerankerSetting(
        model,
        float(weight) if isinstance(weight, (int, float)) else None,
        int(top) if isinstance(top, int) and top > 0 else None,
    )


def shipped_reranker(tier: str = "fast") -> RerankerSetting | None:
    """The shipped cross-encoder enabled by default for ``tier``, else None.

    A manifest names the tier it was trained for (``"tier"``, default ``fast``); a tier without
    its own uses the fast tier's. ``"by_tier": {tier: {"rerank_weight": w, "rerank_top": t}}``
    overrides how the pipeline applies it on that tier (chosen by CV on that tier's order). A
    manifest with ``"enabled_by_default": false`` -- it did not help on the dev set -- is
    skipped. A cross-encoder shipped as a delta (``reranker-mpnet``) counts once it is built
    into the models dir; until then its tier uses the fast tier's."""
    from assistant.config import SHIPPED_MODELS_DIR, models_dir
    from assistant.inference.recipes import delta_models

    if not SHIPPED_MODELS_DIR.is_dir():
        return None
    built = [models_dir() / name for name in delta_models()]  # first: they name their tier
    found: dict[str, tuple[str, dict]] = {}
    for folder in [*built, *sorted(SHIPPED_MODELS_DIR.iterdir())]:
        meta = _manifest(folder)
        if meta.get("kind") == "cross-encoder" and meta.get("enabled_by_default", True):
            found.setdefault(str(meta.get("tier") or "fast"), (str(folder), meta))
    folder, meta = found.get(tier) or found.get("fast") or (None, {})
    return None if folder is None else _setting(folder, meta, tier)
