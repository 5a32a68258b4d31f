"""The library panel: the whole library as a lazily fed table (sort/filter/search in SQLite),
a collections/trash sidebar, a details pane that edits any field, and the context menu
(cite, open PDF, edit, trash with undo, collections, export selection, duplicates).

Library operations go through the service (:mod:`assistant.service.library`); this module
holds only widgets.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QEvent, QPoint, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QAction, QDesktopServices, QGuiApplication, QKeySequence
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
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from assistant.errors import AssistantError
from assistant.gui.curation import CurationActions
from assistant.gui.library_dialogs import DuplicatesDialog
from assistant.gui.library_model import PAPER_ID_ROLE, PaperTableModel
from assistant.gui.paper_editor import PaperEditor
from assistant.gui.results_panel import _esc
from assistant.service.library import COLUMNS, parse_search

__all__ = ["PAPER_ID_ROLE", "LibraryPanel", "paper_html"]
_NODE = Qt.ItemDataRole.UserRole
NARROW_BELOW = 520  # px: below this the sidebar sits above the table
_EXPORT_FORMATS = {".bib": "bibtex", ".ris": "ris", ".json": "csl-json"}


class LibraryPanel(CurationActions, QWidget):
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
        self.last_trashed: list[int] = []
        self.last_summary = ""  # the last import's summary, shown beside the count
        self._total: int | None = None  # papers in the library (read again after a change)
        self.recommend_collection: int | None = None  # recommend only from this collection
        self.confirm = self._confirm  # replaceable in tests (no modal dialogs there)
        self.ask_text = self._ask_text
        self.ask_save_path = self._ask_save_path
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)

        top = QHBoxLayout()
        self.search_edit = QLineEdit()
        self.search_edit.setPlaceholderText(
            "Search title, authors, abstract, keywords, key, DOI… (filters: year:2010-2015 venue:sigir)"
        )
        self.search_edit.setClearButtonEnabled(True)
        self.search_edit.textChanged.connect(lambda _t: self._search_timer.start())
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
        menu.addAction("Attach PDFs from a folder…", self.attach_folder_dialog)
        menu.addSeparator()
        menu.addAction("Find duplicates…", self.duplicates_dialog)
        menu.addAction("Citation keys (pattern, regenerate)…", self.citekey_dialog)
        menu.addAction("Export the library…", lambda: self.export_papers())
        menu.addAction("New collection…", lambda: self.new_collection())
        menu.addAction("Empty the trash…", self.empty_trash)
        menu.addSeparator()
        menu.addAction("Rebuild the index", self.rebuild_requested.emit)
        self.import_button.setMenu(menu)
        top.addWidget(self.import_button)
        layout.addLayout(top)

        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(120)
        self._search_timer.timeout.connect(self.apply_search)

        self.sidebar = QTreeWidget()
        self.sidebar.setObjectName("librarySidebar")
        self.sidebar.setHeaderHidden(True)
        self.sidebar.currentItemChanged.connect(self._sidebar_changed)
        self.sidebar.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.sidebar.customContextMenuRequested.connect(self._sidebar_menu)

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
        header.customContextMenuRequested.connect(self._column_menu)
        self._sizing, self._user_sized, self._going_back = False, False, False
        header.sectionResized.connect(self._column_dragged)
        self.table.viewport().installEventFilter(self)
        self._size_columns()
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.table.customContextMenuRequested.connect(self._table_menu)
        self.model.modelReset.connect(self._model_reset)
        self.table.selectionModel().currentRowChanged.connect(self._show_details)
        self.table.doubleClicked.connect(lambda _i: self.cite_selected())
        for text, keys, slot in (
            ("Move to the trash", QKeySequence.StandardKey.Delete, self.trash_selected),
            ("Undo", QKeySequence.StandardKey.Undo, self.undo_trash),
        ):
            action = QAction(text, self.table)
            action.setShortcut(QKeySequence(keys))
            action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            action.triggered.connect(lambda _c=False, s=slot: s())
            self.table.addAction(action)

        self.details = PaperEditor()
        self.details.saved.connect(self._after_edit)
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

        undo_row = QHBoxLayout()
        self.count_label = QLabel("")
        self.count_label.setWordWrap(True)  # the import summary wraps, never "4 uncl"
        undo_row.addWidget(self.count_label, 1)
        self.undo_button = QPushButton("Undo")
        self.undo_button.setVisible(False)
        self.undo_button.clicked.connect(self.undo_trash)
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
        for entry in self._run(self.manager.unconfirmed_auto_exports, True) or []:
            if self._confirm(
                "Keep a file in sync?",
                f"This library asks to overwrite {entry.path} with its {entry.format} export "
                "after every change. It was not set up on this computer. Allow it?",
            ):
                self._run(self.manager.confirm_auto_export, entry.path)

    def close_library(self) -> None:
        if self.library is not None:
            self.library.close()
        self.library = self.manager = None
        self.model.set_table(None)

    def refresh(self) -> None:
        """Re-read the library (after an import or any change): sidebar, table, details."""
        if self.library is None or self.manager is None:
            return
        self._fill_sidebar()
        current = self.selected_ids()
        self._total = None
        self.model.refresh()
        if current:
            self.select_paper(current[0])

    def apply_search(self) -> None:
        self._search_timer.stop()
        text, filters = parse_search(self.search_edit.text())
        if text == self.model.view.search and filters == self.model.view.filters:
            return
        if filters == self.model.view.filters:
            self.model.set_view(search=text)
        else:
            self.model.set_view(search=text, filters=filters)

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
            self.splitter.setSizes([self._sidebar_height(), 600])
        else:
            self.splitter.setOrientation(Qt.Orientation.Horizontal)
            hint = self.sidebar.sizeHintForColumn(0) + 2 * self.sidebar.frameWidth() + 8
            self.splitter.setSizes([max(130, hint), max(300, width - hint)])
        self._size_columns()

    def _sidebar_height(self) -> int:
        rows = sum(1 for _ in self._all_sidebar_items()) or 4
        row = self.sidebar.sizeHintForRow(0) if self.sidebar.topLevelItemCount() else 20
        return min(160, max(60, rows * max(row, 16) + 8))

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

    def _size_columns(self) -> None:
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
            self._size_columns()
        return super().eventFilter(watched, event)

    # --- sidebar -------------------------------------------------------------------------------
    def _fill_sidebar(self) -> None:
        current = self.sidebar.currentItem()
        wanted = current.data(0, _NODE) if current is not None else ("all", None)
        self.sidebar.blockSignals(True)
        self.sidebar.clear()
        items = {}

        def add(parent, text, node):
            item = QTreeWidgetItem([text])
            item.setToolTip(0, text)
            item.setData(0, _NODE, node)
            (parent.addChild(item) if parent is not None else self.sidebar.addTopLevelItem(item))
            items[node] = item
            return item

        add(None, "All papers", ("all", None))
        cols = self.manager.collections()
        if cols:
            head = add(None, "Collections", ("header", "collections"))
            by_id = {}
            for c in cols:  # parents come before children (sorted by path)
                parent = by_id.get(c.parent_id, head)
                by_id[c.id] = add(parent, f"{c.name} ({c.count})", ("collection", c.id))
        tags = self.manager.tags()
        if tags:
            head = add(None, "Tags", ("header", "tags"))
            for tag, n in tags.items():
                add(head, f"{tag} ({n})", ("tag", tag))
        add(None, f"Trash ({len(self.library.trashed_ids())})", ("trash", None))
        self.sidebar.expandAll()
        self.sidebar.setCurrentItem(items.get(wanted) or items[("all", None)])
        self.sidebar.blockSignals(False)

    def _sidebar_changed(self, item, _previous=None) -> None:
        if item is None:
            return
        kind, value = item.data(0, _NODE)
        if kind == "header":
            return
        self.model.set_view(
            trash=kind == "trash",
            collection_ids=(value,) if kind == "collection" else (),
            tag=value if kind == "tag" else None,
        )

    def select_node(self, kind: str, value=None) -> bool:
        """Show ``all``, ``trash``, a ``collection`` id or a ``tag`` (as a click in the sidebar)."""
        for item in self._all_sidebar_items():
            if item.data(0, _NODE) == (kind, value):
                self.sidebar.setCurrentItem(item)
                return True
        return False

    def _all_sidebar_items(self):
        stack = [self.sidebar.topLevelItem(i) for i in range(self.sidebar.topLevelItemCount())]
        while stack:
            item = stack.pop()
            yield item
            stack.extend(item.child(i) for i in range(item.childCount()))

    def _sidebar_menu(self, pos: QPoint) -> None:
        item = self.sidebar.itemAt(pos)
        node = item.data(0, _NODE) if item is not None else ("all", None)
        menu = QMenu(self)
        menu.addAction("New collection…", lambda: self.new_collection())
        if node[0] == "collection":
            only = menu.addAction("Recommend only from this collection")
            only.setCheckable(True)
            only.setChecked(self.recommend_collection == node[1])
            only.toggled.connect(lambda on: self.set_recommend_collection(node[1] if on else None))
            menu.addAction("New sub-collection…", lambda: self.new_collection(node[1]))
            menu.addAction("Rename…", lambda: self.rename_collection(node[1]))
            menu.addAction(
                "Delete the collection (papers stay)", lambda: self.delete_collection(node[1])
            )
            menu.addAction(
                "Export the collection…", lambda: self.export_papers(collection_id=node[1])
            )
        if node[0] in ("collection", "all"):
            cid = node[1] if node[0] == "collection" else None
            menu.addAction("Keep a file in sync (auto-export)…", lambda: self.auto_export(cid))
        if node[0] == "trash":
            menu.addAction("Empty the trash…", self.empty_trash)
        menu.exec(self.sidebar.viewport().mapToGlobal(pos))

    # --- selection -----------------------------------------------------------------------------
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

    def save_pending_edits(self) -> bool:
        """Save the details pane's unsaved edits (selection change, closing). When they are
        invalid the user discards them or keeps editing (False)."""
        if not self.details.has_changes() or self.details.save():
            return True
        key = self.details.paper.citekey if self.details.paper else ""
        why = self.details.error_label.text()
        if self.confirm(
            "Unsaved changes", f"The changes to {key} cannot be saved: {why}\n\nDiscard them?"
        ):
            self.details.reload()
            return True
        return False

    def _show_details(self, current, previous=None) -> None:
        if self.manager is None or not current.isValid() or self._going_back:
            return
        paper_id = self.model.paper_id(current.row())
        if not self.save_pending_edits():  # keep editing: back to the edited paper's row
            if previous is not None and previous.isValid():
                self._going_back = True
                try:
                    self.table.setCurrentIndex(previous)
                finally:
                    self._going_back = False
            return
        self.details.load(self.manager, paper_id)

    # --- actions --------------------------------------------------------------------------------
    def _run(self, func, *args):
        """Call a library operation; a user error shows in the status line instead of raising."""
        try:
            return func(*args)
        except AssistantError as exc:
            self.count_label.setText(f"⚠ {exc}")
            return None

    def _after_change(self, keep_order: bool = False) -> None:
        self.last_summary = ""
        if keep_order:
            self.model.invalidate_rows()
        else:
            self.refresh()
        errors = self.library.auto_export_errors if self.library is not None else []
        if errors:
            self.count_label.setText("⚠ auto-export failed: " + "; ".join(errors))
        self.library_changed.emit()

    def _after_edit(self, paper) -> None:
        self._after_change(keep_order=True)
        self._fill_sidebar()

    def cite_selected(self) -> bool:
        ids = self.selected_ids()
        if not ids or self.library is None:
            return False
        self.cite_requested.emit(self.library.get(ids[0]))
        return True

    def trash_selected(self) -> int:
        ids = self.selected_ids()
        if not ids or self.manager is None or self.model.view.trash:
            return 0
        row = min(self.model.row_of(i) or 0 for i in ids)
        n = self._run(self.manager.trash, ids) or 0
        self.last_trashed = ids
        self._after_change()
        if self.model.rowCount():  # the paper after the deleted ones is current, as in Zotero
            index = self.model.index(min(row, self.model.rowCount() - 1), 0)
            self.table.setCurrentIndex(index)
            self.table.scrollTo(index)
        self.count_label.setText(f"Moved {n} paper(s) to the trash")
        self.undo_button.setVisible(True)
        return n

    def undo_trash(self) -> int:
        if not self.last_trashed or self.manager is None:
            return 0
        n = self._run(self.manager.restore, self.last_trashed) or 0
        first, self.last_trashed = self.last_trashed[0], []
        self.undo_button.setVisible(False)
        self._after_change()
        self.select_paper(first)
        return n

    def restore_selected(self) -> int:
        ids = self.selected_ids()
        n = self._run(self.manager.restore, ids) or 0 if ids else 0
        self._after_change()
        return n

    def empty_trash(self) -> int:
        if self.manager is None:
            return 0
        n = len(self.library.trashed_ids())
        if n == 0 or not self.confirm(
            "Empty the trash", f"Delete {n} paper(s) for good? This cannot be undone."
        ):
            return 0
        done = self._run(lambda: self.manager.empty_trash(confirmed=True)) or 0
        self._after_change()
        return done

    def open_pdf(self) -> bool:
        ids = self.selected_ids()
        paper = self.library.get(ids[0]) if ids else None
        path = self.manager.pdf_file(paper) if paper is not None else None
        if path is None:
            self.count_label.setText(
                "No PDF known for this paper (attach one: Library ▸ Attach PDFs)"
            )
            return False
        return QDesktopServices.openUrl(QUrl.fromLocalFile(str(path)))

    def copy_bibtex(self) -> str:
        text = self.manager.render(self.selected_ids())
        QGuiApplication.clipboard().setText(text)
        return text

    def export_papers(self, ids: list[int] | None = None, collection_id: int | None = None) -> int:
        path = self.ask_save_path()
        if not path:
            return 0
        fmt = _EXPORT_FORMATS.get(Path(path).suffix.lower(), "bibtex")
        result = self._run(
            lambda: self.manager.export(path, fmt, ids=ids, collection_id=collection_id)
        )
        if result is None:
            return 0
        self.count_label.setText(f"Exported {result[0]} paper(s) to {path}")
        return result[0]

    def new_collection(self, parent_id: int | None = None) -> int | None:
        name = self.ask_text("New collection", "Name:")
        if not name or self.manager is None:
            return None
        cid = self._run(self.manager.create_collection, name, parent_id)
        self._fill_sidebar()
        return cid

    def rename_collection(self, collection_id: int) -> None:
        name = self.ask_text("Rename collection", "New name:")
        if name:
            self._run(self.manager.rename_collection, collection_id, name)
            self._fill_sidebar()

    def delete_collection(self, collection_id: int) -> None:
        if self.confirm(
            "Delete collection", "Delete this collection? Its papers stay in the library."
        ):
            self._run(self.manager.delete_collection, collection_id)
            self.select_node("all")
            self.refresh()

    def set_recommend_collection(self, collection_id: int | None) -> None:
        """Recommendations come only from this collection (None: the whole library)."""
        self.recommend_collection = collection_id
        if collection_id is None:
            self.count_label.setText("Recommending from the whole library")
        else:
            name = self._run(self.manager.collection, collection_id)
            self.count_label.setText(
                f"Recommending only from “{name.path if name else collection_id}”"
            )

    def recommend_scope_note(self) -> str:
        """What the results header says when recommendations come from one collection only."""
        if self.recommend_collection is None or self.manager is None:
            return ""
        try:
            col = self.manager.collection(self.recommend_collection)
        except AssistantError:
            col = None
        name = col.path if col is not None else str(self.recommend_collection)
        return f"only from the collection “{name}” (library panel: right-click it to change)"

    def auto_export(self, collection_id: int | None = None) -> str | None:
        """Keep a .bib/.ris/.json file in sync with the library or a collection."""
        path = self.ask_save_path()
        if not path or self.manager is None:
            return None
        fmt = _EXPORT_FORMATS.get(Path(path).suffix.lower(), "bibtex")
        entry = self._run(self.manager.add_auto_export, path, collection_id, fmt)
        if entry is not None:
            self.count_label.setText(f"{entry.path} is kept in sync after every change")
        return entry.path if entry is not None else None

    def add_selected_to(self, collection_id: int) -> int:
        n = self._run(self.manager.add_to_collection, collection_id, self.selected_ids()) or 0
        self._fill_sidebar()
        return n

    def remove_selected_from_collection(self) -> int:
        cols = self.model.view.collection_ids
        if not cols:
            return 0
        n = self._run(self.manager.remove_from_collection, cols[0], self.selected_ids()) or 0
        self._after_change()
        return n

    def duplicates_dialog(self) -> DuplicatesDialog | None:
        if self.manager is None:
            return None
        dialog = DuplicatesDialog(self.manager, self)
        dialog.finished.connect(lambda _r: self._after_change() if dialog.merged else None)
        dialog.open()
        return dialog

    def attach_folder_dialog(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Attach the PDFs of a folder")
        if folder and self.manager is not None:
            report = self._run(self.manager.attach_folder, folder)
            if report is not None:
                self._after_change(keep_order=True)
                self.count_label.setText(
                    f"Attached {len(report.attached)} PDF(s); {len(report.unmatched)} without a "
                    f"matching paper; {len(report.issues)} unreadable"
                )

    # --- menus ---------------------------------------------------------------------------------
    def _table_menu(self, pos: QPoint) -> QMenu:
        menu = self.context_menu()
        menu.popup(self.table.viewport().mapToGlobal(pos))
        return menu

    def context_menu(self) -> QMenu:
        """The actions for the selected papers (also used by tests)."""
        menu = QMenu(self)
        ids = self.selected_ids()
        if not ids:
            return menu
        menu.addAction("Cite", self.cite_selected)
        menu.addAction("Open PDF", self.open_pdf)
        menu.addAction(
            "Edit",
            lambda: (self.details.tabs.setCurrentIndex(0), self.details.inputs["title"].setFocus()),
        )
        menu.addAction("Copy BibTeX", self.copy_bibtex)
        menu.addAction("Export selection…", lambda: self.export_papers(ids=ids))
        self._curation_actions(menu, ids)
        if self.manager is not None:
            cols = self.manager.collections()
            if cols:
                sub = menu.addMenu("Add to collection")
                for c in cols:
                    sub.addAction(c.path, lambda cid=c.id: self.add_selected_to(cid))
        if self.model.view.collection_ids:
            menu.addAction("Remove from this collection", self.remove_selected_from_collection)
        menu.addSeparator()
        if self.model.view.trash:
            menu.addAction("Restore", self.restore_selected)
        else:
            menu.addAction("Move to the trash", self.trash_selected)
        return menu

    def _column_menu(self, pos: QPoint) -> None:
        menu = QMenu(self)
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
        self._size_columns()

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
