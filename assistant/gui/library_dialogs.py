"""Library dialogs: the duplicates finder/merger and the "Search and cite" quick picker."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
)

from assistant.service.library import PaperTable, View

_ID = Qt.ItemDataRole.UserRole


class DuplicatesDialog(QDialog):
    """Lists duplicate groups; merges the selected group (or all) into the paper marked "keep"."""

    def __init__(self, manager, parent=None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Duplicates")
        self.resize(820, 520)
        self.manager = manager
        layout = QVBoxLayout(self)
        self.summary = QLabel("")
        layout.addWidget(self.summary)
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Keep", "Key", "Year", "Title", "Venue", "DOI"])
        self.tree.setObjectName("duplicatesTree")
        self.tree.setWordWrap(True)
        self.tree.setTextElideMode(Qt.TextElideMode.ElideNone)
        self.tree.setUniformRowHeights(False)
        header = self.tree.header()
        header.setStretchLastSection(False)
        for col in (1, 2, 5):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Fixed)  # group titles span it
        header.resizeSection(0, 56)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(4, QHeaderView.ResizeMode.Interactive)
        #: replaceable in tests: ``(keep_id, ids) -> bool`` (the merge dialog's answer)
        self.confirm_merge = self._confirm_merge
        layout.addWidget(self.tree, 1)
        buttons = QHBoxLayout()
        self.keep_button = QPushButton("Keep this one")
        self.keep_button.clicked.connect(self.keep_selected)
        self.merge_button = QPushButton("Merge group")
        self.merge_button.clicked.connect(self.merge_selected)
        self.merge_all_button = QPushButton("Merge all groups")
        self.merge_all_button.clicked.connect(self.merge_all)
        close = QPushButton("Close")
        close.clicked.connect(self.accept)
        for b in (self.keep_button, self.merge_button, self.merge_all_button):
            buttons.addWidget(b)
        buttons.addStretch(1)
        buttons.addWidget(close)
        layout.addLayout(buttons)
        self.merged = 0
        self.reload()

    def reload(self) -> None:
        self.tree.clear()
        self.groups = self.manager.duplicates()
        for n, group in enumerate(self.groups):
            papers = self.manager.lib.get_many(group.ids)
            top = QTreeWidgetItem(
                [f"{papers[0].title} — {len(papers)} records ({group.reason})", "", "", "", "", ""]
            )
            top.setData(0, _ID, n)
            top.setToolTip(3, "\n".join(group.evidence) or group.reason)
            for i, p in enumerate(papers):
                child = QTreeWidgetItem(
                    [
                        "✔" if i == 0 else "",
                        p.citekey,
                        str(p.year or ""),
                        p.title,
                        p.venue,
                        p.doi or "",
                    ]
                )
                child.setData(0, _ID, p.id)
                top.addChild(child)
            for line in group.evidence:  # why the finder thinks these are one work
                top.addChild(QTreeWidgetItem(["", "", "", f"evidence: {line}", "", ""]))
            self.tree.addTopLevelItem(top)
            top.setFirstColumnSpanned(True)  # the group's title across the whole row
        self.tree.expandAll()
        for item in self._items():
            for col in range(self.tree.columnCount()):
                item.setToolTip(col, item.text(col))
        self.summary.setText(
            f"{len(self.groups)} group(s) of possible duplicates (a similar title, the same year and "
            "first author; never two DOIs). Merging keeps every record; old keys keep resolving; "
            "the paper's history can undo a merge."
        )

    def _items(self):
        for i in range(self.tree.topLevelItemCount()):
            top = self.tree.topLevelItem(i)
            yield top
            yield from (top.child(j) for j in range(top.childCount()))

    def _confirm_merge(self, keep: int, ids: list[int]) -> bool:
        from assistant.gui.curation import MergeDialog

        dialog = MergeDialog(self.manager, keep, ids, self)
        self.merge_dialog = dialog
        return dialog.exec() == QDialog.DialogCode.Accepted

    def _group_item(self) -> QTreeWidgetItem | None:
        item = self.tree.currentItem()
        if item is None:
            return None
        return item.parent() or item

    def keep_selected(self) -> None:
        item = self.tree.currentItem()
        if item is None or item.parent() is None or item.data(0, _ID) is None:
            return
        top = item.parent()
        for i in range(top.childCount()):
            top.child(i).setText(0, "✔" if top.child(i) is item else "")

    def _merge(self, top: QTreeWidgetItem) -> bool:
        """Merge one group after the user confirmed it (and chose the fields to keep)."""
        rows = [top.child(i) for i in range(top.childCount()) if top.child(i).data(0, _ID)]
        ids = [int(r.data(0, _ID)) for r in rows]  # evidence rows carry no id
        keep = next(int(r.data(0, _ID)) for r in rows if r.text(0))
        if not self.confirm_merge(keep, ids):
            return False
        self.merged += len(ids) - 1
        return True

    def merge_selected(self) -> None:
        top = self._group_item()
        if top is not None:
            self._merge(top)
            self.reload()

    def merge_all(self) -> None:
        n = self.tree.topLevelItemCount()
        answer = QMessageBox.question(
            self,
            "Merge all groups",
            f"Merge all {n} groups? Check each group's evidence first; "
            "a merge can be undone from the paper's history.",
        )
        if answer != QMessageBox.StandardButton.Yes:
            return
        for i in range(self.tree.topLevelItemCount()):
            self._merge(self.tree.topLevelItem(i))
        self.reload()


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
