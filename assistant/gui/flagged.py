"""The side list of sentences flagged as missing a citation and the window's navigation through
them (F8 / Shift+F8; a click selects the sentence and recommends for it)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QDockWidget,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QVBoxLayout,
    QWidget,
)

from assistant.gui.parts import WindowPart


class FlaggedList(QWidget):
    """One row per flagged sentence of the current manuscript; a click or Enter selects it in
    the editor and recommends for it. The count shown is ``len(editor.marks)``, the same number
    the status bar and the margin show."""

    activated = Signal(object)  # MarginMark

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("flaggedList")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        self.header = QLabel("No flagged sentences.")
        self.header.setWordWrap(True)
        layout.addWidget(self.header)
        self.list = QListWidget()
        self.list.setWordWrap(True)
        self.list.setAlternatingRowColors(True)
        self.list.itemActivated.connect(self._activated)
        self.list.itemClicked.connect(self._activated)  # one click navigates (as in an IDE)
        layout.addWidget(self.list, 1)
        self.marks: list = []

    def set_marks(self, text: str, marks: list) -> None:
        self.marks = list(marks)
        self.list.clear()
        for n, mark in enumerate(self.marks, start=1):
            sentence = " ".join(text[mark.start : mark.end].split())
            item = QListWidgetItem(f"{n}. {sentence[:160]}")
            item.setToolTip(mark.reason)
            item.setData(Qt.ItemDataRole.UserRole, n - 1)
            self.list.addItem(item)
        self.header.setText(count_text(len(self.marks)))

    def _activated(self, item: QListWidgetItem) -> None:
        index = item.data(Qt.ItemDataRole.UserRole)
        if index is not None and 0 <= index < len(self.marks):
            self.activated.emit(self.marks[index])

    def select(self, index: int) -> None:
        if 0 <= index < self.list.count():
            self.list.setCurrentRow(index)


def count_text(n: int) -> str:
    """The one wording of the flagged count (list header and status bar)."""
    if n == 0:
        return "No sentence is flagged as missing a citation."
    return f"{n} sentence{'s' if n != 1 else ''} may need a citation (F8: next, Shift+F8: previous)"


class FlaggedNavigator(WindowPart):
    """The flagged list follows the current manuscript; F8/Shift+F8 step through its marks."""

    def show_flagged(self, editor=None) -> None:
        """Refresh the side list from the editor's marks (the one count shown everywhere)."""
        editor = editor or self.tabs.currentWidget()
        if editor is None or editor is not self.tabs.currentWidget():
            return
        self.window.flagged_list.set_marks(editor.toPlainText(), editor.marks)

    def go_to_mark(self, mark) -> None:
        editor = self.current_editor()
        editor.select_range(mark.start, mark.end)
        editor.centerCursor()
        if mark in editor.marks:
            self.window.flagged_list.select(editor.marks.index(mark))
        self.window.recommender.recommend()

    def _step_flagged(self, step: int) -> bool:
        editor = self.current_editor()
        if not editor.marks:
            self.set_status(count_text(0))
            return False
        caret, _ = editor.selection_range()
        starts = [m.start for m in editor.marks]
        if step > 0:
            index = next((i for i, s in enumerate(starts) if s > caret), 0)
        else:
            index = next((i for i in range(len(starts) - 1, -1, -1) if starts[i] < caret), -1)
        index %= len(starts)
        dock = self.window.findChild(QDockWidget, "Flagged sentences")
        dock.show()
        dock.raise_()
        self.go_to_mark(editor.marks[index])
        self.set_status(f"Flagged sentence {index + 1} of {len(starts)}")
        return True

    def next_flagged(self) -> bool:
        return self._step_flagged(1)

    def previous_flagged(self) -> bool:
        return self._step_flagged(-1)
