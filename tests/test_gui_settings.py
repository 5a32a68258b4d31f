"""Settings persistence (QSettings INI in ASSISTANT_HOME), per-manuscript .bib choice, first run."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from assistant.gui.settings import (
    AppSettings,
    SettingsDialog,
    bib_for_manuscript,
    load_settings,
    remember_bib,
    save_settings,
)


def test_settings_roundtrip(qtbot, isolated_home):
    assert load_settings() == AppSettings()
    settings = AppSettings(
        library_path=str(isolated_home / "x.sqlite"),
        k=7,
        device="cpu",
        reranker="off",
        use_intent=False,
        exclude_cited=False,
        first_run_done=True,
    )
    save_settings(settings)
    assert (isolated_home / "gui.ini").is_file()
    assert load_settings() == settings
    dialog = SettingsDialog(settings)
    qtbot.addWidget(dialog)
    dialog.k_box.setValue(12)
    dialog.device_box.setCurrentText("auto")
    out = dialog.result_settings()
    assert out.k == 12 and out.device == "auto" and out.library_path == settings.library_path


def test_quality_is_a_setting_the_cli_and_the_language_server_read(qtbot, isolated_home):
    """Settings → Quality is saved in gui.ini, where `assistant` and `assistant lsp` find it
    (issue 36); the window's engine gets it and builds the other tier in the background."""
    from assistant.config import quality_setting
    from assistant.gui.main_window import MainWindow

    dialog = SettingsDialog(AppSettings())
    qtbot.addWidget(dialog)
    assert dialog.quality_box.currentText() == "auto"
    assert [dialog.quality_box.itemText(i) for i in range(3)] == ["auto", "fast", "best"]
    dialog.quality_box.setCurrentText("best")
    settings = dialog.result_settings()
    assert settings.quality == "best"
    save_settings(settings)
    assert load_settings().quality == "best"
    assert quality_setting() == "best"
    win = MainWindow(load_settings())
    win.quiet_close = True
    qtbot.addWidget(win)
    assert (win.engine.settings.quality, win.engine.settings.background) == ("best", True)


def test_bib_file_remembered_per_manuscript(tmp_path):
    draft = tmp_path / "paper.tex"
    draft.write_text("x")
    assert bib_for_manuscript(draft) is None
    remember_bib(draft, tmp_path / "refs.bib")
    assert bib_for_manuscript(draft) == tmp_path / "refs.bib"
    assert bib_for_manuscript(tmp_path / "other.tex") is None


def test_first_run_guide_on_empty_library(qtbot):
    from assistant.gui.first_run import FirstRunDialog, maybe_show_first_run
    from assistant.gui.main_window import MainWindow

    win = MainWindow(AppSettings())
    win.quiet_close = True
    qtbot.addWidget(win)
    win.jobs.start(prepare=False)
    dialog = maybe_show_first_run(win)
    assert isinstance(dialog, FirstRunDialog) and dialog.isVisible()
    assert load_settings().first_run_done  # shown once
    dialog.reject()


def test_a_library_path_that_is_not_a_library_shows_an_error(qtbot, tmp_path):
    from assistant.gui.main_window import MainWindow

    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    win = MainWindow(AppSettings(library_path=str(notes), first_run_done=True))
    win.quiet_close = True
    qtbot.addWidget(win)
    win.jobs.start()
    assert (
        win.last_error_dialog is not None
        and "not a Cite-Assist library" in win.last_error_dialog.text()
    )
    assert win.library_panel.library is None and notes.read_text() == "my notes\n"


def test_my_names_and_ranker_reach_the_service(qtbot):
    """Settings → "My names" become the query authors of the service (the author signals)."""
    from assistant.gui.main_window import MainWindow

    dialog = SettingsDialog(AppSettings())
    qtbot.addWidget(dialog)
    dialog.names_edit.setText("Lin, Jimmy; Nogueira, Rodrigo ")
    dialog.ranker_edit.setCurrentText("off")
    out = dialog.result_settings()
    save_settings(out)
    assert load_settings().my_names == "Lin, Jimmy; Nogueira, Rodrigo"
    win = MainWindow(out)
    win.quiet_close = True
    qtbot.addWidget(win)
    engine = win._engine_settings()
    assert engine.authors == ("Lin, Jimmy", "Nogueira, Rodrigo") and engine.ranker == "off"
