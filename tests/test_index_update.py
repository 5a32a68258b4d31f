"""Re-indexing only the changed papers (``retrieval/index_update``) gives the index a full
rebuild gives: on the bundled sample library, every BM25 score, every ranked list, every
vector and every FAISS answer is compared with a rebuild of the same library."""

from __future__ import annotations

import json
import os
from dataclasses import replace

import bm25s
import numpy as np
import pytest
from retrieval_helpers import SAMPLE_BIB, CountingEncoder, make_library

from assistant.evaluation.synthetic import SyntheticEncoder
from assistant.library.editing import edit_paper
from assistant.library.models import Paper
from assistant.retrieval import bm25 as bm25_module
from assistant.retrieval.bm25 import BM25Index, BM25Params, TermCounts
from assistant.retrieval.index import IndexPaths, build_index
from assistant.retrieval.index_layout import DIRTY
from assistant.retrieval.searcher import Searcher

QUERIES = [
    "unbiased learning to rank from click logs",
    "position bias estimation with randomised interventions",
    "counterfactual evaluation of search engines",
    "neural ranking models for ad hoc retrieval",
    "query auto completion",
    "axolotl habitats and quokka retrieval",
]


@pytest.fixture(scope="module")
def encoder():
    return SyntheticEncoder()


@pytest.fixture
def library(tmp_path):
    lib = make_library(tmp_path / "lib.sqlite", SAMPLE_BIB)
    yield lib
    lib.close()


def _assert_same_bm25(a: BM25Index, b: BM25Index) -> None:
    assert a.ids.tolist() == b.ids.tolist()
    for q in QUERIES:
        sa = a.scores(a.query_weights(q, q, 0.5))
        sb = b.scores(b.query_weights(q, q, 0.5))
        np.testing.assert_allclose(sa, sb, rtol=0, atol=1e-9)
        ia, va = a.search(q, k=50)
        ib, vb = b.search(q, k=50)
        assert ia.tolist() == ib.tolist() and len(ia) > 0
        np.testing.assert_allclose(va, vb, rtol=0, atol=1e-9)


def test_counts_score_as_bm25s_does(library):
    papers = list(library.iter_papers())
    ids, texts = [p.id for p in papers], [p.lexical_text() for p in papers]
    ours = BM25Index.build(ids, texts, BM25Params())
    docs, vocab = BM25Index.tokenize_corpus(texts)
    ref = bm25s.BM25(k1=BM25Params().k1, b=BM25Params().b, method="lucene")
    ref.index(bm25s.tokenization.Tokenized(ids=docs, vocab=vocab), show_progress=False)
    assert np.array_equal(ours.model.scores["indices"], ref.scores["indices"])
    assert np.array_equal(ours.model.scores["indptr"], ref.scores["indptr"])
    np.testing.assert_allclose(ours.model.scores["data"], ref.scores["data"], rtol=1e-6)
    chunked = TermCounts.from_docs(docs, len(vocab), chunk=7)  # rows counted 7 at a time
    for name in ("tf", "indices", "indptr", "doclen"):
        assert np.array_equal(getattr(chunked, name), getattr(ours.counts, name)), name


@pytest.mark.parametrize("few", [200_000, 0], ids=["column-by-column", "one-merge"])
def test_bm25_update_equals_rebuild(library, tmp_path, monkeypatch, few):
    monkeypatch.setattr(bm25_module, "FEW_ENTRIES", few)
    papers = list(library.iter_papers())
    text = {p.id: p.lexical_text() for p in papers}
    old = BM25Index.build(sorted(text), [text[i] for i in sorted(text)])
    old.save(tmp_path / "bm25")
    old = BM25Index.load(tmp_path / "bm25", counts=True)
    gone = [papers[3].id, papers[40].id]
    edited = {papers[7].id: "Axolotl habitats: quokka retrieval " + text[papers[7].id]}
    added = {max(text) + 5: "Query auto completion for axolotl habitats", papers[0].id - 1: ""}
    new_text = {i: t for i, t in text.items() if i not in gone} | edited | added
    updated = old.updated(
        gone, list(edited) + list(added), list(edited.values()) + list(added.values())
    )
    rebuilt = BM25Index.build(sorted(new_text), [new_text[i] for i in sorted(new_text)])
    _assert_same_bm25(updated, rebuilt)
    assert updated.search("axolotl", k=5)[0].tolist()[0] in edited | added


