"""The ranked recommendations: cards with an intent chip, filters, insert/copy actions."""

from __future__ import annotations

import re

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

INTENT_COLOURS = {"background": "#1e88e5", "method": "#43a047", "result": "#fb8c00"}
INTENTS = ("background", "method", "result")
BATCH = 3  # cards built per event-loop turn (about 15 ms of UI work each)


def _esc(text: str) -> str:
    return (text or "").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def format_authors(authors: list[str], limit: int = 3) -> str:
    names = [a.split(",")[0].strip() for a in authors if a.strip()]
    if len(names) > limit:
        return ", ".join(names[:limit]) + " et al."
    return ", ".join(names)


_WORD_RE = re.compile(r"[A-Za-z][A-Za-z0-9-]{2,}")
_STOP = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "from",
        "that",
        "this",
        "these",
        "those",
        "into",
        "over",
        "such",
        "are",
        "was",
        "were",
        "has",
        "have",
        "had",
        "can",
        "also",
        "not",
        "but",
        "our",
        "their",
        "its",
        "which",
        "while",
        "using",
        "used",
        "use",
        "based",
        "than",
        "then",
        "them",
        "they",
        "more",
        "most",
        "many",
        "much",
        "very",
        "been",
        "being",
        "other",
        "each",
        "both",
    ]
)


def query_terms(text: str) -> frozenset[str]:
    """Content words of the query (lower-case, no stop words) used to mark the matched snippet."""
    return frozenset(w.lower() for w in _WORD_RE.findall(text or "") if w.lower() not in _STOP)


def snippet_html(abstract: str, terms: frozenset[str]) -> str:
    """The abstract with query words in bold, led by its best-matching sentence."""
    if not abstract:
        return "<i>No abstract in the library.</i>"

    def mark(text: str) -> str:
        return _WORD_RE.sub(
            lambda m: f"<b>{m.group(0)}</b>" if m.group(0).lower() in terms else m.group(0),
            _esc(text),
        )

    sentences = re.split(r"(?<=[.!?])\s+", abstract)
    best = max(sentences, key=lambda sent: len(terms & query_terms(sent)), default="")
    lead = ""
    if terms and best and len(sentences) > 1 and terms & query_terms(best):
        lead = f"<p style='background:#fffde7'>Best match: “{mark(best)}”</p>"
    return f"{lead}<p>{mark(abstract)}</p>"


