"""Make exported transformer graphs fusable by onnxruntime's transformer optimizer.

transformers 5 traces attention in a form the optimizer does not recognise: the padding
mask is built by ``create_bidirectional_mask`` (an L x L boolean mask turned into floats
with ``Where``), scores are scaled with ``Mul`` and, with that mask, the export adds a
``Where(IsNaN(softmax), 0, softmax)`` guard in every layer. None of this fuses into
onnxruntime's ``Attention`` op, and the guard alone cost ~20 % of the int8 encoder's time.

During export (only) ``classic_attention(model)`` swaps in the textbook BERT form the
optimizer matches: an additive ``(1 - mask) * -10000`` key mask and
``softmax(QK^T / sqrt(d) + mask) V``. Both are numerically the same as the model's own
path for any row with at least one real token (every tokenised input has ``[CLS]``), and
``export_transformer`` checks the fused graph against the plain one before keeping it.
``strip_nan_guards`` removes any guard that still appears (architectures the swap does
not cover). ``fuse_graph`` then runs the optimizer with the fusions that pay on the CPU.
"""

from __future__ import annotations

import contextlib
import logging
import math
import types
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

CLASSIC = "cite_assist_classic"  # name registered with transformers' AttentionInterface
MASK_FILL = -10000.0  # the value onnxruntime's Attention op itself uses for masked keys


def _classic_attention_forward(
    module, query, key, value, attention_mask, scaling=None, dropout=0.0, **_
):
    """``softmax(QK^T / sqrt(d) + mask) V`` written the way the ORT BERT fusion expects."""
    import torch

    scores = torch.matmul(query, key.transpose(2, 3))
    if scaling is None or math.isclose(scaling, query.size(-1) ** -0.5, rel_tol=1e-6):
        scores = scores / math.sqrt(query.size(-1))
    else:  # a model with its own scale: keep it exact (the fusion may then not apply)
        scores = scores * scaling
    if attention_mask is not None:
        scores = scores + attention_mask
    probs = torch.softmax(scores, dim=-1)
    out = torch.matmul(probs, value).transpose(1, 2).contiguous()
    return out, probs


def _classic_masks(
    self, attention_mask, encoder_attention_mask, embedding_output, *_args, **_kwargs
):
    """Additive ``[B, 1, 1, L]`` key-padding mask (replaces ``_create_attention_masks``)."""
    if attention_mask is not None:
        ext = attention_mask.unsqueeze(1).unsqueeze(2).to(embedding_output.dtype)
        attention_mask = (1.0 - ext) * MASK_FILL
    return attention_mask, encoder_attention_mask


def _hf_model(model):
    """The innermost Hugging Face base model (the one that builds the attention masks)."""
    found = None
    for module in model.modules():
        if hasattr(module, "_create_attention_masks") and hasattr(module, "config"):
            found = module
            break
    return found


@contextlib.contextmanager
def classic_attention(model):
    """Within the block, ``model`` traces with the fusable attention form (restored after).

    Applies to encoder-only models whose base class builds its masks in
    ``_create_attention_masks`` and accepts a registered attention implementation (BERT,
    RoBERTa, XLM-R, ELECTRA ...). Yields True when the swap was made.
    """
    hf = _hf_model(model)
    config = getattr(hf, "config", None)
    if (
        hf is None
        or getattr(config, "is_decoder", False)
        or not hasattr(hf, "set_attn_implementation")
    ):
        yield False
        return
    from transformers import AttentionInterface

    AttentionInterface.register(CLASSIC, _classic_attention_forward)
    previous = getattr(config, "_attn_implementation", None)
    try:
        hf.set_attn_implementation(CLASSIC)
    except Exception as exc:  # architecture without the attention interface
        log.debug("classic attention not applicable: %s", exc)
        yield False
        return
    hf._create_attention_masks = types.MethodType(_classic_masks, hf)
    try:
        yield True
    finally:
        del hf._create_attention_masks  # back to the class's own method
        if previous is not None:
            hf.set_attn_implementation(previous)


