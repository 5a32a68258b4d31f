"""The manuscript editor: citation highlighting, a margin with missing-citation marks."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from PySide6.QtCore import QRect, QSize, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontDatabase,
    QPainter,
    QSyntaxHighlighter,
    QTextCharFormat,
    QTextCursor,
)
from PySide6.QtWidgets import QPlainTextEdit, QTextEdit, QWidget

from assistant.service import textops
from assistant.textfile import TextFormat

CITE_COLOURS = {textops.LATEX: "#1565c0", textops.MARKDOWN: "#1565c0", textops.NUMERIC: "#6a1b9a"}
_LATEX_COMMAND_RE = re.compile(
    r"\\(?:section|subsection|subsubsection|paragraph|chapter|title|begin|end|"
    r"label|ref|emph|textbf|textit|documentclass|usepackage|bibliography\w*|"
    r"addbibresource|maketitle|author)\b\*?"
)
_LATEX_COMMENT_RE = re.compile(r"(?<!\\)%.*$")
_MD_HEADING_RE = re.compile(r"^#{1,6}\s.*$")


class CitationHighlighter(QSyntaxHighlighter):
    """Colours citation markers (``\\cite{}``, ``[@key]``, ``[n]``), LaTeX commands and comments."""

    def __init__(self, document, style: str | None = None) -> None:
        super().__init__(document)
        self.style = style
        self.cite_format = QTextCharFormat()
        self.cite_format.setForeground(QColor(CITE_COLOURS[textops.LATEX]))
        self.cite_format.setBackground(QColor("#e3f2fd"))
        self.cite_format.setFontWeight(QFont.Weight.DemiBold)
        self.numeric_format = QTextCharFormat(self.cite_format)
        self.numeric_format.setForeground(QColor(CITE_COLOURS[textops.NUMERIC]))
        self.numeric_format.setBackground(QColor("#f3e5f5"))
        self.slot_format = QTextCharFormat()
        self.slot_format.setBackground(QColor("#fff3cd"))
        self.slot_format.setForeground(QColor("#8a6d00"))
        self.command_format = QTextCharFormat()
        self.command_format.setForeground(QColor("#00796b"))
        self.comment_format = QTextCharFormat()
        self.comment_format.setForeground(QColor("#9e9e9e"))
        self.comment_format.setFontItalic(True)
        self.heading_format = QTextCharFormat()
        self.heading_format.setFontWeight(QFont.Weight.Bold)

    def set_style(self, style: str | None) -> None:
        self.style = style
        self.rehighlight()

    def highlightBlock(self, text: str) -> None:
        if self.style == textops.LATEX:
            for m in _LATEX_COMMAND_RE.finditer(text):
                self.setFormat(m.start(), m.end() - m.start(), self.command_format)
        if self.style == textops.MARKDOWN and _MD_HEADING_RE.match(text):
            self.setFormat(0, len(text), self.heading_format)
        for span in textops.citation_spans(
            text, None if self.style == textops.NUMERIC else self.style
        ):
            fmt = self.numeric_format if span.style == textops.NUMERIC else self.cite_format
            self.setFormat(span.start, span.end - span.start, fmt)
        for m in textops.EMPTY_SLOT_RE.finditer(text):
            self.setFormat(m.start(), m.end() - m.start(), self.slot_format)
        if self.style == textops.LATEX:
            m = _LATEX_COMMENT_RE.search(text)
            if m:
                self.setFormat(m.start(), m.end() - m.start(), self.comment_format)


@dataclass
class MarginMark:
    """A missing-citation suggestion shown in the margin of a text block."""

    start: int
    end: int
    reason: str
    score: float = 0.0
    suggestions: list[str] = field(default_factory=list)


class _Margin(QWidget):
    def __init__(self, editor: ManuscriptEditor) -> None:
        super().__init__(editor)
        self.editor = editor
        self.setMouseTracking(True)

    def sizeHint(self) -> QSize:
        return QSize(self.editor.margin_width(), 0)

    def paintEvent(self, event) -> None:
        self.editor.paint_margin(event)

    def mouseMoveEvent(self, event) -> None:
        mark = self.editor.mark_at_y(event.position().y())
        self.setToolTip(mark.reason if mark else "")

    def mousePressEvent(self, event) -> None:
        mark = self.editor.mark_at_y(event.position().y())
        if mark:
            cursor = self.editor.textCursor()
            cursor.setPosition(mark.start)
            cursor.setPosition(mark.end, QTextCursor.MoveMode.KeepAnchor)
            self.editor.setTextCursor(cursor)
            self.editor.mark_clicked.emit(mark)


class ManuscriptEditor(QPlainTextEdit):
    """Plain-text manuscript editor with line numbers and missing-citation marks."""

    mark_clicked = Signal(object)

    def __init__(self, parent: QWidget | None = None, style: str = textops.LATEX) -> None:
        super().__init__(parent)
        self.setObjectName("manuscriptEditor")
        font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        font.setPointSize(max(font.pointSize(), 11))
        self.setFont(font)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.highlighter = CitationHighlighter(self.document(), style)
        self.marks: list[MarginMark] = []
        self._margin = _Margin(self)
        self.blockCountChanged.connect(self._update_margin_width)
        self.updateRequest.connect(self._update_margin)
        self._update_margin_width()

    @property
    def style(self) -> str:
        return self.highlighter.style or textops.NUMERIC

    def set_style(self, style: str) -> None:
        self.highlighter.set_style(style)

    # --- margin -------------------------------------------------------------------------------
    def margin_width(self) -> int:
        digits = len(str(max(1, self.blockCount())))
        return 18 + self.fontMetrics().horizontalAdvance("9") * digits

    def _update_margin_width(self, *_args) -> None:
        self.setViewportMargins(self.margin_width(), 0, 0, 0)

    def _update_margin(self, rect: QRect, dy: int) -> None:
        if dy:
            self._margin.scroll(0, dy)
        else:
            self._margin.update(0, rect.y(), self._margin.width(), rect.height())

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        cr = self.contentsRect()
        self._margin.setGeometry(QRect(cr.left(), cr.top(), self.margin_width(), cr.height()))

    def _marked_blocks(self) -> dict[int, MarginMark]:
        doc = self.document()
        return {doc.findBlock(m.start).blockNumber(): m for m in self.marks}

    def paint_margin(self, event) -> None:
        painter = QPainter(self._margin)
        painter.fillRect(event.rect(), QColor("#f5f5f5"))
        marked = self._marked_blocks()
        block = self.firstVisibleBlock()
        top = round(self.blockBoundingGeometry(block).translated(self.contentOffset()).top())
        height = self.fontMetrics().height()
        while block.isValid() and top <= event.rect().bottom():
            bottom = top + round(self.blockBoundingRect(block).height())
            if block.isVisible() and bottom >= event.rect().top():
                number = block.blockNumber()
                if number in marked:
                    painter.setBrush(QColor("#ef6c00"))
                    painter.setPen(Qt.PenStyle.NoPen)
                    painter.drawEllipse(3, top + height // 2 - 4, 8, 8)
                painter.setPen(QColor("#9e9e9e"))
                painter.drawText(
                    0,
                    top,
                    self._margin.width() - 3,
                    height,
                    int(Qt.AlignmentFlag.AlignRight),
                    str(number + 1),
                )
            block = block.next()
            top = bottom
        painter.end()

    def mark_at_y(self, y: float) -> MarginMark | None:
        block = self.firstVisibleBlock()
        top = self.blockBoundingGeometry(block).translated(self.contentOffset()).top()
        marked = self._marked_blocks()
        while block.isValid():
            bottom = top + self.blockBoundingRect(block).height()
            if top <= y < bottom:
                return marked.get(block.blockNumber())
            block, top = block.next(), bottom
        return None

    def set_marks(self, marks: list[MarginMark]) -> None:
        """Show missing-citation suggestions: a dot in the margin and a wavy underline."""
        self.marks = list(marks)
        selections = []
        for mark in self.marks:
            sel = QTextEdit.ExtraSelection()
            sel.format.setUnderlineStyle(QTextCharFormat.UnderlineStyle.WaveUnderline)
            sel.format.setUnderlineColor(QColor("#ef6c00"))
            sel.format.setToolTip(mark.reason)
            sel.cursor = self.textCursor()
            sel.cursor.setPosition(mark.start)
            sel.cursor.setPosition(mark.end, QTextCursor.MoveMode.KeepAnchor)
            selections.append(sel)
        self.setExtraSelections(selections)
        self._margin.update()

    # --- queries and insertion --------------------------------------------------------------------
    def selection_range(self) -> tuple[int, int]:
        cursor = self.textCursor()
        return cursor.selectionStart(), cursor.selectionEnd()

    def query_spec(self) -> textops.QuerySpec:
        start, end = self.selection_range()
        return textops.query_at(self.toPlainText(), start, end)

    def apply_edit(self, edit: textops.Edit) -> None:
        """Apply an edit as one undo step and put the cursor after it."""
        cursor = self.textCursor()
        cursor.beginEditBlock()
        cursor.setPosition(edit.start)
        cursor.setPosition(edit.end, QTextCursor.MoveMode.KeepAnchor)
        cursor.insertText(edit.replacement)
        cursor.endEditBlock()
        self.setTextCursor(cursor)

    def select_range(self, start: int, end: int) -> None:
        cursor = self.textCursor()
        cursor.setPosition(start)
        cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
        self.setTextCursor(cursor)


@dataclass
class DocumentState:
    """A tab's manuscript: its file, citation style and chosen .bib file."""

    path: Path | None = None
    style: str = textops.LATEX
    bib_path: Path | None = None
    title: str = ""
    abstract: str = ""
    read_only: bool = False
    extras: dict = field(default_factory=dict)
    text_format: TextFormat = field(
        default_factory=TextFormat
    )  # encoding/line endings kept on save

    @property
    def display_name(self) -> str:
        return self.path.name if self.path else "Untitled"