def _rebuild_elsewhere(lib, encoder, tmp_path, name: str) -> IndexPaths:
    paths = IndexPaths(tmp_path / name)
    build_index(lib, encoder, index_dir=paths.root, rebuild=True)
    return paths


def _assert_same_index(lib, encoder, paths: IndexPaths, full: IndexPaths) -> None:
    for name in ("ids.npy", "hashes.npy", "vectors.npy", "versions.npy"):
        assert np.array_equal(np.load(paths.dense / name), np.load(full.dense / name)), name
    _assert_same_bm25(BM25Index.load(paths.bm25), BM25Index.load(full.bm25))
    assert np.array_equal(np.load(paths.bm25 / "years.npy"), np.load(full.bm25 / "years.npy"))
    a = Searcher.open(lib, encoder=encoder, index_dir=paths.root)
    b = Searcher.open(lib, encoder=encoder, index_dir=full.root)
    queries = encoder.encode(QUERIES)
    da, ia = a.faiss_index.search(queries, 100)
    db, ib = b.faiss_index.search(queries, 100)
    assert np.array_equal(ia, ib) and np.array_equal(da, db)
    meta_a, meta_b = json.loads(paths.meta.read_text()), json.loads(full.meta.read_text())
    for key in ("count", "versions", "kind", "dim", "missing", "max_id"):
        assert meta_a[key] == meta_b[key], key


def test_edit_add_remove_equal_rebuild(library, encoder, tmp_path):
    paths = IndexPaths(tmp_path / "live")
    build_index(library, encoder, index_dir=paths.root)
    papers = list(library.iter_papers())

    # one record edited: its rows are patched in place, only its text is embedded
    edited = papers[10]
    edit_paper(library, edited.id, {"abstract": (edited.abstract or "") + " Axolotl habitats."})
    counting = CountingEncoder(encoder)
    inode = (paths.dense / "faiss.index").stat().st_ino
    report = build_index(library, counting, index_dir=paths.root)
    assert (report.updated, report.added, report.removed) == (1, 0, 0)
    assert (paths.dense / "faiss.index").stat().st_ino == inode  # patched, not rewritten
    assert not report.bm25_rebuilt and counting.texts == [library.get(edited.id).encoder_text()]
    assert not (paths.dense / DIRTY).exists() and not paths.pending.exists()
    _assert_same_index(library, encoder, paths, _rebuild_elsewhere(library, encoder, tmp_path, "a"))

    # keywords only (BM25 changes, no new vector), two removed, one added
    library.update_paper(replace(papers[20], keywords=[*papers[20].keywords, "axolotl habitats"]))
    library.remove(papers[3].id)
    library.remove(papers[50].id)
    library.add_paper(
        Paper(title="Quokka retrieval at scale", abstract="Axolotl habitats.", year=2024)
    )
    counting = CountingEncoder(encoder)
    report = build_index(library, counting, index_dir=paths.root)
    assert (report.updated, report.added, report.removed) == (0, 1, 2)
    assert not report.bm25_rebuilt and len(counting.texts) == 1
    _assert_same_index(library, encoder, paths, _rebuild_elsewhere(library, encoder, tmp_path, "b"))


