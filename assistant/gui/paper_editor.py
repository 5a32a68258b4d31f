"""The details pane: every field of a paper, editable and validated, with its edit history.

Authors and editors are one name per line ("Last, First"); other BibTeX fields are
``name = value`` lines. Save validates through the library layer (the same rules as the CLI's
``library edit``) and shows a refused value in one line; the history tab undoes any change.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QBoxLayout,
    QFormLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from assistant.errors import AssistantError

_LINES = {"authors", "editors"}
_TEXT = {"abstract"}
FIELDS = (
    ("citekey", "Key"),
    ("entry_type", "Type"),
    ("title", "Title"),
    ("authors", "Authors"),
    ("editors", "Editors"),
    ("year", "Year"),
    ("venue", "Venue"),
    ("doi", "DOI"),
    ("url", "URL"),
    ("pdf_path", "PDF"),
    ("keywords", "Keywords"),
    ("abstract", "Abstract"),
)


def _text_of(paper, key: str) -> str:
    value = getattr(paper, key)
    if key in _LINES:
        return "\n".join(value)
    if key == "keywords":
        return ", ".join(value)
    return "" if value is None else str(value)


class PaperEditor(QWidget):
    """Edits one paper through a :class:`LibraryManager`; emits ``saved(paper)`` after a change."""

    saved = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("paperEditor")
        self.manager = None
        self.paper = None
        tabs = QTabWidget()
        tabs.setElideMode(Qt.TextElideMode.ElideNone)  # narrow panel: scroll, never "Hist"
        tabs.setUsesScrollButtons(True)
        self.tabs = tabs
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(tabs)

        form_page = QWidget()
        form = QFormLayout(form_page)
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)  # narrow: label above
        self.inputs: dict[str, QLineEdit | QPlainTextEdit] = {}
        for key, label in FIELDS:
            if key in _LINES or key in _TEXT:
                widget = QPlainTextEdit()
                widget.setFixedHeight(60 if key in _LINES else 110)
                if key in _LINES:
                    widget.setPlaceholderText("One name per line: Last, First")
            else:
                widget = QLineEdit()
                widget.returnPressed.connect(self.save)  # Enter in a one-line field saves
            widget.setObjectName(f"field_{key}")
            self.inputs[key] = widget
            form.addRow(label, widget)
        self.other = QPlainTextEdit()
        self.other.setObjectName("field_other")
        self.other.setPlaceholderText("Other BibTeX fields, one per line: pages = 1--10")
        self.other.setFixedHeight(80)
        form.addRow("Other fields", self.other)
        self.error_label = QLabel("")
        self.error_label.setObjectName("editError")
        self.error_label.setStyleSheet("color: #b00020;")
        self.error_label.setWordWrap(True)
        buttons = QBoxLayout(QBoxLayout.Direction.LeftToRight)
        self.buttons = buttons
        self.save_button = QPushButton("Save")
        self.save_button.clicked.connect(self.save)
        self.discard_button = QPushButton("Discard changes")
        self.discard_button.clicked.connect(self.reload)
        buttons.addStretch(1)
        buttons.addWidget(self.discard_button)
        buttons.addWidget(self.save_button)
        # the form scrolls: its fields never set the window's minimum height (1024x700, scale 1.5);
        # the error line and Save / Discard stay in sight below it
        form_scroll = QScrollArea()
        form_scroll.setWidgetResizable(True)
        form_scroll.setWidget(form_page)
        details_page = QWidget()
        dl = QVBoxLayout(details_page)
        dl.setContentsMargins(0, 0, 0, 0)
        dl.addWidget(form_scroll, 1)
        dl.addWidget(self.error_label)
        dl.addLayout(buttons)
        tabs.addTab(details_page, "Details")

        history_page = QWidget()
        hl = QVBoxLayout(history_page)
        self.history_list = QListWidget()
        self.history_list.setObjectName("historyList")
        hl.addWidget(self.history_list, 1)
        self.revert_button = QPushButton("Undo change")
        self.revert_button.setToolTip("Undo the change selected in the list")
        self.revert_button.clicked.connect(self.revert_selected)
        hl.addWidget(self.revert_button)
        tabs.addTab(history_page, "History")

        records_page = QPlainTextEdit()
        records_page.setReadOnly(True)
        records_page.setObjectName("recordsView")
        self.records_view = records_page
        tabs.addTab(records_page, "Records")
        tabs.setTabToolTip(tabs.count() - 1, "The original records this paper was imported from")
        self.setEnabled(False)

    def resizeEvent(self, event) -> None:
        """Too narrow for Discard + Save side by side: they stack (never "card chang")."""
        super().resizeEvent(event)
        need = self.discard_button.sizeHint().width() + self.save_button.sizeHint().width() + 24
        direction = (
            QBoxLayout.Direction.TopToBottom
            if event.size().width() < need
            else QBoxLayout.Direction.LeftToRight
        )
        if self.buttons.direction() != direction:
            self.buttons.setDirection(direction)

    # -- loading ----------------------------------------------------------------------------------
    def load(self, manager, paper_id: int | None) -> None:
        self.manager = manager
        self.error_label.setText("")
        if manager is None or paper_id is None:
            self.paper = None
            for w in self.inputs.values():
                w.clear() if isinstance(w, QPlainTextEdit) else w.setText("")
            self.other.clear()
            self.history_list.clear()
            self.records_view.clear()
            self.setEnabled(False)
            return
        details = manager.details(paper_id)
        self.paper = details.paper
        for key, widget in self.inputs.items():
            text = _text_of(self.paper, key)
            widget.setPlainText(text) if isinstance(widget, QPlainTextEdit) else widget.setText(
                text
            )
        self.other.setPlainText(
            "\n".join(f"{k} = {v}" for k, v in sorted(self.paper.extra.items()))
        )
        self.history_list.clear()
        for h in details.history:
            item = QListWidgetItem(f"{h.changed_at}  {h.action}: {', '.join(h.changed_fields())}")
            item.setData(256, h.id)
            self.history_list.addItem(item)
        self.records_view.setPlainText(
            "\n\n".join(
                f"% {r['format']} from {r['source_file']}:{r['line']}\n{r['text']}"
                for r in details.records
            )
        )
        self.setEnabled(True)

    def has_changes(self) -> bool:
        """Whether the form holds edits not saved yet (unreadable ones count)."""
        if self.paper is None:
            return False
        try:
            return bool(self.changes())
        except ValueError:
            return True

    def reload(self) -> None:
        self.load(self.manager, self.paper.id if self.paper else None)

    # -- saving ----------------------------------------------------------------------------------
    def changes(self) -> dict:
        """Field -> new text for what the user changed (other fields: name -> value / '')."""
        if self.paper is None:
            return {}
        out: dict = {}
        for key, widget in self.inputs.items():
            text = (
                widget.toPlainText() if isinstance(widget, QPlainTextEdit) else widget.text()
            ).strip()
            if key in _LINES:
                names = [n.strip() for n in text.splitlines() if n.strip()]
                if names != list(getattr(self.paper, key)):
                    out[key] = names
            elif text != _text_of(self.paper, key).strip():
                out[key] = text
        other: dict[str, str] = {}
        for n, line in enumerate(self.other.toPlainText().splitlines(), 1):
            if not line.strip():
                continue
            if "=" not in line:
                raise ValueError(f"Other fields, line {n}: '{line.strip()}' is not name = value")
            name, value = line.split("=", 1)
            other[name.strip().lower()] = value.strip()
        for name in set(self.paper.extra) | set(other):
            if other.get(name, "") != str(self.paper.extra.get(name, "")):
                out[name] = other.get(name, "")
        return out

    def save(self) -> bool:
        if self.paper is None or self.manager is None:
            return False
        try:
            changes = self.changes()
            if not changes:
                self.error_label.setText("")
                return True
            paper = self.manager.edit(self.paper.id, changes)
        except (AssistantError, ValueError) as exc:
            self.error_label.setText(str(exc))
            return False
        self.load(self.manager, paper.id)
        self.saved.emit(paper)
        return True

    def revert_selected(self) -> bool:
        item = self.history_list.currentItem()
        if item is None or self.manager is None:
            return False
        try:
            paper = self.manager.revert(int(item.data(256)))
        except AssistantError as exc:
            self.error_label.setText(str(exc))
            return False
        self.load(self.manager, paper.id)
        self.saved.emit(paper)
        return True
