"""Issue #36's GPU figures: the best tier (all-mpnet-base-v2) beside the fast one, in one JSON.

Like tools/gpu_check.py (issue #30), for an offline CUDA machine reached by calls that carry at
most 64 MiB each, the project's tree included (~31 MB): so everything else travels in
``call1/``, ``call2/``, ``call3/`` folders of at most ``--call-mb`` (33 MB) each.

1. here (CPU, PyPI reachable):  python tools/gpu_check_best.py pack gpu-transfer
   stages onnxruntime-gpu (../shared/gpu/ort_gpu_bundle.py, sm_90), the wheels the device image
   lacks (faiss-cpu, platformdirs), four timing models (MiniLM and mpnet architecture, each an
   encoder and a cross-encoder, weights +-0.02 in a repeating random pattern so that xz shrinks
   them ~80x; exported with the product's own `import_hf_dir`, fp32 only) and 16,384 real ACM
   titles+abstracts, then sorts them into gpu-transfer/call1..N.
2. on the GPU machine, one call per folder, each carrying gpu-transfer/callK, the same command:
   python3 tools/gpu_check_best.py device gpu-transfer > $OUT/gpu-best.json
   It unpacks what arrived into /tmp (kept while the machine stays warm: 30 s between calls) and,
   once everything is there, runs `run` below; before that it prints what it still waits for.
3. `run WORK --device cuda --tier both` (what `device` runs): per tier, index docs/s at 256 tokens
   (tokenisation included, the product's encoder), query-encode latency, and the whole query:
   encode + FAISS flat search (depth 400, 2 threads, like the product's searcher) over N random
   unit vectors of the tier's dimension + the reranker on the top 20 + intent (the query and the
   20 candidates' texts: an uncached paper profile each), p50/p95 per stage and in total. `best`
   is timed with today's reranker (the fast tier's MiniLM one) and with an mpnet cross-encoder
   (the reranker the tier will get). `--issue30` adds tools/gpu_check.py's #30 figures.

`run --device cpu --docs 64 --vectors 20000 --reps 10` is the CPU smoke test of the same code.
Timing models have throw-away weights: speed figures only, never quality.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools import gpu_check as base  # noqa: E402

#: wheel -> module, for what the device image lacks (/work/.library/device/KINDS.md's package
#: list, 2026-11-17: it has numpy, onnx, tokenizers, sympy, filelock, packaging, torch)
WHEELS = {"faiss-cpu": "faiss", "platformdirs": "platformdirs"}
#: model name -> (architecture, kind, max_length); the intent timing model is made by `device`
MODELS = {
    "timing-encoder": ("minilm", "encoder", 256),
    "timing-reranker": ("minilm", "cross-encoder", 128),
    "timing-mpnet": ("mpnet", "encoder", 384),
    "timing-reranker-mpnet": ("mpnet", "cross-encoder", 128),
}
TIERS = {  # tier -> (encoder, [(label, reranker)], intent)
    "fast": ("timing-encoder", [("query", "timing-reranker")], "timing-intent"),
    "best": (
        "timing-mpnet",
        [("query", "timing-reranker"), ("query_mpnet_reranker", "timing-reranker-mpnet")],
        "timing-intent",
    ),
}
PERIOD = 65_521  # floats in the repeating weight pattern (prime: rows of a matrix differ)
DEPTH, TOP = 400, 20  # PipelineConfig.depth; the reranked head the product shows
ACM_PAPERS = 112_756  # the ACM library's size: the default number of vectors searched


def timing_weights(model, period: int = PERIOD, seed: int = 0) -> None:
    """Overwrite ``model``'s weights in place: LayerNorm 1/0, biases 0, every other tensor the
    next stretch of one fixed random +-0.02 sequence of ``period`` values (so each matrix is
    full rank and nothing is repeated within ``period``, but xz finds the whole model repeated)."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    signs = (torch.randint(0, 2, (period,), generator=gen).float() * 2 - 1) * 0.02
    offset = 0
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "LayerNorm" in name and name.endswith("weight"):
                p.fill_(1.0)
            elif name.endswith("bias"):
                p.zero_()
            else:
                idx = (torch.arange(p.numel()) + offset) % period
                p.copy_(signs[idx].view(p.shape))
                offset += p.numel()


