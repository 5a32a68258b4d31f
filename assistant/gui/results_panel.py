"""The ranked recommendations: the list of result cards (`result_card.py`), filters,
insert/copy actions."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QScrollArea,
    QSizePolicy,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from assistant.gui.result_card import ResultCard, _esc, query_terms
from assistant.service import intent_chips, sentence_label

INTENTS = ("background", "method", "result")
TWO_ROW_FILTERS_BELOW = 440  # px: narrower panels show the filters on two rows
BATCH = 3  # cards built per event-loop turn (about 15 ms of UI work each)


class ResultsPanel(QWidget):
    """Ranked list with filters (year range, intent, exclude already cited)."""

    insert_requested = Signal(object)
    copy_requested = Signal(object)
    filters_changed = Signal()
    need_changed = Signal(str)  # the "Need" box: recommend again, re-ranked for that intent
    leave_requested = Signal()  # Esc on a card: back to the manuscript

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("resultsPanel")
        self.items: list = []
        self.limit: int | None = None  # at most this many cards (after filters)
        self.cited_keys: set[str] = set()
        self.query_terms: frozenset[str] = frozenset()
        self.cards: list[ResultCard] = []
        self.header_base = ""  # the caller's header; notes that follow the filters are added
        self.scope_note = ""  # e.g. "only from the collection “Thesis”"
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)

        self.header = QLabel(
            "Select a sentence or place the cursor, then press Recommend (Ctrl+R)."
        )
        self.header.setObjectName("resultsHeader")
        self.header.setWordWrap(True)
        layout.addWidget(self.header)

        filters = QHBoxLayout()
        self._filters_row, self._filters_row2 = filters, QHBoxLayout()
        self._filters_row2.addStretch(1)
        filters.addWidget(QLabel("Years"))
        self.year_min = QSpinBox()
        self.year_max = QSpinBox()
        for box, value in ((self.year_min, 1900), (self.year_max, 2100)):
            box.setRange(1900, 2100)
            box.setValue(value)
            box.valueChanged.connect(self._refilter)
            filters.addWidget(box)
        self.intent_filter = QComboBox()
        self.intent_filter.setObjectName("needBox")
        self.intent_filter.setToolTip(
            "What the citation should support: papers likely cited for it move up (nothing is hidden)"
        )
        self.intent_filter.addItem("Need: any", "")
        for intent in INTENTS:
            self.intent_filter.addItem(f"Need: {intent}", intent)
        self.intent_filter.currentIndexChanged.connect(
            lambda _i: self.need_changed.emit(self.intent_filter.currentData() or "")
        )
        filters.addWidget(self.intent_filter)
        self.exclude_cited = QCheckBox("Hide cited")
        self.exclude_cited.setToolTip("Hide papers already cited in the manuscript")
        self.exclude_cited.setChecked(True)
        self.exclude_cited.toggled.connect(self._refilter)
        filters.addWidget(self.exclude_cited)
        filters.addStretch(1)
        layout.addLayout(filters)
        layout.addLayout(self._filters_row2)
        self._two_rows = False

        self.scroll = QScrollArea()
        self.scroll.setWidgetResizable(True)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list_widget = QWidget()
        self.list_layout = QVBoxLayout(self.list_widget)
        self.list_layout.setContentsMargins(0, 0, 0, 0)
        self.empty_label = QLabel("")
        self.empty_label.setObjectName("emptyFilterMessage")
        self.empty_label.setWordWrap(True)
        self.empty_label.setStyleSheet("color:#8a6d00; padding:8px")
        self.empty_label.setVisible(False)
        self.list_layout.addWidget(self.empty_label)
        self.list_layout.addStretch(1)
        self.scroll.setWidget(self.list_widget)
        self.scroll.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        layout.addWidget(self.scroll, 1)

    def resizeEvent(self, event) -> None:
        """Narrow panel: the intent filter and Hide cited move to a second row (never clipped)."""
        super().resizeEvent(event)
        narrow = event.size().width() < TWO_ROW_FILTERS_BELOW
        if narrow == self._two_rows:
            return
        self._two_rows = narrow
        src, dst = (
            (self._filters_row, self._filters_row2)
            if narrow
            else (self._filters_row2, self._filters_row)
        )
        for widget in (self.intent_filter, self.exclude_cited):
            src.removeWidget(widget)
            dst.insertWidget(dst.count() - 1, widget)  # before the row's closing stretch

    # --- state --------------------------------------------------------------------------------
    def set_message(self, text: str) -> None:
        self.header_base = ""
        self.header.setText(text)

    def set_results(
        self,
        items: list,
        header: str = "",
        cited_keys: set[str] | None = None,
        query_text: str = "",
    ) -> None:
        self.items = list(items)
        self.query_terms = query_terms(query_text)
        self.cited_keys = set(cited_keys or ())
        if header:
            self.header_base = header
        self._refilter()

    def clear(self) -> None:
        self.set_results([])

    def clear_results(self) -> None:
        """Drop the cards of the previous query (a new one is starting)."""
        self.items = []
        self._refilter()

    def focus_card(self, index: int = 0) -> bool:
        """Give the keyboard to card ``index`` (clamped); False when there is none."""
        if not self.cards:
            return False
        card = self.cards[max(0, min(index, len(self.cards) - 1))]
        card.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.scroll.ensureWidgetVisible(card)
        return True

    def _move(self, card, step: int) -> None:
        if card in self.cards:
            self.focus_card(self.cards.index(card) + step)

    def empty_message(self) -> str:
        """Why the list is empty although there are results (the filters hide them all)."""
        f = self.filter_values()
        parts = []
        if f["year_min"] > 1900 or f["year_max"] < 2100:
            parts.append(f"years {f['year_min']}–{f['year_max']}")
        if f["exclude_cited"] and any(r.paper.citekey in self.cited_keys for r in self.items):
            parts.append("Hide cited")
        what = ", ".join(parts) or "the filters"
        return (
            f"None of the {len(self.items)} recommendations matches {what}. "
            "Widen the years or untick Hide cited to see them."
        )

    def _header_html(self) -> str:
        """The caller's header plus what the current filters and labels mean for this list."""
        notes = []
        if self.scope_note:
            notes.append(self.scope_note)
        hidden = [r for r in self.items if r.paper.citekey in self.cited_keys]
        if hidden and self.exclude_cited.isChecked():
            notes.append(f"{len(hidden)} already cited hidden")
        need = self.intent_filter.currentData()
        if need:
            notes.append(f"papers cited for their {need} first")
        label = sentence_label(self.items)
        if label:
            notes.append(label + " (no paper-specific intent)")
        extra = "".join(f"<br><span style='color:#555'>· {_esc(n)}</span>" for n in notes)
        return self.header_base + extra

    def filter_values(self) -> dict:
        return {
            "year_min": self.year_min.value(),
            "year_max": self.year_max.value(),
            "intent": self.intent_filter.currentData() or "",
            "exclude_cited": self.exclude_cited.isChecked(),
        }

    def visible_items(self) -> list:
        f = self.filter_values()
        out = []
        for rec in self.items:
            year = rec.paper.year
            if year and not (f["year_min"] <= year <= f["year_max"]):
                continue
            if f["exclude_cited"] and rec.paper.citekey in self.cited_keys:
                continue
            out.append(rec)
        return out[: self.limit] if self.limit else out

    def _refilter(self, *_args) -> None:
        """Rebuild the cards: the first few now, the rest one per event-loop turn (UI stays fluid)."""
        for card in self.cards:
            self.list_layout.removeWidget(card)
            card.deleteLater()
        self.cards = []
        visible = self.visible_items()
        if self.header_base:
            self.header.setText(self._header_html())
        self.empty_label.setText(self.empty_message() if self.items and not visible else "")
        self.empty_label.setVisible(bool(self.items) and not visible)
        self._chips = {id(rec): chip for rec, chip in zip(self.items, intent_chips(self.items))}
        self._pending = list(enumerate(visible, start=1))
        self._build_generation = getattr(self, "_build_generation", 0) + 1
        self._add_cards(self._build_generation)

    def _add_cards(self, generation: int) -> None:
        if generation != self._build_generation:
            return  # a newer result list replaced this one
        if not self._pending:
            self.filters_changed.emit()
            return
        self.list_widget.setUpdatesEnabled(False)  # one layout pass per batch
        for _ in range(BATCH):
            if not self._pending:
                break
            rank, rec = self._pending.pop(0)
            card = ResultCard(
                rank,
                rec,
                cited=rec.paper.citekey in self.cited_keys,
                query_terms=self.query_terms,
                chip=self._chips.get(id(rec)),
            )
            card.insert_clicked.connect(self.insert_requested)
            card.copy_clicked.connect(self.copy_requested)
            card.move_requested.connect(self._move)
            card.leave_requested.connect(self.leave_requested)
            self.list_layout.insertWidget(self.list_layout.count() - 1, card)
            card.show()  # now, not on the next event-loop turn: the keyboard may go to it at once
            self.cards.append(card)
        self.list_widget.setUpdatesEnabled(True)
        QTimer.singleShot(0, lambda: self._add_cards(generation))

    def is_complete(self) -> bool:
        """All cards of the current list are built."""
        return not getattr(self, "_pending", None)
