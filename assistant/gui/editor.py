"""The manuscript editor: citation highlighting, a margin with missing-citation marks."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
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

from assistant.gui import qtext
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

    def _format(self, text: str, start: int, end: int, fmt: QTextCharFormat) -> None:
        """``setFormat`` for a code-point span (Qt wants UTF-16 positions)."""
        self.setFormat(*qtext.span_to_qt(text, start, end), fmt)

    def highlightBlock(self, text: str) -> None:
        if self.style == textops.LATEX:
            for m in _LATEX_COMMAND_RE.finditer(text):
                self._format(text, m.start(), m.end(), self.command_format)
        if self.style == textops.MARKDOWN and _MD_HEADING_RE.match(text):
            self._format(text, 0, len(text), self.heading_format)
        for span in textops.citation_spans(
            text, None if self.style == textops.NUMERIC else self.style
        ):
            fmt = self.numeric_format if span.style == textops.NUMERIC else self.cite_format
            self._format(text, span.start, span.end, fmt)
        for m in textops.EMPTY_SLOT_RE.finditer(text):
            self._format(text, m.start(), m.end(), self.slot_format)
        if self.style == textops.LATEX:
            m = _LATEX_COMMENT_RE.search(text)
            if m:
                self._format(text, m.start(), m.end(), self.comment_format)


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
            self.editor.select_range(mark.start, mark.end)
            self.editor.mark_clicked.emit(mark)


class ManuscriptEditor(QPlainTextEdit):
    """Plain-text manuscript editor with line numbers and missing-citation marks."""

    mark_clicked = Signal(object)
    marks_changed = Signal(int)  # how many missing-citation marks are left

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
        self._text_len = 0
        self.document().contentsChange.connect(self._contents_changed)
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
        doc, text = self.document(), self.toPlainText()
        return {doc.findBlock(qtext.to_qt(text, m.start)).blockNumber(): m for m in self.marks}

    def _contents_changed(self, qpos: int, removed: int, added: int) -> None:
        """Keep missing-citation marks on their sentences: an edit inside a marked sentence
        (such as an inserted citation) removes its mark; marks after the edit move with it."""
        text = self.toPlainText()
        delta, self._text_len = len(text) - self._text_len, len(text)
        if not self.marks:
            return
        pos = qtext.to_py(text, qpos)
        hit_end = pos + removed  # old coordinates (UTF-16 count: close enough for a bound)
        kept = []
        for mark in self.marks:
            if mark.end < pos:
                kept.append(mark)
            elif mark.start >= hit_end and mark.start + delta >= 0:
                kept.append(replace(mark, start=mark.start + delta, end=mark.end + delta))
        if len(kept) != len(self.marks) or delta:
            self.set_marks(kept)
            self.marks_changed.emit(len(kept))

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
        self.marks = sorted(marks, key=lambda m: m.start)
        text = self.toPlainText()
        selections = []
        for mark in self.marks:
            sel = QTextEdit.ExtraSelection()
            sel.format.setUnderlineStyle(QTextCharFormat.UnderlineStyle.WaveUnderline)
            sel.format.setUnderlineColor(QColor("#ef6c00"))
            sel.format.setToolTip(mark.reason)
            sel.cursor = self.textCursor()
            sel.cursor.setPosition(qtext.to_qt(text, mark.start))
            sel.cursor.setPosition(qtext.to_qt(text, mark.end), QTextCursor.MoveMode.KeepAnchor)
            selections.append(sel)
        self.setExtraSelections(selections)
        self._margin.update()

    # --- queries and insertion --------------------------------------------------------------------
    def selection_range(self) -> tuple[int, int]:
        """The selection (or caret) as code-point offsets into ``toPlainText()``."""
        cursor, text = self.textCursor(), self.toPlainText()
        return qtext.to_py(text, cursor.selectionStart()), qtext.to_py(text, cursor.selectionEnd())

    def apply_edit(self, edit: textops.Edit) -> None:
        """Apply an edit as one undo step and put the cursor after it."""
        self.apply_edits([edit])

    def apply_edits(self, edits: list[textops.Edit]) -> None:
        """Apply non-overlapping code-point edits as ONE undo step; the cursor ends after the
        last-positioned one."""
        text = self.toPlainText()
        cursor = self.textCursor()
        cursor.beginEditBlock()
        after = None
        for edit in sorted(edits, key=lambda e: e.start, reverse=True):
            cursor.setPosition(qtext.to_qt(text, edit.start))
            cursor.setPosition(qtext.to_qt(text, edit.end), QTextCursor.MoveMode.KeepAnchor)
            cursor.insertText(edit.replacement)
            if after is None:
                after = cursor.position()
        # Qt merges an insertion typed right after a block that ended with an insertion into
        # that block's undo step: end the block with a removal so typing is a step of its own
        cursor.insertText("\u200b")
        cursor.deletePreviousChar()
        cursor.endEditBlock()
        if after is not None:
            shift = sum(
                qtext.qt_length(e.replacement)
                - (qtext.to_qt(text, e.end) - qtext.to_qt(text, e.start))
                for e in edits
                if e.start < max(x.start for x in edits)
            )
            cursor.setPosition(after + shift)
        self.setTextCursor(cursor)

    def select_range(self, start: int, end: int) -> None:
        """Select ``[start, end)`` given as code-point offsets into ``toPlainText()``."""
        text = self.toPlainText()
        cursor = self.textCursor()
        cursor.setPosition(qtext.to_qt(text, start))
        cursor.setPosition(qtext.to_qt(text, end), QTextCursor.MoveMode.KeepAnchor)
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
    #: .bib entries of inserted citations, written when the manuscript is saved (only those
    #: still cited then): ``key -> BibTeX text``. Undoing an Insert so drops its entry too.
    pending_bib: dict[str, str] = field(default_factory=dict)
    text_format: TextFormat = field(
        default_factory=TextFormat
    )  # encoding/line endings kept on save

    @property
    def display_name(self) -> str:
        return self.path.name if self.path else "Untitled"
