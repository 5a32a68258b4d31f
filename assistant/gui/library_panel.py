"""The library panel: search, sortable list, details with abstract, imports, index status."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSortFilterProxyModel, Qt, QTimer, Signal
from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMenu,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTableView,
    QTextBrowser,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from assistant.gui.results_panel import _esc, format_authors

LIST_LIMIT = 500
PAPER_ID_ROLE = Qt.ItemDataRole.UserRole + 1


class LibraryPanel(QWidget):
    """Browses the library with its own (UI-thread, read-only) connection; imports run in workers."""

    import_requested = Signal(str)  # "files" | "folder" | "zotero"
    rebuild_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("libraryPanel")
        self.library = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)

        top = QHBoxLayout()
        self.search_edit = QLineEdit()
        self.search_edit.setPlaceholderText("Search the library (title, abstract, authors)…")
        self.search_edit.setClearButtonEnabled(True)
        self.search_edit.textChanged.connect(lambda _t: self._search_timer.start())
        top.addWidget(self.search_edit, 1)
        self.import_button = QToolButton()
        self.import_button.setText("Import")
        self.import_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self.import_button)
        menu.addAction(
            "BibTeX / RIS / CSL-JSON / PDF files…", lambda: self.import_requested.emit("files")
        )
        menu.addAction("A folder…", lambda: self.import_requested.emit("folder"))
        menu.addAction(
            "Zotero database (zotero.sqlite)…", lambda: self.import_requested.emit("zotero")
        )
        menu.addSeparator()
        menu.addAction("Rebuild the index", self.rebuild_requested.emit)
        self.import_button.setMenu(menu)
        top.addWidget(self.import_button)
        layout.addLayout(top)

        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(250)
        self._search_timer.timeout.connect(self.refresh)

        self.model = QStandardItemModel(0, 4, self)
        self.model.setHorizontalHeaderLabels(["Title", "Authors", "Year", "Venue"])
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setSortRole(Qt.ItemDataRole.UserRole)
        self.table = QTableView()
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QTableView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QTableView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.Interactive)
        header.resizeSection(1, 90)
        header.resizeSection(3, 70)
        self.table.setWordWrap(False)
        self.table.setAlternatingRowColors(True)
        self.table.selectionModel().currentRowChanged.connect(self._show_details)

        self.details = QTextBrowser()
        self.details.setObjectName("paperDetails")
        self.details.setOpenExternalLinks(False)
        self.details.setPlaceholderText("Select a paper to see its details and abstract.")
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.table)
        splitter.addWidget(self.details)
        splitter.setSizes([300, 160])
        layout.addWidget(splitter, 1)

        self.count_label = QLabel("")
        layout.addWidget(self.count_label)
        self.progress = QProgressBar()
        self.progress.setVisible(False)
        self.progress.setTextVisible(True)
        layout.addWidget(self.progress)
        bottom = QHBoxLayout()
        self.status_label = QLabel("Index: not loaded")
        self.status_label.setObjectName("indexStatus")
        self.status_label.setWordWrap(True)
        bottom.addWidget(self.status_label, 1)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setVisible(False)
        bottom.addWidget(self.cancel_button)
        layout.addLayout(bottom)

    # --- data ---------------------------------------------------------------------------------
    def set_library_path(self, path: Path) -> None:
        from assistant.service import open_library

        if self.library is not None:
            self.library.close()
        self.library = open_library(path)
        self.refresh()

    def close_library(self) -> None:
        if self.library is not None:
            self.library.close()
            self.library = None

    def refresh(self) -> None:
        if self.library is None:
            return
        query = self.search_edit.text().strip()
        total = self.library.count()
        if query:
            papers = self.library.search(query, limit=200)
            note = f"{len(papers)} match(es) for “{query}” in {total} papers"
        else:
            papers = []
            for paper in self.library.iter_papers(batch_size=LIST_LIMIT):
                papers.append(paper)
                if len(papers) >= LIST_LIMIT:
                    break
            note = f"{total} papers" + (
                f" (showing the first {LIST_LIMIT}; search to find others)"
                if total > LIST_LIMIT
                else ""
            )
        self.count_label.setText(note)
        self.model.setRowCount(0)
        for paper in papers:
            row = []
            for text, sort in (
                (paper.title, paper.title.lower()),
                (format_authors(paper.authors, 2), paper.first_author_lastname.lower()),
                (str(paper.year or ""), paper.year or 0),
                (paper.venue, (paper.venue or "").lower()),
            ):
                item = QStandardItem(text)
                item.setData(sort, Qt.ItemDataRole.UserRole)
                item.setData(paper.id, PAPER_ID_ROLE)
                item.setToolTip(text)
                row.append(item)
            self.model.appendRow(row)
        self.details.clear()

    def _show_details(self, current, _previous) -> None:
        if self.library is None or not current.isValid():
            return
        paper_id = self.proxy.data(current, PAPER_ID_ROLE)
        paper = self.library.get(int(paper_id)) if paper_id is not None else None
        if paper is None:
            return
        self.details.setHtml(paper_html(paper))

    # --- progress/status ----------------------------------------------------------------------
    def show_progress(self, done, total, message: str) -> None:
        self.progress.setVisible(True)
        self.cancel_button.setVisible(True)
        if total and int(total) > 0:
            self.progress.setRange(0, 1000)
            self.progress.setValue(int(1000 * min(1.0, float(done) / float(total))))
        else:
            self.progress.setRange(0, 0)  # busy indicator
        self.progress.setFormat(message[:80] or "%p%")
        self.progress.setToolTip(message)

    def hide_progress(self) -> None:
        self.progress.setVisible(False)
        self.cancel_button.setVisible(False)

    def set_status(self, status) -> None:
        self.status_label.setText(f"Index: {status.describe()}")


def paper_html(paper) -> str:
    authors = "; ".join(paper.authors) or "unknown authors"
    meta = " · ".join(p for p in (str(paper.year or ""), paper.venue) if p)
    doi = f"<br>DOI: {_esc(paper.doi)}" if paper.doi else ""
    key = f"<br>Key: <code>{_esc(paper.citekey)}</code>" if paper.citekey else ""
    abstract = _esc(paper.abstract) if paper.abstract else "<i>No abstract.</i>"
    return (
        f"<h3>{_esc(paper.title)}</h3><p>{_esc(authors)}<br>{_esc(meta)}{doi}{key}</p>"
        f"<p>{abstract}</p>"
    )
