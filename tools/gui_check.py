"""Real-window check of the writing loop: the real app on the bundled sample, driven through
Qt's own event loop (QTest key/mouse events inside the app process, under Xvfb).

    tools/gui_check.sh            # installs Xvfb if missing, runs this under xvfb-run

Steps: wait for the sample library and models; select a sentence of the draft -> Ctrl+R
-> click Insert on the first card -> the citation stands before the sentence's period, the
.bib is untouched -> Ctrl+Z (focus still on the button) -> the text is back -> Insert again +
Ctrl+S -> the .bib holds the entry. Screenshots: the editor with
results (1600x1000), the manuscript view with its flagged-sentence list, and a narrow window
(1024x700); they go to $GUI_CHECK_OUT (default /tmp/gui-check), outside the repository. Prints one JSON line; exit status 0 only when every assertion held.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from qtwait import pump, wait_for  # tools/ is the script's folder

#: screenshots go outside the repository (never committed): $GUI_CHECK_OUT or /tmp/gui-check
OUT = Path(os.environ.get("GUI_CHECK_OUT", "/tmp/gui-check"))
SENTENCE = "Click models such as the dynamic Bayesian network model"


def scale_check() -> int:
    """QT_SCALE_FACTOR=1.5 (set by the caller): the window fits the screen; a screenshot."""
    from PySide6.QtCore import QTimer

    from assistant.gui.app import _parser, create_application, open_window

    app = create_application(sys.argv[:1])
    window = open_window(_parser().parse_args(["--sample"]))
    window.quiet_close = True
    report: dict = {"scale": os.environ.get("QT_SCALE_FACTOR", "1"), "ok": False}

    def go() -> None:
        pump(3000)
        screen = window.screen().availableGeometry()
        frame = window.frameGeometry()
        report["screen"] = [screen.width(), screen.height()]
        report["window"] = [frame.width(), frame.height()]
        report["ok"] = screen.contains(frame) or (
            frame.width() <= screen.width() and frame.height() <= screen.height()
        )
        OUT.mkdir(parents=True, exist_ok=True)
        window.grab().save(str(OUT / "scale-1.5.png"))
        print(json.dumps(report))
        app.exit(0 if report["ok"] else 1)

    QTimer.singleShot(0, go)
    code = app.exec()
    sys.stdout.flush()
    os._exit(code)


def main() -> int:
    if "--scale" in sys.argv:
        return scale_check()
    from PySide6.QtCore import Qt, QTimer
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication, QDockWidget

    from assistant.documents import textops
    from assistant.gui.app import _parser, create_application, open_window

    app = create_application(sys.argv[:1])
    window = open_window(_parser().parse_args(["--sample"]))
    window.quiet_close = True
    window.resize(1600, 1000)
    report: dict = {"steps": [], "ok": False}
    OUT.mkdir(parents=True, exist_ok=True)

    def check(cond: bool, what: str) -> None:
        report["steps"].append({"check": what, "ok": bool(cond)})
        if not cond:
            raise AssertionError(what)

    def shot(name: str) -> None:
        pump(400)
        path = OUT / name
        window.grab().save(str(path))
        report.setdefault("screenshots", []).append(str(path))

    def run() -> None:
        ready = []
        window.engine_ready.connect(lambda status: ready.append(status))
        wait_for(lambda: ready, 1500, "the sample library and models")
        check(bool(ready[0] and ready[0].papers), "sample library imported and indexed")
        errors = []
        window.error_shown.connect(lambda m: errors.append(m))
        window.activateWindow()
        window.raise_()
        check(QTest.qWaitForWindowActive(window, 10000), "the window is active (keyboard focus)")
        editor = window.documents.current_editor()
        text = editor.toPlainText()
        import re

        start = re.search(r"\s+".join(map(re.escape, SENTENCE.split())), text).start()
        s, e = textops.sentence_bounds(text, start)
        bib = editor.state.bib_path
        bib_before = bib.read_bytes() if bib and bib.exists() else b""
        editor.select_range(s, e)
        editor.centerCursor()
        editor.setFocus()
        results = []
        window.recommendations_ready.connect(lambda r: results.append(r))
        QTest.keyClick(editor, Qt.Key.Key_R, Qt.KeyboardModifier.ControlModifier)
        wait_for(lambda: results or errors, 120, "recommendations")
        check(not errors, f"no error dialog ({errors[:1]})")
        wait_for(window.results_panel.is_complete, 20, "result cards")
        check(len(window.results_panel.cards) > 0, "Ctrl+R shows result cards")
        window.results_panel.cards[0].expand_button.setChecked(True)
        shot("editor-results.png")
        card = window.results_panel.cards[0]
        key = card.rec.paper.citekey
        QTest.mouseClick(card.insert_button, Qt.MouseButton.LeftButton)
        after = editor.toPlainText()
        sentence_end = text[s:e].rstrip(".")
        check(f"{sentence_end}~\\cite{{{key}}}." in after, "Insert puts \\cite before the period")
        check(
            (bib.read_bytes() if bib.exists() else b"") == bib_before, ".bib untouched before save"
        )
        card.insert_button.setFocus()  # focus away from the editor, as after a click
        QTest.keyClick(
            QApplication.focusWidget(), Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier
        )
        check(editor.toPlainText() == text, "Ctrl+Z (focus on the card) removes the citation")
        QTest.mouseClick(window.results_panel.cards[0].insert_button, Qt.MouseButton.LeftButton)
        QTest.keyClick(editor, Qt.Key.Key_S, Qt.KeyboardModifier.ControlModifier)
        check(key in bib.read_text(encoding="utf-8"), "Ctrl+S writes the .bib entry")

        # manuscript view: flagged sentences (the draft's missing citations) in the side list
        QTest.keyClick(
            editor,
            Qt.Key.Key_M,
            Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier,
        )
        wait_for(lambda: not window.runner.is_busy("analyse"), 120, "missing-citation analysis")
        pump(200)
        flagged = window.flagged_list.list.count()
        check(flagged == len(editor.marks), "one flagged count (list == margin marks)")
        window.findChild(QDockWidget, "Flagged sentences").raise_()
        if flagged:
            QTest.keyClick(editor, Qt.Key.Key_F8)
            wait_for(lambda: len(results) > 1, 120, "recommendations for a flagged sentence")
            wait_for(window.results_panel.is_complete, 20, "result cards")
        report["flagged"] = flagged
        shot("manuscript-flagged.png")

        # narrow window: the editor keeps its width, cards wrap, chip and Insert stay visible
        window.findChild(QDockWidget, "Library").raise_()
        window.resize(1024, 700)
        pump(500)
        viewport = window.results_panel.scroll.viewport()
        card = window.results_panel.cards[0]
        right = card.insert_button.mapTo(viewport, card.insert_button.rect().topRight()).x()
        check(right <= viewport.width(), "Insert visible at 1024x700")
        check(editor.width() >= 300, f"editor keeps its width at 1024x700 ({editor.width()} px)")
        shot("narrow-1024x700.png")
        report["ok"] = True

    def go() -> None:
        try:
            run()
        except Exception as exc:  # report and exit non-zero
            report["error"] = f"{type(exc).__name__}: {exc}"
        print(json.dumps(report))
        app.exit(0 if report["ok"] else 1)

    QTimer.singleShot(0, go)
    code = app.exec()
    sys.stdout.flush()
    os._exit(code)  # skip interpreter teardown (PySide + onnxruntime objects at exit)


if __name__ == "__main__":
    sys.exit(main())
