"""``assistant bench encode``: documents/s of title+abstract encoding, ONNX vs PyTorch, as JSON.

All backends run in one process on the same texts with the same thread count and the
same length-sorted batching (tokenisation included in the timings). Rounds interleave
the backends (order rotated every round) so that load from other jobs on a shared
machine affects them equally; the median round is reported, with ``os.getloadavg()``.
Docs per CPU-second (process time of all threads) is reported too: on a busy machine it
is the steadier measure of how much work each backend needs.

``--device cuda`` measures the GPU variants instead (PyTorch fp32 and fp16 on the GPU,
onnxruntime's CUDA provider in fp32 and fp16); a backend whose runtime cannot reach the GPU
(no CUDA build of torch, no ``onnxruntime-gpu``, provider failing to start) is listed under
``skipped`` with the reason instead of being measured on the CPU under a GPU label.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import resource
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from assistant.errors import AssistantError

Backend = Callable[[list[str], int], np.ndarray]


def _machine() -> dict:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import onnxruntime
    import torch

    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "onnxruntime": onnxruntime.__version__,
        "torch": torch.__version__,
    }


def _rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def _peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 if sys.platform != "darwin" else peak / 2**20


def _sorted_batches(lengths: list[int], batch_size: int):
    order = np.argsort([-n for n in lengths], kind="stable")
    for start in range(0, len(order), batch_size):
        yield order[start : start + batch_size]


class BackendUnavailable(AssistantError):
    """A backend cannot run on the requested device (the message says why)."""


CPU_BACKENDS = ("torch", "onnx-fp32", "onnx-int8")
CUDA_BACKENDS = ("torch", "torch-fp16", "onnx-fp32", "onnx-fp16")
DEFAULT_BACKENDS = {
    "cpu": "torch,onnx-fp32,onnx-int8",
    "cuda": "torch,torch-fp16,onnx-fp32,onnx-fp16",
}


def torch_backend(
    src: Path, max_length: int, pooling: str, threads: int, device: str = "cpu", half: bool = False
) -> Backend:
    """The reference: HF ``AutoModel`` fp32 + fast tokenizer, pooling + L2 norm in torch."""
    import torch
    import transformers

    if device == "cuda" and not torch.cuda.is_available():
        raise BackendUnavailable(f"torch {torch.__version__} sees no CUDA GPU")
    torch.set_num_threads(threads)
    model = (
        transformers.AutoModel.from_pretrained(str(src), local_files_only=True).eval().to(device)
    )
    if half:
        model = model.half()
    tok = transformers.AutoTokenizer.from_pretrained(str(src), use_fast=True, local_files_only=True)

    def encode(texts: list[str], batch_size: int) -> np.ndarray:
        lengths = [len(x) for x in tok(texts, truncation=True, max_length=max_length)["input_ids"]]
        out = np.empty((len(texts), model.config.hidden_size), dtype=np.float32)
        with torch.inference_mode():
            for idx in _sorted_batches(lengths, batch_size):
                enc = tok(
                    [texts[i] for i in idx],
                    padding=True,
                    truncation=True,
                    max_length=max_length,
                    return_tensors="pt",
                ).to(device)
                hidden = model(**enc)[0].float()
                if pooling == "cls":
                    emb = hidden[:, 0]
                else:
                    mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                    emb = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                out[idx] = (
                    torch.nn.functional.normalize(emb, dim=1).cpu().numpy()
                )  # waits for the GPU
        return out

    return encode


def onnx_backend(
    name: str, precision: str, threads: int, max_length: int, device: str = "cpu"
) -> Backend:
    import warnings

    from assistant.inference.encoder import load_encoder

    with warnings.catch_warnings(record=True):  # a CUDA fallback is reported below, not warned
        warnings.simplefilter("always")
        encoder = load_encoder(
            name, device=device, precision=precision, threads=threads, max_length=max_length
        )
    if encoder.info.device != device or encoder.info.precision != precision:
        raise BackendUnavailable(
            f"onnxruntime runs {encoder.info.precision} on {encoder.info.device}, not "
            f"{precision} on {device} ({'; '.join(encoder.info.notes) or 'no reason given'})"
        )
    return lambda texts, bs: encoder.encode(texts, batch_size=bs)


def _torch_source(name: str) -> tuple[Path, str]:
    from assistant.inference.build import minilm_source
    from assistant.inference.registry import ModelManifest, resolve_model_dir

    manifest = ModelManifest.load(resolve_model_dir(name))
    if name == "minilm":
        return minilm_source(), manifest.pooling or "mean"
    if manifest.source.startswith("local:"):
        return Path(manifest.source[len("local:") :]), manifest.pooling or "mean"
    raise AssistantError(
        f"no local PyTorch weights known for {name!r}: the torch backend "
        "supports minilm and imported folders"
    )


def _gpu() -> dict:
    """Name and PyTorch's peak allocation of the GPU (empty when torch sees none)."""
    import torch

    if not torch.cuda.is_available():
        return {}
    return {
        "name": torch.cuda.get_device_name(0),
        "torch_peak_allocated_mb": round(torch.cuda.max_memory_allocated() / 2**20, 1),
    }


