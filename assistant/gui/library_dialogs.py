"""Library dialogs: the "Search and cite" quick picker (the duplicates dialog is curation's)."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QVBoxLayout,
)

from assistant.service.library import PaperTable, View

_ID = Qt.ItemDataRole.UserRole


class CitePicker(QDialog):
    """Ctrl+Shift+C: type a few words of a known paper, Enter cites it."""

    LIMIT = 50

    def __init__(self, library, parent=None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Search and cite")
        self.resize(700, 420)
        self.table = PaperTable(library)
        self.library = library
        self.chosen = None
        layout = QVBoxLayout(self)
        self.search_edit = QLineEdit()
        self.search_edit.setPlaceholderText("Title, author, key or DOI…")
        layout.addWidget(self.search_edit)
        self.results = QListWidget()
        self.results.setObjectName("pickerResults")
        layout.addWidget(self.results, 1)
        box = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        box.button(QDialogButtonBox.StandardButton.Ok).setText("Cite")
        box.accepted.connect(self.accept_current)
        box.rejected.connect(self.reject)
        layout.addWidget(box)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(120)
        self._timer.timeout.connect(self.update_results)
        self.search_edit.textChanged.connect(lambda _t: self._timer.start())
        self.search_edit.returnPressed.connect(self.accept_current)
        self.results.itemActivated.connect(lambda _i: self.accept_current())

    def keyPressEvent(self, event) -> None:  # arrows move in the list while typing
        if event.key() in (Qt.Key.Key_Down, Qt.Key.Key_Up) and self.results.count():
            row = self.results.currentRow() + (1 if event.key() == Qt.Key.Key_Down else -1)
            self.results.setCurrentRow(max(0, min(self.results.count() - 1, row)))
            return
        super().keyPressEvent(event)

    def update_results(self) -> None:
        self._timer.stop()
        self.results.clear()
        text = self.search_edit.text().strip()
        if not text:
            return
        self.table.refresh(View(search=text, sort="year", descending=True))
        for row in self.table.rows(0, self.LIMIT, ("citekey", "title", "authors", "year")):
            item = QListWidgetItem(
                f"{row['citekey']} — {row['title']} ({row['authors']}, {row['year'] or 'n.d.'})"
            )
            item.setData(_ID, row["id"])
            self.results.addItem(item)
        alias = self.library.get_by_citekey(text) if " " not in text else None
        if alias is not None and alias.citekey != text:  # a key merged into another paper
            item = QListWidgetItem(f"{alias.citekey} (was {text}, merged) — {alias.title}")
            item.setData(_ID, alias.id)
            self.results.insertItem(0, item)
        if self.results.count():
            self.results.setCurrentRow(0)

    def accept_current(self) -> None:
        if self._timer.isActive():
            self.update_results()
        item = self.results.currentItem()
        if item is None:
            return
        self.chosen = self.library.get(int(item.data(_ID)))
        self.accept()
