"""Model checksums remembered across processes (``inference.verified``): a model file hashed to
its manifest's sha256 once is not hashed again by the next process while it is unchanged, and
any write to it (same size or not) makes the next load hash it again and refuse it."""

from __future__ import annotations

import shutil

import pytest

from assistant.inference import registry, shared_weights, verified
from assistant.inference.encoder import load_encoder
from assistant.inference.registry import ModelCorruptedError, ModelManifest


def _hashes(monkeypatch) -> list:
    seen: list = []
    real_file, real_array = registry.sha256_file, shared_weights.sha256_array
    monkeypatch.setattr(registry, "sha256_file", lambda p: seen.append(p) or real_file(p))
    monkeypatch.setattr(
        shared_weights, "sha256_array", lambda a: seen.append("array") or real_array(a)
    )
    return seen


def _new_process(monkeypatch) -> None:
    """Forget what this process verified (as a new process starts)."""
    monkeypatch.setattr(registry, "_VERIFIED", {})
    monkeypatch.setattr(shared_weights, "_CACHE", {})


@pytest.fixture
def model_copy(tmp_path):
    load_encoder()  # builds minilm into the session models dir on first use
    folder = tmp_path / "minilm-copy"
    shutil.copytree(registry.find_model_dir("minilm"), folder)
    return folder


def test_a_file_hashed_once_is_trusted_until_it_changes(model_copy, monkeypatch):
    seen = _hashes(monkeypatch)
    manifest = ModelManifest.load(model_copy)
    _new_process(monkeypatch)
    registry.verify_file(manifest, "int8")
    assert len(seen) == 1  # hashed, then remembered
    _new_process(monkeypatch)
    registry.verify_file(manifest, "int8")
    assert len(seen) == 1  # the next process trusts the unchanged file

    path = manifest.file_for("int8")
    data = bytearray(path.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 64] = b"\x00" * 64  # same size, new bytes
    path.write_bytes(bytes(data))
    _new_process(monkeypatch)
    with pytest.raises(ModelCorruptedError, match="corrupted"):
        registry.verify_file(manifest, "int8")
    assert len(seen) == 2


def test_the_shared_table_is_hashed_once_across_processes(monkeypatch):
    spec = dict(next(iter(_reranker_spec().values())))
    seen = _hashes(monkeypatch)
    _new_process(monkeypatch)
    shared_weights.base_tensor(spec)
    _new_process(monkeypatch)
    shared_weights.base_tensor(spec)
    assert seen.count("array") == 1  # the second process trusts the first one's hash
    wrong = {**spec, "sha256": "0" * 64}
    _new_process(monkeypatch)
    with pytest.raises(shared_weights.SharedWeightsError, match="differs"):
        shared_weights.base_tensor(wrong)  # another digest is never taken on trust


def test_an_unreadable_record_is_only_a_cache(model_copy, monkeypatch, isolated_home):
    (isolated_home / verified.FILE).write_text("not json")
    manifest = ModelManifest.load(model_copy)
    _new_process(monkeypatch)
    assert registry.verify_file(manifest, "int8").is_file()
    _new_process(monkeypatch)
    assert verified.known(manifest.file_for("int8"), "file", manifest.files["int8"])


def _reranker_spec() -> dict:
    from assistant.config import SHIPPED_MODELS_DIR

    return ModelManifest.load(SHIPPED_MODELS_DIR / "reranker-minilm").raw[shared_weights.KEY]
