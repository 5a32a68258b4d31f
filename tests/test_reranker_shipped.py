"""The shipped reranker folder: manifest contract for the pipeline, integrity, and scoring."""

from __future__ import annotations

import json

import numpy as np
import pytest

from assistant.config import SHIPPED_MODELS_DIR
from assistant.inference.export import sha256_file

FOLDER = SHIPPED_MODELS_DIR / "reranker-minilm"


@pytest.fixture(scope="module")
def manifest() -> dict:
    if not (FOLDER / "manifest.json").is_file():
        pytest.skip(f"no shipped reranker at {FOLDER}")
    return json.loads((FOLDER / "manifest.json").read_text())


def test_manifest_tells_the_pipeline_whether_to_enable_it(manifest):
    assert manifest["kind"] == "cross-encoder"
    assert isinstance(manifest["enabled_by_default"], bool)
    weight = manifest.get("rerank_weight")
    assert weight is None or 0.0 < weight <= 1.0
    top = manifest.get("rerank_top")
    assert top is None or (isinstance(top, int) and top >= 1)
    assert (FOLDER / "MODEL_CARD.md").is_file()


def test_shipped_int8_file_matches_its_checksum(manifest):
    assert sha256_file(FOLDER / "model.int8.onnx") == manifest["files"]["int8"]


def test_shipped_reranker_loads_and_scores(manifest):
    from assistant.inference.cross_encoder import load_cross_encoder

    model = load_cross_encoder(FOLDER, device="cpu")
    docs = [
        "Learning to rank with BM25 features [SEP] We study learning to rank for web search.",
        "Bird migration [SEP] Birds fly south in winter.",
    ]
    scores = model.score("learning to rank for web search", docs)
    assert scores.shape == (2,) and np.isfinite(scores).all()
    assert scores[0] > scores[1] + 1.0  # the trained model prefers the on-topic paper clearly
