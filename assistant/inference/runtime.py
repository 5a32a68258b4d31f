"""ONNX Runtime session factory: one place that picks the device, precision and threads.

``create_session`` prefers ``CUDAExecutionProvider`` (onnxruntime-gpu) when asked for
``device="auto"``/``"cuda"`` and it is available, and falls back to the CPU with a
warning when CUDA was requested but is absent. The precision of a session is the one
of the file it loads (``model.onnx`` fp32, ``model.int8.onnx``, ``model.fp16.onnx``).
"""

from __future__ import annotations

import functools
import logging
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import onnxruntime as ort

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
    #: CUDA sessions: {provider: {op type: nodes}} measured on a warm-up run
    nodes: dict[str, dict[str, int]] = field(default_factory=dict)

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
    """Map ``auto|cpu|cuda`` to the device actually used and any fallback notes.

    ``auto`` follows ``$ASSISTANT_DEVICE`` when set (``cpu`` or ``cuda``: one switch for every
    model of a process, e.g. ``assistant bench query --device``)."""
    device = (device or "auto").lower()
    if device == "auto":
        device = (os.environ.get("ASSISTANT_DEVICE") or "auto").lower()
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


_ORT_VALUES: dict[int, tuple[object, object]] = {}


def _ort_value(array) -> ort.OrtValue:
    """One OrtValue per shared array (kept alive here: sessions borrow its memory)."""
    key = id(array)
    if key not in _ORT_VALUES:
        _ORT_VALUES[key] = (array, ort.OrtValue.ortvalue_from_numpy(array))
    return _ORT_VALUES[key][1]


#: every session opened in this process: (model file, RuntimeInfo), for `models info`/About box
_LOADED: dict[str, RuntimeInfo] = {}


def loaded_runtimes() -> dict[str, RuntimeInfo]:
    """The device/precision of each model file loaded in this process (latest per file)."""
    return dict(_LOADED)


def _session_options(used: str, threads, optimized_model_path, external):
    """``(SessionOptions, providers, disabled optimizers, threads, profile folder or None)`` for
    a session on ``used`` ("cuda" profiles one warm-up run to record where each node runs)."""
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.log_severity_level = 3
    if optimized_model_path:
        opts.optimized_model_filepath = str(optimized_model_path)
    for name, array in (external or {}).items():
        opts.add_initializer(name, _ort_value(array))  # used in place: not copied per session
    if used == "cuda":
        import tempfile

        profile_dir = tempfile.mkdtemp(prefix="ort-profile-")
        opts.enable_profiling = True
        opts.profile_file_prefix = str(Path(profile_dir) / "placement")
        return opts, [CUDA, CPU], [], 0, profile_dir
    # our exports keep residual Add + LayerNormalization apart because onnxruntime's CPU
    # SkipLayerNormalization kernel is ~5x slower than the pair; don't let it re-fuse them
    n_threads = threads or default_threads()
    opts.intra_op_num_threads = n_threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    # no busy-waiting between calls: a GUI app must not burn a core while idle
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return opts, [CPU], ["SkipLayerNormFusion"], n_threads, None


def _record_placement(session, info: RuntimeInfo, path: Path, profile_dir: str) -> None:
    """On CUDA: name the nodes that fell back to the CPU in ``info.notes`` (a warning when they
    are not cheap shape ops); the profile folder is removed."""
    import shutil

    try:
        if info.device == "cuda":
            info.nodes = profile_placement(session)
            note = fallback_note(info.nodes, CUDA)
            if note:
                info.notes.append(note)
                if not set(info.nodes.get(CPU, {})) <= CHEAP_OPS:
                    warnings.warn(f"{path.name}: {note}", RuntimeWarning, stacklevel=3)
    except Exception as exc:  # informational: never fail a load over it
        log.debug("node placement of %s unknown: %s", path, exc)
    finally:
        shutil.rmtree(profile_dir, ignore_errors=True)


def create_session(
    onnx_path: Path | str,
    device: str = "auto",
    threads: int | None = None,
    optimized_model_path: Path | str | None = None,
    external: dict | None = None,
) -> tuple[ort.InferenceSession, RuntimeInfo]:
    """Open ``onnx_path`` on the best allowed device; raise ``ModelLoadError`` if unreadable.

    ``optimized_model_path``: also write the graph onnxruntime actually runs there (for inspection).
    ``external``: ``{initializer name: array}`` the file leaves out (``shared_weights``); the
    arrays are shared, not copied, by every session that names them.
    On CUDA one profiled warm-up run records where each node runs; nodes that fell back to
    the CPU are named in the notes (and warned about when they are not cheap shape ops).
    """
    path = Path(onnx_path)
    if not path.is_file():
        raise ModelLoadError(f"model file not found: {path} (run `assistant models build`)")
    used, notes = resolve_device(device)
    opts, providers, disabled, n_threads, profile_dir = _session_options(
        used, threads, optimized_model_path, external
    )
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
    if profile_dir is not None:
        _record_placement(session, info, path, profile_dir)
    _LOADED[str(path)] = info
    log.debug("ONNX session %s: %s", path, info.describe())
    return session, info