class IntentChip(QLabel):
    """A colour-coded chip: ``method 87%`` (painted directly: cheap, no per-widget style sheet)."""

    def __init__(
        self, intent: str | None, confidence: float | None, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.intent = intent or ""
        self.confidence = confidence
        self.setObjectName("intentChip")
        if intent:
            text = intent if confidence is None else f"{intent} {confidence:.0%}"
            self.colour = QColor(INTENT_COLOURS.get(intent, "#757575"))
            self.setToolTip(
                f"Likely citation intent: {intent}"
                + (f" (confidence {confidence:.2f})" if confidence is not None else "")
            )
        else:
            text, self.colour = "intent n/a", QColor("#9e9e9e")
        self.setText(text)
        font = self.font()
        font.setBold(True)
        self.setFont(font)
        self.setContentsMargins(8, 1, 8, 1)

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(self.colour)
        rect = self.rect().adjusted(0, 0, -1, -1)
        painter.drawRoundedRect(rect, rect.height() / 2, rect.height() / 2)
        painter.setPen(QColor("white"))
        painter.drawText(self.rect(), int(Qt.AlignmentFlag.AlignCenter), self.text())
        painter.end()


class ResultCard(QFrame):
    """One recommendation: title, authors · year · venue, score, intent chip, details on expand."""

    insert_clicked = Signal(object)
    copy_clicked = Signal(object)

    def __init__(
        self,
        rank: int,
        rec,
        cited: bool = False,
        query_terms: frozenset[str] = frozenset(),
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.rec = rec
        paper = rec.paper
        self.setObjectName("resultCard")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        layout.setSpacing(3)

        top = QHBoxLayout()
        self.title_label = QLabel(f"<b>{rank}. {_esc(paper.title)}</b>")
        self.title_label.setWordWrap(True)
        self.title_label.setMinimumWidth(120)
        self.title_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        top.addWidget(self.title_label, 1)
        self.chip = IntentChip(rec.intent, rec.intent_confidence)
        top.addWidget(self.chip, 0, Qt.AlignmentFlag.AlignTop)
        layout.addLayout(top)

        meta = " · ".join(
            p for p in (format_authors(paper.authors), str(paper.year or ""), paper.venue) if p
        )
        badge = "  <span style='color:#c62828'>(already cited)</span>" if cited else ""
        self.meta_label = QLabel(f"<span style='color:#555'>{_esc(meta)}</span>{badge}")
        self.meta_label.setWordWrap(True)
        layout.addWidget(self.meta_label)

        row = QHBoxLayout()
        key = paper.citekey or f"#{paper.id}"
        self.score_label = QLabel(
            f"<span style='color:#777'>score {rec.score:.3f} · <code>{_esc(key)}</code></span>"
        )
        self.score_label.setToolTip(
            "\n".join(f"{k}: {v:.3f}" for k, v in (rec.scores or {}).items())
        )
        row.addWidget(self.score_label, 1)
        self.expand_button = QToolButton()
        self.expand_button.setText("Details")
        self.expand_button.setCheckable(True)
        self.expand_button.toggled.connect(self.set_expanded)
        row.addWidget(self.expand_button)
        self.copy_button = QPushButton("BibTeX")
        self.copy_button.setToolTip("Copy the BibTeX entry to the clipboard")
        self.copy_button.clicked.connect(lambda: self.copy_clicked.emit(self.rec))
        row.addWidget(self.copy_button)
        self.insert_button = QPushButton("Insert")
        self.insert_button.setObjectName("insertButton")
        self.insert_button.setToolTip(
            "Insert the citation at the cursor and add the entry to the .bib file"
        )
        self.insert_button.clicked.connect(lambda: self.insert_clicked.emit(self.rec))
        row.addWidget(self.insert_button)
        layout.addLayout(row)

        extra = f"<br><span style='color:#777'>DOI {_esc(paper.doi)}</span>" if paper.doi else ""
        self.details = QLabel(snippet_html(paper.abstract or "", query_terms) + extra)
        self.details.setWordWrap(True)
        self.details.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.details.setVisible(False)
        layout.addWidget(self.details)

    def set_expanded(self, expanded: bool) -> None:
        self.details.setVisible(expanded)


class ResultsPanel(QWidget):
    """Ranked list with filters (year range, intent, exclude already cited)."""

    insert_requested = Signal(object)
    copy_requested = Signal(object)
    filters_changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("resultsPanel")
        self.items: list = []
        self.limit: int | None = None  # at most this many cards (after filters)
        self.cited_keys: set[str] = set()
        self.query_terms: frozenset[str] = frozenset()
        self.cards: list[ResultCard] = []
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)

        self.header = QLabel(
            "Select a sentence or place the cursor, then press Recommend (Ctrl+R)."
        )
        self.header.setObjectName("resultsHeader")
        self.header.setWordWrap(True)
        layout.addWidget(self.header)

        filters = QHBoxLayout()
        filters.addWidget(QLabel("Years"))
        self.year_min = QSpinBox()
        self.year_max = QSpinBox()
        for box, value in ((self.year_min, 1900), (self.year_max, 2100)):
            box.setRange(1900, 2100)
            box.setValue(value)
            box.valueChanged.connect(self._refilter)
            filters.addWidget(box)
        self.intent_filter = QComboBox()
        self.intent_filter.addItem("Any intent", "")
        for intent in INTENTS:
            self.intent_filter.addItem(intent.capitalize(), intent)
        self.intent_filter.currentIndexChanged.connect(self._refilter)
        filters.addWidget(self.intent_filter)
        self.exclude_cited = QCheckBox("Hide cited")
        self.exclude_cited.setToolTip("Hide papers already cited in the manuscript")
        self.exclude_cited.setChecked(True)
        self.exclude_cited.toggled.connect(self._refilter)
        filters.addWidget(self.exclude_cited)
        filters.addStretch(1)
        layout.addLayout(filters)

        self.scroll = QScrollArea()
        self.scroll.setWidgetResizable(True)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list_widget = QWidget()
        self.list_layout = QVBoxLayout(self.list_widget)
        self.list_layout.setContentsMargins(0, 0, 0, 0)
        self.list_layout.addStretch(1)
        self.scroll.setWidget(self.list_widget)
        self.scroll.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        layout.addWidget(self.scroll, 1)

    # --- state --------------------------------------------------------------------------------
    def set_message(self, text: str) -> None:
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
            self.header.setText(header)
        self._refilter()

    def clear(self) -> None:
        self.set_results([])

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
            if f["intent"] and rec.intent != f["intent"]:
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
        self._pending = list(enumerate(self.visible_items(), start=1))
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
                rank, rec, cited=rec.paper.citekey in self.cited_keys, query_terms=self.query_terms
            )
            card.insert_clicked.connect(self.insert_requested)
            card.copy_clicked.connect(self.copy_requested)
            self.list_layout.insertWidget(self.list_layout.count() - 1, card)
            self.cards.append(card)
        self.list_widget.setUpdatesEnabled(True)
        QTimer.singleShot(0, lambda: self._add_cards(generation))

    def is_complete(self) -> bool:
        """All cards of the current list are built."""
        return not getattr(self, "_pending", None)
