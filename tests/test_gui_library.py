"""The library panel driven through its real widgets (pytest-qt): lazy table with SQL sort and
search, column chooser, details editing with validation and history, trash with undo and
confirmed emptying, collections sidebar, context menu, duplicates dialog, and the
Ctrl+Shift+C picker citing through the recommendation insertion path."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from assistant.gui.settings import AppSettings
from assistant.library.importers import import_paths
from assistant.library.store import Library

FIX = Path(__file__).parent / "fixtures" / "library"


@pytest.fixture
def db(tmp_path) -> Path:
    path = tmp_path / "lib.sqlite"
    with Library(path) as lib:
        import_paths(lib, [FIX / "good.bib", FIX / "acm_duplicates.bib", FIX / "sample.ris"])
    return path


@pytest.fixture
def panel(qtbot, db):
    from assistant.gui.library_panel import LibraryPanel

    widget = LibraryPanel()
    qtbot.addWidget(widget)
    widget.resize(900, 700)
    widget.show()
    widget.set_library_path(db)
    widget.confirm = lambda title, text: True
    yield widget
    widget.close_library()


def _column(panel, key: str) -> list[str]:
    col = panel.model.columns.index(key)
    return [panel.model.index(r, col).data() for r in range(panel.model.rowCount())]


def _select(panel, citekey: str) -> None:
    paper = panel.library.get_by_citekey(citekey)
    assert panel.browser.select_paper(paper.id)


def test_whole_library_sorted_and_searched_in_sql(panel, qtbot):
    total = panel.library.count()
    assert panel.model.rowCount() == total and f"{total} papers" in panel.count_label.text()
    years = [int(y) for y in _column(panel, "year") if y]
    assert years == sorted(years, reverse=True)  # newest first over the whole library
    panel.table.sortByColumn(panel.model.columns.index("year"), Qt.SortOrder.AscendingOrder)
    years = [int(y) for y in _column(panel, "year") if y]
    assert years == sorted(years)
    qtbot.keyClicks(panel.search_edit, "koll wei")  # as you type: the last word is a prefix
    qtbot.waitUntil(lambda: panel.model.rowCount() == 5, timeout=3000)
    assert set(_column(panel, "title")) == {
        "WEIRD: An Approach to Concept-Based Information Retrieval"
    }
    panel.search_edit.setText("10.1145/67449")  # DOI search
    qtbot.waitUntil(lambda: panel.model.rowCount() == 1, timeout=3000)
    panel.search_edit.setText('year:1978 venue:"sigir forum" weird')  # column filters, in SQL
    qtbot.waitUntil(lambda: panel.model.rowCount() == 2, timeout=3000)
    assert panel.model.view.filters == {"year": "1978", "venue": "sigir forum"}
    panel.search_edit.setText("year:<1980")
    qtbot.waitUntil(lambda: panel.model.rowCount() == 5, timeout=3000)
    panel.search_edit.clear()
    qtbot.waitUntil(lambda: panel.model.rowCount() == total, timeout=3000)


def test_column_chooser(panel):
    assert "doi" not in panel.model.columns
    panel.browser.toggle_column("doi", True)
    assert "DOI" in [
        panel.model.headerData(i, Qt.Orientation.Horizontal)
        for i in range(panel.model.columnCount())
    ]
    assert "10.1145/3000000.3000001" in _column(panel, "doi")
    panel.browser.toggle_column("venue", False)
    assert "venue" not in panel.model.columns


def test_details_pane_edits_validates_and_reverts(panel, qtbot):
    _select(panel, "koci2018query")
    editor = panel.details
    assert editor.inputs["title"].text() == "Query Expansion with Word Embeddings"
    editor.inputs["year"].setText("19x9")
    assert not editor.save()
    assert "year '19x9' is not a year" in editor.error_label.text()
    assert panel.library.get_by_citekey("koci2018query").year == 2018  # nothing saved
    editor.inputs["year"].setText("2019")
    editor.inputs["editors"].setPlainText("Doe, Jane\nRoe, Richard")
    editor.other.setPlainText(editor.other.toPlainText() + "\npages = 7--9")
    qtbot.mouseClick(editor.save_button, Qt.MouseButton.LeftButton)
    paper = panel.library.get_by_citekey("koci2018query")
    assert (paper.year, paper.editors, paper.extra["pages"]) == (
        2019,
        ["Doe, Jane", "Roe, Richard"],
        "7--9",
    )
    row = panel.model.row_of(paper.id)
    assert panel.model.index(row, panel.model.columns.index("year")).data() == "2019"
    assert editor.history_list.count() == 1
    editor.history_list.setCurrentRow(0)
    qtbot.mouseClick(editor.revert_button, Qt.MouseButton.LeftButton)
    assert panel.library.get_by_citekey("koci2018query").year == 2018
    assert "query expansion" in editor.records_view.toPlainText().lower()


def test_edits_are_never_dropped_when_the_selection_or_the_view_changes(panel, qtbot):
    """Selecting another paper saves the pane's edits (as Zotero does); invalid edits ask first
    and "keep editing" stays on the paper; a search that hides the paper saves them too."""
    _select(panel, "koci2018query")
    editor = panel.details
    editor.inputs["title"].setText("Query Expansion with Word Embeddings, revised")
    _select(panel, "koll1978weird")
    assert panel.library.get_by_citekey("koci2018query").title.endswith(", revised")
    assert editor.paper.citekey == "koll1978weird"
    _select(panel, "koci2018query")
    editor.inputs["year"].setText("20x8")
    asked = []
    panel.confirm = lambda title, text: asked.append(text) or False  # keep editing
    _select(panel, "koll1978weird")
    assert "koci2018query" in asked[0] and "is not a year" in asked[0]
    assert editor.paper.citekey == "koci2018query" and editor.inputs["year"].text() == "20x8"
    assert panel.browser.selected_ids() == [panel.library.get_by_citekey("koci2018query").id]
    panel.confirm = lambda title, text: True  # discard
    _select(panel, "koll1978weird")
    assert editor.paper.citekey == "koll1978weird"
    assert panel.library.get_by_citekey("koci2018query").year == 2018
    editor.inputs["venue"].setText("SIGIR Forum (edited)")
    panel.search_edit.setText("embeddings")  # the edited paper leaves the view
    qtbot.waitUntil(lambda: "embeddings" in panel.count_label.text(), timeout=3000)
    assert panel.library.get_by_citekey("koll1978weird").venue == "SIGIR Forum (edited)"
    editor.inputs["title"].setText("x")
    qtbot.keyClick(editor.inputs["title"], Qt.Key.Key_Return)  # Enter saves
    assert panel.library.get_by_citekey("koll1978weird").title == "x"


def test_delete_to_trash_undo_and_confirmed_empty(panel, qtbot):
    total = panel.library.count()
    _select(panel, "koci2018query")
    panel.table.setFocus()
    row = panel.table.currentIndex().row()
    qtbot.keyClick(panel.table, Qt.Key.Key_Delete)
    assert panel.model.rowCount() == total - 1 and panel.undo_button.isVisible()
    assert panel.table.currentIndex().row() == min(row, total - 2)  # the next paper is current
    assert panel.details.paper.id == panel.model.paper_id(panel.table.currentIndex().row())
    qtbot.mouseClick(panel.undo_button, Qt.MouseButton.LeftButton)
    assert panel.model.rowCount() == total and panel.library.get_by_citekey("koci2018query")
    _select(panel, "koci2018query")
    panel.edits.trash_selected()
    assert panel.collections.select_node("trash") and panel.model.rowCount() == 1
    panel.confirm = lambda title, text: False
    assert (
        panel.edits.empty_trash() == 0 and panel.model.rowCount() == 1
    )  # refused: nothing deleted
    panel.confirm = lambda title, text: "for good" in text
    assert panel.edits.empty_trash() == 1 and panel.model.rowCount() == 0


def test_collections_sidebar_and_context_menu(panel, tmp_path):
    panel.ask_text = lambda title, label: "Related work"
    cid = panel.collections.new_collection()
    _select(panel, "koci2018query")
    labels = [a.text() for a in panel.edits.context_menu().actions()]
    assert labels[:5] == ["Cite", "Open PDF", "Edit", "Copy BibTeX", "Export selection…"]
    menu = next(
        a.menu() for a in panel.edits.context_menu().actions() if a.text() == "Add to collection"
    )
    next(a for a in menu.actions() if a.text() == "Related work").trigger()
    assert panel.collections.select_node("collection", cid) and _column(panel, "citekey") == [
        "koci2018query"
    ]
    out = tmp_path / "sel.ris"
    panel.ask_save_path = lambda: str(out)
    panel.table.selectAll()
    assert panel.edits.export_papers(ids=panel.browser.selected_ids()) == 1
    assert "ID  - koci2018query" in out.read_text()
    sync = tmp_path / "sync.bib"
    panel.ask_save_path = lambda: str(sync)
    assert panel.collections.auto_export(cid) == str(sync.resolve())
    assert sync.read_text().startswith("@article{koci2018query,")
    panel.collections.set_recommend_collection(cid)
    assert (
        panel.collections.recommend_collection == cid and "Related work" in panel.count_label.text()
    )
    assert panel.collections.remove_selected_from_collection() == 1 and panel.model.rowCount() == 0
    assert sync.read_text() == ""  # the collection's file follows its membership
    panel.collections.select_node("all")
    _select(panel, "koci2018query")
    assert not panel.edits.open_pdf() and "No PDF" in panel.count_label.text()


def test_duplicates_dialog_merges_a_group(panel):
    from assistant.gui.curation import MergeDialog

    # the ACM copies with different DOIs are two works each; the curation fixture has one pair
    import_paths(panel.library, [FIX / "curation.bib"])
    dialog = panel.curation.duplicates_dialog()
    asked = []

    def confirm(keep, ids):  # the merge dialog, answered "Merge" with its default choices
        asked.append(keep)
        return MergeDialog(panel.manager, keep, ids, dialog).merge()

    dialog.confirm_merge = confirm
    assert dialog.tree.topLevelItemCount() == 1
    top = dialog.tree.topLevelItem(0)
    keys = [top.child(i).text(1) for i in range(top.childCount()) if top.child(i).text(1)]
    assert len(keys) == 2 and "evidence: " in top.child(2).text(3)
    dialog.tree.setCurrentItem(top.child(1))
    dialog.keep_selected()
    assert top.child(1).text(0) == "✔" and top.child(0).text(0) == ""
    dialog.tree.setCurrentItem(top)
    dialog.merge_selected()
    assert asked  # merging asks first
    assert dialog.tree.topLevelItemCount() == 0
    kept = panel.library.get_by_citekey(keys[1])
    assert kept.citekey == keys[1]  # the paper marked "keep" keeps its key
    for key in keys:  # every key of the group resolves to the kept paper
        assert panel.library.get_by_citekey(key).id == kept.id
    dialog.accept()
    assert panel.model.rowCount() == panel.library.count()


def test_search_and_cite_picker_inserts_like_a_recommendation(qtbot, db, tmp_path):
    from assistant.gui.main_window import MainWindow

    win = MainWindow(AppSettings(library_path=str(db), first_run_done=True))
    win.quiet_close = True
    qtbot.addWidget(win)
    win.jobs.start(prepare=False)
    draft = tmp_path / "draft.tex"
    draft.write_text(
        "\\documentclass{article}\n\\begin{document}\nWe expand queries. \n\n"
        "\\bibliography{refs}\n\\end{document}\n",
        encoding="utf-8",
    )
    editor = win.documents.open_file(draft)
    pos = editor.toPlainText().index("queries.") + len("queries")
    editor.select_range(pos, pos)
    picker = win.citations.search_and_cite()
    qtbot.keyClicks(picker.search_edit, "query expan")
    qtbot.waitUntil(lambda: picker.results.count() == 1, timeout=3000)
    qtbot.keyClick(picker.search_edit, Qt.Key.Key_Return)
    assert "We expand queries~\\cite{koci2018query}." in editor.toPlainText()
    assert not (tmp_path / "refs.bib").exists()  # the .bib entry is written when the draft is saved
    assert win.documents.save_current()
    assert "@article{koci2018query," in (tmp_path / "refs.bib").read_text()
    # the table's "Cite" (double click / context menu) goes the same way
    win.library_panel.browser.select_paper(
        win.library_panel.library.get_by_citekey("smith2020axioms").id
    )
    assert win.library_panel.edits.cite_selected()
    assert "smith2020axioms" in editor.toPlainText()


def test_details_pane_never_makes_the_window_taller_than_a_small_screen(qtbot, db):
    """The details form scrolls: at 1024x700 (or 1920x1080 at scale 1.5 = 1280x720) the window
    fits, however many fields the form has (its rows once forced a 974 px minimum)."""
    from assistant.gui.main_window import MainWindow

    win = MainWindow(AppSettings(library_path=str(db), first_run_done=True))
    win.quiet_close = True
    qtbot.addWidget(win)
    assert win.minimumSizeHint().height() <= 700 - 30