def test_half_patched_rows_are_redone(library, encoder, tmp_path):
    """A run killed while patching rows leaves ``dirty.json``: those rows are not trusted."""
    paths = IndexPaths(tmp_path / "live")
    build_index(library, encoder, index_dir=paths.root)
    victim = list(library.iter_papers())[5]
    ids = np.load(paths.dense / "ids.npy")
    vectors = np.load(paths.dense / "vectors.npy")
    vectors[int(np.searchsorted(ids, victim.id))] = 0.5  # a torn row
    np.save(paths.dense / "vectors.npy", vectors)
    (paths.dense / DIRTY).write_text(json.dumps({"ids": [victim.id]}))
    counting = CountingEncoder(encoder)
    report = build_index(library, counting, index_dir=paths.root)
    assert counting.texts == [victim.encoder_text()] and report.updated == 1
    assert not (paths.dense / DIRTY).exists()
    _assert_same_index(library, encoder, paths, _rebuild_elsewhere(library, encoder, tmp_path, "a"))


def test_hnsw_edit_and_add(library, encoder, tmp_path):
    """HNSW cannot remove a vector: an edit rebuilds it from the stored vectors, no re-embedding."""
    paths = IndexPaths(tmp_path / "live")
    build_index(library, encoder, index_dir=paths.root, kind="hnsw")
    first = next(iter(library.iter_papers()))
    edit_paper(library, first.id, {"title": "Axolotl habitats"})
    new = library.add_paper(Paper(title="Quokka retrieval", abstract="Quokkas.", year=2024))
    counting = CountingEncoder(encoder)
    report = build_index(library, counting, index_dir=paths.root)
    assert (report.kind, report.updated, report.added, len(counting.texts)) == ("hnsw", 1, 1, 2)
    searcher = Searcher.open(library, encoder=encoder, index_dir=paths.root)
    assert searcher.faiss_index.ntotal == library.count()
    for text, pid in (("Axolotl habitats", first.id), ("Quokka retrieval", new.id)):
        _, found = searcher.faiss_index.search(encoder.encode([library.get(pid).encoder_text()]), 1)
        assert found[0][0] == pid, text


def test_index_of_the_previous_format_is_updated(library, encoder, tmp_path):
    """An index written before term counts and versions.npy: its first update rebuilds BM25
    once (no counts to update from), reads versions.json, and leaves the new files."""
    paths = IndexPaths(tmp_path / "live")
    build_index(library, encoder, index_dir=paths.root)
    ids = np.load(paths.dense / "ids.npy").tolist()
    versions = np.load(paths.dense / "versions.npy").tolist()
    (paths.dense / "versions.json").write_text(json.dumps(dict(zip(map(str, ids), versions))))
    for old in (paths.dense / "versions.npy", paths.bm25 / "tf.npy", paths.bm25 / "doclen.npy"):
        old.unlink()
    edited = next(iter(library.iter_papers()))
    edit_paper(library, edited.id, {"abstract": "Axolotl habitats."})
    counting = CountingEncoder(encoder)
    report = build_index(library, counting, index_dir=paths.root)
    assert report.bm25_rebuilt and counting.texts == [library.get(edited.id).encoder_text()]
    assert (paths.bm25 / "tf.npy").exists() and not (paths.dense / "versions.json").exists()
    _assert_same_index(library, encoder, paths, _rebuild_elsewhere(library, encoder, tmp_path, "a"))
    edit_paper(library, edited.id, {"abstract": "Quokka habitats."})
    assert not build_index(library, encoder, index_dir=paths.root).bm25_rebuilt


def test_hard_linked_copy_is_not_patched(library, encoder, tmp_path):
    """A backup that hard-links the index files keeps its vectors when the index is updated."""
    paths = IndexPaths(tmp_path / "live")
    build_index(library, encoder, index_dir=paths.root)
    backup = tmp_path / "backup"
    backup.mkdir()
    for name in ("vectors.npy", "faiss.index"):
        os.link(paths.dense / name, backup / name)
    before = np.load(backup / "vectors.npy")
    edited = next(iter(library.iter_papers()))
    edit_paper(library, edited.id, {"abstract": "Axolotl habitats."})
    assert build_index(library, encoder, index_dir=paths.root).updated == 1
    assert np.array_equal(np.load(backup / "vectors.npy"), before)
    _assert_same_index(library, encoder, paths, _rebuild_elsewhere(library, encoder, tmp_path, "a"))
