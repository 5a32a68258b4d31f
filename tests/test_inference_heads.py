"""Export + cross-encoder + classifier heads, on tiny randomly initialised BERTs (fast)."""

from __future__ import annotations

import io
import json
import shutil
import zipfile

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from assistant.inference.build import _ChainedParts, minilm_source  # noqa: E402
from assistant.inference.classifier import load_classifier  # noqa: E402
from assistant.inference.cross_encoder import load_cross_encoder, logits_to_scores  # noqa: E402
from assistant.inference.export import export_transformer  # noqa: E402
from assistant.inference.registry import ModelNotFoundError, resolve_model_dir  # noqa: E402

LABELS = ["background", "method", "result"]


def _tiny_config(num_labels: int):
    return transformers.BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=num_labels,
        max_position_embeddings=128,
    )


@pytest.fixture(scope="session")
def tokenizer():
    return transformers.AutoTokenizer.from_pretrained(str(minilm_source()), local_files_only=True)


@pytest.fixture(scope="session")
def tiny_cross(tmp_path_factory, tokenizer):
    torch.manual_seed(1)
    model = transformers.BertForSequenceClassification(_tiny_config(1)).eval()
    out = export_transformer(
        model, tokenizer, tmp_path_factory.mktemp("m") / "tiny-ce", "cross-encoder", max_length=48
    )
    return model, out


@pytest.fixture(scope="session")
def tiny_classifier(tmp_path_factory, tokenizer):
    torch.manual_seed(2)
    model = transformers.BertForSequenceClassification(_tiny_config(3)).eval()
    out = export_transformer(
        model,
        str(minilm_source()),
        tmp_path_factory.mktemp("m") / "tiny-clf",
        "classifier",
        labels=LABELS,
        max_length=48,
    )
    return model, out


def test_export_writes_the_documented_layout(tiny_classifier):
    _, folder = tiny_classifier
    names = {p.name for p in folder.iterdir()}
    assert {"model.onnx", "model.int8.onnx", "tokenizer.json", "manifest.json"} <= names
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["kind"] == "classifier" and manifest["labels"] == LABELS
    assert manifest["max_length"] == 48 and manifest["dim"] == 3
    assert set(manifest["files"]) == {"fp32", "int8"} and len(manifest["files"]["fp32"]) == 64


def test_export_rejects_bad_arguments(tmp_path, tokenizer):
    model = transformers.BertForSequenceClassification(_tiny_config(3))
    with pytest.raises(ValueError, match="kind"):
        export_transformer(model, tokenizer, tmp_path / "x", "reranker")
    with pytest.raises(ValueError, match="labels"):
        export_transformer(model, tokenizer, tmp_path / "x", "classifier")
    with pytest.raises(ValueError, match="pooling"):
        export_transformer(
            transformers.BertModel(_tiny_config(1)),
            tokenizer,
            tmp_path / "x",
            "encoder",
            pooling="max",
        )
    assert not (tmp_path / "x").exists()


def test_cross_encoder_matches_torch_on_text_pairs(tiny_cross, tokenizer):
    model, folder = tiny_cross
    ce = load_cross_encoder(folder, precision="fp32")
    query = "dense retrieval for citation recommendation"
    docs = ["BM25 and beyond", "a much longer document about neural ranking " * 40, ""]
    scores = ce.score(query, docs)
    enc = tokenizer(
        [query] * 3, docs, truncation=True, max_length=48, padding=True, return_tensors="pt"
    )
    with torch.no_grad():
        expected = model(**enc).logits[:, 0].numpy()
    assert scores.shape == (3,) and scores.dtype == np.float32
    np.testing.assert_allclose(scores, expected, atol=1e-4)
    assert ce.score(query, []).shape == (0,)
    np.testing.assert_allclose(ce.score_pairs([(query, d) for d in docs]), scores, atol=1e-5)


