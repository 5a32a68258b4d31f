"""tools/gpu_check_best.py (issue #36's GPU figures): timing weights that travel in a few MB,
transfers sorted into device calls under the size a call carries, the device side waiting for
what has not arrived, and (slow) the whole pack + run path on the CPU."""

from __future__ import annotations

import io
import json
import lzma

import numpy as np
import pytest

from tools import gpu_check_best as gcb

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def _small_mpnet():
    cfg = transformers.MPNetConfig(
        vocab_size=1000,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        max_position_embeddings=514,
    )
    return transformers.MPNetModel(cfg)


def _xz_ratio(model) -> float:
    from safetensors.torch import save

    raw = save({n: p.detach().contiguous() for n, p in model.named_parameters()})
    return len(raw) / len(lzma.compress(raw))


def test_timing_weights_compress_yet_every_matrix_is_full_rank():
    model = _small_mpnet()
    gcb.timing_weights(model, period=4099)
    matrices = 0
    for name, p in model.named_parameters():
        values = p.detach().numpy()
        if "LayerNorm" in name and name.endswith("weight"):
            assert (values == 1).all(), name
        elif name.endswith("bias"):
            assert (values == 0).all(), name
        else:
            assert np.allclose(np.abs(values), 0.02), name
            if values.ndim == 2 and min(values.shape) > 1:
                assert np.linalg.matrix_rank(values) == min(values.shape), name
                matrices += 1
    assert matrices >= 10  # attention, feed-forward and embedding matrices of two layers
    # the same architecture with independent +-0.02 signs (tools/gpu_check.py's timing models)
    iid = _small_mpnet()
    with torch.no_grad():
        for p in iid.parameters():
            p.copy_((torch.randint(0, 2, p.shape).float() * 2 - 1) * 0.02)
    periodic, independent = _xz_ratio(model), _xz_ratio(iid)  # measured: 373x and 25x
    assert periodic > 100 and periodic > 5 * independent


def _stage(tmp_path, sizes: dict[str, int]):
    stage = tmp_path / "stage"
    for rel, size in sizes.items():
        f = stage / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(b"x" * size)
    for part in (stage / "ort").glob("part*"):
        (part / "unpack.py").write_text("# unpack\n")
        (part / "manifest.txt").write_text(repr({"provider": [], "rest": []}))
    return stage


def test_split_calls_keeps_each_call_under_the_limit_and_every_file_once(tmp_path):
    sizes = {
        "ort/part1/provider.xz.00": 28_000,
        "ort/part2/provider.xz.01": 24_000,
        "ort/part3/rest.xz.00": 17_400,
        "deps/faiss_cpu-1.15.1-cp310-abi3-manylinux_2_28_x86_64.whl": 18_800,
        "deps/platformdirs-4.14.8-py3-none-any.whl": 100,
        "models.tar.xz": 9_000,
        "texts.json.xz": 4_000,
    }
    stage = _stage(tmp_path, sizes)
    out = tmp_path / "transfer"
    report = gcb.split_calls(stage, out, 34_000)
    assert len(report) == 4  # 101,300 bytes cannot go in three calls of 34,000
    seen = [f for call in report.values() for f in call["files"]]
    assert sorted(seen) == sorted(sizes)
    for name, call in report.items():
        assert call["bytes"] <= 34_000 + 2_000, name  # + unpack.py and manifest.txt
        on_disk = {p.name for p in (out / name).rglob("*") if p.is_file()}
        if any(f.startswith("ort/") for f in call["files"]):
            assert {"unpack.py", "manifest.txt"} <= on_disk
        assert {f.rsplit("/", 1)[-1] for f in call["files"]} <= on_disk
    with pytest.raises(SystemExit, match="over the"):
        gcb.split_calls(stage, out, 20_000)


def test_device_says_what_it_still_waits_for(tmp_path, monkeypatch):
    monkeypatch.setattr("sys.path", list(__import__("sys").path))  # device() prepends its site
    transfer = tmp_path / "transfer"
    (transfer / "call1").mkdir(parents=True)
    lzma_texts = lzma.compress(json.dumps(["A title. An abstract."]).encode())
    (transfer / "call1" / "texts.json.xz").write_bytes(lzma_texts)
    result = gcb.device(transfer, tmp_path / "site", tmp_path / "work", {})
    waiting = result["waiting_for"]
    assert "onnxruntime-gpu provider" in waiting and "onnxruntime-gpu rest" in waiting
    assert {f"models/{m}" for m in gcb.MODELS} <= set(waiting)
    assert "texts.json.xz" not in waiting  # it arrived and was kept for the run
    assert (tmp_path / "work" / "texts.json.xz").read_bytes() == lzma_texts


@pytest.mark.slow
def test_pack_and_run_on_the_cpu(tmp_path, monkeypatch):
    """The whole path with a small mpnet-architecture model standing in for all-mpnet-base-v2
    (its tokenizer: MiniLM's WordPiece), MiniLM's real architecture for the fast tier."""
    from assistant.inference.build import minilm_source

    hf = tmp_path / "mpnet-hf"
    model = _small_mpnet()
    model.config.vocab_size = 30527
    model.resize_token_embeddings(30527)
    model.save_pretrained(hf)
    for f in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        if (minilm_source() / f).exists():
            (hf / f).write_bytes((minilm_source() / f).read_bytes())
    monkeypatch.setattr(gcb.base, "_acm_texts", lambda n: _sample_texts()[:n])
    out = tmp_path / "transfer"
    result = gcb.pack(out, 64, runtime=False, call_mb=34, mpnet=hf)
    assert set(result["calls"]) == {"call1"}
    assert result["calls"]["call1"]["bytes"] < 34e6
    work = tmp_path / "work"
    work.mkdir()
    import subprocess

    subprocess.run(["tar", "-xJf", str(out / "call1" / "models.tar.xz"), "-C", str(work)], check=True)  # fmt: skip
    (work / "texts.json.xz").write_bytes((out / "call1" / "texts.json.xz").read_bytes())
    gcb.base._intent_timing_model(work / "models")
    monkeypatch.setenv("ASSISTANT_MODELS", str(work / "models"))
    figures = gcb.run(work, "cpu", 64, 2000, 3, "both", False)
    buf = io.StringIO()
    json.dump(figures, buf)  # one JSON object
    assert figures["best"]["dim"] == 64 and figures["fast"]["dim"] == 384
    for tier in ("best", "fast"):
        query = figures[tier]["query"]
        assert set(query) == {"encode", "search", "rerank", "intent", "total"}
        assert query["total"]["p50_ms"] >= query["encode"]["p50_ms"] + query["rerank"]["p50_ms"]
        assert figures[tier]["index_docs_per_s"] > 0
    assert "total" in figures["best"]["query_mpnet_reranker"]


def _sample_texts() -> list[str]:
    import bibtexparser

    from assistant.config import SHIPPED_MODELS_DIR

    lib = bibtexparser.parse_file(str(SHIPPED_MODELS_DIR.parent / "resources/sample/library.bib"))
    return [
        f"{e.fields_dict['title'].value}. {e.fields_dict['abstract'].value}"
        for e in lib.entries
        if "abstract" in e.fields_dict and "title" in e.fields_dict
    ]
