"""A Qt table model over the whole library, fed by window from SQLite.

The model holds only the ordered paper ids of the current view (:class:`PaperTable`); cell
values are fetched 100 rows at a time when the view paints them and kept in a small cache.
Sorting and filtering re-run one SQL query, so 100k+ papers sort and filter in a fraction of
a second and nothing is loaded that is not shown.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import replace

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt

from assistant.service.library import COLUMNS, PaperTable, View

PAPER_ID_ROLE = Qt.ItemDataRole.UserRole + 1
_LABELS = {c.key: c.label for c in COLUMNS}
_ROOT = QModelIndex()
_KEYS = tuple(c.key for c in COLUMNS)
DEFAULT_COLUMNS = tuple(c.key for c in COLUMNS if c.visible)


class PaperTableModel(QAbstractTableModel):
    BLOCK = 100
    MAX_BLOCKS = 64

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.table: PaperTable | None = None
        self.columns: list[str] = list(DEFAULT_COLUMNS)
        self.view = View()
        self._cache: OrderedDict[int, list[dict]] = OrderedDict()
        self.last_query_ms = 0.0  # the last view refresh (SQL), for the benchmark/status
        self.fetch_ms = 0.0  # total time spent fetching row blocks since the last refresh

    # -- configuration --------------------------------------------------------------------------
    def set_table(self, table: PaperTable | None) -> None:
        self.table = table
        self.refresh()

    def set_view(self, **changes) -> None:
        """Change what is shown; a search-only change reuses the current order (no re-sort)."""
        self.view = replace(self.view, **changes)
        self.refresh(reuse_order=set(changes) <= {"search", "descending"})

    def set_columns(self, keys) -> None:
        keys = [k for k in keys if k in _KEYS] or ["title"]
        self.beginResetModel()
        self.columns = keys
        self._cache.clear()
        self.endResetModel()

    def refresh(self, reuse_order: bool = False) -> None:
        """Re-run the view's query (after a change of the library or of the view)."""
        self.beginResetModel()
        start = time.perf_counter()
        if self.table is not None:
            self.table.refresh(self.view, reuse_order=reuse_order)
        self.last_query_ms = (time.perf_counter() - start) * 1000
        self._cache.clear()
        self.fetch_ms = 0.0
        self.endResetModel()

    def invalidate_rows(self) -> None:
        """Cell values changed (an edit) but not the order: drop the cache and repaint."""
        self._cache.clear()
        if self.rowCount():
            self.dataChanged.emit(
                self.index(0, 0), self.index(self.rowCount() - 1, self.columnCount() - 1)
            )

    # -- Qt model API ---------------------------------------------------------------------------
    def rowCount(self, parent=_ROOT) -> int:
        if parent.isValid() or self.table is None:
            return 0
        return len(self.table.ids)

    def columnCount(self, parent=_ROOT) -> int:
        return 0 if parent.isValid() else len(self.columns)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        horizontal = orientation == Qt.Orientation.Horizontal
        if horizontal and role == Qt.ItemDataRole.DisplayRole and 0 <= section < len(self.columns):
            return _LABELS[self.columns[section]]
        return None

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or self.table is None:
            return None
        if role == PAPER_ID_ROLE:
            return self.table.ids[index.row()]
        if role not in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            return None
        row = self.row(index.row())
        value = row.get(self.columns[index.column()])
        return "" if value is None else str(value)

    def sort(self, column: int, order=Qt.SortOrder.AscendingOrder) -> None:
        if 0 <= column < len(self.columns):
            self.view = replace(
                self.view,
                sort=self.columns[column],
                descending=order == Qt.SortOrder.DescendingOrder,
            )
            self.refresh(reuse_order=True)  # a new column is queried; a direction flip is not

    # -- rows -----------------------------------------------------------------------------------
    def row(self, n: int) -> dict:
        block = n // self.BLOCK
        rows = self._cache.get(block)
        if rows is None:
            start = time.perf_counter()
            rows = self.table.rows(block * self.BLOCK, self.BLOCK, self.columns)
            self.fetch_ms += (time.perf_counter() - start) * 1000
            self._cache[block] = rows
            while len(self._cache) > self.MAX_BLOCKS:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(block)
        offset = n - block * self.BLOCK
        return rows[offset] if offset < len(rows) else {}

    def paper_id(self, n: int) -> int | None:
        if self.table is None or not 0 <= n < len(self.table.ids):
            return None
        return self.table.ids[n]

    def row_of(self, paper_id: int) -> int | None:
        return self.table.row_of(paper_id) if self.table is not None else None
