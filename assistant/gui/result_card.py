"""One recommendation as a card: title, authors · year · venue, score and key, an intent chip,
the abstract with the query's words in bold on expand; Insert and BibTeX buttons."""

from __future__ import annotations

import html
import re

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from assistant.service import IntentChip as ChipData
from assistant.service import intent_chip

INTENT_COLOURS = {"background": "#1e88e5", "method": "#43a047", "result": "#fb8c00"}


def _esc(text: str) -> str:
    """``text`` for Qt rich text (``&``, ``<``, ``>``; quotes are left: no attribute holds it)."""
    return html.escape(text or "", quote=False)


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


UNCERTAIN_COLOUR = "#9e9e9e"


class IntentChip(QLabel):
    """A colour-coded chip: ``method 87%``, or a grey ``method? uncertain`` (painted directly:
    cheap). Its text and rule are the service's (``assistant.service.intent_chip``)."""

    def __init__(self, chip: ChipData, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.intent = chip.label
        self.confidence = chip.confidence
        self.uncertain = chip.uncertain
        self.shown = chip.shown
        self.setObjectName("intentChip")
        text = chip.text
        if chip.label and not chip.uncertain:
            self.colour = QColor(INTENT_COLOURS.get(chip.label, "#757575"))
            self.setToolTip(f"Likely cited for its {chip.label}: {chip.why}")
        else:
            self.colour = QColor(UNCERTAIN_COLOUR)
            if chip.label:
                self.setToolTip(f"Intent uncertain: {chip.why}")
        self.setText(text)
        font = self.font()
        font.setBold(True)
        self.setFont(font)
        self.setContentsMargins(8, 1, 8, 1)
        self.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)

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
    move_requested = Signal(object, int)  # card, +1 / -1 (arrow keys)
    leave_requested = Signal()  # Esc: back to the manuscript

    def __init__(
        self,
        rank: int,
        rec,
        cited: bool = False,
        query_terms: frozenset[str] = frozenset(),
        parent: QWidget | None = None,
        chip: ChipData | None = None,
    ) -> None:
        super().__init__(parent)
        self.rec = rec
        paper = rec.paper
        self.setObjectName("resultCard")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Maximum)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        layout.setSpacing(3)

        self.title_label = QLabel(f"<b>{rank}. {_esc(paper.title)}</b>")
        self.title_label.setWordWrap(True)
        self.title_label.setMinimumWidth(60)
        self.title_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.title_label)
        self.chip = IntentChip(chip or intent_chip(rec))
        self.chip.setVisible(self.chip.shown)  # no chip at all when it would say nothing

        meta = " · ".join(
            p for p in (format_authors(paper.authors), str(paper.year or ""), paper.venue) if p
        )
        badge = "  <span style='color:#c62828'>(already cited)</span>" if cited else ""
        self.meta_label = QLabel(f"<span style='color:#555'>{_esc(meta)}</span>{badge}")
        self.meta_label.setWordWrap(True)
        layout.addWidget(self.meta_label)

        key = paper.citekey or f"#{paper.id}"
        # score and key share the chip's row; the label wraps (the key alone on a line if need be)
        self.score_label = QLabel(
            f"<span style='color:#777'>score {rec.score:.3f} · <code>{_esc(key)}</code></span>"
        )
        self.score_label.setWordWrap(True)
        self.score_label.setMinimumWidth(40)
        self.score_label.setToolTip(
            "\n".join(f"{k}: {v:.3f}" for k, v in (rec.scores or {}).items())
        )
        info = QHBoxLayout()  # chip on its own row: the buttons never push it out
        info.addWidget(self.chip, 0, Qt.AlignmentFlag.AlignTop)
        info.addStretch(1)
        layout.addLayout(info)
        layout.addWidget(self.score_label)
        row = QHBoxLayout()
        row.addStretch(1)
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
            "Cite at the end of the sentence (or selection), before its final punctuation; "
            "the .bib entry is added when you save the manuscript (Enter on a focused card)"
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

    def event(self, event) -> bool:
        """Esc belongs to the focused card (back to the text), not to the window's Cancel."""
        if event.type() == QEvent.Type.ShortcutOverride and event.key() == Qt.Key.Key_Escape:
            event.accept()
            return True
        return super().event(event)

    def keyPressEvent(self, event) -> None:
        key = event.key()
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            self.insert_clicked.emit(self.rec)
        elif key in (Qt.Key.Key_Down, Qt.Key.Key_J):
            self.move_requested.emit(self, 1)
        elif key in (Qt.Key.Key_Up, Qt.Key.Key_K):
            self.move_requested.emit(self, -1)
        elif key == Qt.Key.Key_Space:
            self.expand_button.toggle()
        elif key == Qt.Key.Key_Escape:
            self.leave_requested.emit()
        else:
            super().keyPressEvent(event)

    def focusInEvent(self, event) -> None:
        super().focusInEvent(event)
        self.update()

    def focusOutEvent(self, event) -> None:
        super().focusOutEvent(event)
        self.update()

    def paintEvent(self, event) -> None:
        super().paintEvent(event)
        if self.hasFocus():  # the keyboard's card: a blue frame
            painter = QPainter(self)
            pen = painter.pen()
            pen.setColor(QColor("#1565c0"))
            pen.setWidth(2)
            painter.setPen(pen)
            painter.drawRoundedRect(self.rect().adjusted(1, 1, -1, -1), 4, 4)
            painter.end()
