"""The GPU path, checked on the CPU: valid fp16 files for every model, no int8 on CUDA, and
clear reasons when CUDA cannot start (issue #30)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from assistant.config import SHIPPED_MODELS_DIR
from assistant.inference import runtime
from assistant.inference.fp16 import fp16_file, repair_graph, to_fp16, validate
from assistant.inference.registry import ModelManifest, resolve_model_dir
from assistant.inference.runtime import ModelLoadError

SHIPPED = ["reranker-minilm", "intent-minilm"]


def _sample_abstracts(n: int = 48) -> list[str]:
    import bibtexparser

    lib = bibtexparser.parse_file(str(SHIPPED_MODELS_DIR.parent / "resources/sample/library.bib"))
    texts = [
        f"{e.fields_dict['title'].value}. {e.fields_dict['abstract'].value}"
        for e in lib.entries
        if "abstract" in e.fields_dict and "title" in e.fields_dict
    ]
    return texts[:n]


def _feed(manifest: ModelManifest, texts: list[str]) -> dict[str, np.ndarray]:
    from assistant.inference.registry import load_tokenizer

    tok = load_tokenizer(manifest)
    tok.enable_padding(pad_id=manifest.pad_token_id)
    enc = tok.encode_batch(texts)
    ids = np.array([e.ids for e in enc], dtype=np.int64)
    feed = {
        "input_ids": ids,
        "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64),
        "token_type_ids": np.zeros_like(ids),
    }
    return {k: feed[k] for k in manifest.inputs}


@pytest.fixture(scope="module")
def minilm_dir():
    pytest.importorskip("torch")
    return resolve_model_dir("minilm")  # built into the session's test models dir


@pytest.mark.parametrize("name", ["minilm", *SHIPPED])
def test_fp16_file_of_every_model_passes_the_checker_and_opens(name, minilm_dir):
    manifest = ModelManifest.load(minilm_dir if name == "minilm" else SHIPPED_MODELS_DIR / name)
    path, note = fp16_file(manifest)
    assert (note is None) == (name == "minilm")  # shipped ones come from their int8 weights
    onnx.checker.check_model(str(path), full_check=True)
    model = onnx.load(str(path))
    names = [n.name for n in model.graph.node if n.name]
    outputs = [o for n in model.graph.node for o in n.output if o]
    assert len(names) == len(set(names)) and len(outputs) == len(set(outputs))
    assert any(t.data_type == onnx.TensorProto.FLOAT16 for t in model.graph.initializer)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    texts = _sample_abstracts(8)
    out = session.run(None, _feed(manifest, texts))[0]
    assert out.shape[0] == len(texts) and np.isfinite(out).all()
    # never written into the installed package
    assert SHIPPED_MODELS_DIR.resolve() not in path.resolve().parents


def test_fp16_encoder_matches_fp32_on_real_abstracts(minilm_dir):
    manifest = ModelManifest.load(minilm_dir)
    path, _ = fp16_file(manifest)
    feed = _feed(manifest, _sample_abstracts(48))
    cpu = ["CPUExecutionProvider"]
    fp32 = ort.InferenceSession(str(minilm_dir / "model.onnx"), providers=cpu).run(None, feed)[0]
    half = ort.InferenceSession(str(path), providers=cpu).run(None, feed)[0]
    half = half / np.linalg.norm(half, axis=1, keepdims=True)
    assert float((fp32 * half).sum(1).min()) >= 0.999


def test_repair_merges_the_converters_duplicate_casts():
    """Two LayerNorms share a blocked weight: the converter adds two same-named Casts."""
    from onnx import TensorProto, helper, numpy_helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])
    w = numpy_helper.from_array(np.ones(4, np.float32), "w")
    b = numpy_helper.from_array(np.zeros(4, np.float32), "b")
    nodes = [
        helper.make_node("LayerNormalization", ["x", "w", "b"], ["h"], name="ln1"),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("LayerNormalization", ["r", "w", "b"], ["y"], name="ln2"),
    ]
    graph = helper.make_graph(nodes, "g", [x], [y], [w, b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    half = to_fp16(model, blocked_ops=["LayerNormalization"])
    onnx.checker.check_model(half, full_check=True)
    session = ort.InferenceSession(half.SerializeToString(), providers=["CPUExecutionProvider"])
    data = np.arange(8, dtype=np.float32).reshape(2, 4)
    assert session.run(None, {"x": data})[0].shape == (2, 4)
    # and a graph with a real clash is refused, not silently broken
    dup = helper.make_model(
        helper.make_graph(
            [
                helper.make_node("Relu", ["x"], ["y"], name="a"),
                helper.make_node("Neg", ["x"], ["y"], name="b"),
            ],
            "g",
            [x],
            [y],
        )
    )
    with pytest.raises(ModelLoadError, match="twice"):
        repair_graph(dup)


def test_validate_rejects_a_broken_file(tmp_path):
    path = tmp_path / "model.fp16.onnx"
    path.write_bytes(b"not a model")
    with pytest.raises(ModelLoadError, match="not a valid model"):
        validate(path)


@pytest.mark.parametrize("name", SHIPPED)
def test_int8_is_never_chosen_for_cuda(name, monkeypatch):
    from assistant.inference.session import choose_file

    monkeypatch.setattr(runtime, "available_providers", lambda: [runtime.CUDA, runtime.CPU])
    manifest = ModelManifest.load(SHIPPED_MODELS_DIR / name)
    for precision in ("auto", "int8", "fp32", "fp16"):
        path, device, notes = choose_file(manifest, "cuda", precision)
        assert device == "cuda" and path.endswith("model.fp16.onnx"), (precision, notes)


def test_fallback_note_names_the_nodes_left_on_the_cpu(tmp_path):
    """The placement read from a profiled warm-up run (a CPU session here: all nodes "fall back")."""
    opts = ort.SessionOptions()
    opts.enable_profiling = True
    opts.profile_file_prefix = str(tmp_path / "p")
    path = tmp_path / "model.fp16.onnx"
    path.write_bytes(onnx.load(str(_tiny_fp16())).SerializeToString())
    session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    nodes = runtime.profile_placement(session)
    assert set(nodes) == {runtime.CPU} and sum(nodes[runtime.CPU].values()) >= 1
    assert runtime.fallback_note(nodes, runtime.CPU) is None
    assert runtime.fallback_note(nodes, runtime.CUDA).startswith(
        f"{sum(nodes[runtime.CPU].values())} of {sum(nodes[runtime.CPU].values())} nodes run on CPU"
    )
    note = runtime.fallback_note(
        {runtime.CUDA: {"MatMul": 3}, runtime.CPU: {"Shape": 1, "Attention": 1}}, runtime.CUDA
    )
    assert note == "2 of 5 nodes run on CPU, not CUDA (Attention, Shape)"


def _tiny_fp16():
    """A one-MatMul int64-input model (what the warm-up feed can drive)."""
    from onnx import TensorProto, helper, numpy_helper

    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["b", "s"])
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b", "s", 4])
    table = numpy_helper.from_array(np.ones((10, 4), np.float32), "table")
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "input_ids"], ["y"], name="g")],
        "g",
        [ids],
        [out],
        [table],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    import tempfile
    from pathlib import Path

    path = Path(tempfile.mkdtemp()) / "tiny.onnx"
    onnx.save(model, str(path))
    return path


def test_cuda_problems_say_what_is_missing_one_line_each(monkeypatch):
    monkeypatch.setattr(runtime, "available_providers", lambda: [runtime.CPU])
    versions = {"onnxruntime": "1.32.0", "onnxruntime-gpu": None}
    monkeypatch.setattr(runtime, "_distribution", lambda name: versions[name])
    monkeypatch.setattr(runtime, "_loadable", lambda *names: None)
    problems = runtime.cuda_problems()
    assert problems[0].startswith("onnxruntime-gpu is not installed (the CPU build onnxruntime")
    assert any(p.startswith("no NVIDIA driver found") for p in problems)
    assert any(p.startswith("no CUDA runtime") for p in problems)
    assert any(p.startswith("no cuDNN 9") for p in problems)
    assert all("\n" not in p for p in problems)
    versions.update({"onnxruntime-gpu": "1.31.1"})  # both builds: they share one module
    assert "both onnxruntime 1.32.0 and onnxruntime-gpu 1.31.1" in runtime.cuda_problems()[0]
    monkeypatch.setattr(runtime, "available_providers", lambda: [runtime.CUDA, runtime.CPU])
    assert runtime.cuda_problems() == []


def test_models_info_on_cuda_without_a_gpu_explains_and_lists_each_models_device(minilm_dir):
    from click.testing import CliRunner

    from assistant.cli import main

    if runtime.CUDA in runtime.available_providers():
        pytest.skip("this machine has the CUDA provider")
    result = CliRunner().invoke(main, ["models", "info", "--device", "cuda"])
    assert result.exit_code == 0, result.output
    assert "device: cpu" in result.output and "CUDA unavailable: " in result.output
    result = CliRunner().invoke(main, ["models", "info", "--all", "--json"])
    assert result.exit_code == 0, result.output
    import json

    rows = json.loads(result.output[result.output.index("{") :])["models"]
    assert [r["role"] for r in rows] == ["encoder", "reranker", "intent"]
    assert all(r["device"] == "cpu" and r["precision"] == "int8" for r in rows)

    from assistant.service.models import loaded_model_runtimes

    loaded = {r["name"]: r["device"] for r in loaded_model_runtimes()}
    assert {"minilm", "reranker-minilm", "intent-minilm"} <= set(loaded)


def test_assistant_device_steers_every_auto_load(monkeypatch):
    monkeypatch.setattr(runtime, "available_providers", lambda: [runtime.CUDA, runtime.CPU])
    assert runtime.resolve_device("auto") == ("cuda", [])
    monkeypatch.setenv("ASSISTANT_DEVICE", "cpu")
    assert runtime.resolve_device("auto") == ("cpu", [])
    assert runtime.resolve_device("cuda") == ("cuda", [])  # an explicit device wins
