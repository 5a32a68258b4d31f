"""Export a PyTorch transformer to the model-folder layout every consumer loads.

``export_transformer`` is the one way a trained model becomes ONNX: it writes
``model.onnx`` (fp32), ``model.int8.onnx`` (dynamic int8 quantisation),
``tokenizer.json`` and ``manifest.json`` (see docs/ARCHITECTURE.md "Inference").
Encoders get their pooling (mean over the attention mask or CLS) and the L2
normalisation inside the graph, so the ONNX output is the sentence embedding.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import inspect
import json
import logging
import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

from assistant import filewrite
from assistant.inference.fusable import classic_attention, fuse_graph, strip_nan_guards
from assistant.inference.runtime import FP32_FILE, INT8_FILE

log = logging.getLogger(__name__)

KINDS = ("encoder", "cross-encoder", "classifier")
POOLINGS = ("mean", "cls")
MANIFEST = "manifest.json"
TOKENIZER_FILE = "tokenizer.json"
OPSET = 17


@contextlib.contextmanager
def quiet_logs(level: int = logging.WARNING):
    """Silence onnxruntime's optimiser/quantiser INFO chatter (they log via the root logger)."""
    root = logging.getLogger()
    previous = root.level
    root.setLevel(max(previous, level))
    try:
        yield
    finally:
        root.setLevel(previous)


def sha256_file(path: Path | str, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def _backend_tokenizer(tokenizer: Any):
    """A ``tokenizers.Tokenizer`` from a directory, a HF tokenizer or a Tokenizer."""
    from tokenizers import Tokenizer

    if isinstance(tokenizer, Tokenizer):
        return tokenizer
    if isinstance(tokenizer, (str, os.PathLike)):
        folder = Path(tokenizer)
        if (folder / TOKENIZER_FILE).is_file():
            return Tokenizer.from_file(str(folder / TOKENIZER_FILE))
        from transformers import AutoTokenizer  # slow tokenizer files only: convert

        tokenizer = AutoTokenizer.from_pretrained(str(folder), use_fast=True, local_files_only=True)
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise TypeError(f"cannot get a fast tokenizer from {type(tokenizer).__name__}")
    return backend


def _pad_id(tok) -> int:
    for token in ("[PAD]", "<pad>", "<PAD>"):
        tid = tok.token_to_id(token)
        if tid is not None:
            return int(tid)
    padding = tok.padding
    return int(padding["pad_id"]) if padding else 0


def _accepts_token_types(model) -> bool:
    # inspect.signature on a third-party (Hugging Face / torch) model, not on our own code: BERT
    # takes token_type_ids, DistilBERT/MPNet do not, and the export must match the graph inputs.
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False
    if "token_type_ids" not in params:
        return False
    return int(getattr(getattr(model, "config", None), "type_vocab_size", 0) or 0) > 0


def _wrap(model, kind: str, pooling: str | None, use_types: bool):
    import torch
    from torch import nn

    class Wrapper(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids=None):
            kwargs = {"input_ids": input_ids, "attention_mask": attention_mask}
            if use_types:
                kwargs["token_type_ids"] = token_type_ids
            out = self.model(**kwargs)
            first = out[0]
            if kind != "encoder":
                return first  # logits
            if pooling == "cls":
                emb = first[:, 0]
            else:
                mask = attention_mask.unsqueeze(-1).to(first.dtype)
                emb = (first * mask).sum(1) / torch.clamp(mask.sum(1), min=1e-9)
            return torch.nn.functional.normalize(emb, p=2.0, dim=1)

    return Wrapper().eval()


def _dummy_ids(model, batch: int = 2, length: int = 6, seed: int = 0):
    import torch

    vocab = int(getattr(getattr(model, "config", None), "vocab_size", 1000) or 1000)
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, max(6, vocab), (batch, length), generator=gen)
    mask = torch.ones_like(ids)
    mask[1:, length // 2 :] = 0  # one padded row: the mask path must be traced
    return ids, mask


def _export_onnx(model, kind: str, pooling: str | None, path: Path, use_types: bool) -> None:
    """Legacy TorchScript exporter: a clean static graph with dynamic batch/sequence axes.

    Attention is traced in the textbook BERT form (``fusable.classic_attention``) where the
    architecture allows, otherwise in its "eager" form (not SDPA), so that onnxruntime's
    optimizer recognises and fuses it; the model's own settings are restored afterwards.
    """
    import torch

    # the top-most Hugging Face model (the model itself, or e.g. ``wrapper.encoder``)
    hf = next(
        (
            m
            for m in model.modules()
            if hasattr(m, "set_attn_implementation") and hasattr(m, "config")
        ),
        None,
    )
    wrapper = _wrap(model, kind, pooling, use_types)
    ids, mask = _dummy_ids(model)
    names = ["input_ids", "attention_mask"]
    args: tuple = (ids, mask)
    if use_types:
        names.append("token_type_ids")
        args = (ids, mask, torch.zeros_like(ids))
    output = "embeddings" if kind == "encoder" else "logits"
    axes = {n: {0: "batch", 1: "sequence"} for n in names}
    axes[output] = {0: "batch"}
    with classic_attention(model) as classic, _eager_attention(None if classic else hf):
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                wrapper,
                args,
                str(path),
                input_names=names,
                output_names=[output],
                dynamic_axes=axes,
                opset_version=OPSET,
                do_constant_folding=True,
                dynamo=False,
            )
    guards = strip_nan_guards(path)
    log.debug("export: classic attention %s, %d NaN guards removed", classic, guards)


