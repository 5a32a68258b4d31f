"""Background jobs vs. the writing loop (issue 18, defects 3 and 4), on the bundled sample.

The sample library is imported and indexed once per session (real encoder, real index); each
test opens a real MainWindow on a copy of it.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

pytest.importorskip("pytestqt")
pytest.importorskip("PySide6")

from assistant.gui.settings import AppSettings

FIXTURES = Path(__file__).parent / "fixtures" / "library"


@pytest.fixture(scope="session")
def sample_home(tmp_path_factory) -> Path:
    """The sample library, imported and indexed once (index next to the DB)."""
    from assistant.gui.sample import setup_sample
    from assistant.service import Service, ServiceSettings

    home = tmp_path_factory.mktemp("sample-lib")
    engine = Service(ServiceSettings(db_path=home / "library.sqlite"))
    try:
        setup = setup_sample(engine)
        assert setup.status.papers > 100
    finally:
        engine.close()
    return home


@pytest.fixture
def window(qtbot, sample_home, tmp_path):
    from assistant.gui.main_window import MainWindow

    home = tmp_path / "lib"
    shutil.copytree(sample_home, home)
    win = MainWindow(AppSettings(library_path=str(home / "library.sqlite"), first_run_done=True))
    win.quiet_close = True
    qtbot.addWidget(win)
    win.show()
    with qtbot.waitSignal(win.engine_ready, timeout=300_000):
        win.jobs.start()
    return win


def _open(win, tmp_path: Path, sentence: str):
    path = tmp_path / f"draft{len(list(tmp_path.glob('draft*.tex')))}.tex"
    path.write_text(f"\\begin{{document}}\n{sentence} More text.\n\\end{{document}}\n")
    editor = win.documents.open_file(path)
    start = editor.toPlainText().index(sentence)
    editor.select_range(start, start + len(sentence))
    return editor


def test_background_jobs_block_recommend(window, qtbot, tmp_path):
    """Defect 3: during Rebuild index / Adapt, Recommend waited for the whole job."""
    _open(window, tmp_path, "Click models estimate position bias from search logs.")
    with qtbot.waitSignal(window.recommendations_ready, timeout=120_000):
        window.recommender.recommend()
    assert window.results_panel.cards or not window.results_panel.is_complete()
    release, holding = threading.Event(), threading.Event()

    def long_job(progress, cancelled):  # holds the engine like an index/adapt job does
        with window.engine._job_lock:
            holding.set()
            release.wait(120)
        return None

    window.runner.submit("engine", long_job)
    assert holding.wait(30)
    try:
        _open(window, tmp_path, "Interleaving compares two rankers online with user clicks.")
        generation = None
        with qtbot.waitSignal(window.recommendations_ready, timeout=60_000) as blocker:
            generation = window.recommender.recommend()
            assert window.results_panel.cards == []  # the old cards went with the new query
        assert generation is not None
        assert window.runner.is_busy("engine")  # the job is still running
        assert "Interleaving" in blocker.args[0].query.display_text()
    finally:
        release.set()
        window.runner.wait(30_000)


def test_import_cancel_says_cancelled(window, qtbot, monkeypatch):
    """Defect 4: Cancel said "Cancelled" although the import was committed; counts stayed old,
    the stale index went unannounced."""
    from assistant.service import engine as engine_module

    real_import = engine_module.import_paths

    def import_then_cancel(*args, **kwargs):
        report = real_import(*args, **kwargs)
        window.runner.cancel("engine")  # the user presses Cancel right after the commit
        return report

    monkeypatch.setattr(engine_module, "import_paths", import_then_cancel)
    before = window.engine.library.count()
    with qtbot.waitSignal(
        window.runner.busy_changed,
        timeout=120_000,
        check_params_cb=lambda ch, busy: ch == "engine" and not busy,
    ):
        window.jobs.import_library([FIXTURES / "good.bib"])
    after = window.engine.library.count()
    assert after > before
    status = window.status_label.text()
    assert status.startswith("Import committed") and "stale" in status, status
    assert str(after) in window.library_panel.count_label.text()
    assert window.library_panel.stale_bar.isVisible()
    # one click on "Index now" brings the index up to date and removes the bar
    with qtbot.waitSignal(window.engine_ready, timeout=300_000):
        window.library_panel.index_now_button.click()
    assert not window.library_panel.stale_bar.isVisible()
    assert not window.engine.index_stale()