def strip_nan_guards(path: Path) -> int:
    """Rewrite ``Where(IsNaN(x), c, x)`` to ``x`` in the ONNX file; return how many were removed.

    The guard only matters for rows whose keys are all masked, which tokenised input never
    has (``[CLS]`` is always attended).
    """
    import onnx

    model = onnx.load(str(path))
    graph = model.graph
    producer = {out: node for node in graph.node for out in node.output}
    removed = []
    replace: dict[str, str] = {}
    for node in graph.node:
        if node.op_type != "Where" or len(node.input) != 3:
            continue
        cond = producer.get(node.input[0])
        if cond is None or cond.op_type != "IsNaN" or cond.input[0] != node.input[2]:
            continue
        replace[node.output[0]] = node.input[2]
        removed.append(node)
    if not removed:
        return 0
    graph_outputs = {o.name for o in graph.output}
    for node in graph.node:
        for k, name in enumerate(node.input):
            if name in replace:
                node.input[k] = replace[name]
    for out in graph.output:
        if out.name in replace:  # a guard feeding the graph output: keep it
            removed = [n for n in removed if n.output[0] != out.name]
    for node in removed:
        graph.node.remove(node)
    still_used = {name for node in graph.node for name in node.input} | graph_outputs
    for node in list(graph.node):
        if node.op_type == "IsNaN" and node.output[0] not in still_used:
            graph.node.remove(node)
    onnx.save(model, str(path))
    return len(removed)


def optimize_graph(
    src: Path, dst: Path, model, approximate_gelu: bool = True
) -> dict[str, int] | None:
    """Fuse attention/GELU/embeddings with onnxruntime's transformer optimizer (BERT-like only).

    Two choices measured on the 2-core CPU (assistant/models/BENCHMARKS.md, encode, session 4):
    residual Add + LayerNormalization stay separate (onnxruntime's CPU
    ``SkipLayerNormalization`` kernel took 5x longer than Add + LayerNormalization: ~12%
    of an int8 MiniLM forward pass), and with ``approximate_gelu`` GELU becomes the tanh
    approximation ``FastGelu`` (cosine to PyTorch still >= 0.99999). Returns the
    fused-operator counts, or None when the graph was not optimised.
    """
    mtype = getattr(getattr(model, "config", None), "model_type", "")
    if mtype not in ("bert", "roberta", "distilbert", "xlm-roberta", "electra", "mpnet"):
        return None
    try:
        from onnxruntime.transformers.fusion_options import FusionOptions
        from onnxruntime.transformers.optimizer import optimize_model

        cfg = model.config
        options = FusionOptions("bert")
        options.enable_skip_layer_norm = False
        options.enable_gelu_approximation = approximate_gelu
        opt = optimize_model(
            str(src),
            model_type="bert",
            num_heads=int(cfg.num_attention_heads),
            hidden_size=int(cfg.hidden_size),
            optimization_options=options,
        )
        opt.save_model_to_file(str(dst))
        fused = {k: v for k, v in opt.get_fused_operator_statistics().items() if v}
        log.debug("fused operators: %s", fused)
        return fused
    except Exception as exc:  # optimisation is an optional speed-up
        log.warning("ONNX graph optimisation skipped: %s", exc)
        return None


def fuse_graph(
    raw: Path,
    fused_path: Path,
    model,
    difference: Callable[[Path, Path], float],
    tolerance: float = 1e-3,
) -> dict[str, int] | None:
    """Write the fused graph of ``raw`` to ``fused_path`` if it reproduces the export; else None.

    ``difference(raw, fused_path)`` is the largest output difference on test batches. The GELU
    approximation is tried first; when it moves the outputs by more than ``tolerance``, exact
    GELU; when that does too, no fusion (a fusion that changes results is worse than none).
    """
    for approximate in (True, False):
        fused = optimize_graph(raw, fused_path, model, approximate_gelu=approximate)
        if fused is None:
            return None
        diff = difference(raw, fused_path)
        if diff <= tolerance:
            return fused
        log.info(
            "fused graph (GELU approximation %s) differs from the export by %.2g", approximate, diff
        )
    log.warning("fused graph differs from the export: keeping the plain graph")
    return None
