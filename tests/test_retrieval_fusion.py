"""Fusion of the dense and BM25 runs, and BM25 scoring, on hand-checked values."""

import numpy as np
import pytest

from assistant.retrieval.bm25 import BM25Index, BM25Params, top_k
from assistant.retrieval.fusion import fuse, normalise, rrf


def test_rrf_hand_checked():
    runs = {
        "dense": (np.array([1, 2]), np.array([0.9, 0.8])),
        "bm25": (np.array([2, 3]), np.array([5.0, 4.0])),
    }
    fused = rrf(runs, k=60)
    assert fused[2] == pytest.approx(1 / 62 + 1 / 61)
    assert fused[1] == pytest.approx(1 / 61) and fused[3] == pytest.approx(1 / 62)
    assert [pid for pid, _ in fuse(runs, "rrf", dense_weight=0.5, rrf_k=60)] == [2, 1, 3]


def test_weighted_sum_uses_floor_for_missing():
    runs = {
        "dense": (np.array([1, 2]), np.array([1.0, 0.0])),
        "bm25": (np.array([3, 2]), np.array([10.0, 0.0])),
    }
    out = dict(fuse(runs, "weighted", dense_weight=0.25, norm="minmax"))
    # minmax: dense {1: 1, 2: 0}, bm25 {3: 1, 2: 0}; a missing id gets the run's minimum (0)
    assert out == {1: pytest.approx(0.25), 2: pytest.approx(0.0), 3: pytest.approx(0.75)}
    assert (
        fuse(
            {"dense": (np.array([], int), np.array([])), "bm25": (np.array([], int), np.array([]))}
        )
        == []
    )
    with pytest.raises(ValueError):
        fuse(runs, "borda")


def test_normalise():
    assert normalise(np.array([1.0, 3.0]), "minmax").tolist() == [0.0, 1.0]
    z = normalise(np.array([1.0, 2.0, 3.0]), "zscore")
    assert z.mean() == pytest.approx(0) and z.std() == pytest.approx(1)
    assert normalise(np.array([2.0, 2.0]), "zscore").tolist() == [0.0, 0.0]


def test_bm25_hand_checked_idf_and_query_weights():
    texts = ["neural ranking models", "ranking with click models", "mobile search logs"]
    index = BM25Index.build([10, 11, 12], texts, BM25Params(k1=1.2, b=0.0))
    scores = index.scores(index.query_weights("mobile"))
    # Lucene BM25, b=0, tf=1: idf * tf / (tf + k1), idf = log(1 + (N - df + .5) / (df + .5)), N=3, df=1
    assert (
        scores[2] == pytest.approx(np.log(1 + 2.5 / 1.5) / 2.2, rel=1e-5)
        and scores[0] == 0 == scores[1]
    )
    ids, _ = index.search("ranking models", k=3)
    assert set(ids.tolist()) == {10, 11}  # the third document shares no term: never returned
    # a repeated query term counts again (query term frequency) unless unique=True
    assert index.query_weights("ranking ranking") == {index.model.vocab_dict["rank"]: 2.0}
    assert index.query_weights("ranking ranking", unique=True) == {
        index.model.vocab_dict["rank"]: 1.0
    }
    ids, _ = top_k(
        np.array([0.5, 2.0, 1.0], np.float32),
        np.array([7, 8, 9]),
        2,
        mask=np.array([True, False, True]),
    )
    assert ids.tolist() == [9, 7]
