"""Curation in the library panel: merge with a field-by-field choice, duplicates, citation keys
(pattern, pin, regenerate) and tags. Every change goes through the service's LibraryManager."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMenu,
    QMessageBox,
    QPushButton,
    QScrollArea,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from assistant.errors import AssistantError
from assistant.gui.paper_editor import _LINES, _text_of
from assistant.gui.parts import PanelPart

_ID = Qt.ItemDataRole.UserRole

#: the fields a merge lets the user choose (the key is the kept paper's; old keys stay aliases)
MERGE_FIELDS = (
    ("title", "Title"),
    ("authors", "Authors"),
    ("year", "Year"),
    ("entry_type", "Type"),
    ("venue", "Venue"),
    ("doi", "DOI"),
    ("url", "URL"),
    ("pdf_path", "PDF"),
    ("abstract", "Abstract"),
)


def _short(text: str, n: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


class MergeDialog(QDialog):
    """Confirm a merge of ``ids`` into ``keep_id`` and choose, per differing field, whose value
    the merged paper keeps."""

    def __init__(self, manager, keep_id: int, ids: list[int], parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("mergeDialog")
        self.setWindowTitle("Merge duplicates")
        self.manager, self.keep_id = manager, keep_id
        self.others = [i for i in ids if i != keep_id]
        papers = {p.id: p for p in manager.lib.get_many(ids)}
        self.papers = [papers[keep_id]] + [papers[i] for i in self.others if i in papers]
        layout = QVBoxLayout(self)
        keys = ", ".join(p.citekey for p in self.papers[1:])
        intro = QLabel(
            f"Merge {len(self.papers)} records into <b>{self.papers[0].citekey}</b>? "
            f"{keys} become aliases of it (old \\cite keys keep resolving); every original record "
            "is kept. Choose the value to keep where they differ:"
        )
        intro.setWordWrap(True)
        layout.addWidget(intro)
        form_page = QWidget()
        form = QFormLayout(form_page)
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        self.choices: dict[str, QComboBox] = {}
        for key, label in MERGE_FIELDS:
            values = []
            for p in self.papers:
                text = _text_of(p, key).strip()
                if text and text not in [v for _k, v in values]:
                    values.append((p.citekey, text))
            if len(values) < 2:
                continue
            box = QComboBox()
            box.setObjectName(f"choose_{key}")
            box.setSizeAdjustPolicy(
                QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
            )
            box.setMinimumContentsLength(30)
            for citekey, text in values:
                box.addItem(f"{citekey}: {_short(text)}", text)
                box.setItemData(box.count() - 1, text, Qt.ItemDataRole.ToolTipRole)
            self.choices[key] = box
            form.addRow(label, box)
        if not self.choices:
            form.addRow(QLabel("The records agree on every field."))
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(form_page)
        layout.addWidget(scroll, 1)
        self.error_label = QLabel("")
        self.error_label.setStyleSheet("color:#b00020")
        self.error_label.setWordWrap(True)
        layout.addWidget(self.error_label)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Merge")
        buttons.accepted.connect(self.merge)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.resize(760, 420)

    def chosen(self) -> dict:
        """Field -> the chosen value (authors as a list of names)."""
        out = {}
        for key, box in self.choices.items():
            text = box.currentData()
            out[key] = [n for n in text.splitlines() if n.strip()] if key in _LINES else text
        return out

    def merge(self) -> bool:
        """Merge, then store the chosen values on the kept paper."""
        try:
            merged = self.manager.merge(self.keep_id, self.others)
            changes = {
                k: v
                for k, v in self.chosen().items()
                if (v if k in _LINES else str(v)) != _cur(merged, k)
            }
            if changes:
                self.manager.edit(self.keep_id, changes)
        except (AssistantError, ValueError) as exc:
            self.error_label.setText(f"⚠ {exc}")
            return False
        self.accept()
        return True


def _cur(paper, key: str):
    return list(getattr(paper, key)) if key in _LINES else _text_of(paper, key)


class CitekeyDialog(QDialog):
    """Library ▸ Citation keys: the key pattern, and regenerating the keys that are not pinned."""

    def __init__(self, manager, selected: list[int], parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("citekeyDialog")
        self.setWindowTitle("Citation keys")
        self.manager, self.selected = manager, list(selected)
        layout = QVBoxLayout(self)
        info = QLabel(
            "New papers get keys from this pattern, e.g. <code>[auth:lower][year][shorttitle:1:lower]</code> "
            "(the default) or <code>[auth]_[year]</code>. Regenerating changes the keys of papers that are "
            "not pinned (a key you edit by hand is pinned); old keys stay aliases, so existing "
            "\\cite commands keep resolving."
        )
        info.setWordWrap(True)
        layout.addWidget(info)
        row = QHBoxLayout()
        self.pattern_edit = QLineEdit(manager.citekey_pattern())
        self.pattern_edit.setObjectName("citekeyPattern")
        row.addWidget(QLabel("Pattern"))
        row.addWidget(self.pattern_edit, 1)
        save = QPushButton("Set pattern")
        save.clicked.connect(self.set_pattern)
        row.addWidget(save)
        layout.addLayout(row)
        regen = QHBoxLayout()
        self.regen_selected = QPushButton(f"Regenerate the {len(self.selected)} selected")
        self.regen_selected.setEnabled(bool(self.selected))
        self.regen_selected.clicked.connect(lambda: self.regenerate(self.selected))
        self.regen_all = QPushButton("Regenerate all unpinned keys")
        self.regen_all.clicked.connect(lambda: self.regenerate(None))
        regen.addWidget(self.regen_selected)
        regen.addWidget(self.regen_all)
        regen.addStretch(1)
        layout.addLayout(regen)
        self.result_label = QLabel("")
        self.result_label.setObjectName("citekeyResult")
        self.result_label.setWordWrap(True)
        layout.addWidget(self.result_label, 1)
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        close.rejected.connect(self.accept)
        layout.addWidget(close)
        self.changed = 0
        self.resize(620, 300)

    def set_pattern(self) -> bool:
        try:
            self.manager.set_citekey_pattern(self.pattern_edit.text().strip() or None)
        except (AssistantError, ValueError) as exc:
            self.result_label.setText(f"⚠ {exc}")
            return False
        self.result_label.setText(f"Pattern set: {self.manager.citekey_pattern()}")
        return True

    def regenerate(self, ids) -> list[tuple[str, str]]:
        if not self.set_pattern():
            return []
        try:
            renamed = self.manager.regenerate_citekeys(ids)
        except (AssistantError, ValueError) as exc:
            self.result_label.setText(f"⚠ {exc}")
            return []
        self.changed += len(renamed)
        shown = "; ".join(f"{a} → {b}" for a, b in renamed[:8])
        more = f" (+{len(renamed) - 8} more)" if len(renamed) > 8 else ""
        self.result_label.setText(f"{len(renamed)} key(s) changed. {shown}{more}")
        return renamed


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


class Curation(PanelPart):
    """The library panel's curation: tags, citation keys (pin, regenerate, pattern) and
    duplicates (the curation controller of ``LibraryPanel``)."""

    def __init__(self, panel) -> None:
        super().__init__(panel)
        self.last_dialog = None

    def menu_actions(self, menu: QMenu, ids: list[int]) -> None:
        """Tags, key pinning and regeneration for the selected papers."""
        if self.manager is None:
            return
        menu.addAction("Add a tag…", self.add_tag_to_selected)
        tags = sorted({t for pid in ids[:50] for t in self.manager.details(pid).tags})
        if tags:
            sub = menu.addMenu("Remove a tag")
            for tag in tags:
                sub.addAction(tag, lambda t=tag: self.remove_tag_from_selected(t))
        first = self.library.get(ids[0])
        if first is not None:
            label = "Unpin the key" if first.pinned else "Pin the key (never regenerated)"
            menu.addAction(label, lambda: self.set_pinned_selected(not first.pinned))
        menu.addAction("Regenerate the key(s)", lambda: self.regenerate_keys(ids))

    def add_tag_to_selected(self, tag: str | None = None) -> int:
        ids = self.selected_ids()
        tag = tag or self.panel.ask_text("Add a tag", "Tag:")
        if not tag or not ids or self.manager is None:
            return 0
        for pid in ids:
            self.run_op(self.manager.add_tags, pid, [tag])
        self.after_change(keep_order=True)
        self.panel.collections.fill_sidebar()
        self.count_label.setText(f"Tagged {len(ids)} paper(s) “{tag}”")
        return len(ids)

    def remove_tag_from_selected(self, tag: str) -> int:
        ids = self.selected_ids()
        if not ids or self.manager is None:
            return 0
        for pid in ids:
            self.run_op(self.manager.remove_tags, pid, [tag])
        self.after_change(keep_order=True)
        self.panel.collections.fill_sidebar()
        return len(ids)

    def set_pinned_selected(self, pinned: bool) -> int:
        ids = self.selected_ids()
        for pid in ids:
            self.run_op(self.manager.set_pinned, pid, pinned)
        self.after_change(keep_order=True)
        self.count_label.setText(f"{'Pinned' if pinned else 'Unpinned'} {len(ids)} key(s)")
        return len(ids)

    def regenerate_keys(self, ids: list[int] | None) -> list:
        renamed = self.run_op(self.manager.regenerate_citekeys, ids) or []
        self.after_change(keep_order=True)
        self.count_label.setText(
            f"{len(renamed)} key(s) regenerated (old keys stay aliases; pinned keys unchanged)"
        )
        return renamed

    def citekey_dialog(self):
        if self.manager is None:
            return None
        dialog = CitekeyDialog(self.manager, self.selected_ids(), self.panel)
        dialog.finished.connect(lambda _r: self.after_change() if dialog.changed else None)
        dialog.open()
        self.last_dialog = dialog
        return dialog

    def duplicates_dialog(self) -> DuplicatesDialog | None:
        if self.manager is None:
            return None
        dialog = DuplicatesDialog(self.manager, self.panel)
        dialog.finished.connect(lambda _r: self.after_change() if dialog.merged else None)
        dialog.open()
        return dialog
