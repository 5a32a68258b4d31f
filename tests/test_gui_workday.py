"""The desktop app through a working day (issue 34), offscreen with real widgets and a real
library: papers appear as soon as an import commits, indexing has its own progress, an index
that is missing offers "Index now" and Recommend falls back to keyword search; honest chips,
"Need" re-ranks; layout and keyboard; curation in the window."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytestqt")
pytest.importorskip("PySide6")

from PySide6.QtCore import Qt

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
    win.jobs.start(prepare=False)
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
        win.jobs.import_library([bib])
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
    win.jobs.show_index_state()
    assert win.library_panel.stale_bar.isVisible()
    assert "No search index yet: 3 papers" in win.library_panel.stale_label.text()
    assert win.library_panel.index_now_button.isVisible()
    win.documents.current_editor().setPlainText(
        "Click models estimate position bias in web search."
    )
    with qtbot.waitSignal(win.recommendations_ready, timeout=60_000) as done:
        win.recommender.recommend()
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
    from assistant.gui.anchoring import index_notice

    show, text = index_notice(175, 176, True, True)
    assert show and "-1" not in text and "1 paper removed or merged" in text
    assert index_notice(3, 0, False, False) == (
        True,
        "No search index yet: 3 papers are not indexed. Until then Recommend uses keyword "
        "(BM25) search only.",
    )
    assert index_notice(3, 3, True, False) == (False, "")


# --- layout, header, keyboard, help (issue 34 items 4, 5, 8) ---------------------------------


def _rec(n: int, intent="method", conf=0.9, title=None):
    from assistant.library.models import Paper
    from assistant.retrieval.pipeline import Recommendation

    paper = Paper(
        title=title or f"Dense passage retrieval for open-domain question answering part {n}",
        id=n,
        citekey=f"karpukhin2020dense{n}",
        authors=["Karpukhin, Vladimir"],
        year=2020,
        abstract="We show that retrieval can be practically implemented using dense vectors.",
    )
    probs = {intent: conf, "background": round(1 - conf, 3)}
    return Recommendation(paper, 1.0 - n / 100, {"bm25": 1.0}, {}, intent, conf, probs)


def _open(win, tmp_path: Path, text: str):
    path = tmp_path / "draft.tex"
    path.write_text(text, encoding="utf-8")
    editor = win.documents.open_file(path)
    win.citations.set_bib_path(editor.state, tmp_path / "refs.bib")
    return editor


def _clipped(root) -> list:
    """Buttons narrower than their text, tab texts elided, sidebar rows cut at the right."""
    from PySide6.QtWidgets import QAbstractButton, QTabBar, QTreeWidget

    out = []
    for w in root.findChildren(QAbstractButton):
        if w.isVisible() and w.text() and w.width() < w.sizeHint().width() - 1:
            out.append((w.text(), w.width(), w.sizeHint().width()))
    for bar in root.findChildren(QTabBar):
        for i in range(bar.count()):
            need = bar.fontMetrics().horizontalAdvance(bar.tabText(i))
            if bar.isVisible() and bar.tabRect(i).width() < need:
                out.append((bar.tabText(i), bar.tabRect(i).width(), need))
    for tree in root.findChildren(QTreeWidget):
        stack = [tree.topLevelItem(i) for i in range(tree.topLevelItemCount())]
        while stack:
            item = stack.pop()
            stack += [item.child(i) for i in range(item.childCount())]
            rect = tree.visualItemRect(item)
            need = rect.x() + tree.fontMetrics().horizontalAdvance(item.text(0)) + 8
            if tree.isVisible() and need > tree.viewport().width():
                out.append((item.text(0), tree.viewport().width(), need))
    return out


@pytest.mark.parametrize("width", [150, 225, 300])
def test_library_side_panel_lays_out_without_clipped_labels(qtbot, tmp_path, width):
    """1024x700 gives the side panel ~225 px, the minimum is 150: "All pape", "card chang"."""
    from assistant.gui.library_panel import LibraryPanel
    from assistant.library.importers import import_paths
    from assistant.library.store import Library

    db = tmp_path / "lib.sqlite"
    with Library(db) as lib:
        import_paths(lib, [FIX / "good.bib"])
    panel = LibraryPanel()
    qtbot.addWidget(panel)
    panel.resize(width, 640)
    panel.show()
    panel.set_library_path(db)
    panel.manager.create_collection("Thesis")
    panel.refresh()
    panel.browser.select_paper(panel.model.paper_id(0))
    qtbot.wait(50)
    assert _clipped(panel) == []
    panel.close_library()


def test_results_header_follows_the_filters(qtbot, tmp_path):
    from assistant.gui.results_panel import ResultsPanel

    panel = ResultsPanel()
    qtbot.addWidget(panel)
    panel.show()
    recs = [_rec(1), _rec(2, "result", 0.8)]
    panel.set_results(recs, "2 recommendations", {"karpukhin2020dense1"})
    qtbot.waitUntil(panel.is_complete)
    assert "1 already cited hidden" in panel.header.text()
    panel.exclude_cited.setChecked(False)
    qtbot.waitUntil(panel.is_complete)
    assert "hidden" not in panel.header.text() and len(panel.cards) == 2
    panel.scope_note = "only from the collection “Thesis”"
    panel.set_results(recs, "2 recommendations")
    assert "only from the collection “Thesis”" in panel.header.text()


def test_cited_status_goes_away_when_the_insert_is_undone(empty_window, qtbot, tmp_path):
    win = empty_window
    text = "\\begin{document}\nDense retrieval works well. Next.\n\\end{document}\n"
    editor = _open(win, tmp_path, text)
    editor.select_range(text.index("works"), text.index("works"))
    win.results_panel.set_results([_rec(1)], "results")
    qtbot.waitUntil(win.results_panel.is_complete)
    assert win.citations.insert_result(1)
    assert win.status_label.text().startswith("Cited karpukhin2020dense1")
    editor.undo()
    assert "\\cite{" not in editor.toPlainText()
    assert not win.status_label.text().startswith("Cited")


def test_esc_from_a_result_card_returns_to_the_text(empty_window, qtbot, tmp_path):
    from PySide6.QtWidgets import QApplication

    win = empty_window
    editor = _open(win, tmp_path, "\\begin{document}\nDense retrieval works.\n\\end{document}\n")
    win.results_panel.set_results([_rec(1), _rec(2)], "results")
    qtbot.waitUntil(win.results_panel.is_complete)
    win.activateWindow()
    assert win.focus_results()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is win.results_panel.cards[0])
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Escape)
    assert QApplication.focusWidget() is editor
    qtbot.keyClicks(QApplication.focusWidget(), "x")
    assert "x" in editor.toPlainText()


def test_one_click_in_the_flagged_list_navigates(empty_window, qtbot, tmp_path):
    from assistant.gui.editor import MarginMark

    win = empty_window
    text = "\\begin{document}\nFirst claim here. Second claim there.\n\\end{document}\n"
    editor = _open(win, tmp_path, text)
    start = text.index("Second")
    editor.set_marks([MarginMark(start, text.index("there.") + 6, "Missing citation?")])
    win.flagged.show_flagged(editor)
    went = []
    win.flagged_list.activated.connect(went.append)
    item = win.flagged_list.list.item(0)
    rect = win.flagged_list.list.visualItemRect(item)
    qtbot.mouseClick(win.flagged_list.list.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert went and editor.selection_range()[0] == start


def test_results_are_not_silently_inserted_into_another_sentence(empty_window, qtbot, tmp_path):
    win = empty_window
    text = (
        "\\begin{document}\nDense retrieval works well. Click models need logs.\n\\end{document}\n"
    )
    editor = _open(win, tmp_path, text)
    from assistant.gui.anchoring import Anchor

    first = text.index("Dense")
    end = text.index("well.") + 5
    win.citations.anchor = Anchor(
        editor, first, end, text[first:end]
    )  # results computed for sentence 1
    win.results_panel.set_results([_rec(1), _rec(2)], "results")
    qtbot.waitUntil(win.results_panel.is_complete)
    editor.select_range(text.index("logs"), text.index("logs"))  # the caret moved on
    assert win.citations.insert_result(1)
    out = editor.toPlainText()
    assert out.index("\\cite{karpukhin2020dense1}") < out.index("Click")  # in sentence 1
    assert win.citations.insert_result(2)  # the list's next result goes to the same sentence
    out = editor.toPlainText()
    assert out.index("karpukhin2020dense2") < out.index("Click")
    editor.select_range(out.index("Dense"), out.index("Dense") + 5)
    editor.insertPlainText("Sparse")  # the sentence itself was edited: refuse, say so
    before = editor.toPlainText()
    assert not win.citations.insert_result(1)
    assert editor.toPlainText() == before
    assert "was edited" in win.results_panel.header.text()


def test_help_is_a_real_page_and_global_shows_title_and_abstract(empty_window):
    from assistant.gui.anchoring import shown_query
    from assistant.gui.menus import show_shortcuts
    from assistant.service import Query

    box = show_shortcuts(empty_window)
    text = box.text()
    assert "Ctrl+Shift+C" in text and "Workflows" in text and "What the labels mean" in text
    assert "Need: method" in text and "Index now" in text
    box.close()
    query = Query(text="", mode="global", title="Neural ranking", abstract="We rank papers.")
    assert shown_query(query) == "Neural ranking — We rank papers."


# --- curation in the window (issue 34 item 6) ------------------------------------------------


@pytest.fixture
def dup_panel(qtbot, tmp_path):
    from assistant.gui.library_panel import LibraryPanel
    from assistant.library.importers import import_paths
    from assistant.library.store import Library

    db = tmp_path / "lib.sqlite"
    with Library(db) as lib:
        import_paths(lib, [FIX / "good.bib", FIX / "curation.bib"])  # one real pair
    panel = LibraryPanel()
    qtbot.addWidget(panel)
    panel.resize(900, 700)
    panel.show()
    panel.set_library_path(db)
    panel.confirm = lambda title, text: True
    yield panel
    panel.close_library()


def test_merge_asks_with_a_field_by_field_choice_and_old_keys_find_the_record(dup_panel, qtbot):
    from assistant.gui.curation import MergeDialog
    from assistant.gui.library_dialogs import CitePicker

    panel = dup_panel
    dialog = panel.curation.duplicates_dialog()
    top = dialog.tree.topLevelItem(0)
    rows = [top.child(i) for i in range(top.childCount())]
    rows = [r for r in rows if r.data(0, Qt.ItemDataRole.UserRole)]  # not the evidence rows
    ids = [int(r.data(0, Qt.ItemDataRole.UserRole)) for r in rows]
    keys = [r.text(1) for r in rows]
    header = dialog.tree.header()  # keys and titles are never cut
    assert header.sectionSize(1) >= dialog.tree.fontMetrics().horizontalAdvance(max(keys, key=len))
    assert top.child(0).toolTip(3) == top.child(0).text(3)
    dialog.confirm_merge = lambda keep, group: False  # the user says No: nothing merged
    dialog.tree.setCurrentItem(top)
    dialog.merge_selected()
    assert panel.library.get_by_citekey(keys[1]).id == ids[1]
    merge = MergeDialog(panel.manager, ids[0], ids)
    assert "title" in merge.choices  # the records differ in their title (a typo)
    box = merge.choices["title"]
    other_title = box.itemData(1)
    box.setCurrentIndex(1)
    assert merge.merge()
    kept = panel.library.get(ids[0])
    assert kept.title == other_title
    picker = CitePicker(panel.library)
    qtbot.addWidget(picker)
    picker.search_edit.setText(keys[1])  # the merged-away key
    picker.update_results()
    assert (
        picker.results.count()
        and int(picker.results.item(0).data(Qt.ItemDataRole.UserRole)) == (ids[0])
    )
    dialog.close()


def test_citekey_pattern_pin_regenerate_and_tags_in_the_window(dup_panel):
    from assistant.gui.curation import CitekeyDialog

    panel = dup_panel
    first = panel.model.paper_id(0)
    panel.browser.select_paper(first)
    old_key = panel.library.get(first).citekey
    assert panel.curation.set_pinned_selected(True) == 1 and panel.library.get(first).pinned
    dialog = CitekeyDialog(panel.manager, [first], panel)
    dialog.pattern_edit.setText("[auth]_[year]")
    renamed = dialog.regenerate(None)
    assert renamed and panel.manager.citekey_pattern() == "[auth]_[year]"
    assert panel.library.get(first).citekey == old_key  # pinned: unchanged
    assert all("_" in new for _old, new in renamed)
    panel.curation.set_pinned_selected(False)
    assert panel.curation.regenerate_keys([first]) and "_" in panel.library.get(first).citekey
    assert panel.curation.add_tag_to_selected("to-read") == 1
    assert "to-read" in panel.manager.details(first).tags
    assert panel.collections.select_node("tag", "to-read") and panel.model.rowCount() == 1
    panel.collections.select_node("all")
    panel.browser.select_paper(first)
    assert panel.curation.remove_tag_from_selected("to-read") == 1
    assert "to-read" not in panel.manager.details(first).tags
    menu = panel.edits.context_menu()
    labels = [a.text() for a in menu.actions()]
    assert "Add a tag…" in labels and "Regenerate the key(s)" in labels
    menu.deleteLater()


def test_export_library_menu(empty_window, tmp_path):
    win = empty_window
    titles = [a.text() for m in win.menuBar().actions() for a in m.menu().actions()]
    assert "&Export library…" in titles and "Citation &keys (pattern, regenerate)…" in titles
    out = tmp_path / "all.bib"
    win.library_panel.ask_save_path = lambda: str(out)
    assert win.library_panel.edits.export_papers() == 0 or out.exists()
