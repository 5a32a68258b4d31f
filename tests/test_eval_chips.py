"""tools/eval_chips.py on a small real library (the bundled sample, whose papers the ACM-CR dev
papers cite) and the CLI's chips: one rule with the GUI, no "uncertain" chip on every line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import sample_imported_by_cli

from assistant.cli import main


@pytest.fixture(scope="module")
def sample_env(tmp_path_factory) -> dict[str, str]:
    return sample_imported_by_cli(tmp_path_factory, "chips-home")


def test_eval_chips_reports_the_shown_labels(sample_env, acm_dev_dir, monkeypatch):
    from tools.eval_chips import evaluate

    for name, value in sample_env.items():
        monkeypatch.setenv(name, value)
    out = evaluate(Path(sample_env["ASSISTANT_DB"]), acm_dev_dir, limit=4)
    assert set(out["levels"]) == {"paragraph", "sentence"}
    for level, m in out["levels"].items():
        assert m["queries"] == 4, level
        for key in ("lists_with_several_labels", "results_with_chip"):
            assert 0.0 <= m[key] <= 1.0, (level, key)
        # shown labels are a subset of the cards' labels (or one sentence label)
        assert m["lists_with_several_labels"] <= m["lists_with_several_labels_raw"]
        assert m["cited_results"] > 0, level  # the sample holds papers the dev papers cite
        assert m["chip_accuracy_n"] + m["sentence_label_n"] <= m["cited_results"]
        if m["chip_accuracy_n"]:
            assert 0.0 <= m["chip_accuracy"] <= 1.0
        assert 0.0 <= m["all_labels_accuracy"] <= 1.0
    json.dumps(out)  # printable as it is


def test_cli_prints_a_chip_only_when_it_says_something(sample_env):
    """The CLI follows the GUI's rule (``service.chip_texts``): a per-paper chip only when it is
    worth showing, else one sentence-level label on top; never "uncertain" on every line."""
    from assistant.service import Service, ServiceSettings, chip_texts, query_for_text

    text = (
        "Counterfactual learning to rank corrects for position bias by weighting each click "
        "with the inverse of the probability that its document was examined."
    )
    result = CliRunner().invoke(main, ["recommend", text, "-k", "10"], env=sample_env)
    assert result.exit_code == 0, result.output
    assert "uncertain" not in result.output
    as_json = CliRunner().invoke(main, ["recommend", text, "-k", "10", "--json"], env=sample_env)
    got = json.loads(as_json.stdout)
    service = Service(ServiceSettings(db_path=Path(sample_env["ASSISTANT_DB"])))
    try:
        items = service.recommend(query_for_text(text), service.default_config(k=10)).items
    finally:
        service.close()
    assert [it["intent_chip"] for it in got["items"]] == chip_texts(items)
    shown = [c for c in chip_texts(items) if c]
    lines = [line for line in result.output.splitlines() if line.strip()[:3].rstrip(".").isdigit()]
    assert sum("[" in line for line in lines) == len(shown)
    if not shown:
        assert got["sentence_intent"] and got["sentence_intent"] in result.output