def timing_hf(src: Path, out: Path) -> None:
    """``out/encoder`` and ``out/cross-encoder``: ``src``'s architecture and tokenizer, timing
    weights (any Hugging Face architecture: BERT for MiniLM, MPNet for all-mpnet-base-v2)."""
    import transformers

    for name, cls in (
        ("encoder", transformers.AutoModel),
        ("cross-encoder", transformers.AutoModelForSequenceClassification),
    ):
        cfg = transformers.AutoConfig.from_pretrained(str(src), local_files_only=True)
        if name == "cross-encoder":
            cfg.num_labels = 1
        model = cls.from_config(cfg)
        timing_weights(model)
        d = out / name
        shutil.rmtree(d, ignore_errors=True)
        model.save_pretrained(d, safe_serialization=True)
        for f in src.iterdir():
            if f.is_file() and (f.name.startswith(("tokenizer", "special_tokens")) or f.suffix == ".txt"):  # fmt: skip
                shutil.copy(f, d / f.name)


def pack(out: Path, n_texts: int, runtime: bool, call_mb: float, mpnet: Path | None) -> dict:
    """Everything the GPU machine needs besides the git tree, in call folders (run here)."""
    from assistant.inference.build import import_hf_dir, minilm_source

    stage = out / "stage"
    stage.mkdir(parents=True, exist_ok=True)
    if runtime and not (stage / "ort").is_dir():  # a bundle made earlier is kept
        # pieces of 15 MB, so that everything fits three calls
        bundle = base.SHARED / "gpu" / "ort_gpu_bundle.py"
        _sh(sys.executable, str(bundle), str(stage / "ort"), "--part-mb", "17")
    if runtime:
        _sh(sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "--no-deps",
            "--python-version", "3.12", "--implementation", "cp", "--platform",
            "manylinux_2_28_x86_64", "--platform", "manylinux2014_x86_64", "-d",
            str(stage / "deps"), *WHEELS)  # fmt: skip
    if mpnet is None:
        from assistant.training.common import base_model_path

        mpnet = base_model_path("mpnet")
    sources = {"minilm": Path(minilm_source()), "mpnet": Path(mpnet)}
    models = out / "models"
    for arch, src in sources.items():
        timing_hf(src, out / "timing-hf" / arch)
    for name, (arch, kind, length) in MODELS.items():
        hf = out / "timing-hf" / arch / kind
        import_hf_dir(hf, models / name, kind=kind, pooling="mean" if kind == "encoder" else None,
                      max_length=length, name=name, source=f"timing weights, {arch} architecture",
                      quantize=False)  # fmt: skip
    keep = [f"models/{m}/{f}" for m in MODELS for f in base.TIMING_FILES]
    _sh("tar", "-cf", str(stage / "models.tar.xz"), "-I", "xz -T2 -6", "-C", str(out), *keep)
    texts = base._acm_texts(n_texts)
    (stage / "texts.json.xz").write_bytes(lzma.compress(json.dumps(texts).encode()))
    calls = split_calls(stage, out, int(call_mb * 1e6))
    return {"transfer": str(out), "texts": len(texts), "calls": calls}


def split_calls(stage: Path, out: Path, limit: int) -> dict:
    """Sort the staged files into ``out/callK/`` (largest first, first fit, each folder at most
    ``limit`` bytes); an onnxruntime piece travels with its part's unpack.py and manifest.txt."""
    files = sorted(
        (
            f
            for f in stage.rglob("*")
            if f.is_file() and f.name not in ("unpack.py", "manifest.txt")
        ),
        key=lambda f: -f.stat().st_size,
    )
    bins: list[list[Path]] = []
    sizes: list[int] = []
    for f in files:
        size = f.stat().st_size
        if size > limit:
            raise SystemExit(f"{f} is {size / 1e6:.1f} MB, over the {limit / 1e6:.0f} MB a call carries")  # fmt: skip
        k = next((i for i, s in enumerate(sizes) if s + size <= limit), None)
        if k is None:
            bins.append([]), sizes.append(0)
            k = len(bins) - 1
        bins[k].append(f)
        sizes[k] += size
    for old in out.glob("call*"):
        shutil.rmtree(old)
    report = {}
    for k, group in enumerate(bins, 1):
        call = out / f"call{k}"
        for f in group:
            rel = f.relative_to(stage)
            dest = call / ("ort" if rel.parts[0] == "ort" else rel.parent) / f.name
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(f, dest)
            if rel.parts[0] == "ort":
                for extra in ("unpack.py", "manifest.txt"):
                    shutil.copy(f.parent / extra, dest.parent / extra)
        total = sum(p.stat().st_size for p in call.rglob("*") if p.is_file())
        report[call.name] = {"bytes": total, "files": sorted(str(f.relative_to(stage)) for f in group)}  # fmt: skip
    return report


