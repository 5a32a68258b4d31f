"""The desktop app through a working day (issue 34), offscreen with real widgets and a real
library: papers appear as soon as an import commits, indexing has its own progress, an index
that is missing offers "Index now" and Recommend falls back to keyword search; honest chips,
"Need" re-ranks; layout and keyboard; curation in the window."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytestqt")
pytest.importorskip("PySide6")


from assistant.gui.settings import AppSettings

FIX = Path(__file__).parent / "fixtures" / "library"
BIB = """@article{a1, title={Query expansion with pseudo relevance feedback for web search},
 author={Rocchio, Joseph}, year={1971}, abstract={We expand queries with terms from top documents.}}
@inproceedings{a2, title={Learning to rank with gradient boosted trees}, author={Burges, Chris},
 year={2010}, abstract={Gradient boosted regression trees rank documents for web search.}}
@article{a3, title={Click models for web search}, author={Chuklin, Aleksandr}, year={2015},
 abstract={Click models estimate position bias from search engine logs.}}
"""


@pytest.fixture
def empty_window(qtbot, tmp_path):
    """A main window on a new, empty library (nothing loaded in the background)."""
    from assistant.gui.main_window import MainWindow

    win = MainWindow(AppSettings(library_path=str(tmp_path / "lib.sqlite"), first_run_done=True))
    win.quiet_close = True
    qtbot.addWidget(win)
    win.show()
    win.start(prepare=False)
    return win


def test_papers_show_when_the_import_commits_then_indexing_is_a_job_of_its_own(
    empty_window, qtbot, tmp_path
):
    win = empty_window
    bib = tmp_path / "mine.bib"
    bib.write_text(BIB, encoding="utf-8")
    shown = {}

    def on_stage(channel, stage, message):
        if stage == "imported" and "rows" not in shown:
            shown["rows"] = win.library_panel.model.rowCount()
            shown["count"] = win.library_panel.count_label.text()

    win.runner.stage_reached.connect(on_stage)
    with qtbot.waitSignal(win.engine_ready, timeout=600_000) as ready:
        win.import_library([bib])
    assert shown["rows"] == 3 and "3 papers" in shown["count"], shown
    assert "Imported: 3 added" in win.library_panel.count_label.text()
    assert ready.args[0].embedded == 3
    assert not win.library_panel.stale_bar.isVisible()
    assert win.last_error_dialog is None


def test_recommend_without_an_index_falls_back_to_keywords_and_offers_index_now(
    empty_window, qtbot, tmp_path
):
    from assistant.library.importers import import_paths
    from assistant.library.store import Library

    win = empty_window
    bib = tmp_path / "mine.bib"
    bib.write_text(BIB, encoding="utf-8")
    with Library(win.engine.db_path) as lib:  # another program imported; nobody indexed
        import_paths(lib, [bib])
    win.library_panel.refresh()
    win._show_index_state()
    assert win.library_panel.stale_bar.isVisible()
    assert "No search index yet: 3 papers" in win.library_panel.stale_label.text()
    assert win.library_panel.index_now_button.isVisible()
    win.current_editor().setPlainText("Click models estimate position bias in web search.")
    with qtbot.waitSignal(win.recommendations_ready, timeout=60_000) as done:
        win.recommend()
    result = done.args[0]
    assert result.items and result.items[0].paper.citekey == "a3"
    assert "keyword (BM25)" in win.results_panel.header.text()
    assert win.last_error_dialog is None


def test_progress_message_is_never_clipped(qtbot):
    from assistant.gui.library_panel import LibraryPanel

    panel = LibraryPanel()
    qtbot.addWidget(panel)
    panel.resize(300, 500)
    panel.show()
    message = "Embedding papers 2048/2268 (3.3/s, about 66 s left)"
    panel.show_progress(2048, 2268, message)
    assert panel.progress_label.text() == message and panel.progress_label.wordWrap()
    assert panel.progress.toolTip() == message
    assert message not in panel.progress.text()  # the bar shows only the percentage


def test_index_notice_never_counts_negative_papers():
    from assistant.gui.main_window import index_notice

    show, text = index_notice(175, 176, True, True)
    assert show and "-1" not in text and "1 paper removed or merged" in text
    assert index_notice(3, 0, False, False) == (
        True,
        "No search index yet: 3 papers are not indexed. Until then Recommend uses keyword "
        "(BM25) search only.",
    )
    assert index_notice(3, 3, True, False) == (False, "")
