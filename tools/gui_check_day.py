"""Real-window check of issue 34 (a working day in the desktop app), under Xvfb.

    tools/gui_check.sh          # runs tools/gui_check.py and then this script
    GUI_CHECK_OUT=/tmp/x python tools/gui_check_day.py [--layout-only]

A: a new library: import BibTeX -> the papers show as soon as the import commits -> cancel the
indexing -> "Index now" is offered and Recommend answers with keyword (BM25) results and a notice.
B: curation: merge duplicates through the field-by-field dialog; the picker finds the merged-away
key; citation-key dialog; Library > Export library writes the file. C: the side panel at
1024x700 has no clipped label. D: the sample: the table shows its papers while indexing runs
(progress text whole), chips, "Need" re-ranks, Esc from a card returns to the text, results go
into their own sentence after the caret moved, Undo clears "Cited", a click in the flagged list
navigates, F1 help. ``--layout-only`` (QT_SCALE_FACTOR=1.5): A's library panel at 1024x700.
Screenshots go to $GUI_CHECK_OUT (default /tmp/gui-check), never into the repository. Prints one
JSON object; exit status 0 only when every check held.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

from qtwait import pump, wait_for  # tools/ is the script's folder

ROOT = Path(__file__).resolve().parent.parent
OUT = Path(os.environ.get("GUI_CHECK_OUT", "/tmp/gui-check"))
FIX = ROOT / "tests" / "fixtures" / "library"
REPORT: dict = {"steps": [], "ok": False, "screenshots": []}


def check(cond: bool, what: str) -> None:
    REPORT["steps"].append({"check": what, "ok": bool(cond)})
    if not cond:
        raise AssertionError(what)


def shot(widget, name: str) -> None:

    pump(300)
    OUT.mkdir(parents=True, exist_ok=True)
    widget.grab().save(str(OUT / name))
    REPORT["screenshots"].append(str(OUT / name))


def clipped(root) -> list:
    """Visible buttons narrower than their text, elided tab texts, sidebar rows cut off."""
    from PySide6.QtWidgets import QAbstractButton, QTabBar, QTreeWidget

    out = []
    for w in root.findChildren(QAbstractButton):
        if w.isVisible() and w.text() and w.width() < w.sizeHint().width() - 1:
            out.append(w.text())
    for bar in root.findChildren(QTabBar):
        for i in range(bar.count()):
            if bar.isVisible() and bar.tabRect(i).width() < bar.fontMetrics().horizontalAdvance(
                bar.tabText(i)
            ):
                out.append(bar.tabText(i))
    for tree in root.findChildren(QTreeWidget):
        for i in range(tree.topLevelItemCount()):
            item = tree.topLevelItem(i)
            need = tree.visualItemRect(item).x() + tree.fontMetrics().horizontalAdvance(
                item.text(0)
            )
            if tree.isVisible() and need + 8 > tree.viewport().width():
                out.append(item.text(0))
    return out


def new_library_window(home: Path):
    from assistant.gui.main_window import MainWindow
    from assistant.gui.settings import AppSettings

    window = MainWindow(AppSettings(library_path=str(home / "a.sqlite"), first_run_done=True))
    window.quiet_close = True
    window.show()
    window.jobs.start(prepare=False)
    return window


def phase_a(home: Path):
    """Import, papers at once, cancel indexing, Index now, keyword fallback."""
    window = new_library_window(home)
    window.resize(1400, 860)
    seen: dict = {}

    def stage(channel, name, message):
        if name == "imported" and "rows" not in seen:
            seen["rows"] = window.library_panel.model.rowCount()
            seen["count"] = window.library_panel.count_label.text()

    window.runner.stage_reached.connect(stage)
    errors: list = []
    window.error_shown.connect(errors.append)
    generation = window.jobs.import_library(
        [FIX / "good.bib", FIX / "curation.bib"]
    )  # one real pair
    wait_for(lambda: "rows" in seen, 120, "the import to commit")
    check(seen["rows"] > 0 and "Imported:" in seen["count"], f"papers shown on commit {seen}")
    # indexing is a job of its own: Cancel it as soon as it starts (the import stays)
    wait_for(lambda: window.runner.generation("engine") > generation, 60, "the index job")
    window.library_panel.cancel_button.click()
    wait_for(lambda: not window.runner.is_busy("engine"), 300, "the cancelled index job")
    window.jobs.show_index_state()
    panel = window.library_panel
    check(panel.stale_bar.isVisible() and panel.index_now_button.isVisible(), "Index now offered")
    check("No search index yet" in panel.stale_label.text(), panel.stale_label.text())
    window.documents.current_editor().setPlainText(
        "Concept-based information retrieval with a vector space."
    )
    REPORT["import_report"] = errors[:1]  # the import's own problems dialog (duplicates)
    errors.clear()
    results: list = []
    window.recommendations_ready.connect(results.append)
    window.recommender.recommend()
    wait_for(lambda: results or errors, 60, "keyword results")
    check(not errors, f"no error dialog {errors[:1]}")
    check(bool(results[0].items), "keyword fallback finds papers")
    check("keyword (BM25)" in window.results_panel.header.text(), "the fallback says so")
    shot(window, "a-no-index-fallback.png")
    return window


def phase_b(window) -> None:
    """Merge with a field-by-field choice, the picker by an old key, keys, export."""
    from PySide6.QtWidgets import QApplication

    from assistant.gui.curation import MergeDialog
    from assistant.gui.library_dialogs import CitePicker

    panel = window.library_panel
    dialog = panel.curation.duplicates_dialog()
    dialog.resize(900, 400)
    shot(dialog, "b-duplicates.png")
    top = dialog.tree.topLevelItem(0)
    check(top is not None, "the duplicates dialog shows the fixture's one real pair")
    keys = [top.child(i).text(1) for i in range(top.childCount()) if top.child(i).text(1)]
    check(
        all(
            dialog.tree.header().sectionSize(1) >= dialog.tree.fontMetrics().horizontalAdvance(k)
            for k in keys
        ),
        "duplicate keys not truncated",
    )
    asked: list = []

    def confirm(keep, ids):
        merge = MergeDialog(panel.manager, keep, ids, dialog)
        merge.show()
        shot(merge, "b-merge-fields.png")
        asked.append(sorted(merge.choices))
        return merge.merge()

    dialog.confirm_merge = confirm
    dialog.tree.setCurrentItem(top)
    dialog.merge_selected()
    check(bool(asked), f"merge asks with field choices {asked[:1]}")
    dialog.accept()
    picker = CitePicker(panel.library, window)
    picker.show()
    picker.search_edit.setText(keys[1])
    picker.update_results()
    check(
        picker.results.count() > 0 and f"(was {keys[1]}, merged)" in picker.results.item(0).text(),
        "Ctrl+Shift+C finds the merged-away key",
    )
    shot(picker, "b-picker-old-key.png")
    picker.close()
    keys_dialog = panel.curation.citekey_dialog()
    shot(keys_dialog, "b-citekeys.png")
    keys_dialog.close()
    out = OUT / "library-export.bib"
    panel.ask_save_path = lambda: str(out)
    action = next(
        a
        for m in window.menuBar().actions()
        for a in m.menu().actions()
        if a.text() == "&Export library…"
    )
    action.trigger()
    QApplication.processEvents()
    check(out.exists() and out.read_text().count("@") >= 3, "Export library writes the file")


def phase_c(window, tag: str) -> None:
    from assistant.gui.main_window import QDockWidget

    window.resize(1024, 700)
    window.size_docks()
    window.findChild(QDockWidget, "Library").raise_()
    panel = window.library_panel
    if panel.model.rowCount():
        panel.browser.select_paper(panel.model.paper_id(0))

    pump(500)
    REPORT[f"library_panel_width_{tag}"] = panel.width()
    bad = clipped(panel)
    shot(window, f"c-1024x700-{tag}.png")
    check(not bad, f"no clipped label in the library panel at 1024x700 ({tag}): {bad}")


def phase_d() -> None:
    """The sample, first run: papers during indexing, chips, Need, keyboard, anchor, help."""
    from PySide6.QtCore import Qt, QTimer
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication, QDockWidget

    from assistant.documents import textops
    from assistant.gui.app import _parser, open_window
    from assistant.gui.menus import show_shortcuts

    window = open_window(_parser().parse_args(["--sample"]))
    window.quiet_close = True
    window.resize(1600, 1000)
    seen: dict = {}

    def stage(channel, name, message):
        if name == "imported" and "rows" not in seen:
            seen["rows"] = window.library_panel.model.rowCount()

    def look(message) -> None:  # after the window has handled the progress event
        label = window.library_panel.progress_label
        seen["label"] = label.text()
        seen["label_whole"] = label.wordWrap() and label.text() == label.toolTip()
        seen["rows_while_indexing"] = window.library_panel.model.rowCount()
        shot(window, "d-sample-indexing.png")

    def progress(ch, gen, event):
        message = event.message
        if "Embedding" in message and "shot" not in seen:
            seen["shot"] = message
            QTimer.singleShot(0, lambda: look(message))

    window.runner.stage_reached.connect(stage)
    window.runner.signals.progress.connect(progress)
    ready: list = []
    window.engine_ready.connect(ready.append)
    wait_for(lambda: ready, 1500, "the sample library and models")
    check(seen.get("rows", 0) >= 100, f"the sample's papers show before indexing ends {seen}")
    if "label_whole" in seen:
        check(seen["label_whole"], f"the progress message is shown whole {seen}")
        check(seen["rows_while_indexing"] >= 100, "the table shows the sample while indexing")
    errors: list = []
    window.error_shown.connect(errors.append)
    window.activateWindow()
    QTest.qWaitForWindowActive(window, 10000)
    editor = window.documents.current_editor()
    text = editor.toPlainText()
    m = re.search(r"Click\s+models\s+such\s+as", text)
    s, e = textops.sentence_bounds(text, m.start())
    editor.select_range(s, e)
    editor.setFocus()
    results: list = []
    window.recommendations_ready.connect(results.append)
    QTest.keyClick(editor, Qt.Key.Key_R, Qt.KeyboardModifier.ControlModifier)
    wait_for(lambda: results or errors, 180, "recommendations")
    check(not errors, f"no error dialog {errors[:1]}")
    wait_for(window.results_panel.is_complete, 20, "cards")
    panel = window.results_panel
    shown = [c.chip.text() for c in panel.cards if not c.chip.isHidden()]
    REPORT["chips_shown"] = shown
    REPORT["sentence_label"] = "sentence reads as" in panel.header.text()
    check(len(set(shown)) != 1 or len(shown) < len(panel.cards), "chips are not one label x k")
    shot(window, "d-results-chips.png")
    n_before = len(panel.cards)
    panel.intent_filter.setCurrentIndex(panel.intent_filter.findData("method"))
    wait_for(lambda: len(results) > 1 or errors, 180, "re-ranked results")
    wait_for(panel.is_complete, 20, "cards")
    check(len(panel.cards) == n_before and not panel.empty_label.isVisible(), "Need re-ranks")
    shot(window, "d-need-method.png")
    panel.intent_filter.setCurrentIndex(0)
    wait_for(lambda: len(results) > 2 or errors, 180, "results again")
    wait_for(panel.is_complete, 20, "cards")
    window.focus_results()
    pump(100)
    QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Escape)
    check(QApplication.focusWidget() is editor, "Esc from a card returns to the text")
    # the caret moves to another sentence; Insert still cites the sentence of the results
    later = text.index(".", e + 40)
    editor.select_range(later, later)
    key = panel.cards[0].rec.paper.citekey
    QTest.mouseClick(panel.cards[0].insert_button, Qt.MouseButton.LeftButton)
    after = editor.toPlainText()
    check(after.find("\\cite{" + key) < e + 40 + len(key), "inserted into the results' sentence")
    check(window.status_label.text().startswith("Cited"), "status says Cited")
    editor.undo()
    check(editor.toPlainText() == text, "Undo removes the citation")
    check(not window.status_label.text().startswith("Cited"), "Cited goes away after Undo")
    QTest.keyClick(
        editor,
        Qt.Key.Key_M,
        Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier,
    )
    wait_for(lambda: not window.runner.is_busy("analyse"), 180, "flagging")
    window.findChild(QDockWidget, "Flagged sentences").raise_()
    pump(300)
    flist = window.flagged_list.list
    if flist.count() > 1:
        item = flist.item(1)
        QTest.mouseClick(
            flist.viewport(), Qt.MouseButton.LeftButton, pos=flist.visualItemRect(item).center()
        )
        mark = editor.marks[1]
        check(editor.selection_range() == (mark.start, mark.end), "one click navigates")
    REPORT["flagged"] = flist.count()
    shot(window, "d-flagged.png")
    box = show_shortcuts(window)
    check("Ctrl+Shift+C" in box.text() and "What the labels mean" in box.text(), "F1 help page")
    shot(box, "d-help.png")
    box.close()
    phase_c(window, "sample")


def main() -> int:
    from PySide6.QtCore import QTimer

    from assistant.gui.app import create_application

    app = create_application(sys.argv[:1])
    home = Path(os.environ.get("ASSISTANT_HOME", "/tmp/gui-check-home"))
    home.mkdir(parents=True, exist_ok=True)
    layout_only = "--layout-only" in sys.argv

    def go() -> None:
        try:
            REPORT["scale"] = os.environ.get("QT_SCALE_FACTOR", "1")
            if layout_only:
                window = new_library_window(home)
                from assistant.library.importers import import_paths
                from assistant.library.store import Library

                with Library(home / "a.sqlite") as lib:
                    import_paths(lib, [FIX / "good.bib"])
                window.library_panel.manager.create_collection("Thesis chapter 2")
                window.library_panel.refresh()
                phase_c(window, "scale" + REPORT["scale"])
            else:
                window = phase_a(home)
                phase_b(window)
                phase_c(window, "new-library")
                phase_d()
            REPORT["ok"] = True
        except Exception as exc:  # report and exit non-zero
            REPORT["error"] = f"{type(exc).__name__}: {exc}"
        print(json.dumps(REPORT, indent=1))
        app.exit(0 if REPORT["ok"] else 1)

    QTimer.singleShot(0, go)
    code = app.exec()
    sys.stdout.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
