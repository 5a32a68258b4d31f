"""Bi-encoder adaptation ("Adapt to my library") on a tiny real library."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from assistant.library.importers import import_paths
from assistant.library.models import Citation
from assistant.library.store import Library
from assistant.training import data
from assistant.training.common import TrainingError
from assistant.training.encoder import (
    EncoderOptions,
    adapt_encoder,
    graph_embedding,
    graph_triplets,
)


@pytest.fixture(scope="module")
def sample_db(acm_dl_sample_files, tmp_path_factory):
    path = tmp_path_factory.mktemp("lib") / "library.sqlite"
    lib = Library(path)
    import_paths(lib, acm_dl_sample_files[:1], workers=1)
    lib.close()
    return path


def _clustered_corpus(
    sample_db, clusters: int = 4, size: int = 12
) -> tuple[data.Corpus, list[list[int]]]:
    """Real papers, with citation edges inside clusters (what imported manuscripts would give)."""
    lib = Library(sample_db)
    corpus = data.corpus_from_library(lib, set())
    lib.close()
    ids = sorted(corpus.docs)[: clusters * size]
    groups = [ids[i * size : (i + 1) * size] for i in range(clusters)]
    rng = random.Random(0)
    for group in groups:
        for citing in group:
            for cited in rng.sample([g for g in group if g != citing], 4):
                corpus.citations.append(Citation(citing_id=citing, cited_id=cited, context="x"))
    return corpus, groups


def test_graph_embedding_separates_citation_clusters(sample_db):
    corpus, groups = _clustered_corpus(sample_db)
    nodes, emb = graph_embedding(corpus)
    assert len(nodes) == sum(len(g) for g in groups)
    row = {n: i for i, n in enumerate(nodes)}
    a, b = groups[0][0], groups[0][1]
    c = groups[1][0]
    assert emb[row[a]] @ emb[row[b]] > emb[row[a]] @ emb[row[c]]


def test_graph_triplets_keep_positive_and_negative_bands_apart(sample_db):
    corpus, groups = _clustered_corpus(sample_db)
    opts = EncoderOptions(pos_ranks=(1, 4), neg_ranks=(15, 40), min_margin=5)
    triplets = graph_triplets(corpus, opts, random.Random(1))
    assert len(triplets) == sum(len(g) for g in groups)
    cluster_of = {pid: i for i, g in enumerate(groups) for pid in g}
    same_cluster_pos = sum(cluster_of[t["pos"]] == cluster_of[t["anchor"]] for t in triplets)
    assert same_cluster_pos / len(triplets) > 0.9
    assert all(t["pos"] != t["neg"] != t["anchor"] for t in triplets)
    with pytest.raises(TrainingError):
        graph_triplets(
            corpus,
            EncoderOptions(pos_ranks=(1, 4), neg_ranks=(6, 20), min_margin=5),
            random.Random(1),
        )


def test_adapt_encoder_end_to_end_exports_a_loadable_encoder(sample_db, tmp_path):
    (tmp_path / "bl.txt").write_text("")
    lib = Library(sample_db)
    opts = EncoderOptions(
        name="adapted-test",
        out_dir=str(tmp_path / "enc"),
        work_dir=str(tmp_path / "work"),
        n_queries=16,
        batch_size=4,
        max_steps=2,
        max_length=96,
        reindex=False,
        blacklist=str(tmp_path / "bl.txt"),
    )
    steps, messages = [], []
    report = adapt_encoder(
        lib, opts, progress=lambda e: (steps.append(e.done), messages.append(e.message))
    )
    assert (
        "mining hard negatives" in messages
    )  # long mining is visible (and cancellable in the GUI)
    assert report.steps_done == 2 and report.model_dir
    assert report.data_stats["kinds"] and report.examples == 16
    manifest = json.loads((tmp_path / "enc" / "manifest.json").read_text())
    assert manifest["kind"] == "encoder" and manifest["pooling"] == "mean"

    from assistant.inference.encoder import load_encoder

    enc = load_encoder(tmp_path / "enc", device="cpu")
    papers = [p for p in lib.iter_papers()][:3]
    vecs = enc.encode([p.encoder_text() for p in papers])
    assert vecs.shape == (3, manifest["dim"])
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-3)
    lib.close()


def test_default_training_set_is_sized_to_the_caps():
    from assistant.training.encoder import planned_pairs

    assert planned_pairs(EncoderOptions(), 100_000) == 20000
    assert planned_pairs(EncoderOptions(), 300) == 600
    assert planned_pairs(EncoderOptions(max_steps=50, batch_size=16), 100_000) == 800
    # a 15-minute CPU run mines ~4k pairs, not 20k (mining costs one prefilter query each)
    assert planned_pairs(EncoderOptions(max_minutes=15), 100_000) == 3750
    assert planned_pairs(EncoderOptions(max_minutes=15), 100_000, "cuda") == 20000