def device(transfer: Path, site: Path, work: Path, run_args: dict) -> dict:
    """On the GPU machine, in every call: unpack what this call carried; run once all is there."""
    work.mkdir(parents=True, exist_ok=True)
    site.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(site))
    import importlib.util

    for call in sorted(transfer.glob("call*")):
        if (call / "ort" / "unpack.py").is_file():
            _sh(sys.executable, str(call / "ort" / "unpack.py"), str(site))
        for whl in sorted((call / "deps").glob("*.whl")):
            module = next(m for w, m in WHEELS.items() if whl.name.startswith(w.replace("-", "_")))
            if importlib.util.find_spec(module) is None:
                _sh(sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                    "--no-compile", "--target", str(site), str(whl))  # fmt: skip
        if (call / "models.tar.xz").is_file() and not (work / "models").is_dir():
            _sh("tar", "-xJf", str(call / "models.tar.xz"), "-C", str(work))
        if (call / "texts.json.xz").is_file():
            shutil.copy(call / "texts.json.xz", work / "texts.json.xz")
    importlib.invalidate_caches()
    waiting = missing_parts(site, work)
    if waiting:
        return {"waiting_for": waiting}
    return run(work, **run_args)


def missing_parts(site: Path, work: Path) -> list[str]:
    """What `device` still waits for (empty: everything arrived and is unpacked)."""
    import importlib.util

    # ort_gpu_bundle.py's two blobs; unpack.py marks each one done once all its pieces are there
    missing = [f"onnxruntime-gpu {b}" for b in ("provider", "rest") if not (site / ".stage" / f"{b}.done").exists()]  # fmt: skip
    missing += [w for w, m in WHEELS.items() if importlib.util.find_spec(m) is None]
    missing += [f"models/{m}" for m in MODELS if not (work / "models" / m / "model.onnx").is_file()]
    missing += [] if (work / "texts.json.xz").is_file() else ["texts.json.xz"]
    return missing


def _sh(*args: str) -> None:
    base._sh(*args, stdout=sys.stderr)  # the JSON on stdout stays clean


