"""Ranking metrics against hand-computed values and against the values of the hand-written
formulas they replaced (tests/fixtures/metrics_golden.json, made by the old
``recall_at``/``ndcg_at``/``reciprocal_rank`` before they were deleted), and the TREC run/qrels
files."""

import json
import math
import random
from pathlib import Path

import pytest

from assistant.evaluation.metrics import (
    mean_metrics,
    query_metrics,
    read_trec_run,
    run_metrics,
    write_trec_qrels,
    write_trec_run,
)

RANKING = ["a", "b", "c", "d", "e"]
RELEVANT = {"b", "e", "z"}  # "z" is never retrieved
GOLDEN = Path(__file__).parent / "fixtures" / "metrics_golden.json"


def golden_cases() -> list[tuple[str, list[str], list[str]]]:
    """The fixed example the golden values were computed on (do not change: the file holds
    the old implementation's values for exactly these rankings)."""
    rnd = random.Random(20261127)
    docs = [f"d{i}" for i in range(300)]
    out = []
    for q in range(60):
        n = rnd.choice([0, 3, 10, 50, 120, 250])
        ranking = rnd.sample(docs, n)
        relevant = set(rnd.sample(docs, rnd.choice([1, 2, 5, 12, 40])))
        out.append((f"q{q}", ranking, sorted(relevant)))
    # first hit at rank 100 and 101, more relevant than k, a perfect ranking
    out.append(("edge100", [f"n{i}" for i in range(99)] + ["x"], ["x"]))
    out.append(("edge101", [f"n{i}" for i in range(100)] + ["x"], ["x"]))
    out.append(("many", [f"r{i}" for i in range(15)], [f"r{i}" for i in range(30)]))
    out.append(("perfect", ["a", "b", "c"], ["a", "b", "c"]))
    return out


def test_same_values_as_the_replaced_formulas():
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    cases = golden_cases()
    got = run_metrics({q: r for q, r, _ in cases}, {q: rel for q, _, rel in cases})
    assert got == golden["per_query"]  # the same floats, query by query
    one_by_one = {q: query_metrics(r, set(rel)) for q, r, rel in cases}
    assert one_by_one == golden["per_query"]
    assert mean_metrics(got.values()) == golden["mean"]
    assert 0 < golden["mean"]["nDCG@10"] < golden["mean"]["R@100"] < 1  # not a trivial example


def test_recall_hand_checked():
    m = query_metrics(RANKING, RELEVANT)
    assert m["R@10"] == pytest.approx(2 / 3) and m["R@100"] == pytest.approx(2 / 3)
    assert query_metrics([f"n{i}" for i in range(10)] + ["x"], {"x"})["R@10"] == 0.0


def test_ndcg_hand_checked():
    # DCG = 1/log2(3) + 1/log2(6) = 0.630930 + 0.386853; IDCG (3 relevant) = 1 + 0.630930 + 0.5
    assert query_metrics(RANKING, RELEVANT)["nDCG@10"] == pytest.approx(
        1.017783 / 2.130930, abs=1e-6
    )
    assert query_metrics(["x", "y"], {"x"})["nDCG@10"] == 1.0
    assert query_metrics(["y", "x"], {"x"})["nDCG@10"] == pytest.approx(1 / math.log2(3))
    # binary gain, cut at k: a relevant document at rank 11 contributes nothing
    assert query_metrics([f"n{i}" for i in range(10)] + ["x"], {"x"})["nDCG@10"] == 0.0


def test_mrr_cut_at_100():
    assert query_metrics(RANKING, RELEVANT)["MRR"] == 0.5
    assert query_metrics([f"n{i}" for i in range(99)] + ["x"], {"x"})["MRR"] == 0.01
    assert query_metrics([f"n{i}" for i in range(100)] + ["x"], {"x"})["MRR"] == 0.0


def test_repeated_document_counts_at_its_first_rank():
    assert query_metrics(["x", "x", "y"], {"x", "y"}) == query_metrics(["x", "y"], {"x", "y"})


def test_query_metrics_and_mean():
    m1 = query_metrics(RANKING, RELEVANT)
    m2 = query_metrics(["x"], {"x"})
    assert m2 == {"R@10": 1.0, "nDCG@10": 1.0, "MRR": 1.0, "R@100": 1.0}
    assert query_metrics([], {"x"}) == {"R@10": 0.0, "nDCG@10": 0.0, "MRR": 0.0, "R@100": 0.0}
    mean = mean_metrics([m1, m2])
    assert mean["MRR"] == pytest.approx(0.75)
    assert mean["R@10"] == pytest.approx((2 / 3 + 1) / 2)
    assert mean_metrics([]) == {}


def test_undefined_without_relevant():
    with pytest.raises(ValueError):
        query_metrics(RANKING, set())


def test_trec_round_trip(tmp_path):
    run = {"q1": [("d3", 2.5), ("d1", 1.0), ("d7", 1.0)], "q2": [("d9", 0.1)]}
    path = write_trec_run(tmp_path / "x.run", run, "fused")
    lines = path.read_text().splitlines()
    assert lines[0] == "q1 Q0 d3 1 2.500000 fused"
    # equal scores keep their ranks
    assert read_trec_run(path) == {"q1": ["d3", "d1", "d7"], "q2": ["d9"]}
    qrels = write_trec_qrels(tmp_path / "x.qrels", {"q1": {"d1", "d0"}})
    assert qrels.read_text().splitlines() == ["q1 0 d0 1", "q1 0 d1 1"]


def test_bad_run_line_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.run"
    bad.write_text("q1 Q0 d1 1 1.0 tag\nq1 Q0 d2\n")
    with pytest.raises(ValueError, match=r"bad.run:2"):
        read_trec_run(bad)
