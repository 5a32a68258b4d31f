"""Ranking metrics against hand-computed values, and the TREC run/qrels writers."""

import math

import pytest

from assistant.evaluation.metrics import (
    mean_metrics,
    ndcg_at,
    query_metrics,
    read_trec_run,
    recall_at,
    reciprocal_rank,
    write_trec_qrels,
    write_trec_run,
)

RANKING = ["a", "b", "c", "d", "e"]
RELEVANT = {"b", "e", "z"}  # "z" is never retrieved


def test_recall_hand_checked():
    assert recall_at(RANKING, RELEVANT, 10) == pytest.approx(2 / 3)
    assert recall_at(RANKING, RELEVANT, 2) == pytest.approx(1 / 3)
    assert recall_at(RANKING, RELEVANT, 1) == 0.0


def test_ndcg_hand_checked():
    # DCG = 1/log2(3) + 1/log2(6) = 0.630930 + 0.386853; IDCG (3 relevant) = 1 + 0.630930 + 0.5
    assert ndcg_at(RANKING, RELEVANT, 10) == pytest.approx(1.017783 / 2.130930, abs=1e-6)
    assert ndcg_at(["x", "y"], {"x"}, 10) == 1.0
    assert ndcg_at(["y", "x"], {"x"}, 10) == pytest.approx(1 / math.log2(3))
    # binary gain, cut at k: a relevant document at rank 11 contributes nothing
    assert ndcg_at([f"n{i}" for i in range(10)] + ["x"], {"x"}, 10) == 0.0


def test_mrr_cut_at_100():
    assert reciprocal_rank(RANKING, RELEVANT) == 0.5
    late = [f"n{i}" for i in range(100)] + ["x"]
    assert reciprocal_rank(late, {"x"}) == 0.0
    assert reciprocal_rank(late, {"x"}, cutoff=101) == pytest.approx(1 / 101)


def test_query_metrics_and_mean():
    m1 = query_metrics(RANKING, RELEVANT)
    m2 = query_metrics(["x"], {"x"})
    assert m2 == {"R@10": 1.0, "nDCG@10": 1.0, "MRR": 1.0, "R@100": 1.0}
    mean = mean_metrics([m1, m2])
    assert mean["MRR"] == pytest.approx(0.75)
    assert mean["R@10"] == pytest.approx((2 / 3 + 1) / 2)
    assert mean_metrics([]) == {}


def test_undefined_without_relevant():
    with pytest.raises(ValueError):
        recall_at(RANKING, set(), 10)


def test_trec_round_trip(tmp_path):
    run = {"q1": [("d3", 2.5), ("d1", 1.0)], "q2": [("d9", 0.1)]}
    path = write_trec_run(tmp_path / "x.run", run, "fused")
    lines = path.read_text().splitlines()
    assert lines[0] == "q1 Q0 d3 1 2.500000 fused"
    assert read_trec_run(path) == {"q1": ["d3", "d1"], "q2": ["d9"]}
    qrels = write_trec_qrels(tmp_path / "x.qrels", {"q1": {"d1", "d0"}})
    assert qrels.read_text().splitlines() == ["q1 0 d0 1", "q1 0 d1 1"]


def test_bad_run_line_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.run"
    bad.write_text("q1 Q0 d1 1 1.0 tag\nq1 Q0 d2\n")
    with pytest.raises(ValueError, match=r"bad.run:2"):
        read_trec_run(bad)
