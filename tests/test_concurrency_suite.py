"""Issue 31: the concurrency suite itself runs and reports no failure (two short rounds; the
acceptance figures come from ``python -m tools.concurrency run --rounds 200``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.mark.slow
def test_two_rounds_with_a_window_and_a_kill(tmp_path):
    from tools.concurrency.harness import run

    models = os.environ.get("ASSISTANT_MODELS") or str(tmp_path / "models")
    report = run(2, tmp_path / "work", Path(models), seed=5, kill_rate=1.0, gui_every=1)
    assert report["rounds"] == 2 and report["rounds_with_window"] >= 1
    assert report["failures"] == 0, report["failure_examples"]