@contextlib.contextmanager
def _eager_attention(hf):
    """Trace ``hf`` with eager attention (SDPA does not fuse); restore its setting after."""
    previous = getattr(getattr(hf, "config", None), "_attn_implementation", None)
    if hf is not None and previous not in (None, "eager"):
        try:
            hf.set_attn_implementation("eager")
        except Exception:  # some architectures only have one implementation
            previous = None
    try:
        yield
    finally:
        if hf is not None and previous not in (None, "eager"):
            hf.set_attn_implementation(previous)


def _paired_outputs(path_a: Path, path_b: Path, model, names: list[str]):
    """Outputs of two ONNX files on the same random padded batches."""
    import numpy as np
    import onnxruntime as ort

    sessions = [
        ort.InferenceSession(str(p), providers=["CPUExecutionProvider"]) for p in (path_a, path_b)
    ]
    for seed, (batch, length) in enumerate([(3, 17), (2, 64)]):
        ids, mask = _dummy_ids(model, batch, length, seed)
        feed = {
            "input_ids": ids.numpy(),
            "attention_mask": mask.numpy(),
            "token_type_ids": np.zeros_like(ids.numpy()),
        }
        feed = {k: v for k, v in feed.items() if k in names}
        yield tuple(s.run(None, feed)[0] for s in sessions)


def _max_difference(path_a: Path, path_b: Path, model, names: list[str]) -> float:
    """Largest absolute output difference of two ONNX files on random padded batches."""
    import numpy as np

    return max(float(np.abs(a - b).max()) for a, b in _paired_outputs(path_a, path_b, model, names))


def _int8_error(fp32: Path, int8: Path, model, names: list[str], kind: str) -> float:
    """How far int8 outputs are from fp32: 1 - min cosine (encoders) or relative L2 error (logits)."""
    import numpy as np

    errors = []
    for a, b in _paired_outputs(fp32, int8, model, names):
        if kind == "encoder":
            errors.append(1.0 - float((a * b).sum(1).min()))
        else:
            errors.append(float(np.linalg.norm(a - b) / max(np.linalg.norm(a), 1e-6)))
    return max(errors)


def ffn_output_matmuls(path: Path) -> list[str]:
    """The feed-forward down-projection MatMuls (``.../output/dense/MatMul`` outside attention).

    Their inputs (GELU outputs) carry activation outliers that per-tensor dynamic int8 cannot
    represent in some models: all-mpnet-base-v2 falls to cosine 0.83 with them in int8 (layers 7
    and 8 worst) and reaches 0.986 with them kept in fp32 (assistant/models/BENCHMARKS.md)."""
    import onnx

    graph = onnx.load(str(path), load_external_data=False).graph
    return [
        n.name
        for n in graph.node
        if n.op_type == "MatMul" and "/output/dense/" in n.name and "/attention/" not in n.name
    ]


def quantize_int8(
    fp32_path: Path, int8_path: Path, per_channel: bool = True, keep_fp32: list[str] | None = None
) -> None:
    """Dynamic int8 quantisation of MatMul and fused Attention weights (per output channel);
    the nodes named in ``keep_fp32`` stay in fp32."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    root = logging.getLogger()
    quiet = _DropMessage("pre-processing before quantization")
    root.addFilter(quiet)
    try:
        quantize_dynamic(
            str(fp32_path),
            str(int8_path),
            weight_type=QuantType.QInt8,
            per_channel=per_channel,
            op_types_to_quantize=["MatMul", "Attention"],
            nodes_to_exclude=list(keep_fp32 or []),
            extra_options={"MatMulConstBOnly": True, "DefaultTensorType": onnx.TensorProto.FLOAT},
        )
    finally:
        root.removeFilter(quiet)


class _DropMessage(logging.Filter):
    """Hide one known, irrelevant log line of a third-party library."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def filter(self, record: logging.LogRecord) -> bool:
        return self.text not in record.getMessage()


def write_manifest(out_dir: Path, manifest: dict) -> Path:
    path = Path(out_dir) / MANIFEST
    filewrite.write_text(path, json.dumps(manifest, indent=2, sort_keys=False) + "\n")
    return path


