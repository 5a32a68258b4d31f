"""Models shipped as a delta to rebuild: where their recipe lives (light: no model code).

A model fine-tuned from installed base weights can ship as ``<name>-delta/`` in the shipped
models dir: ``recipe.json`` (the delta file, its sha256, the fields the built manifest carries)
and the delta itself (``assistant.inference.weight_delta``). ``assistant.inference.build``
rebuilds it on first use; the pipeline's reranker choice reads the recipes without loading
onnxruntime.
"""

from __future__ import annotations

import json
from pathlib import Path

from assistant import config

RECIPE = "recipe.json"
DELTA_SUFFIX = "-delta"  # a model shipped as a delta lives in ``<name>-delta/``


def shipped_recipe(name: str) -> tuple[Path, dict] | None:
    """``(folder, recipe)`` of a model shipped as a delta to rebuild (``<name>-delta/``), or None."""
    folder = config.SHIPPED_MODELS_DIR / f"{name}{DELTA_SUFFIX}"
    try:
        return folder, json.loads((folder / RECIPE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def delta_models() -> list[str]:
    """The names of the models this install ships as a delta (built on first use)."""
    return sorted(
        p.parent.name.removesuffix(DELTA_SUFFIX)
        for p in config.SHIPPED_MODELS_DIR.glob(f"*{DELTA_SUFFIX}/{RECIPE}")
    )
