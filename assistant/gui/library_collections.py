"""The library panel's sidebar (all papers, collections, tags, trash) and the collection
actions: create, rename, delete, add/remove papers, recommend only from one, keep a file in sync
(the collections controller of ``LibraryPanel``)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QMenu, QTreeWidgetItem

from assistant.errors import AssistantError
from assistant.gui.parts import PanelPart

_NODE = Qt.ItemDataRole.UserRole
EXPORT_FORMATS = {".bib": "bibtex", ".ris": "ris", ".json": "csl-json"}


class CollectionsSidebar(PanelPart):
    """The sidebar's nodes select the table's view; collections are managed from its menu."""

    def __init__(self, panel) -> None:
        super().__init__(panel)
        self.recommend_collection: int | None = None  # recommend only from this collection

    def fill_sidebar(self) -> None:
        current = self.panel.sidebar.currentItem()
        wanted = current.data(0, _NODE) if current is not None else ("all", None)
        self.panel.sidebar.blockSignals(True)
        self.panel.sidebar.clear()
        items = {}

        def add(parent, text, node):
            item = QTreeWidgetItem([text])
            item.setToolTip(0, text)
            item.setData(0, _NODE, node)
            (
                parent.addChild(item)
                if parent is not None
                else self.panel.sidebar.addTopLevelItem(item)
            )
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
        self.panel.sidebar.expandAll()
        self.panel.sidebar.setCurrentItem(items.get(wanted) or items[("all", None)])
        self.panel.sidebar.blockSignals(False)

    def sidebar_changed(self, item, _previous=None) -> None:
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
                self.panel.sidebar.setCurrentItem(item)
                return True
        return False

    def _all_sidebar_items(self):
        stack = [
            self.panel.sidebar.topLevelItem(i)
            for i in range(self.panel.sidebar.topLevelItemCount())
        ]
        while stack:
            item = stack.pop()
            yield item
            stack.extend(item.child(i) for i in range(item.childCount()))

    def sidebar_menu(self, pos: QPoint) -> None:
        item = self.panel.sidebar.itemAt(pos)
        node = item.data(0, _NODE) if item is not None else ("all", None)
        menu = QMenu(self.panel)
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
                "Export the collection…",
                lambda: self.panel.edits.export_papers(collection_id=node[1]),
            )
        if node[0] in ("collection", "all"):
            cid = node[1] if node[0] == "collection" else None
            menu.addAction("Keep a file in sync (auto-export)…", lambda: self.auto_export(cid))
        if node[0] == "trash":
            menu.addAction("Empty the trash…", self.panel.edits.empty_trash)
        menu.exec(self.panel.sidebar.viewport().mapToGlobal(pos))

    def sidebar_height(self) -> int:
        rows = sum(1 for _ in self._all_sidebar_items()) or 4
        row = self.panel.sidebar.sizeHintForRow(0) if self.panel.sidebar.topLevelItemCount() else 20
        return min(160, max(60, rows * max(row, 16) + 8))

    # --- collections -------------------------------------------------------------------------
    def new_collection(self, parent_id: int | None = None) -> int | None:
        name = self.panel.ask_text("New collection", "Name:")
        if not name or self.manager is None:
            return None
        cid = self.run_op(self.manager.create_collection, name, parent_id)
        self.fill_sidebar()
        return cid

    def rename_collection(self, collection_id: int) -> None:
        name = self.panel.ask_text("Rename collection", "New name:")
        if name:
            self.run_op(self.manager.rename_collection, collection_id, name)
            self.fill_sidebar()

    def delete_collection(self, collection_id: int) -> None:
        if self.panel.confirm(
            "Delete collection", "Delete this collection? Its papers stay in the library."
        ):
            self.run_op(self.manager.delete_collection, collection_id)
            self.select_node("all")
            self.panel.refresh()

    def set_recommend_collection(self, collection_id: int | None) -> None:
        """Recommendations come only from this collection (None: the whole library)."""
        self.recommend_collection = collection_id
        if collection_id is None:
            self.count_label.setText("Recommending from the whole library")
        else:
            name = self.run_op(self.manager.collection, collection_id)
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
        path = self.panel.ask_save_path()
        if not path or self.manager is None:
            return None
        fmt = EXPORT_FORMATS.get(Path(path).suffix.lower(), "bibtex")
        entry = self.run_op(self.manager.add_auto_export, path, collection_id, fmt)
        if entry is not None:
            self.count_label.setText(f"{entry.path} is kept in sync after every change")
        return entry.path if entry is not None else None

    def add_selected_to(self, collection_id: int) -> int:
        n = self.run_op(self.manager.add_to_collection, collection_id, self.selected_ids()) or 0
        self.fill_sidebar()
        return n

    def remove_selected_from_collection(self) -> int:
        cols = self.model.view.collection_ids
        if not cols:
            return 0
        n = self.run_op(self.manager.remove_from_collection, cols[0], self.selected_ids()) or 0
        self.after_change()
        return n
