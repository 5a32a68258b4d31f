"""The models of the service: build, import, inspect and list them (``assistant models``), and
which device each model of a recommendation really runs on (``models info --all``, About box)."""

from __future__ import annotations

from assistant.inference.build import BUILDERS, MissingWeightsError, build_model, import_hf_dir
from assistant.inference.registry import (
    DEFAULT_ENCODER,
    ModelCorruptedError,
    ModelManifest,
    list_models,
)
from assistant.inference.runtime import ModelLoadError, available_providers, cuda_problems
from assistant.inference.session import OnnxTextModel, allow_parallel_tokenization

__all__ = [
    "BUILDERS",
    "DEFAULT_ENCODER",
    "MissingWeightsError",
    "ModelCorruptedError",
    "ModelLoadError",
    "ModelManifest",
    "OnnxTextModel",
    "allow_parallel_tokenization",
    "available_providers",
    "build_model",
    "cuda_problems",
    "import_hf_dir",
    "list_models",
    "loaded_model_runtimes",
    "model_runtimes",
    "quality_tier",
]


def quality_tier(db_path, quality: str = "auto", device: str = "auto"):
    """The :class:`~assistant.service.quality.TierChoice` of ``quality`` for the library at
    ``db_path`` on this device: the tier in use and why (no model is loaded)."""
    from assistant.service.quality import check_quality, choose_tier

    return choose_tier(check_quality(quality), device, db_path)


def model_runtimes(
    device: str = "auto", encoder_name: str | None = None, tier: str = "fast"
) -> list[dict]:
    """Load the encoder (``encoder_name``: the quality tier's, default minilm), the ``tier``'s
    default reranker and the intent model as a recommendation does and report each one's
    device, provider, precision and notes (CPU fallbacks included)."""
    from assistant.inference.cross_encoder import load_cross_encoder
    from assistant.inference.encoder import load_encoder
    from assistant.inference.intent import IntentClassifier
    from assistant.retrieval.reranker_setting import resolve_reranker

    rows = []
    encoder = load_encoder(encoder_name, device=device)
    rows.append(_row("encoder", encoder.name, encoder.info))
    reranker = resolve_reranker("auto", tier).model
    if reranker:
        model = load_cross_encoder(reranker, device=device)
        rows.append(_row("reranker", model.name, model.info))
    intent = IntentClassifier(device=device)
    rows.append(_row("intent", intent.name, intent.info))
    return rows


def loaded_model_runtimes() -> list[dict]:
    """The models this process has loaded so far (no loading): for the About box."""
    from pathlib import Path

    from assistant.inference.runtime import loaded_runtimes

    return [
        _row("", Path(path).parent.name, info) for path, info in sorted(loaded_runtimes().items())
    ]


def _row(role: str, name: str, info) -> dict:
    return {
        "role": role,
        "name": name,
        "device": info.device,
        "provider": info.provider,
        "precision": info.precision,
        "notes": list(info.notes),
    }
