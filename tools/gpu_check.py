"""The GPU acceptance figures of issue #30 in one JSON, for an offline CUDA machine.

The GPU machine gets the git tree plus small transfers (<= 64 MiB each) and has Python 3.12 with
a CUDA build of torch, but no onnxruntime-gpu, onnx or tokenizers. So, in three steps:

1. here (CPU, PyPI reachable):   python tools/gpu_check.py pack gpu-transfer
   writes gpu-transfer/ort/part1, part2 (onnxruntime-gpu, ../shared/gpu/ort_gpu_bundle.py),
   gpu-transfer/deps/ (cp312 wheels: onnx, tokenizers, ...), gpu-transfer/models.tar.xz (timing
   models with MiniLM's architecture: ../shared/gpu/timing_models.py, exported with
   `assistant models import`) and gpu-transfer/texts.json.xz (16,384 real ACM titles+abstracts).
2. on the GPU machine, one transfer per part (see assistant/models/BENCHMARKS.md):
   python3 tools/gpu_check.py setup gpu-transfer --site /tmp/ort-site
3. on the GPU machine:            python3 tools/gpu_check.py run gpu-transfer --site /tmp/ort-site
   prints JSON: card, providers, fp16 validity, node placement, index docs/s (tokenisation
   included, 256 tokens), rerank top-20/top-100 and intent-20 latency, fp16-vs-fp32 cosine,
   and each acceptance target with pass/fail.

`run --device cpu --docs 256` exercises the same code on a CPU (smoke test, no targets).
Timing models have throw-away weights: their cosine is a numerics check of the fp16 graph, not
a quality figure (the real encoder's fp16-vs-fp32 cosine is measured on CPU by the test suite).
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
#: module -> wheel name for what the GPU machine may lack (installed only when missing)
DEPS = {
    "onnx": "onnx",
    "tokenizers": "tokenizers",
    "platformdirs": "platformdirs",
    "google.protobuf": "protobuf",
    "ml_dtypes": "ml_dtypes",
    "typing_extensions": "typing_extensions",
    "numpy": "numpy<2",
    "sympy": "sympy",
    "mpmath": "mpmath",
    "flatbuffers": "flatbuffers",
    "packaging": "packaging",
}
TIMING_FILES = ("model.onnx", "manifest.json", "tokenizer.json")
TARGETS = {
    "index_docs_per_s": (">=", 5000),
    "rerank_top20_p50_ms": ("<=", 10),
    "rerank_top100_p50_ms": ("<=", 40),
    "intent_20_p50_ms": ("<=", 10),
    "fp16_fp32_cosine_min": (">=", 0.999),
}


def _sh(*args: str, **kw) -> None:
    print("+", " ".join(args), file=sys.stderr)
    subprocess.run(args, check=True, **kw)


def pack(out: Path, n_texts: int, runtime: bool = True) -> None:
    """Everything the GPU machine needs besides the git tree (run here, on the CPU)."""
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    py = sys.executable
    if runtime:
        _pack_runtime(out)
    from assistant.inference.build import minilm_source

    raw, models = out / "timing-hf", out / "models"
    _sh(py, str(SHARED / "gpu" / "timing_models.py"), str(minilm_source()), str(raw))
    menv = {**env, "ASSISTANT_MODELS": str(models)}
    cli = [py, "-m", "assistant.cli", "models", "import"]
    _sh(*cli, str(raw / "encoder"), "--name", "timing-encoder", "--force", env=menv)
    _sh(*cli, str(raw / "cross-encoder"), "--name", "timing-reranker", "--kind", "cross-encoder",
        "--max-length", "128", "--force", env=menv)  # fmt: skip
    # fp32 graphs only (the GPU makes its fp16 files); the intent timing model is the
    # reranker's graph as a one-label classifier, made on the GPU machine by `setup`
    keep = [f"models/{m}/{f}" for m in ("timing-encoder", "timing-reranker") for f in TIMING_FILES]
    _sh("tar", "-cf", str(out / "models.tar.xz"), "-I", "xz -T0", "-C", str(out), *keep)
    texts = _acm_texts(n_texts)
    (out / "texts.json.xz").write_bytes(lzma.compress(json.dumps(texts).encode()))
    print(json.dumps({"transfer": str(out), "texts": len(texts)}))


def _pack_runtime(out: Path) -> None:
    """onnxruntime-gpu in two <= 60 MB parts, and the cp312 wheels of the other dependencies."""
    py = sys.executable
    _sh(py, str(SHARED / "gpu" / "ort_gpu_bundle.py"), str(out / "ort"))
    _sh(py, "-m", "pip", "download", "--only-binary=:all:", "--no-deps", "--python-version",
        "3.12", "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux2014_x86_64",
        "-d", str(out / "deps"), *DEPS.values())  # fmt: skip


def _acm_texts(n: int) -> list[str]:
    """Real title + abstract strings from the ACM-DL archive (a few files, no library import)."""
    import tarfile

    import bibtexparser

    texts: list[str] = []
    with tarfile.open(SHARED / "data" / "acm-cr" / "acm-dl.tar.xz") as tar:
        for member in tar:
            if len(texts) >= n:
                break
            if not member.name.endswith(".bib"):
                continue
            data = tar.extractfile(member).read().decode("utf-8", "replace")
            for e in bibtexparser.parse_string(data).entries:
                f = e.fields_dict
                if "title" in f and "abstract" in f:
                    texts.append(f"{f['title'].value}. {f['abstract'].value}")
    return texts[:n]


def setup(transfer: Path, site: Path) -> None:
    """On the GPU machine: unpack onnxruntime-gpu and install what is missing into ``site``."""
    import importlib.util

    for part in sorted((transfer / "ort").glob("part*")):
        _sh(sys.executable, str(part / "unpack.py"), str(site))
    missing = [w for m, w in DEPS.items() if importlib.util.find_spec(m) is None]
    if missing:
        _sh(sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", "--find-links",
            str(transfer / "deps"), "--target", str(site), *missing)  # fmt: skip
    if (transfer / "models.tar.xz").is_file() and not (transfer / "models").is_dir():
        _sh("tar", "-xJf", str(transfer / "models.tar.xz"), "-C", str(transfer))
    _intent_timing_model(transfer / "models")
    print(json.dumps({"site": str(site), "installed": missing}))


def _intent_timing_model(models: Path) -> None:
    """timing-intent: the reranker's timing graph as a one-label classifier (same cost)."""
    import shutil

    src, dst = models / "timing-reranker", models / "timing-intent"
    if dst.is_dir() or not src.is_dir():
        return
    shutil.copytree(src, dst)
    manifest = json.loads((dst / "manifest.json").read_text(encoding="utf-8"))
    manifest.update(name="timing-intent", kind="classifier", labels=["score"])
    (dst / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")


def percentiles(ms: list[float]) -> dict:
    """``{"p50_ms", "p95_ms"}`` of timings in milliseconds."""
    import numpy as np

    return {"p50_ms": round(float(np.median(ms)), 2), "p95_ms": round(float(np.percentile(ms, 95)), 2)}  # fmt: skip


def _latency(fn, reps: int = 50, warm: int = 5) -> dict:
    for _ in range(warm):
        fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return percentiles(times)


def run(transfer: Path, device: str, n_docs: int) -> dict:
    """The figures; ``device="cpu"`` is a smoke test of the same code."""
    os.environ["ASSISTANT_MODELS"] = str(transfer / "models")

    from assistant.inference import runtime
    from assistant.inference.classifier import load_classifier
    from assistant.inference.cross_encoder import load_cross_encoder
    from assistant.inference.encoder import load_encoder
    from assistant.inference.fp16 import fp16_file, validate
    from assistant.inference.registry import ModelManifest, resolve_model_dir
    from assistant.inference.session import allow_parallel_tokenization

    out: dict = {"device": device, "providers": runtime.available_providers()}
    try:
        import torch

        out["card"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except ImportError:
        out["card"] = None
    if device == "cuda" and runtime.CUDA not in out["providers"]:
        out["cuda_problems"] = runtime.cuda_problems()
        return out
    texts = json.loads(lzma.decompress((transfer / "texts.json.xz").read_bytes()))[:n_docs]
    out["fp16_files"] = {}
    for name in ("timing-encoder", "timing-reranker", "timing-intent"):
        path, _ = fp16_file(ModelManifest.load(resolve_model_dir(name, build_missing=False)))
        validate(path)
        out["fp16_files"][name] = "valid (onnx.checker full + onnxruntime)"
    allow_parallel_tokenization()
    enc = load_encoder("timing-encoder", device=device, max_length=256)
    out["encoder"] = {"runtime": enc.info.describe(), "nodes": enc.info.nodes}
    enc.encode(texts[:512])  # warm-up: kernels, allocator
    for batch in (None, 32, 512):
        t = time.perf_counter()
        enc.encode(texts, batch_size=batch)
        rate = len(texts) / (time.perf_counter() - t)
        out[f"index_docs_per_s_batch_{batch or enc.default_batch_size}"] = round(rate, 1)
    out["index_docs_per_s"] = out[f"index_docs_per_s_batch_{enc.default_batch_size}"]
    ref = load_encoder("timing-encoder", device=device, precision="fp32", max_length=256)
    a, b = enc.encode(texts[:1024]), ref.encode(texts[:1024])
    out["fp16_fp32_cosine_min"] = round(float((a * b).sum(1).min()), 6)
    out["fp16_fp32_cosine_weights"] = "timing (throw-away): numerics check only"
    rr = load_cross_encoder("timing-reranker", device=device)
    out["reranker"] = {"runtime": rr.info.describe(), "nodes": rr.info.nodes}
    query = texts[0][:200]
    for k in (20, 100):
        docs = texts[1 : 1 + k]
        lat = _latency(lambda docs=docs: rr.score(query, docs))
        out[f"rerank_top{k}_p50_ms"], out[f"rerank_top{k}_p95_ms"] = lat["p50_ms"], lat["p95_ms"]
    clf = load_classifier("timing-intent", device=device)
    out["intent"] = {"runtime": clf.info.describe(), "nodes": clf.info.nodes}
    contexts = [t[:300] for t in texts[:20]]
    lat = _latency(lambda: clf.predict_logits(contexts))
    out["intent_20_p50_ms"], out["intent_20_p95_ms"] = lat["p50_ms"], lat["p95_ms"]
    if device == "cuda":
        out["acceptance"] = {
            k: (out[k] >= v if op == ">=" else out[k] <= v) for k, (op, v) in TARGETS.items()
        }
    return out


def parity(n: int) -> dict:
    """fp16 vs fp32 of the real models on the sample library's abstracts, on the CPU
    (onnxruntime's CPU provider runs the fp16 graphs): encoder cosine, reranker/intent logits."""
    import bibtexparser
    import numpy as np
    import onnxruntime as ort

    from assistant.config import SHIPPED_MODELS_DIR
    from assistant.inference.dequantize import dequantize_int8
    from assistant.inference.fp16 import fp16_file
    from assistant.inference.registry import ModelManifest, load_tokenizer, resolve_model_dir
    from assistant.inference.shared_weights import external_initializers, restore

    lib = bibtexparser.parse_file(str(SHIPPED_MODELS_DIR.parent / "resources/sample/library.bib"))
    texts = [
        f"{e.fields_dict['title'].value}. {e.fields_dict['abstract'].value}"
        for e in lib.entries
        if "abstract" in e.fields_dict and "title" in e.fields_dict
    ][:n]
    out: dict = {"texts": len(texts), "source": "assistant/resources/sample/library.bib"}
    cpu = ["CPUExecutionProvider"]
    for name in ("minilm", "reranker-minilm", "intent-minilm"):
        manifest = ModelManifest.load(resolve_model_dir(name))
        tok = load_tokenizer(manifest)
        tok.enable_padding(pad_id=manifest.pad_token_id)
        rows = []
        for start in range(0, len(texts), 32):
            enc = tok.encode_batch(texts[start : start + 32])
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            rows.append({k: feed[k] for k in manifest.inputs})
        half = ort.InferenceSession(str(fp16_file(manifest)[0]), providers=cpu)
        if manifest.has("fp32"):
            full = ort.InferenceSession(str(manifest.file_for("fp32")), providers=cpu)
        else:  # the fp32 graph the fp16 one is made from: dequantized int8 weights
            import onnx

            model = restore(
                onnx.load(str(manifest.file_for("int8")), load_external_data=False),
                external_initializers(manifest.raw),
            )
            full = ort.InferenceSession(dequantize_int8(model).SerializeToString(), providers=cpu)
        a = np.concatenate([full.run(None, f)[0] for f in rows])
        b = np.concatenate([half.run(None, f)[0] for f in rows])
        if manifest.kind == "encoder":
            b = b / np.linalg.norm(b, axis=1, keepdims=True)
            cos = (a * b).sum(1)
            out[name] = {
                "cosine_min": round(float(cos.min()), 7),
                "cosine_mean": round(float(cos.mean()), 7),
            }
        else:
            out[name] = {
                "max_abs_logit_diff": round(float(np.abs(a - b).max()), 5),
                "argmax_agree": float((a.argmax(1) == b.argmax(1)).mean())
                if a.shape[1] > 1
                else None,
                "logit_range": [round(float(a.min()), 3), round(float(a.max()), 3)],
            }
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pack")
    p.add_argument("out", type=Path)
    p.add_argument("--texts", type=int, default=16384)
    p.add_argument(
        "--no-runtime", action="store_true", help="models and texts only (for a CPU smoke test)"
    )
    s = sub.add_parser("setup")
    s.add_argument("transfer", type=Path)
    s.add_argument("--site", type=Path, default=Path("/tmp/ort-site"))
    r = sub.add_parser("run")
    r.add_argument("transfer", type=Path)
    r.add_argument("--site", type=Path, default=Path("/tmp/ort-site"))
    r.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    r.add_argument("--docs", type=int, default=16384)
    q = sub.add_parser("parity")
    q.add_argument("--texts", type=int, default=176)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    if args.cmd == "pack":
        pack(args.out, args.texts, runtime=not args.no_runtime)
    elif args.cmd == "parity":
        print(json.dumps(parity(args.texts), indent=2))
    elif args.cmd == "setup":
        setup(args.transfer, args.site)
    else:
        if args.site.is_dir():
            sys.path.insert(0, str(args.site))
        print(json.dumps(run(args.transfer, args.device, args.docs), indent=2))


if __name__ == "__main__":
    main()