def test_cross_encoder_int8_is_the_cpu_default_and_close_to_fp32(tiny_cross):
    _, folder = tiny_cross
    docs = [f"document number {i} about topic {i % 5}" for i in range(12)]
    fp32 = load_cross_encoder(folder, precision="fp32").score("topic 3", docs)
    quantised = load_cross_encoder(folder)
    assert quantised.info.precision == "int8" and quantised.info.model_path.endswith(
        "model.int8.onnx"
    )
    np.testing.assert_allclose(quantised.score("topic 3", docs), fp32, atol=0.05)


def test_logits_to_scores_is_rank_preserving():
    one = np.array([[0.5], [-1.0], [2.0]], dtype=np.float32)
    assert np.argsort(logits_to_scores(one)).tolist() == [1, 0, 2]
    assert np.all((logits_to_scores(one, "sigmoid") > 0) & (logits_to_scores(one, "sigmoid") < 1))
    two = np.array([[0.0, 1.0], [2.0, 0.0], [0.0, 0.0]], dtype=np.float32)
    np.testing.assert_allclose(logits_to_scores(two), [1.0, -2.0, 0.0], atol=1e-5)  # log-odds
    np.testing.assert_allclose(logits_to_scores(two, "softmax")[2], 0.5, atol=1e-6)


def test_classifier_probabilities_and_labels(tiny_classifier, tokenizer):
    model, folder = tiny_classifier
    clf = load_classifier(folder, precision="fp32")
    assert clf.labels == LABELS
    texts = ["We use the method of [3].", "Our results agree with prior work " * 60]
    proba = clf.predict_proba(texts)
    assert proba.shape == (2, 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-5)
    enc = tokenizer(texts, truncation=True, max_length=48, padding=True, return_tensors="pt")
    with torch.no_grad():
        expected = torch.softmax(model(**enc).logits, dim=1).numpy()
    np.testing.assert_allclose(proba, expected, atol=1e-4)
    assert clf.predict(texts) == [LABELS[i] for i in expected.argmax(1)]
    assert clf.predict_proba([]).shape == (0, 3)


def test_a_classifier_is_not_loaded_as_a_cross_encoder(tiny_classifier):
    with pytest.raises(ValueError, match="classifier model, not a cross-encoder"):
        load_cross_encoder(tiny_classifier[1])


def test_unknown_model_name_says_how_to_get_one():
    with pytest.raises(ModelNotFoundError, match="models import"):
        resolve_model_dir("no-such-model")


def test_import_local_hf_folder_via_cli(tmp_path, tokenizer):
    from click.testing import CliRunner

    from assistant.cli import main
    from assistant.inference.encoder import load_encoder

    src = tmp_path / "scincl-like"
    torch.manual_seed(3)
    model = transformers.BertModel(_tiny_config(1)).eval()
    model.save_pretrained(src)
    tokenizer.save_pretrained(src)
    runner = CliRunner()
    result = runner.invoke(main, ["models", "import", str(src), "--name", "tiny-enc"])
    assert result.exit_code != 0 and "--pooling" in result.output  # pooling must be declared
    result = runner.invoke(
        main,
        [
            "models",
            "import",
            str(src),
            "--name",
            "tiny-enc",
            "--pooling",
            "cls",
            "--max-length",
            "64",
        ],
    )
    assert result.exit_code == 0, result.output
    enc = load_encoder("tiny-enc", precision="fp32")
    assert enc.dim == 32 and enc.max_length == 64 and enc.manifest.pooling == "cls"
    text = "SciNCL: neighborhood contrastive learning"
    batch = tokenizer([text], return_tensors="pt")
    with torch.no_grad():
        cls = torch.nn.functional.normalize(model(**batch)[0][:, 0], dim=1).numpy()
    np.testing.assert_allclose(enc.encode([text]), cls, atol=1e-5)
    listed = runner.invoke(main, ["models", "list", "--json"])
    assert "tiny-enc" in [m["name"] for m in json.loads(listed.output)["models"]]
    shutil.rmtree(enc.manifest.path)