def _summarise(
    times,
    sizes,
    embeddings,
    texts,
    n_docs,
    docs_bs1,
    threads,
    max_length,
    model_name,
    device: str = "cpu",
) -> dict:
    med = {
        b: {str(s): round(statistics.median(v), 2) for s, v in per.items()}
        for b, per in times.items()
    }
    ratios = {}
    if "torch" in med:
        for b in med:
            if b != "torch":
                ratios[f"{b}/torch"] = {s: round(med[b][s] / med["torch"][s], 2) for s in med[b]}
    parity = {}
    if "torch" in embeddings:
        ref = embeddings["torch"]
        for b, emb in embeddings.items():
            if b != "torch":
                cos = (emb * ref).sum(1)
                parity[f"{b}_vs_torch"] = {
                    "mean": round(float(cos.mean()), 6),
                    "min": round(float(cos.min()), 6),
                }
    return {
        "benchmark": "encode",
        "model": model_name,
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "machine": _machine(),
        "device": device,
        "threads": threads,
        "max_length": max_length,
        "docs": n_docs,
        "docs_bs1": docs_bs1,
        "mean_chars": round(float(np.mean([len(t) for t in texts])), 1),
        "batching": "length-sorted, padded per batch, tokenisation included (all backends)",
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", ""),
        "docs_per_s_median": med,
        "docs_per_s_runs": {
            b: {str(s): [round(x, 2) for x in v] for s, v in per.items()}
            for b, per in times.items()
        },
        "ratios": ratios,
        "parity_cosine": parity,
    }


def run_encode_bench(
    model_name: str,
    n_docs: int,
    docs_bs1: int,
    sizes: list[int],
    device: str,
    backends: str | None,
    rounds: int,
    threads: int,
    max_length: int,
    texts: list[str],
    say: Callable[[str], None] = lambda _m: None,
) -> dict:
    """Documents/s of each backend on ``texts`` (at least ``max(n_docs, docs_bs1)`` real
    title + abstract strings), interleaved over ``rounds`` (``assistant bench encode``).

    Set ``OMP_WAIT_POLICY=PASSIVE`` before torch loads for a fair PyTorch figure (the CLI does)."""
    # long: a benchmark script: one measured backend after another
    wanted = [b.strip() for b in (backends or DEFAULT_BACKENDS[device]).split(",") if b.strip()]
    known = CPU_BACKENDS if device == "cpu" else CUDA_BACKENDS
    unknown = [b for b in wanted if b not in known]
    if unknown:
        raise AssistantError(
            f"--backends: unknown backend(s) {', '.join(unknown)} for --device {device}; "
            f"choose from {', '.join(known)}"
        )
    load_start = os.getloadavg()
    rss0 = _rss_mb()
    fns: dict[str, Backend] = {}
    rss_load: dict[str, float] = {}
    skipped: dict[str, str] = {}
    for name in wanted:
        before = _rss_mb()
        try:
            if name in ("torch", "torch-fp16"):
                src, pooling = _torch_source(model_name)
                fns[name] = torch_backend(
                    src, max_length, pooling, threads, device, half=name == "torch-fp16"
                )
            else:  # onnx-<precision>
                fns[name] = onnx_backend(
                    model_name, name.split("-")[1], threads, max_length, device
                )
        except BackendUnavailable as exc:
            skipped[name] = str(exc)
            say(f"skipped {name}: {exc}")
            continue
        for _ in range(3 if device == "cuda" else 1):  # warm-up (CUDA: kernels and allocator too)
            fns[name](texts[:32], 32)
        rss_load[name] = round(_rss_mb() - before, 1)
    if not fns:
        raise AssistantError(
            f"no backend can run on {device}: "
            + "; ".join(f"{k}: {v}" for k, v in skipped.items())
            + (
                " (GPU inference needs `pip install .[gpu]` and a CUDA build of torch)"
                if device == "cuda"
                else ""
            )
        )

    times: dict[str, dict[int, list[float]]] = {b: {s: [] for s in sizes} for b in fns}
    cpu_times: dict[str, dict[int, list[float]]] = {b: {s: [] for s in sizes} for b in fns}
    loads = []
    embeddings: dict[str, np.ndarray] = {}
    order = list(fns)
    for r in range(rounds):
        loads.append(os.getloadavg()[0])
        for size in sizes:
            subset = texts[:docs_bs1] if size == 1 else texts[:n_docs]
            for name in order[r % len(order) :] + order[: r % len(order)]:
                t0, c0 = time.perf_counter(), time.process_time()
                emb = fns[name](subset, size)
                times[name][size].append(len(subset) / (time.perf_counter() - t0))
                cpu_times[name][size].append(len(subset) / max(time.process_time() - c0, 1e-9))
                if size != 1:
                    embeddings[name] = emb
                say(
                    f"round {r + 1}/{rounds} batch {size:>3} {name:<12} {times[name][size][-1]:8.1f} docs/s"
                )
    result = _summarise(
        times, sizes, embeddings, texts, n_docs, docs_bs1, threads, max_length, model_name, device
    )
    cpu = _summarise(
        cpu_times, sizes, {}, texts, n_docs, docs_bs1, threads, max_length, model_name, device
    )
    result["docs_per_cpu_s_median"] = cpu["docs_per_s_median"]
    result["ratios_cpu_time"] = cpu["ratios"]
    result.update(
        {
            "loadavg_start": list(load_start),
            "loadavg_end": list(os.getloadavg()),
            "loadavg_1min_per_round": loads,
            "rss_baseline_mb": round(rss0, 1),
            "rss_added_by_load_mb": rss_load,
            "peak_rss_mb": round(_peak_rss_mb(), 1),
            "skipped": skipped,
        }
    )
    if device == "cuda":
        result["gpu"] = _gpu()
    return result