#: ops onnxruntime places on the CPU on purpose in a CUDA session (shape arithmetic)
CHEAP_OPS = {
    "Shape",
    "Gather",
    "Unsqueeze",
    "Squeeze",
    "Concat",
    "Slice",
    "Cast",
    "Reshape",
    "ConstantOfShape",
    "Range",
    "Equal",
    "Where",
    "Expand",
    "MemcpyToHost",
    "MemcpyFromHost",
    "Size",
}


def profile_placement(session: ort.InferenceSession) -> dict[str, dict[str, int]]:
    """``{provider: {op type: nodes}}`` from one warm-up run of a session made with profiling on."""
    import json
    from collections import Counter, defaultdict

    import numpy as np

    feed = {}
    for item in session.get_inputs():
        if item.type != "tensor(int64)":
            raise ValueError(f"cannot make a warm-up input for {item.name} ({item.type})")
        feed[item.name] = np.ones((1, 8), dtype=np.int64)
    session.run(None, feed)
    profile = session.end_profiling()
    with open(profile, encoding="utf-8") as fh:
        events = json.load(fh)
    placed: dict[str, Counter] = defaultdict(Counter)
    for event in events:
        args = event.get("args") or {}
        if event.get("cat") == "Node" and str(event.get("name", "")).endswith("_kernel_time"):
            placed[args.get("provider", "?")][args.get("op_name", "?")] += 1
    return {provider: dict(ops) for provider, ops in placed.items()}


def fallback_note(nodes: dict[str, dict[str, int]], wanted: str) -> str | None:
    """One line naming the nodes that do not run on ``wanted`` (None when all do)."""
    total = sum(sum(ops.values()) for ops in nodes.values())
    elsewhere = {p: ops for p, ops in nodes.items() if p != wanted}
    count = sum(sum(ops.values()) for ops in elsewhere.values())
    if not count:
        return None
    ops = sorted({op for per in elsewhere.values() for op in per})
    where = ", ".join(p.replace("ExecutionProvider", "") for p in sorted(elsewhere))
    return f"{count} of {total} nodes run on {where}, not {wanted.replace('ExecutionProvider', '')} ({', '.join(ops)})"


@functools.cache  # the installed packages stay as they are for the process (read twice a command)
def _distribution(name: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _loadable(*names: str) -> str | None:
    """The first shared library of ``names`` the dynamic loader can open (None if none)."""
    import ctypes

    for name in names:
        try:
            ctypes.CDLL(name)
            return name
        except OSError:
            continue
    return None


def cuda_problems() -> list[str]:
    """Why the CUDA provider cannot start here, one line each (empty when it is available).

    Checks, in order: the onnxruntime build (onnxruntime-gpu), the NVIDIA driver (libcuda),
    and the CUDA/cuDNN runtime libraries onnxruntime-gpu loads (CUDA 12 or 13, cuDNN 9).
    """
    if CUDA in available_providers():
        return []
    problems = []
    gpu = _distribution("onnxruntime-gpu")
    cpu = _distribution("onnxruntime")
    if gpu is None:
        problems.append(
            "onnxruntime-gpu is not installed"
            + (f" (the CPU build onnxruntime {cpu} is)" if cpu else "")
            + ": pip uninstall onnxruntime && pip install 'cite-assist[gpu]'"
        )
    elif cpu is not None:
        problems.append(
            f"both onnxruntime {cpu} and onnxruntime-gpu {gpu} are installed and share one "
            "module: pip uninstall onnxruntime onnxruntime-gpu && pip install 'cite-assist[gpu]'"
        )
    if _loadable("libcuda.so.1", "nvcuda.dll") is None:
        problems.append(
            "no NVIDIA driver found (libcuda.so.1 cannot be loaded): install the NVIDIA driver"
        )
    if gpu is not None:
        try:  # onnxruntime-gpu >= 1.21 can load the CUDA/cuDNN wheels of its [cuda,cudnn] extras
            ort.preload_dlls()
        except Exception as exc:
            log.debug("preload_dlls: %s", exc)
    if (
        _loadable("libcudart.so.13", "libcudart.so.12", "cudart64_13.dll", "cudart64_12.dll")
        is None
    ):
        problems.append(
            "no CUDA runtime (libcudart.so.12/13) found: pip install 'cite-assist[gpu]' brings "
            "the CUDA wheels (onnxruntime-gpu[cuda,cudnn]), or install the CUDA toolkit"
        )
    if _loadable("libcudnn.so.9", "cudnn64_9.dll") is None:
        problems.append(
            "no cuDNN 9 (libcudnn.so.9) found: pip install 'cite-assist[gpu]' brings it "
            "(onnxruntime-gpu[cuda,cudnn])"
        )
    if not problems:
        problems.append(
            "CUDAExecutionProvider is not available although onnxruntime-gpu, the driver and the "
            "CUDA libraries were found: check that their CUDA versions match (onnxruntime-gpu's "
            "release notes)"
        )
    return problems
