"""Turn a dynamic-int8 graph back into an fp32 one (for the GPU, which must not run int8).

The shipped reranker and intent models exist only as ``quantize_dynamic`` output. Their weights,
dequantized (``(w_int8 - zero_point) * scale`` per output channel), are the fp32 weights the int8
model computes with; with the activation quantisation removed the graph is a plain fp32 one that
``fp16.to_fp16`` can convert for CUDA. Patterns rewritten:

- ``DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul(scale)`` becomes ``MatMul``;
- ``DynamicQuantizeLinear -> QAttention`` becomes ``Attention`` (same attributes).
"""

from __future__ import annotations

import numpy as np
from onnx import helper, numpy_helper

from assistant.inference.runtime import ModelLoadError


def _weights(inits: dict, q_name: str, scale_name: str, zp_name: str) -> np.ndarray:
    w = numpy_helper.to_array(inits[q_name]).astype(np.float32)
    scale = numpy_helper.to_array(inits[scale_name]).astype(np.float32)
    zero = numpy_helper.to_array(inits[zp_name]).astype(np.float32)
    return ((w - zero) * scale).astype(np.float32)  # per output channel: broadcast over rows


def dequantize_int8(model):
    """An fp32 ``ModelProto`` computing what ``model`` (dynamic int8) does without quantisation."""
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    producer = {o: n for n in graph.node for o in n.output}
    consumers: dict[str, list] = {}
    for n in graph.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)

    def source_of(quantized: str) -> str:
        dql = producer.get(quantized)
        if dql is None or dql.op_type != "DynamicQuantizeLinear":
            raise ModelLoadError(f"cannot dequantize: {quantized!r} is not a DynamicQuantizeLinear")
        return dql.input[0]

    drop: set[int] = set()
    new_inits: dict[str, np.ndarray] = {}
    replace: dict[int, object] = {}
    for node in graph.node:
        if node.op_type == "MatMulInteger":
            xq, wq, _xzp, wzp = node.input
            cast = consumers[node.output[0]][0]
            mul = consumers[cast.output[0]][0]
            scales = producer[next(i for i in mul.input if i != cast.output[0])]
            w_scale = next(i for i in scales.input if i in inits)
            w_name = wq.removesuffix("_quantized") + "_dequantized"
            new_inits[w_name] = _weights(inits, wq, w_scale, wzp)
            replace[id(mul)] = helper.make_node(
                "MatMul", [source_of(xq), w_name], list(mul.output), name=node.name + "_fp32"
            )
            drop.update({id(node), id(cast), id(scales)})
        elif node.op_type == "QAttention":
            xq, wq, bias, _xs, ws, mask, _xzp, wzp = (list(node.input) + [""] * 9)[:8]
            w_name = wq.removesuffix("_quantized") + "_dequantized"
            new_inits[w_name] = _weights(inits, wq, ws, wzp)
            replace[id(node)] = helper.make_node(
                "Attention",
                [source_of(xq), w_name, bias, mask],
                list(node.output),
                name=node.name.removesuffix("_quant"),
                domain="com.microsoft",
                **{a.name: helper.get_attribute_value(a) for a in node.attribute},
            )
    nodes = []
    for node in graph.node:
        if id(node) in drop:
            continue
        nodes.append(replace.get(id(node), node))
    used = {i for n in nodes for i in n.input}
    nodes = [n for n in nodes if n.op_type != "DynamicQuantizeLinear" or n.output[0] in used]
    used = {i for n in nodes for i in n.input}
    del graph.node[:]
    graph.node.extend(nodes)
    kept = [t for t in graph.initializer if t.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    graph.initializer.extend(numpy_helper.from_array(a, n) for n, a in new_inits.items())
    if any(n.op_type in ("MatMulInteger", "QAttention", "DynamicQuantizeLinear") for n in nodes):
        raise ModelLoadError("cannot dequantize: quantized nodes of an unknown pattern remain")
    return model
