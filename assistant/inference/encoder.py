"""Bi-encoder: texts -> L2-normalised sentence embeddings (pooling is inside the ONNX graph)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from assistant.inference.registry import DEFAULT_ENCODER, ModelManifest, find_model_dir
from assistant.inference.runtime import precision_of, resolve_device
from assistant.inference.session import OnnxTextModel, ProgressFn, choose_file, clean_texts
from assistant.progress import Progress


class Encoder(OnnxTextModel):
    """A sentence encoder; ``encode`` returns float32 ``(n, dim)`` unit vectors."""

    kind = "encoder"

    @property
    def dim(self) -> int:
        return int(self.manifest.dim)

    @property
    def fingerprint(self) -> str:
        """Identifies model weights + precision + max length (an index built with another is stale)."""
        return fingerprint_of(self.manifest, self.info.precision, self.max_length)

    def encode(
        self,
        texts: Sequence[str] | str,
        batch_size: int | None = None,
        progress: ProgressFn | None = None,
    ) -> np.ndarray:
        """Embed ``texts`` (longest first, padded per batch); inputs over ``max_length`` tokens are
        truncated. ``batch_size=None``: the device's default (32 on CPU, 256 on CUDA)."""
        vectors = self._run(clean_texts(texts), batch_size, progress)
        if vectors.shape[0] == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        # the graph normalises already; renormalising guards fp16/int8 drift
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return (vectors / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)

    def __repr__(self) -> str:
        return f"Encoder({self.name!r}, dim={self.dim}, {self.info.describe()})"


def load_encoder(
    name: str | os.PathLike | None = None,
    device: str = "auto",
    precision: str = "auto",
    *,
    threads: int | None = None,
    max_length: int | None = None,
    progress: Progress | None = None,
) -> Encoder:
    """Load an encoder by name or folder (default ``minilm``, built from pip weights if missing).

    ``precision``: ``auto`` (int8 on CPU, fp16 on CUDA), ``fp32``, ``int8`` or ``fp16``.
    Raises ``ModelNotFoundError`` / ``ModelLoadError`` with a message saying how to fix it.
    """
    return Encoder(
        name or DEFAULT_ENCODER,
        device=device,
        precision=precision,
        threads=threads,
        max_length=max_length,
        progress=progress,
    )


def fingerprint_of(manifest: ModelManifest, precision: str, max_length: int) -> str:
    """:attr:`Encoder.fingerprint` of a model folder run at ``precision`` and ``max_length``."""
    digest = (manifest.files.get("int8" if precision == "int8" else "fp32") or "")[:16]
    return f"{manifest.name}:{precision}:{digest}:L{max_length}"


@dataclass(frozen=True)
class EncoderPlan:
    """What :func:`load_encoder` would load, read from the model's manifest alone (no ONNX
    session, no tokenizer): enough to tell whether an index is current without loading it."""

    manifest: ModelManifest
    precision: str
    max_length: int

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def dim(self) -> int:
        return int(self.manifest.dim)

    @property
    def fingerprint(self) -> str:
        return fingerprint_of(self.manifest, self.precision, self.max_length)


def plan_encoder(
    name: str | os.PathLike | None = None,
    device: str = "auto",
    precision: str = "auto",
    *,
    max_length: int | None = None,
) -> EncoderPlan | None:
    """The :class:`EncoderPlan` of ``load_encoder(name, device, precision, max_length=...)`` on
    the CPU; None where only loading can tell (a model not built yet, a CUDA device)."""
    folder = find_model_dir(name or DEFAULT_ENCODER)
    if folder is None or resolve_device(device)[0] != "cpu":
        return None
    manifest = ModelManifest.load(folder)
    if manifest.kind != Encoder.kind:
        return None
    length = int(min(max_length or manifest.max_length, manifest.max_length))
    path, _, _ = choose_file(manifest, "cpu", precision)
    return EncoderPlan(manifest, precision_of(path), length)
