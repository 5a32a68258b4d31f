"""Editing from the library panel: the details pane (saved before the selection moves), trash
with undo, restore, empty the trash, open the PDF, cite, copy and export the selection, attach
PDFs, and the table's context menu (the editing controller of ``LibraryPanel``)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QPoint, QUrl
from PySide6.QtGui import QDesktopServices, QGuiApplication
from PySide6.QtWidgets import QFileDialog, QMenu

from assistant.gui.library_collections import EXPORT_FORMATS
from assistant.gui.parts import PanelPart


class LibraryEditing(PanelPart):
    """Changes to the selected papers; every change goes through the service's manager."""

    def __init__(self, panel) -> None:
        super().__init__(panel)
        self.last_trashed: list[int] = []
        self._going_back = False

    @property
    def details(self):
        return self.panel.details

    def save_pending_edits(self) -> bool:
        """Save the details pane's unsaved edits (selection change, closing). When they are
        invalid the user discards them or keeps editing (False)."""
        if not self.details.has_changes() or self.details.save():
            return True
        key = self.details.paper.citekey if self.details.paper else ""
        why = self.details.error_label.text()
        if self.panel.confirm(
            "Unsaved changes", f"The changes to {key} cannot be saved: {why}\n\nDiscard them?"
        ):
            self.details.reload()
            return True
        return False

    def show_details(self, current, previous=None) -> None:
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

    def after_edit(self, paper) -> None:
        self.after_change(keep_order=True)
        self.panel.collections.fill_sidebar()

    def cite_selected(self) -> bool:
        ids = self.selected_ids()
        if not ids or self.library is None:
            return False
        self.panel.cite_requested.emit(self.library.get(ids[0]))
        return True

    def trash_selected(self) -> int:
        ids = self.selected_ids()
        if not ids or self.manager is None or self.model.view.trash:
            return 0
        row = min(self.model.row_of(i) or 0 for i in ids)
        n = self.run_op(self.manager.trash, ids) or 0
        self.last_trashed = ids
        self.after_change()
        if self.model.rowCount():  # the paper after the deleted ones is current, as in Zotero
            index = self.model.index(min(row, self.model.rowCount() - 1), 0)
            self.table.setCurrentIndex(index)
            self.table.scrollTo(index)
        self.count_label.setText(f"Moved {n} paper(s) to the trash")
        self.panel.undo_button.setVisible(True)
        return n

    def undo_trash(self) -> int:
        if not self.last_trashed or self.manager is None:
            return 0
        n = self.run_op(self.manager.restore, self.last_trashed) or 0
        first, self.last_trashed = self.last_trashed[0], []
        self.panel.undo_button.setVisible(False)
        self.after_change()
        self.panel.browser.select_paper(first)
        return n

    def restore_selected(self) -> int:
        ids = self.selected_ids()
        n = self.run_op(self.manager.restore, ids) or 0 if ids else 0
        self.after_change()
        return n

    def empty_trash(self) -> int:
        if self.manager is None:
            return 0
        n = len(self.library.trashed_ids())
        if n == 0 or not self.panel.confirm(
            "Empty the trash", f"Delete {n} paper(s) for good? This cannot be undone."
        ):
            return 0
        done = self.run_op(lambda: self.manager.empty_trash(confirmed=True)) or 0
        self.after_change()
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
        path = self.panel.ask_save_path()
        if not path:
            return 0
        fmt = EXPORT_FORMATS.get(Path(path).suffix.lower(), "bibtex")
        result = self.run_op(
            lambda: self.manager.export(path, fmt, ids=ids, collection_id=collection_id)
        )
        if result is None:
            return 0
        self.count_label.setText(f"Exported {result[0]} paper(s) to {path}")
        return result[0]

    def attach_folder_dialog(self) -> None:
        folder = QFileDialog.getExistingDirectory(self.panel, "Attach the PDFs of a folder")
        if folder and self.manager is not None:
            report = self.run_op(self.manager.attach_folder, folder)
            if report is not None:
                self.after_change(keep_order=True)
                self.count_label.setText(
                    f"Attached {len(report.attached)} PDF(s); {len(report.unmatched)} without a "
                    f"matching paper; {len(report.issues)} unreadable"
                )

    # --- menus ---------------------------------------------------------------------------------
    def table_menu(self, pos: QPoint) -> QMenu:
        menu = self.context_menu()
        menu.popup(self.table.viewport().mapToGlobal(pos))
        return menu

    def context_menu(self) -> QMenu:
        """The actions for the selected papers (also used by tests)."""
        menu = QMenu(self.panel)
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
        self.panel.curation.menu_actions(menu, ids)
        if self.manager is not None:
            cols = self.manager.collections()
            if cols:
                sub = menu.addMenu("Add to collection")
                for c in cols:
                    sub.addAction(
                        c.path, lambda cid=c.id: self.panel.collections.add_selected_to(cid)
                    )
        if self.model.view.collection_ids:
            menu.addAction(
                "Remove from this collection",
                self.panel.collections.remove_selected_from_collection,
            )
        menu.addSeparator()
        if self.model.view.trash:
            menu.addAction("Restore", self.restore_selected)
        else:
            menu.addAction("Move to the trash", self.trash_selected)
        return menu