def tier_figures(
    tier: str, texts: list[str], device: str, n_vectors: int, reps: int, fp16: bool
) -> dict:
    """Index docs/s, query encoding and the whole query of one tier (models already exported)."""
    import faiss
    import numpy as np

    from assistant.inference.classifier import load_classifier
    from assistant.inference.cross_encoder import load_cross_encoder
    from assistant.inference.encoder import load_encoder
    from assistant.inference.fp16 import fp16_file, validate
    from assistant.inference.registry import ModelManifest, resolve_model_dir
    from assistant.retrieval.index_layout import make_faiss

    enc_name, rerankers, intent_name = TIERS[tier]
    out: dict = {"encoder": enc_name}
    if fp16:  # the fp16 files CUDA runs, made and checked (on a CPU too with --fp16)
        t = time.perf_counter()
        for name in [enc_name, intent_name, *(r for _, r in rerankers)]:
            path, _ = fp16_file(ModelManifest.load(resolve_model_dir(name, build_missing=False)))
            validate(path)
        out["fp16_files_valid_s"] = round(time.perf_counter() - t, 1)
    enc = load_encoder(enc_name, device=device, max_length=256)
    out["runtime"], out["dim"] = enc.info.describe(), enc.dim
    enc.encode(texts[:512])  # warm-up: kernels, allocator
    for batch in (None, 32, 512):
        t = time.perf_counter()
        enc.encode(texts, batch_size=batch)
        rate = len(texts) / (time.perf_counter() - t)
        out[f"index_docs_per_s_batch_{batch or enc.default_batch_size}"] = round(rate, 1)
    out["index_docs_per_s"] = out[f"index_docs_per_s_batch_{enc.default_batch_size}"]
    if device == "cuda":
        ref = load_encoder(enc_name, device=device, precision="fp32", max_length=256)
        a, b = enc.encode(texts[:1024]), ref.encode(texts[:1024])
        out["fp16_fp32_cosine_min"] = round(float((a * b).sum(1).min()), 6)
        del ref
    vectors = np.random.default_rng(36).standard_normal((n_vectors, enc.dim), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = make_faiss(vectors, np.arange(n_vectors, dtype=np.int64), "flat")  # the product's
    del vectors
    faiss.omp_set_num_threads(2)  # as the product's searcher
    out["vectors"] = n_vectors
    clf = load_classifier(intent_name, device=device)
    out["rerankers"] = dict(rerankers)
    for key, rr_name in rerankers:
        rr = load_cross_encoder(rr_name, device=device)
        out[key] = whole_query(enc, index, rr, clf, texts, reps)
    out["query_encode"] = out["query"]["encode"]
    return out


def whole_query(enc, index, rr, clf, texts: list[str], reps: int, warm: int = 5) -> dict:
    """Each stage of the product's query, timed per query (a different sentence each time)."""
    times: dict[str, list[float]] = {k: [] for k in ("encode", "search", "rerank", "intent", "total")}  # fmt: skip
    n = len(texts)
    for i in range(warm + reps):
        query = texts[i % n][:200]
        docs = [texts[(i * TOP + j + 1) % n] for j in range(TOP)]
        t0 = time.perf_counter()
        vec = enc.encode([query])
        t1 = time.perf_counter()
        index.search(vec, DEPTH)
        t2 = time.perf_counter()
        rr.score(query, docs)
        t3 = time.perf_counter()
        clf.predict_logits([query])
        clf.predict_logits(docs)
        t4 = time.perf_counter()
        if i >= warm:
            for key, a, b in (("encode", t0, t1), ("search", t1, t2), ("rerank", t2, t3),
                              ("intent", t3, t4), ("total", t0, t4)):  # fmt: skip
                times[key].append((b - a) * 1000)
    return {k: base.percentiles(v) for k, v in times.items()}


def run(
    work: Path,
    device: str,
    docs: int,
    vectors: int,
    reps: int,
    tier: str,
    issue30: bool,
    fp16: bool = False,
) -> dict:
    """The figures of each tier asked for (``both``: best, then fast), one JSON object."""
    os.environ["ASSISTANT_MODELS"] = str(work / "models")
    base._intent_timing_model(work / "models")
    from assistant.inference import runtime
    from assistant.inference.session import allow_parallel_tokenization

    out: dict = {"device": device, "providers": runtime.available_providers()}
    out["onnxruntime"] = runtime.ort.__version__
    try:  # torch first: it loads the CUDA and cuDNN libraries the CUDA provider needs
        import torch

        out["card"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except ImportError:
        out["card"] = None
    if device == "cuda" and runtime.CUDA not in out["providers"]:
        out["cuda_problems"] = runtime.cuda_problems()
        return out
    texts = json.loads(lzma.decompress((work / "texts.json.xz").read_bytes()))[:docs]
    out["docs"] = len(texts)
    allow_parallel_tokenization()
    for name in ("best", "fast") if tier == "both" else (tier,):
        t = time.perf_counter()
        out[name] = tier_figures(name, texts, device, vectors, reps, fp16 or device == "cuda")
        out[name]["wall_s"] = round(time.perf_counter() - t, 1)
    if "best" in out and "fast" in out:
        b, f = out["best"], out["fast"]
        out["best_vs_fast"] = {
            "index_docs_per_s_ratio": round(b["index_docs_per_s"] / f["index_docs_per_s"], 3),
            "query_p95_ms": [b["query"]["total"]["p95_ms"], f["query"]["total"]["p95_ms"]],
        }
    if issue30:
        try:
            out["issue30"] = base.run(work, device, docs)
        except Exception as exc:  # the #36 figures above are kept
            out["issue30"] = {"error": f"{type(exc).__name__}: {exc}"}
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pack")
    p.add_argument("out", type=Path)
    p.add_argument("--texts", type=int, default=16384)
    p.add_argument("--call-mb", type=float, default=33.0, help="most MB one device call carries")
    p.add_argument("--mpnet", type=Path, help="an extracted all-mpnet-base-v2 HF folder")
    p.add_argument("--no-runtime", action="store_true", help="models and texts only (CPU smoke)")
    for name in ("device", "run"):
        r = sub.add_parser(name)
        r.add_argument("transfer" if name == "device" else "work", type=Path)
        r.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
        r.add_argument("--docs", type=int, default=16384)
        r.add_argument("--vectors", type=int, default=ACM_PAPERS)
        r.add_argument("--reps", type=int, default=100)
        r.add_argument("--tier", choices=["best", "fast", "both"], default="both")
        r.add_argument("--issue30", action="store_true", help="add gpu_check.py's #30 figures")
        r.add_argument("--fp16", action="store_true", help="make and check the fp16 files on a CPU")
        r.add_argument("--site", type=Path, default=Path("/tmp/ort-site"))
        if name == "device":
            r.add_argument("--work", type=Path, default=Path("/tmp/gpu-work"))
    args = parser.parse_args(argv)
    if args.cmd == "pack":
        result = pack(args.out, args.texts, not args.no_runtime, args.call_mb, args.mpnet)
        print(json.dumps(result, indent=2))
        return
    run_args = {k: getattr(args, k) for k in ("device", "docs", "vectors", "reps", "tier", "issue30", "fp16")}  # fmt: skip
    if args.cmd == "device":
        result = device(args.transfer, args.site, args.work, run_args)
    else:
        if args.site.is_dir():
            sys.path.insert(0, str(args.site))
        result = run(args.work, **run_args)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
