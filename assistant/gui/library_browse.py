"""Browsing the library panel's table: the search box (in SQLite), the visible columns and the
selection (the table/filter controller of ``LibraryPanel``)."""

from __future__ import annotations

from PySide6.QtCore import QPoint
from PySide6.QtWidgets import QMenu

from assistant.gui.parts import PanelPart
from assistant.service.library import COLUMNS, parse_search


class LibraryBrowser(PanelPart):
    """What the table shows: search text and filters, columns, the selected papers."""

    def apply_search(self) -> None:
        self.panel.search_timer.stop()
        text, filters = parse_search(self.panel.search_edit.text())
        if text == self.model.view.search and filters == self.model.view.filters:
            return
        if filters == self.model.view.filters:
            self.model.set_view(search=text)
        else:
            self.model.set_view(search=text, filters=filters)

    def column_menu(self, pos: QPoint) -> None:
        menu = QMenu(self.panel)
        for column in COLUMNS:
            action = menu.addAction(column.label)
            action.setCheckable(True)
            action.setChecked(column.key in self.model.columns)
            action.toggled.connect(lambda on, key=column.key: self.toggle_column(key, on))
        menu.exec(self.table.horizontalHeader().mapToGlobal(pos))

    def toggle_column(self, key: str, on: bool) -> None:
        keys = [
            c.key
            for c in COLUMNS
            if (c.key in self.model.columns or c.key == key) and (on or c.key != key)
        ]
        self.model.set_columns(keys)
        self.panel.size_columns()

    def selected_ids(self) -> list[int]:
        rows = sorted({i.row() for i in self.table.selectionModel().selectedRows()})
        if not rows and self.table.currentIndex().isValid():
            rows = [self.table.currentIndex().row()]
        return [pid for pid in (self.model.paper_id(r) for r in rows) if pid is not None]

    def select_paper(self, paper_id: int) -> bool:
        row = self.model.row_of(paper_id)
        if row is None:
            return False
        index = self.model.index(row, 0)
        self.table.setCurrentIndex(index)
        self.table.scrollTo(index)
        return True
