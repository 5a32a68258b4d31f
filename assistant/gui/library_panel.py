"""The library panel: the whole library as a lazily fed table (sort/filter/search in SQLite),
a collections/trash sidebar, a details pane that edits any field, and the context menu
(cite, open PDF, edit, trash with undo, collections, export selection, duplicates).

The panel builds the widgets, lays them out and shows progress and counts; it composes the
controllers that act on them: ``browser`` (search, columns, selection), ``collections``
(sidebar, collections), ``edits`` (details pane, trash, export, context menu) and ``curation``
(tags, keys, duplicates). Library operations go through the service
(:mod:`assistant.service.library`); these modules hold only widgets and their wiring.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QEvent, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QLineEdit,
    QMenu,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTableView,
    QToolButton,
    QTreeWidget,
    QVBoxLayout,
    QWidget,
)

from assistant.errors import AssistantError
from assistant.gui.curation import Curation
from assistant.gui.library_browse import LibraryBrowser
from assistant.gui.library_collections import CollectionsSidebar
from assistant.gui.library_edit import LibraryEditing
from assistant.gui.library_model import PAPER_ID_ROLE, PaperTableModel
from assistant.gui.paper_editor import PaperEditor
from assistant.gui.result_card import _esc

__all__ = ["PAPER_ID_ROLE", "LibraryPanel", "paper_html"]
NARROW_BELOW = 520  # px: below this the sidebar sits above the table


class LibraryPanel(QWidget):
    """Browses and edits the library with its own (UI-thread) connection; imports run in workers."""

    import_requested = Signal(str)  # "files" | "folder" | "zotero"
    rebuild_requested = Signal()
    cite_requested = Signal(object)  # a Paper
    library_changed = Signal()
    index_now_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("libraryPanel")
        self.library = None
        self.manager = None
        self.last_summary = ""  # the last import's summary, shown beside the count
        self._total: int | None = None  # papers in the library (read again after a change)
        self.confirm = self._confirm  # replaceable in tests (no modal dialogs there)
        self.ask_text = self._ask_text
        self.ask_save_path = self._ask_save_path
        self.browser = LibraryBrowser(self)
        self.collections = CollectionsSidebar(self)
        self.edits = LibraryEditing(self)
        self.curation = Curation(self)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        self._build_search_row(layout)
        self._build_browser(layout)
        self._build_status_rows(layout)

    def _build_search_row(self, layout: QVBoxLayout) -> None:
        top = QHBoxLayout()
        self.search_edit = QLineEdit()
        self.search_edit.setPlaceholderText(
            "Search title, authors, abstract, keywords, key, DOI… (filters: year:2010-2015 venue:sigir)"
        )
        self.search_edit.setClearButtonEnabled(True)
        self.search_edit.textChanged.connect(lambda _t: self.search_timer.start())
        top.addWidget(self.search_edit, 1)
        self.import_button = QToolButton()
        self.import_button.setText("Library")
        self.import_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self.import_button)
        menu.addAction(
            "Import BibTeX / RIS / CSL-JSON / PDF files…",
            lambda: self.import_requested.emit("files"),
        )
        menu.addAction("Import a folder…", lambda: self.import_requested.emit("folder"))
        menu.addAction(
            "Import a Zotero database (zotero.sqlite)…",
            lambda: self.import_requested.emit("zotero"),
        )
        menu.addAction("Attach PDFs from a folder…", self.edits.attach_folder_dialog)
        menu.addSeparator()
        menu.addAction("Find duplicates…", self.curation.duplicates_dialog)
        menu.addAction("Citation keys (pattern, regenerate)…", self.curation.citekey_dialog)
        menu.addAction("Export the library…", lambda: self.edits.export_papers())
        menu.addAction("New collection…", lambda: self.collections.new_collection())
        menu.addAction("Empty the trash…", self.edits.empty_trash)
        menu.addSeparator()
        menu.addAction("Rebuild the index", self.rebuild_requested.emit)
        self.import_button.setMenu(menu)
        top.addWidget(self.import_button)
        layout.addLayout(top)

        self.search_timer = QTimer(self)
        self.search_timer.setSingleShot(True)
        self.search_timer.setInterval(120)
        self.search_timer.timeout.connect(self.browser.apply_search)

    def _build_browser(self, layout: QVBoxLayout) -> None:
        self.sidebar = QTreeWidget()
        self.sidebar.setObjectName("librarySidebar")
        self.sidebar.setHeaderHidden(True)
        self.sidebar.currentItemChanged.connect(self.collections.sidebar_changed)
        self.sidebar.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.sidebar.customContextMenuRequested.connect(self.collections.sidebar_menu)

        self.model = PaperTableModel(self)
        self.table = QTableView()
        self.table.setObjectName("libraryTable")
        self.table.setModel(self.model)
        self.table.setSortingEnabled(True)
        self.table.horizontalHeader().setSortIndicator(
            self.model.columns.index("year"), Qt.SortOrder.DescendingOrder
        )
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QTableView.SelectionMode.ExtendedSelection)
        self.table.setEditTriggers(QTableView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(22)
        self.table.setWordWrap(False)
        self.table.setAlternatingRowColors(True)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(False)
        header.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        header.customContextMenuRequested.connect(self.browser.column_menu)
        self._sizing, self._user_sized = False, False
        header.sectionResized.connect(self._column_dragged)
        self.table.viewport().installEventFilter(self)
        self.size_columns()
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.table.customContextMenuRequested.connect(self.edits.table_menu)
        self.model.modelReset.connect(self._model_reset)
        self.table.selectionModel().currentRowChanged.connect(self.edits.show_details)
        self.table.doubleClicked.connect(lambda _i: self.edits.cite_selected())
        for text, keys, slot in (
            ("Move to the trash", QKeySequence.StandardKey.Delete, self.edits.trash_selected),
            ("Undo", QKeySequence.StandardKey.Undo, self.edits.undo_trash),
        ):
            action = QAction(text, self.table)
            action.setShortcut(QKeySequence(keys))
            action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            action.triggered.connect(lambda _c=False, s=slot: s())
            self.table.addAction(action)

        self.details = PaperEditor()
        self.details.saved.connect(self.edits.after_edit)
        right = QSplitter(Qt.Orientation.Vertical)
        right.addWidget(self.table)
        right.addWidget(self.details)
        right.setSizes([320, 260])
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(self.sidebar)
        splitter.addWidget(right)
        splitter.setSizes([130, 420])
        splitter.setChildrenCollapsible(False)
        right.setChildrenCollapsible(False)
        self.splitter, self.right_splitter = splitter, right
        self._narrow: bool | None = None
        layout.addWidget(splitter, 1)

    def _build_status_rows(self, layout: QVBoxLayout) -> None:
        undo_row = QHBoxLayout()
        self.count_label = QLabel("")
        self.count_label.setWordWrap(True)  # the import summary wraps, never "4 uncl"
        undo_row.addWidget(self.count_label, 1)
        self.undo_button = QPushButton("Undo")
        self.undo_button.setVisible(False)
        self.undo_button.clicked.connect(self.edits.undo_trash)
        undo_row.addWidget(self.undo_button)
        layout.addLayout(undo_row)
        self.stale_bar = QWidget()
        self.stale_bar.setObjectName("staleIndexBar")
        stale_row = QHBoxLayout(self.stale_bar)
        stale_row.setContentsMargins(0, 0, 0, 0)
        self.stale_label = QLabel("")
        self.stale_label.setWordWrap(True)
        self.stale_label.setStyleSheet("color:#8a6d00")
        stale_row.addWidget(self.stale_label, 1)
        self.index_now_button = QPushButton("Index now")
        self.index_now_button.setObjectName("indexNowButton")
        self.index_now_button.clicked.connect(self.index_now_requested.emit)
        stale_row.addWidget(self.index_now_button)
        self.stale_bar.setVisible(False)
        layout.addWidget(self.stale_bar)
        self.progress_label = QLabel("")  # the job's whole message: wraps, never clipped
        self.progress_label.setObjectName("progressMessage")
        self.progress_label.setWordWrap(True)
        self.progress_label.setVisible(False)
        layout.addWidget(self.progress_label)
        self.progress = QProgressBar()
        self.progress.setVisible(False)
        self.progress.setTextVisible(True)
        self.progress.setFormat("%p%")
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
        from assistant.service.library import LibraryManager

        if self.library is not None:
            self.library.close()
        self.manager = LibraryManager.open(path)
        self.library = self.manager.lib
        self.model.set_table(self.manager.table())
        self.refresh()
        self.confirm_auto_exports()

    def confirm_auto_exports(self) -> None:
        """A library from elsewhere may name files to keep in sync: ask about each one (a target
        not confirmed stays inert; a dotfile or system file cannot be confirmed)."""
        for entry in self.run_op(self.manager.unconfirmed_auto_exports, True) or []:
            if self._confirm(
                "Keep a file in sync?",
                f"This library asks to overwrite {entry.path} with its {entry.format} export "
                "after every change. It was not set up on this computer. Allow it?",
            ):
                self.run_op(self.manager.confirm_auto_export, entry.path)

    def close_library(self) -> None:
        if self.library is not None:
            self.library.close()
        self.library = self.manager = None
        self.model.set_table(None)

    def refresh(self) -> None:
        """Re-read the library (after an import or any change): sidebar, table, details."""
        if self.library is None or self.manager is None:
            return
        self.collections.fill_sidebar()
        current = self.browser.selected_ids()
        self._total = None
        self.model.refresh()
        if current:
            self.browser.select_paper(current[0])

    def _model_reset(self) -> None:
        if self.library is None:
            self.count_label.setText("")
            return
        self.set_summary(self.last_summary)
        if self.details.has_changes():  # the edited paper left the view: save, never drop edits
            self.details.save()  # an invalid edit stays in the pane with its error
        else:
            self.details.load(None, None)

    def resizeEvent(self, event) -> None:
        """A narrow side panel stacks sidebar, table and details (full width each, nothing
        clipped); a wide one (large window, Ctrl+Shift+L) puts the sidebar beside the table."""
        super().resizeEvent(event)
        self.lay_out(event.size().width())

    def lay_out(self, width: int) -> None:
        narrow = width < NARROW_BELOW
        if narrow == self._narrow:
            return
        self._narrow = narrow
        if narrow:
            self.splitter.setOrientation(Qt.Orientation.Vertical)
            self.splitter.setSizes([self.collections.sidebar_height(), 600])
        else:
            self.splitter.setOrientation(Qt.Orientation.Horizontal)
            hint = self.sidebar.sizeHintForColumn(0) + 2 * self.sidebar.frameWidth() + 8
            self.splitter.setSizes([max(130, hint), max(300, width - hint)])
        self.size_columns()

    def _count_note(self) -> str:
        if self.library is None:
            return ""
        if self._total is None:
            self._total = self.library.count()
        total = self._total
        shown = self.model.rowCount()
        view = self.model.view
        what = "in the trash" if view.trash else f"of {total} papers"
        note = (
            f"{shown} {what}"
            if (view.search or view.trash or view.collection_ids or view.tag)
            else f"{total} papers"
        )
        if view.search:
            note += f" match “{view.search}”"
        return note

    def size_columns(self) -> None:
        """Default widths; a wider table gives the spare room to title, authors and venue (until
        the user drags a column: then the widths are theirs)."""
        widths = {"citekey": 120, "title": 320, "authors": 130, "year": 48, "venue": 160}
        share = {"title": 0.6, "authors": 0.2, "venue": 0.2}
        keys = self.model.columns
        view_w = self.table.viewport().width()
        if view_w < 400 and "title" in keys:  # a narrow panel: a short key, then the title
            widths["citekey"] = max(70, view_w // 3)
            widths["title"] = max(120, view_w - widths["citekey"] - 2)
        base = [widths.get(key, 110) for key in keys]
        spare = max(0, self.table.viewport().width() - sum(base) - 2)
        header = self.table.horizontalHeader()
        self._sizing = True
        try:
            for i, key in enumerate(keys):
                header.resizeSection(i, base[i] + int(spare * share.get(key, 0.0)))
        finally:
            self._sizing = False

    def _column_dragged(self, *_args) -> None:
        if not self._sizing:
            self._user_sized = True

    def eventFilter(self, watched, event) -> bool:
        if (
            watched is self.table.viewport()
            and event.type() == QEvent.Type.Resize
            and not self._user_sized
        ):
            self.size_columns()
        return super().eventFilter(watched, event)

    # --- for the controllers ----------------------------------------------------------------
    def run_op(self, func, *args):
        """Call a library operation; a user error shows in the status line instead of raising."""
        try:
            return func(*args)
        except AssistantError as exc:
            self.count_label.setText(f"⚠ {exc}")
            return None

    def after_change(self, keep_order: bool = False) -> None:
        self.last_summary = ""
        if keep_order:
            self.model.invalidate_rows()
        else:
            self.refresh()
        errors = self.library.auto_export_errors if self.library is not None else []
        if errors:
            self.count_label.setText("⚠ auto-export failed: " + "; ".join(errors))
        self.library_changed.emit()

    # --- dialogs (replaceable) --------------------------------------------------------------------
    def _confirm(self, title: str, text: str) -> bool:
        answer = QMessageBox.question(self, title, text)
        return answer == QMessageBox.StandardButton.Yes

    def _ask_text(self, title: str, label: str) -> str | None:
        text, ok = QInputDialog.getText(self, title, label)
        return text.strip() if ok and text.strip() else None

    def _ask_save_path(self) -> str | None:
        path, _ = QFileDialog.getSaveFileName(
            self, "Export", "", "BibTeX (*.bib);;RIS (*.ris);;CSL-JSON (*.json)"
        )
        return path or None

    # --- progress/status ----------------------------------------------------------------------
    def show_progress(self, done, total, message: str) -> None:
        """The job's message wraps above the bar (full text also in the tooltips)."""
        self.progress.setVisible(True)
        self.cancel_button.setVisible(True)
        if total and int(total) > 0:
            self.progress.setRange(0, 1000)
            self.progress.setValue(int(1000 * min(1.0, float(done) / float(total))))
        else:
            self.progress.setRange(0, 0)  # busy indicator
        if message:
            self.progress_label.setText(message)
            self.progress_label.setToolTip(message)
            self.progress.setToolTip(message)
        self.progress_label.setVisible(bool(self.progress_label.text()))

    def hide_progress(self) -> None:
        self.progress.setVisible(False)
        self.progress_label.setVisible(False)
        self.progress_label.setText("")
        self.cancel_button.setVisible(False)

    def set_status(self, status) -> None:
        self.status_label.setText(f"Index: {status.describe()}")

    def set_summary(self, text: str) -> None:
        """The last import's summary beside the count (stays until the user changes the library)."""
        self.last_summary = text
        self.count_label.setText(f"{self._count_note()} · {text}" if text else self._count_note())
        self.count_label.setToolTip(text)

    def set_stale(self, stale: bool, text: str = "") -> None:
        """Announce a missing or lagging index, with a one-click "Index now"."""
        self.stale_label.setText(f"⚠ {text}" if stale else "")
        self.stale_bar.setVisible(stale)


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