def test_chained_parts_reassemble_a_split_zip(tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("model/config.json", json.dumps({"a": 1}))
        zf.writestr("model/weights.bin", bytes(range(256)) * 400)
    data = buf.getvalue()
    parts = []
    for i, start in enumerate(range(0, len(data), 7000), 1):
        part = tmp_path / f"x.zip.{i:03d}"
        part.write_bytes(data[start : start + 7000])
        parts.append(part)
    assert len(parts) > 2
    with _ChainedParts(parts) as raw, zipfile.ZipFile(io.BufferedReader(raw)) as zf:
        assert json.loads(zf.read("model/config.json")) == {"a": 1}
        assert zf.read("model/weights.bin") == bytes(range(256)) * 400


def test_an_int8_file_that_breaks_the_model_is_not_shipped(tmp_path, tokenizer, monkeypatch):
    import onnx

    from assistant.inference import export
    from assistant.inference.encoder import load_encoder

    calls = []

    def broken_quantize(fp32_path, int8_path, per_channel=True, keep_fp32=None):
        """A quantiser whose output is garbage even with nodes kept in fp32 (the retry)."""
        calls.append(keep_fp32)
        model = onnx.load(str(fp32_path))
        out = model.graph.output[0].name
        for node in model.graph.node:
            node.output[:] = [o + "_pre" if o == out else o for o in node.output]
        model.graph.node.append(onnx.helper.make_node("Neg", [out + "_pre"], [out]))
        onnx.save(model, str(int8_path))

    monkeypatch.setattr(export, "quantize_int8", broken_quantize)
    torch.manual_seed(4)
    folder = export_transformer(
        transformers.BertModel(_tiny_config(1)).eval(),
        tokenizer,
        tmp_path / "enc",
        "encoder",
        pooling="mean",
        max_length=32,
    )
    manifest = json.loads((folder / "manifest.json").read_text())
    assert set(manifest["files"]) == {"fp32"} and "int8_rejected" in manifest
    assert not (folder / "model.int8.onnx").exists()
    # first all-int8, then a retry with the feed-forward output MatMuls (one per layer) in fp32
    assert calls[0] is None and len(calls) == 2 and calls[1]
    assert all("/output/dense/" in name for name in calls[1])
    assert load_encoder(folder).info.precision == "fp32"  # the CPU default falls back to fp32


def test_gelu_approximation_is_dropped_when_it_moves_the_outputs(tmp_path, tokenizer, monkeypatch):
    """FastGelu is kept only within 1e-3 of the export; otherwise exact GELU, then no fusion."""
    import onnx

    from assistant.inference import export

    real = export._max_difference
    calls = []

    def strict(path_a, path_b, model, names):
        ops = {node.op_type for node in onnx.load(str(path_b)).graph.node}
        calls.append(ops)
        return 1.0 if "FastGelu" in ops else real(path_a, path_b, model, names)

    monkeypatch.setattr(export, "_max_difference", strict)
    torch.manual_seed(5)
    folder = export_transformer(
        transformers.BertModel(_tiny_config(1)).eval(),
        tokenizer,
        tmp_path / "enc",
        "encoder",
        pooling="mean",
        max_length=32,
        quantize=False,
    )
    manifest = json.loads((folder / "manifest.json").read_text())
    assert len(calls) == 2 and "FastGelu" in calls[0] and "FastGelu" not in calls[1]
    assert manifest["optimized"] and "FastGelu" not in manifest["fused_ops"]
    assert "SkipLayerNormalization" not in manifest["fused_ops"]

    monkeypatch.setattr(
        export, "_max_difference", lambda *args: 1.0
    )  # every fusion moves the outputs
    folder = export_transformer(
        transformers.BertModel(_tiny_config(1)).eval(),
        tokenizer,
        tmp_path / "plain",
        "encoder",
        pooling="mean",
        max_length=32,
        quantize=False,
    )
    manifest = json.loads((folder / "manifest.json").read_text())
    assert not manifest["optimized"] and manifest["fused_ops"] == {}