def export_transformer(
    torch_model,
    tokenizer,
    out_dir: Path | str,
    kind: str,
    pooling: str | None = None,
    max_length: int = 256,
    labels: list[str] | None = None,
    quantize: bool = True,
    *,
    name: str | None = None,
    source: str = "",
    optimize: bool = True,
    per_channel: bool = True,
    extra: dict | None = None,
) -> Path:
    """Write ``model.onnx`` (+ ``model.int8.onnx``), ``tokenizer.json``, ``manifest.json``.

    ``torch_model``: a HF ``AutoModel`` (encoder) or ``AutoModelForSequenceClassification``
    (cross-encoder/classifier). ``tokenizer``: a folder, HF fast tokenizer or
    ``tokenizers.Tokenizer``. The folder is written atomically (temp dir + rename), so a
    crash never leaves a half-written model behind. Returns ``out_dir``.
    """
    # long: the export steps in order (trace, optimise, check, quantise, manifest), each a few lines
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if kind == "encoder":
        pooling = pooling or "mean"
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
    if kind == "classifier" and not labels:
        raise ValueError("a classifier needs its labels (in output order)")
    if max_length < 8:
        raise ValueError(f"max_length must be >= 8, got {max_length}")
    model_limit = int(
        getattr(getattr(torch_model, "config", None), "max_position_embeddings", 0) or 0
    )
    if model_limit:
        # RoBERTa-style models offset positions by pad_token_id + 1
        offset = (
            2
            if getattr(torch_model.config, "model_type", "") in ("roberta", "xlm-roberta", "mpnet")
            else 0
        )
        max_length = min(max_length, model_limit - offset)

    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}-", dir=out_dir.parent))
    try:
        torch_model = torch_model.eval()
        use_types = _accepts_token_types(torch_model)
        raw, fp32 = tmp / "raw.onnx", tmp / FP32_FILE
        _export_onnx(torch_model, kind, pooling, raw, use_types)
        inputs = ["input_ids", "attention_mask"] + (["token_type_ids"] if use_types else [])
        with quiet_logs():
            fused = (
                fuse_graph(
                    raw, fp32, torch_model, lambda a, b: _max_difference(a, b, torch_model, inputs)
                )
                if optimize
                else None
            )
        optimized = fused is not None
        if not optimized:
            os.replace(raw, fp32)
        raw.unlink(missing_ok=True)
        files = {"fp32": sha256_file(fp32)}
        if quantize:
            with quiet_logs():
                quantize_int8(fp32, tmp / INT8_FILE, per_channel=per_channel)
            # some architectures (e.g. MPNet's relative attention) break under dynamic int8:
            # never ship an int8 file that does not reproduce the fp32 one
            error = _int8_error(fp32, tmp / INT8_FILE, torch_model, inputs, kind)
            limit = 0.1 if kind == "encoder" else 0.5
            keep = ffn_output_matmuls(fp32) if error > limit else []
            if keep:  # second try: the outlier-prone feed-forward outputs in fp32
                first = error
                with quiet_logs():
                    quantize_int8(fp32, tmp / INT8_FILE, per_channel=per_channel, keep_fp32=keep)
                error = _int8_error(fp32, tmp / INT8_FILE, torch_model, inputs, kind)
                log.info(
                    "int8 with %d feed-forward output MatMuls in fp32: error %.3g (all int8: %.3g)",
                    len(keep),
                    error,
                    first,
                )
                if error <= limit:
                    extra = {
                        **(extra or {}),
                        "int8_fp32_nodes": keep,
                        "int8_error": round(error, 4),
                        "int8_error_all_quantized": round(first, 4),
                    }
            if error > limit:
                log.warning(
                    "int8 model rejected: error %.3g vs fp32 (limit %.2g); shipping fp32 only",
                    error,
                    limit,
                )
                (tmp / INT8_FILE).unlink()
                extra = {**(extra or {}), "int8_rejected": f"error {error:.3g} vs fp32 > {limit}"}
            else:
                files["int8"] = sha256_file(tmp / INT8_FILE)

        tok = _backend_tokenizer(tokenizer)
        tok.no_truncation()
        tok.no_padding()
        tok.save(str(tmp / TOKENIZER_FILE))

        cfg = getattr(torch_model, "config", None)
        if kind == "encoder":
            dim = int(getattr(cfg, "hidden_size", 0))
        else:
            dim = int(getattr(cfg, "num_labels", len(labels or []) or 1))
        manifest = {
            "name": name or out_dir.name,
            "kind": kind,
            "dim": dim,
            "pooling": pooling if kind == "encoder" else None,
            "normalized": kind == "encoder",
            "max_length": int(max_length),
            "labels": list(labels) if labels else None,
            "inputs": inputs,
            "pad_token_id": _pad_id(tok),
            "model_type": getattr(cfg, "model_type", None),
            "files": files,
            "optimized": optimized,
            "fused_ops": fused if optimized else {},
            "source": source,
            "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        }
        manifest.update(extra or {})
        write_manifest(tmp, manifest)
        tmp.chmod(0o755)
        filewrite.replace_dir(tmp, out_dir)  # a link or a file at out_dir is refused
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    log.info("exported %s %s to %s", kind, manifest["name"], out_dir)
    return out_dir
