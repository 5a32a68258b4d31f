"""The shipped best-tier cross-encoder delta: recipe contract, integrity, what it may change,
how the pipeline applies it, and (slow) the real build from the mpnet packages."""

from __future__ import annotations

import importlib.util
import json
import re

import numpy as np
import pytest

from assistant.config import SHIPPED_MODELS_DIR
from assistant.inference.export import sha256_file
from assistant.inference.weight_delta import FULL, QUANT, SCALE

FOLDER = SHIPPED_MODELS_DIR / "reranker-mpnet-delta"


@pytest.fixture(scope="module")
def recipe() -> dict:
    if not (FOLDER / "recipe.json").is_file():
        pytest.skip(f"no shipped delta at {FOLDER}")
    return json.loads((FOLDER / "recipe.json").read_text())


def test_recipe_tells_the_build_and_the_pipeline_what_they_need(recipe):
    assert recipe["kind"] == "cross-encoder" and recipe["name"] == "reranker-mpnet"
    assert sha256_file(FOLDER / recipe["delta"]) == recipe["sha256"]
    manifest = recipe["manifest"]
    assert manifest["tier"] == "best" and isinstance(manifest["enabled_by_default"], bool)
    assert 0 < manifest["rerank_weight"] <= 1 and manifest["rerank_top"] >= 1
    assert (FOLDER / "MODEL_CARD.md").is_file() and "__" not in (
        FOLDER / "MODEL_CARD.md"
    ).read_text()


def test_the_delta_changes_only_the_trained_top_layers_and_the_head(recipe):
    with np.load(FOLDER / recipe["delta"], allow_pickle=False) as data:
        names = {key.partition("|")[2] for key in data.files}
        for key in data.files:
            kind = key.partition("|")[0] + "|"
            assert kind in (QUANT, SCALE, FULL)
            if kind == QUANT:
                packed, scale = data[key], data[SCALE + key[len(QUANT) :]]
                assert packed.dtype == np.uint8 and scale.dtype == np.float16
                assert packed.shape[0] == scale.shape[0]
    layers = {int(m.group(1)) for n in names if (m := re.search(r"\.layer\.(\d+)\.", n))}
    assert layers == set(range(6, 12))  # the frozen bottom half comes from the base untouched
    assert not any("embeddings" in n for n in names)
    assert {"classifier.dense.weight", "classifier.out_proj.weight"} <= names


def test_named_or_auto_the_pipeline_applies_it_with_its_cv_knobs(recipe):
    from assistant.inference.build import BUILDERS
    from assistant.retrieval.reranker_setting import resolve_reranker

    assert "reranker-mpnet" in BUILDERS
    knobs = recipe["manifest"]
    named = resolve_reranker("reranker-mpnet", "best")  # not built: the recipe's knobs
    assert (named.weight, named.top) == (knobs["rerank_weight"], knobs["rerank_top"])
    auto = resolve_reranker("auto", "best")
    if not knobs["enabled_by_default"]:
        assert auto.model == resolve_reranker("auto", "fast").model


@pytest.mark.slow
def test_built_from_the_packages_it_ranks_the_cited_paper_first(recipe, tmp_path, monkeypatch):
    if not all(importlib.util.find_spec(m) for m in ("torch", "transformers")):
        pytest.skip("building a model needs torch and transformers (the train extra)")
    from assistant.inference.build import MissingWeightsError, build_model
    from assistant.inference.cross_encoder import load_cross_encoder

    monkeypatch.setenv("ASSISTANT_MODELS", str(tmp_path))
    try:
        folder = build_model("reranker-mpnet")
    except MissingWeightsError as exc:
        pytest.skip(str(exc))
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["tier"] == "best" and manifest["rerank_top"] == recipe["manifest"]["rerank_top"]
    model = load_cross_encoder(folder, device="cpu")
    docs = [
        "Learning to rank with BM25 features [SEP] We study learning to rank for web search.",
        "Bird migration [SEP] Birds fly south in winter.",
    ]
    scores = model.score("learning to rank for web search", docs)
    assert scores[0] > scores[1] + 1.0
