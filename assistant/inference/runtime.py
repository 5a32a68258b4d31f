"""ONNX Runtime session factory: one place that picks the device, precision and threads.

``create_session`` prefers ``CUDAExecutionProvider`` (onnxruntime-gpu) when asked for
``device="auto"``/``"cuda"`` and it is available, and falls back to the CPU with a
warning when CUDA was requested but is absent. The precision of a session is the one
of the file it loads (``model.onnx`` fp32, ``model.int8.onnx``, ``model.fp16.onnx``).
"""

from __future__ import annotations

import logging
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import onnxruntime as ort

from assistant import filewrite
from assistant.errors import AssistantError

log = logging.getLogger(__name__)

CUDA = "CUDAExecutionProvider"
CPU = "CPUExecutionProvider"

FP32_FILE = "model.onnx"
INT8_FILE = "model.int8.onnx"
FP16_FILE = "model.fp16.onnx"


class ModelLoadError(AssistantError, RuntimeError):
    """An ONNX file is missing, truncated or corrupted; the message says how to rebuild it."""


@dataclass
class RuntimeInfo:
    """Which device/provider/precision a session runs with (shown by ``assistant models info``)."""

    device: str  # "cpu" | "cuda"
    provider: str  # e.g. "CPUExecutionProvider"
    precision: str  # "fp32" | "int8" | "fp16"
    threads: int  # intra-op threads (0 = provider default, CUDA)
    model_path: str = ""
    notes: list[str] = field(default_factory=list)

    def describe(self) -> str:
        text = f"{self.device} ({self.provider}), {self.precision}, {self.threads} thread(s)"
        return text + ("; " + "; ".join(self.notes) if self.notes else "")


def available_providers() -> list[str]:
    """The execution providers of the installed onnxruntime (patched in tests)."""
    return list(ort.get_available_providers())


def default_threads() -> int:
    """Intra-op threads for a desktop app: ``$ASSISTANT_THREADS`` or leave a core for the GUI.

    On machines with more than 2 cores one core is left free (capped at 8); on 1-2
    core machines all cores are used, since one thread halves throughput there.
    """
    env = os.environ.get("ASSISTANT_THREADS")
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            log.warning("ignoring ASSISTANT_THREADS=%r (not an integer)", env)
    cores = os.cpu_count() or 1
    return cores if cores <= 2 else min(8, cores - 1)


def resolve_device(device: str = "auto") -> tuple[str, list[str]]:
    """Map ``auto|cpu|cuda`` to the device actually used and any fallback notes."""
    device = (device or "auto").lower()
    if device not in ("auto", "cpu", "cuda", "gpu"):
        raise ValueError(f"unknown device {device!r}: expected auto, cpu or cuda")
    if device == "cpu":
        return "cpu", []
    has_cuda = CUDA in available_providers()
    if has_cuda:
        return "cuda", []
    if device in ("cuda", "gpu"):
        note = "CUDA requested but CUDAExecutionProvider is not available (install onnxruntime-gpu); using CPU"
        warnings.warn(note, RuntimeWarning, stacklevel=3)
        return "cpu", [note]
    return "cpu", []


def precision_of(onnx_path: Path | str) -> str:
    """The precision a model file holds, from its name."""
    name = Path(onnx_path).name
    if ".int8." in name:
        return "int8"
    if ".fp16." in name:
        return "fp16"
    return "fp32"


def create_session(
    onnx_path: Path | str,
    device: str = "auto",
    threads: int | None = None,
    optimized_model_path: Path | str | None = None,
) -> tuple[ort.InferenceSession, RuntimeInfo]:
    """Open ``onnx_path`` on the best allowed device; raise ``ModelLoadError`` if unreadable.

    ``optimized_model_path``: also write the graph onnxruntime actually runs there (for inspection).
    """
    path = Path(onnx_path)
    if not path.is_file():
        raise ModelLoadError(f"model file not found: {path} (run `assistant models build`)")
    used, notes = resolve_device(device)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.log_severity_level = 3
    if optimized_model_path:
        opts.optimized_model_filepath = str(optimized_model_path)
    disabled: list[str] = []
    if used == "cuda":
        providers = [CUDA, CPU]
        n_threads = 0
    else:
        # our exports keep residual Add + LayerNormalization apart because onnxruntime's CPU
        # SkipLayerNormalization kernel is ~5x slower than the pair; don't let it re-fuse them
        disabled = ["SkipLayerNormFusion"]
        providers = [CPU]
        n_threads = threads or default_threads()
        opts.intra_op_num_threads = n_threads
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        # no busy-waiting between calls: a GUI app must not burn a core while idle
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        session = ort.InferenceSession(
            str(path), sess_options=opts, providers=providers, disabled_optimizers=disabled
        )
    except Exception as exc:  # onnxruntime raises its own Fail/InvalidProtobuf/... types
        raise ModelLoadError(
            f"cannot load ONNX model {path}: {exc.__class__.__name__}: {str(exc).strip()[:300]}\n"
            f"The file looks corrupted or incomplete. Rebuild it with "
            f"`assistant models build --force` (or re-import the model)."
        ) from exc
    actual = session.get_providers()[0]
    if used == "cuda" and actual != CUDA:
        note = f"CUDA provider failed to initialise ({actual} used instead)"
        warnings.warn(note, RuntimeWarning, stacklevel=2)
        notes.append(note)
        used = "cpu"
    info = RuntimeInfo(used, actual, precision_of(path), n_threads, str(path), notes)
    log.debug("ONNX session %s: %s", path, info.describe())
    return session, info


def fp16_variant(fp32_path: Path) -> tuple[Path, str | None]:
    """Return a float16 copy of ``fp32_path`` for GPUs (made once, next to it).

    Uses ``onnxruntime.transformers.float16`` with fp32 inputs/outputs kept and
    LayerNorm/Softmax-sensitive ops blocked. Returns ``(path, note)``; on failure the
    fp32 file and a note explaining the fallback.
    """
    out = fp32_path.with_name(FP16_FILE)
    if out.is_file() and out.stat().st_mtime >= fp32_path.stat().st_mtime:
        return out, None
    try:
        import onnx
        from onnxruntime.transformers.float16 import convert_float_to_float16
    except ImportError as exc:  # pragma: no cover - depends on the installed runtime
        return fp32_path, f"fp16 conversion unavailable ({exc}); running fp32 on GPU"
    try:
        model = onnx.load(str(fp32_path))
        half = convert_float_to_float16(
            model,
            keep_io_types=True,
            op_block_list=[
                "LayerNormalization",
                "SkipLayerNormalization",
                "Softmax",
                "ReduceMean",
                "ReduceSum",
                "ReduceL2",
                "Div",
                "Sqrt",
                "Pow",
            ],
        )
        filewrite.save_with(out, lambda tmp: onnx.save(half, tmp))
        return out, None
    except Exception as exc:  # pragma: no cover - GPU path, not testable on CPU-only CI
        return (
            fp32_path,
            f"fp16 conversion failed ({exc.__class__.__name__}: {exc}); running fp32 on GPU",
        )
