"""``assistant-gui --sample [--demo]``: the bundled sample, headless demo without Qt, first-run set-up."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from assistant.gui import sample

pytestmark = pytest.mark.skipif(
    not sample.SAMPLE_BIB.is_file() or not sample.SAMPLE_DRAFT.is_file(),
    reason="assistant/resources/sample/library.bib or draft.tex not in the checkout",
)

DEMO_TIMEOUT_S = 600


def _env(tmp_path) -> dict:
    env = dict(os.environ)
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM", "ASSISTANT_DB"):
        env.pop(name, None)
    env["ASSISTANT_HOME"] = str(tmp_path / "home")
    env["HF_HUB_OFFLINE"] = "1"
    return env


def test_demo_never_imports_qt():
    code = (
        "import sys; import assistant.gui.app, assistant.gui.sample, assistant.service.engine, "
        "assistant.library.bibfile, assistant.documents.textops; "
        "bad = [m for m in sys.modules if m.startswith('PySide6')]; assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_demo_sentences_come_from_the_draft():
    draft = sample.SAMPLE_DRAFT.read_text(encoding="utf-8")
    sentences = sample.demo_sentences(draft, 4)
    assert len(sentences) == 4
    assert sum(1 for s in sentences if s.cited) == 2  # both citing sentences, with their keys
    assert {k for s in sentences for k in s.cited} == {"wang2016learningc", "ai2018unbiasedb"}
    flat = " ".join(draft.split())
    positions = [flat.index(s.text) for s in sentences]  # verbatim from the draft, in order
    assert positions == sorted(positions)
    assert not any("\\begin" in s.text or "abstract" in s.text.lower()[:20] for s in sentences)


def test_sample_demo_headless(tmp_path):
    """No display: ``--sample`` falls back to the demo; a second run reuses the imported library."""
    env = _env(tmp_path)
    first = subprocess.run(
        [sys.executable, "-m", "assistant.gui.app", "--sample", "--sentences", "3", "-k", "5"],
        env=env,
        capture_output=True,
        text=True,
        timeout=DEMO_TIMEOUT_S,
    )
    assert first.returncode == 0, first.stderr[-3000:]
    assert "No display found" in first.stderr
    assert "DEBUG" not in first.stderr  # third-party debug lines (bm25s) stay out of the terminal
    out = first.stdout
    assert "imported" in out and "embedded" in out
    blocks = [line for line in out.splitlines() if line.startswith("[")]
    assert len(blocks) == 3
    rows = [
        line
        for line in out.splitlines()
        if re.match(r"^\s+\*?\s*\d+\.\s+\S+\s+(\d{4}|----)\s+-?\d+\.\d+", line)
    ]
    assert len(rows) == 15  # 3 sentences x top-5, each: citekey, year, score, intent, title
    assert "* = cited there in the draft" in out
    assert (tmp_path / "home" / "library.sqlite").exists()

    second = subprocess.run(
        [sys.executable, "-m", "assistant.gui.app", "--sample", "--demo", "--sentences", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=DEMO_TIMEOUT_S,
    )
    assert second.returncode == 0, second.stderr[-3000:]
    assert "imported" not in second.stdout.splitlines()[0]  # not re-imported
    assert "No display found" not in second.stderr


@pytest.mark.slow
def test_sample_window_sets_up_library_and_draft(qtbot, isolated_home):
    """``assistant-gui --sample`` in a window: a writable draft copy, its .bib, library + index built."""
    from assistant.gui.app import _parser, open_window

    window = open_window(_parser().parse_args(["--sample"]))
    window.quiet_close = True
    qtbot.addWidget(window)
    with qtbot.waitSignal(window.engine_ready, timeout=600_000) as blocker:
        pass
    status = blocker.args[0]
    assert status.papers == status.embedded > 100
    state = window.documents.current_state()
    assert state.path == (isolated_home / "sample" / "draft.tex").resolve()
    assert state.bib_path == (isolated_home / "sample" / "library.bib").resolve()
    assert sample.SAMPLE_DRAFT.read_text(encoding="utf-8") == state.path.read_text(encoding="utf-8")
    assert sample.sample_imported(window.engine.db_path)
