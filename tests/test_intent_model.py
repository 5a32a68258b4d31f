"""The shipped intent model: loads offline, labels obvious cases, survives bad input; CLI and eval."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import FIXTURES

from assistant.cli import main
from assistant.inference.intent import (
    LABELS,
    IntentClassifier,
    load_intent_classifier,
    normalize_context,
    shipped_model_dir,
)

OBVIOUS = {
    "method": [
        "We used the segmentation algorithm of Otsu (1979) to threshold the images.",
        "Gene expression was quantified with the 2-ΔΔCt method as described previously [14].",
        "Following [7], we train the network with stochastic gradient descent and a batch size of 32.",
    ],
    "result": [
        "Our results are consistent with those reported by Smith et al. (2010), who also observed a decrease.",
        "These findings are in agreement with previous studies that showed similar effects [4, 5].",
        "This is in contrast to the results of Jones et al. (2015), who found no significant difference.",
    ],
    "background": [
        "Diabetes is a major cause of morbidity and mortality worldwide (World Health Organization, 2016).",
        "Climate change is expected to alter the distribution of many species [3].",
        "Citation recommendation has been studied extensively in information retrieval [2, 8].",
    ],
}


@pytest.fixture(scope="module")
def clf() -> IntentClassifier:
    assert (shipped_model_dir() / "manifest.json").is_file(), (
        "the shipped models/intent-minilm/ is missing"
    )
    return load_intent_classifier()


def test_shipped_model_files_and_manifest():
    folder = shipped_model_dir()
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["kind"] == "classifier" and manifest["labels"] == list(LABELS)
    assert 0.2 < manifest["temperature"] < 5.0
    tokenizer = manifest.get("tokenizer", "tokenizer.json")  # the shipped one is shared
    for name in ("model.int8.onnx", tokenizer, "MODEL_CARD.md"):
        path = folder / name
        assert path.is_file(), name
        assert path.stat().st_size < 100 * 1024 * 1024
    from assistant.inference.export import sha256_file

    assert sha256_file(folder / "model.int8.onnx") == manifest["files"]["int8"]


@pytest.mark.parametrize("label", LABELS)
def test_obvious_examples(clf, label):
    preds = clf.classify(OBVIOUS[label])
    assert [p.label for p in preds] == [label] * len(OBVIOUS[label])


def test_batch_equals_single_and_probabilities_are_calibrated(clf):
    texts = [t for group in OBVIOUS.values() for t in group]
    batch = clf.predict_proba(texts)
    single = np.vstack([clf.predict_proba([t]) for t in texts[:3]])
    # dynamic int8 quantises activations per batch, so batch composition moves probabilities slightly
    assert np.allclose(batch[:3], single, atol=0.02)
    assert (batch[:3].argmax(1) == single.argmax(1)).all()
    assert np.allclose(batch.sum(1), 1.0, atol=1e-5)
    raw = clf._clf.predict_proba(texts[:3])  # uncalibrated: temperature changes the sharpness
    if abs(clf.temperature - 1.0) > 0.05:
        assert not np.allclose(raw, batch[:3], atol=1e-3)
        assert (raw.argmax(1) == batch[:3].argmax(1)).all()


def test_bad_input(clf):
    texts = [
        "",
        "   ",
        "x" * 10_000,
        "Wir verwenden die Methode von Müller et al. (2019) für die Analyse.",
        "我们使用了文献[3]中的方法。",
        "[12]",
        "\x00\ufffd\n\t",
        "a",
    ]
    preds = clf.classify(texts)
    assert len(preds) == len(texts)
    for p in preds:
        assert p.label in LABELS and 0 < p.confidence <= 1
        assert sum(p.probs.values()) == pytest.approx(1.0, abs=1e-4)
    # blank input gets the class prior (no evidence), not a confident guess
    assert preds[0].probs == preds[1].probs and preds[0].label == "background"
    assert preds[0].confidence < 0.7
    with pytest.raises(TypeError):
        clf.classify("a single string")
    assert clf.classify([]) == []


def test_normalize_context_markers():
    assert (
        normalize_context("as in [3, 4] and (Smith et al., 2020a; Lee 2019).")
        == "as in @@CITATION and @@CITATION."
    )
    assert (
        normalize_context("Smith et al. (2012) showed \\citep[p.~3]{smith} x")
        == "Smith et al. @@CITATION showed @@CITATION x"
    )
    assert normalize_context("a modest (10-20%) drop (Fig. 2)") == "a modest (10-20%) drop (Fig. 2)"
    assert len(normalize_context("y" * 50_000)) <= 2000


def test_cli_intent_json_and_text():
    runner = CliRunner()
    res = runner.invoke(main, ["intent", OBVIOUS["method"][0], "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["label"] == "method" and set(out["probs"]) == set(LABELS)
    res = runner.invoke(main, ["intent", OBVIOUS["result"][0], OBVIOUS["background"][0]])
    assert res.exit_code == 0, res.output
    lines = res.output.strip().splitlines()
    assert lines[0].startswith("result") and lines[1].startswith("background")
    res = runner.invoke(main, ["intent", OBVIOUS["method"][0], "  "])
    assert res.exit_code == 0 and len(res.stdout.strip().splitlines()) == 2
    assert "input 2 is empty" in res.stderr and "input 1" not in res.stderr
    res = runner.invoke(main, ["intent"])
    assert res.exit_code != 0 and "SENTENCE" in res.output


def test_cli_intent_file_in_a_legacy_encoding_or_binary(tmp_path):
    runner = CliRunner()
    legacy = tmp_path / "contexts.txt"
    legacy.write_bytes(
        (
            "Caf\u00e9 data: " + OBVIOUS["method"][0] + "\r\n\r\n" + OBVIOUS["result"][0] + "\r\n"
        ).encode("cp1252")
    )
    res = runner.invoke(main, ["intent", "--file", str(legacy), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert [o["label"] for o in out] == ["method", "result"] and out[0]["text"].startswith(
        "Caf\u00e9 data"
    )
    assert "not UTF-8; read as cp1252" in res.stderr
    binary = tmp_path / "contexts.bin"
    binary.write_bytes(b"\x00\x01" * 100)
    res = runner.invoke(main, ["intent", "--file", str(binary)])
    assert res.exit_code == 2 and "binary file" in res.output


def test_eval_scicite_cli_on_fixture():
    res = CliRunner().invoke(
        main, ["eval", "scicite", str(FIXTURES / "scicite_small.jsonl"), "--json"]
    )
    assert res.exit_code == 0, res.output
    rep = json.loads(res.output)
    assert rep["n"] == 6 and rep["accuracy"] >= 5 / 6
    assert set(rep["per_class"]) == set(LABELS)
    assert sum(map(sum, rep["confusion_matrix"]["rows_true_cols_pred"])) == 6
    assert 0 <= rep["ece"] <= 1 and rep["macro_f1"] > 0.7


def test_eval_scicite_reports_bad_lines(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"string": "x", "label": "method"}\n{"label": "method"}\n')
    res = CliRunner().invoke(main, ["eval", "scicite", str(bad)])
    assert res.exit_code != 0 and "bad.jsonl:2" in res.output and "string" in res.output


@pytest.mark.slow
def test_dev_macro_f1(shared_data, clf):
    """The shipped int8 model on SciCite dev (the figure in MODEL_CARD.md)."""
    from assistant.evaluation.scicite_eval import evaluate

    rep = evaluate(shared_data / "scicite" / "dev.jsonl")
    assert rep["macro_f1"] >= 0.80
