"""float16 graphs for the CUDA provider that the onnx checker and onnxruntime both accept.

``onnxruntime.transformers.float16.convert_float_to_float16`` adds one ``Cast`` per consumer of a
blocked fp32 initializer, all with the same node and output name, and appends Casts at the end of
the node list. onnxruntime then refuses the file ("two nodes with same node name", "Duplicate
definition of name") and the checker finds the graph unsorted. ``to_fp16`` converts and then
repairs the graph: identical duplicate nodes are merged, clashing node names made unique and the
nodes sorted topologically. ``validate`` runs ``onnx.checker`` (full check) and opens the file in
onnxruntime on the CPU.
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

from assistant.inference.runtime import ModelLoadError

#: numerically sensitive ops kept in fp32 (their inputs/outputs get Casts). onnxruntime's
#: (Skip)LayerNormalization kernels accumulate in fp32 for fp16 tensors, so they run in fp16.
FP16_BLOCKED_OPS = [
    "Softmax",
    "Clip",
    "ReduceMean",
    "ReduceSum",
    "ReduceL2",
    "Div",
    "Sqrt",
    "Pow",
]


def _node_key(node) -> tuple:
    return (
        node.op_type,
        node.domain,
        tuple(node.input),
        tuple(node.output),
        tuple(a.SerializeToString() for a in node.attribute),
    )


def repair_graph(model):
    """Merge duplicate nodes (same outputs, same computation), rename clashes, sort topologically.

    Raises ``ModelLoadError`` when two *different* nodes define the same output name.
    """
    graph = model.graph
    producers: dict[str, object] = {}
    kept = []
    for node in graph.node:
        clash = [o for o in node.output if o and o in producers]
        if clash:
            first = producers[clash[0]]
            if _node_key(first) != _node_key(node):
                raise ModelLoadError(
                    f"fp16 graph defines {clash[0]!r} twice with different nodes "
                    f"({first.op_type} and {node.op_type})"
                )
            continue  # an identical duplicate (the converter's per-consumer Cast)
        for out in node.output:
            if out:
                producers[out] = node
        kept.append(node)
    seen_names: dict[str, int] = defaultdict(int)
    for node in kept:
        if node.name:
            seen_names[node.name] += 1
            if seen_names[node.name] > 1:
                node.name = f"{node.name}_{seen_names[node.name] - 1}"
    ordered = _topological(kept, graph)
    del graph.node[:]
    graph.node.extend(ordered)
    return model


def _topological(nodes: list, graph) -> list:
    """Nodes in an order where every input is defined before use (stable for sorted graphs)."""
    available = {i.name for i in graph.input} | {t.name for t in graph.initializer} | {""}
    pending = list(nodes)
    ordered = []
    while pending:
        rest = []
        for node in pending:
            if all(i in available for i in node.input):
                ordered.append(node)
                available.update(node.output)
            else:
                rest.append(node)
        if len(rest) == len(pending):
            missing = sorted({i for n in rest for i in n.input if i not in available})[:3]
            raise ModelLoadError(f"graph has undefined or cyclic inputs: {', '.join(missing)}")
        pending = rest
    return ordered


def to_fp16(model, blocked_ops: list[str] | None = None):
    """An fp16 copy of an fp32 ``ModelProto`` (fp32 inputs/outputs kept), repaired and valid."""
    try:
        from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference
        from onnxruntime.transformers.float16 import convert_float_to_float16
    except ImportError as exc:  # sympy: the `symbolic` extra of onnxruntime(-gpu)
        raise ModelLoadError(
            f"the fp16 conversion needs {exc.name or exc}: pip install 'cite-assist[gpu]'"
        ) from exc

    # the converter casts around blocked ops only where it knows a tensor's type; onnx's own
    # inference stops at onnxruntime's fused ops (Attention, SkipLayerNormalization, ...)
    typed = SymbolicShapeInference.infer_shapes(model, auto_merge=True)
    half = convert_float_to_float16(
        typed,
        keep_io_types=True,
        disable_shape_infer=True,
        op_block_list=list(FP16_BLOCKED_OPS if blocked_ops is None else blocked_ops),
    )
    return repair_graph(half)


def validate(path: Path | str) -> None:
    """``onnx.checker`` full check plus an onnxruntime CPU session; ``ModelLoadError`` if not."""
    import onnx
    import onnxruntime as ort

    path = Path(path)
    try:
        onnx.checker.check_model(str(path), full_check=True)
        ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise ModelLoadError(
            f"{path} is not a valid model: {exc.__class__.__name__}: {str(exc).strip()[:300]}"
        ) from exc


def save_valid(model, out: Path) -> Path:
    """Write ``model`` atomically to ``out`` after validating it (never leaves a bad file; never
    through a link: :func:`assistant.filewrite.save_with`)."""
    import onnx

    from assistant import filewrite

    def write(tmp: str) -> None:
        onnx.save(model, tmp)
        validate(Path(tmp))

    out.parent.mkdir(parents=True, exist_ok=True)
    filewrite.save_with(out, write)
    return out


#: bump when the conversion changes: older derived files are rebuilt
CONVERTER_VERSION = 2


def derived_dir(manifest) -> Path:
    """Where files made from a model folder go: next to it, or the user's model cache when the
    folder is the installed package (never written to) or read-only."""
    from assistant import config

    folder = Path(manifest.path)
    shipped = Path(config.SHIPPED_MODELS_DIR).resolve()
    inside_package = folder.resolve() == shipped or shipped in folder.resolve().parents
    if not inside_package and os.access(folder, os.W_OK):
        return folder
    digest = (manifest.files.get("fp32") or manifest.files.get("int8") or "nosha")[:12]
    return config.models_dir() / ".derived" / f"{manifest.path.name}-{digest}"


def fp16_file(manifest) -> tuple[Path, str | None]:
    """The model's fp16 file for CUDA, made once (validated) from fp32 or dequantized int8.

    Returns ``(path, note)``: the note says the fp16 weights come from the int8 file.
    """
    import json

    import onnx

    from assistant.inference.registry import verify_file
    from assistant.inference.shared_weights import external_initializers, restore

    source = "fp32" if manifest.has("fp32") else "int8"
    src = verify_file(manifest, source)
    note = (
        None
        if source == "fp32"
        else f"{manifest.name}: fp16 built from the int8 weights (dequantized; activations unquantized)"
    )
    out = derived_dir(manifest) / "model.fp16.onnx"
    stamp_path = out.with_suffix(".json")
    stamp = {
        "source": source,
        "source_sha256": manifest.files.get(source)
        or f"{src.stat().st_size}:{src.stat().st_mtime_ns}",
        "converter": CONVERTER_VERSION,
    }
    if out.is_file() and stamp_path.is_file():
        try:
            if json.loads(stamp_path.read_text(encoding="utf-8")) == stamp:
                return out, note
        except (OSError, ValueError):
            pass
    model = restore(
        onnx.load(str(src), load_external_data=False), external_initializers(manifest.raw)
    )
    if source == "int8":
        from assistant.inference.dequantize import dequantize_int8

        model = dequantize_int8(model)
    save_valid(to_fp16(model), out)
    stamp_path.write_text(json.dumps(stamp) + "\n", encoding="utf-8")
    return out, note
