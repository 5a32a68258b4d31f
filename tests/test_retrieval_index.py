"""Indexing on ten real records of the bundled sample library (runs on a clean clone): incremental
add/update/remove, resume, model change, empty library, index kinds, embedding budget."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from click.testing import CliRunner
from retrieval_helpers import SAMPLE_BIB, CountingEncoder, load_test_encoder, make_library

from assistant.config import index_dir_for
from assistant.library.models import Paper
from assistant.library.store import Library
from assistant.retrieval.bm25 import BM25Index
from assistant.retrieval.index import IndexPaths, build_index
from assistant.retrieval.searcher import EmptyLibraryError, Searcher


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    return load_test_encoder(tmp_path_factory)


@pytest.fixture
def tiny(tmp_path):
    lib = make_library(tmp_path / "tiny.sqlite", SAMPLE_BIB, limit=10)
    yield lib
    lib.close()


def _index_ids(lib) -> set[int]:
    return set(np.load(index_dir_for(lib.path) / "dense" / "ids.npy").tolist())


def test_incremental_add_update_remove(tiny, encoder):
    enc = CountingEncoder(encoder)
    first = build_index(tiny, enc)
    assert (first.added, first.removed, first.total) == (10, 0, 10)
    assert len(enc.texts) == 10 and first.bm25_rebuilt
    meta = json.loads((index_dir_for(tiny.path) / "meta.json").read_text())
    assert (
        meta["fingerprint"] == encoder.fingerprint
        and meta["kind"] == "flat"
        and meta["count"] == 10
    )

    enc.texts.clear()
    again = build_index(tiny, enc)
    assert (again.added, again.updated, again.removed, again.unchanged) == (0, 0, 0, 10)
    assert enc.texts == [] and not again.bm25_rebuilt

    papers = list(tiny.iter_papers())
    gone, changed = papers[0], papers[1]
    tiny.remove(gone.id)
    tiny.update_paper(replace(changed, abstract="Zyxwvut retrieval of quokka habitats."))
    new = tiny.add_paper(
        Paper(
            title="Axolotl query logs at scale",
            abstract="We study axolotl search.",
            doi="10.9999/axolotl",
            entry_type="inproceedings",
            year=2019,
        )
    )
    enc.texts.clear()
    report = build_index(tiny, enc)
    assert (report.added, report.updated, report.removed, report.unchanged) == (1, 1, 1, 8)
    assert sorted(enc.texts) == sorted(
        [tiny.get(changed.id).encoder_text(), tiny.get(new.id).encoder_text()]
    )
    assert _index_ids(tiny) == {p.id for p in tiny.iter_papers()}
    bm25 = BM25Index.load(IndexPaths(index_dir_for(tiny.path)).bm25)
    ids, _ = bm25.search("axolotl", k=5)
    assert ids.tolist() == [new.id]
    assert gone.id not in bm25.ids.tolist()


def test_model_change_triggers_rebuild(tiny, encoder, tmp_path_factory):
    build_index(tiny, encoder)
    other = load_test_encoder(tmp_path_factory, max_length=64)
    assert other.fingerprint != encoder.fingerprint
    enc = CountingEncoder(other)
    report = build_index(tiny, enc)
    assert report.rebuilt_reason and "encoder changed" in report.rebuilt_reason
    assert len(enc.texts) == 10 and report.fingerprint == other.fingerprint
    with pytest.raises(Exception, match="assistant index"):
        Searcher.open(tiny, encoder=encoder)  # the index no longer matches the first encoder


def test_interrupted_run_resumes(tiny, encoder):
    enc = CountingEncoder(encoder, stop_after=1)
    with pytest.raises(KeyboardInterrupt):
        build_index(tiny, enc, chunk_size=4)
    pending = IndexPaths(index_dir_for(tiny.path)).pending
    assert len(list(pending.glob("chunk-*.npz"))) == 1
    enc2 = CountingEncoder(encoder)
    report = build_index(tiny, enc2, chunk_size=4)
    assert report.resumed == 4 and len(enc2.texts) == 6
    assert _index_ids(tiny) == {p.id for p in tiny.iter_papers()}
    assert not pending.exists()


def test_reuse_from_other_index(tiny, encoder, tmp_path):
    build_index(tiny, encoder)
    copy = Library(tmp_path / "copy.sqlite")
    for p in tiny.iter_papers():
        copy.add_paper(replace(p, id=None, citekey=None))
    enc = CountingEncoder(encoder)
    report = build_index(copy, enc, reuse_from=[index_dir_for(tiny.path)])
    assert enc.texts == [] and report.total == 10
    copy.close()


def test_empty_library_messages(tmp_path, monkeypatch):
    lib = Library(tmp_path / "empty.sqlite")
    with pytest.raises(EmptyLibraryError, match="empty"):
        Searcher.open(lib)
    from assistant.cli import main

    result = CliRunner().invoke(main, ["--db", str(lib.path), "index"])
    assert result.exit_code != 0 and "empty" in result.output
    lib.close()


@pytest.mark.parametrize("kind", ["hnsw", "ivf"])
def test_approximate_index_kinds(tiny, encoder, kind):
    build_index(tiny, encoder, kind=kind)
    meta = json.loads((index_dir_for(tiny.path) / "meta.json").read_text())
    assert meta["kind"] == ("flat" if kind == "ivf" else kind)  # IVF needs >= 1000 vectors to train
    assert meta["kind_requested"] == kind
    searcher = Searcher.open(tiny, encoder=encoder)
    target = next(iter(tiny.iter_papers()))
    ids, scores = searcher.dense_search_vector(encoder.encode([target.encoder_text()]), 3, None)
    assert ids[0] == target.id and scores[0] == pytest.approx(1.0, abs=0.02)
    again = build_index(tiny, encoder)  # "auto" keeps the kind that was asked for
    assert again.kind == meta["kind"] and again.unchanged == 10


def test_ivf_on_enough_vectors_finds_exact_match():
    from assistant.retrieval.index_layout import make_faiss

    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(3000, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    ids = np.arange(100, 3100, dtype=np.int64)
    index = make_faiss(vecs, ids, "ivf")
    assert "IVF" in type(index).__name__
    _, found = index.search(vecs[[5, 2500]], 1)
    assert found[:, 0].tolist() == [105, 2600]


def test_embedding_budget_writes_partial_index_then_completes(tiny, encoder):
    from assistant.retrieval.pipeline import PipelineConfig, Recommender

    partial = build_index(tiny, CountingEncoder(encoder), embed_budget_s=0)
    assert partial.missing == 10 and partial.warnings and partial.bm25_rebuilt
    rec = Recommender(tiny, PipelineConfig(use_intent=False), encoder=encoder)
    result = rec.recommend("retrieval evaluation")
    assert result.items and any("dense index covers 0 of 10" in w for w in result.warnings)
    enc = CountingEncoder(encoder)
    done = build_index(tiny, enc)
    assert done.missing == 0 and len(enc.texts) == 10 and not done.bm25_rebuilt
    assert (
        not Recommender(tiny, PipelineConfig(use_intent=False), encoder=encoder)
        .recommend("retrieval")
        .warnings
    )
