"""Issue 31: the window notices changes other programs make to its library and stays usable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from assistant.gui.settings import AppSettings
from assistant.library.models import Paper
from assistant.library.store import Library

REPO = Path(__file__).resolve().parent.parent
GOOD_BIB = Path(__file__).parent / "fixtures" / "library" / "good.bib"


def test_window_refreshes_after_a_cli_import_and_keeps_its_wal(qtbot, tmp_path):
    from assistant.gui.main_window import MainWindow

    db = tmp_path / "library.sqlite"
    with Library(db) as lib, lib.transaction():
        lib.add_paper(Paper(title="A first paper on ranking", year=2019, authors=["Ann Author"]))
    win = MainWindow(AppSettings(library_path=str(db), first_run_done=True))
    win.quiet_close = True
    qtbot.addWidget(win)
    win.jobs.start(prepare=False)
    panel = win.library_panel
    assert panel.model.rowCount() == 1
    win.library_watch.poll()  # remembers the version
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "assistant.cli",
            "--db",
            str(db),
            "library",
            "import",
            str(GOOD_BIB),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    with qtbot.waitSignal(win.library_watch.changed, timeout=5000):
        pass  # the 1 s timer notices the CLI's commit
    with Library(db) as lib:
        total = lib.count()
    assert total > 1 and panel.model.rowCount() == total
    assert Path(f"{db}-wal").exists() and Path(f"{db}-shm").exists()
    # the window still writes (the failing GUI import after a CLI command)
    with panel.library.transaction():
        panel.library.add_paper(Paper(title="Added in the window", year=2022, authors=["W. In"]))
    assert panel.library.count() == total + 1
