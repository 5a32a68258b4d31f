"""Edit and Help menus, the find/replace bar, and window sizing (Qt widgets only)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence, QTextDocument
from PySide6.QtWidgets import (
    QDockWidget,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

#: Shown by Help → Keyboard shortcuts (kept next to the menus that define them).
SHORTCUTS = (
    ("Ctrl+R", "Recommend citations for the selection or the sentence at the caret"),
    ("Ctrl+Shift+R", "Go to the result cards (↑/↓ move, Enter inserts, Esc back to the text)"),
    ("Ctrl+Shift+C", "Search the library and cite a paper at the caret (title, author, key, DOI)"),
    ("Alt+1 … Alt+9", "Insert result 1 … 9"),
    ("Ctrl+Z / Ctrl+Shift+Z", "Undo / redo (an Insert, with its .bib entry, is one step)"),
    ("Ctrl+F / Ctrl+H", "Find / replace in the manuscript"),
    ("F8 / Shift+F8", "Next / previous sentence flagged as missing a citation"),
    ("Ctrl+Shift+M", "Find missing citations"),
    ("Ctrl+Shift+F", "Search the library"),
    ("Ctrl+Shift+L", "Library in a large window / back into the side panel"),
    ("Ctrl+Shift+P", "Import a manuscript PDF"),
    ("Ctrl+I", "Import files into the library"),
    ("Ctrl+,", "Settings (citation command, models, device)"),
    (
        "Esc",
        "Cancel the running recommendation; from the results or flagged list: back to the text",
    ),
    ("F1", "This help"),
)

EDITOR_MIN_WIDTH = 340
RESULTS_MIN_WIDTH = 280
LIBRARY_MIN_WIDTH = 150


class FindBar(QWidget):
    """Find / replace in the current manuscript (Ctrl+F, Ctrl+H; Esc closes)."""

    def __init__(self, window) -> None:
        super().__init__(window)
        self.window_ = window
        self.setObjectName("findBar")
        row = QHBoxLayout(self)
        row.setContentsMargins(4, 2, 4, 2)
        self.find_edit = QLineEdit()
        self.find_edit.setPlaceholderText("Find")
        self.find_edit.returnPressed.connect(self.find_next)
        self.replace_edit = QLineEdit()
        self.replace_edit.setPlaceholderText("Replace with")
        self.replace_edit.returnPressed.connect(self.replace_one)
        self.status = QLabel("")
        row.addWidget(self.find_edit, 2)
        for text, slot in (("Next", self.find_next), ("Previous", self.find_previous)):
            button = QPushButton(text)
            button.clicked.connect(slot)
            row.addWidget(button)
        row.addWidget(self.replace_edit, 2)
        for text, slot in (("Replace", self.replace_one), ("All", self.replace_all)):
            button = QPushButton(text)
            button.clicked.connect(slot)
            row.addWidget(button)
        row.addWidget(self.status)
        close = QToolButton()
        close.setText("✕")
        close.clicked.connect(self.close_bar)
        row.addWidget(close)
        self.setVisible(False)

    def open_find(self, replace: bool = False) -> None:
        editor = self.window_.documents.current_editor()
        selected = editor.textCursor().selectedText()
        if selected and "\u2029" not in selected:
            self.find_edit.setText(selected)
        self.setVisible(True)
        self.replace_edit.setVisible(True)
        (self.replace_edit if replace and self.find_edit.text() else self.find_edit).setFocus()
        self.find_edit.selectAll()

    def close_bar(self) -> None:
        self.setVisible(False)
        self.window_.documents.current_editor().setFocus()

    def keyPressEvent(self, event) -> None:
        if event.key() == Qt.Key.Key_Escape:
            self.close_bar()
            return
        super().keyPressEvent(event)

    def _find(self, backward: bool = False) -> bool:
        editor, needle = self.window_.documents.current_editor(), self.find_edit.text()
        if not needle:
            return False
        flags = QTextDocument.FindFlag.FindBackward if backward else QTextDocument.FindFlag(0)
        if editor.find(needle, flags):
            self.status.setText("")
            return True
        cursor = editor.textCursor()  # wrap around once
        cursor.movePosition(cursor.MoveOperation.End if backward else cursor.MoveOperation.Start)
        editor.setTextCursor(cursor)
        found = editor.find(needle, flags)
        self.status.setText("" if found else "not found")
        return found

    def find_next(self) -> bool:
        return self._find(False)

    def find_previous(self) -> bool:
        return self._find(True)

    def replace_one(self) -> bool:
        editor = self.window_.documents.current_editor()
        cursor = editor.textCursor()
        if cursor.hasSelection() and cursor.selectedText() == self.find_edit.text():
            cursor.insertText(self.replace_edit.text())
        return self.find_next()

    def replace_all(self) -> int:
        editor, needle = self.window_.documents.current_editor(), self.find_edit.text()
        if not needle:
            return 0
        text = editor.toPlainText()
        count = text.count(needle)
        if count:
            cursor = editor.textCursor()
            cursor.beginEditBlock()  # one undo step
            cursor.select(cursor.SelectionType.Document)
            cursor.insertText(text.replace(needle, self.replace_edit.text()))
            cursor.endEditBlock()
        self.status.setText(f"{count} replaced")
        return count


def _add(window, menu, text: str, slot, shortcut=None) -> QAction:
    action = QAction(text, window)
    if shortcut is not None:
        action.setShortcut(QKeySequence(shortcut))
    action.triggered.connect(lambda _checked=False: slot())
    menu.addAction(action)
    return action


def central_with_find_bar(window, tabs) -> QWidget:
    """The central area: manuscript tabs above the (hidden) find/replace bar."""
    central = QWidget()
    column = QVBoxLayout(central)
    column.setContentsMargins(0, 0, 0, 0)
    column.setSpacing(0)
    column.addWidget(tabs, 1)
    column.addWidget(window.find_bar)
    central.setMinimumWidth(EDITOR_MIN_WIDTH)
    return central


def build_edit_menu(window, bar) -> None:
    """Edit: undo/redo act on the current manuscript wherever the keyboard focus is."""
    menu = window.edit_menu
    window.undo_action = _add(
        window,
        menu,
        "&Undo",
        lambda: window.documents.current_editor().undo(),
        QKeySequence.StandardKey.Undo,
    )
    window.redo_action = _add(
        window,
        menu,
        "&Redo",
        lambda: window.documents.current_editor().redo(),
        QKeySequence.StandardKey.Redo,
    )
    menu.addSeparator()
    window.find_bar = FindBar(window)
    _add(window, menu, "&Find…", window.find_bar.open_find, QKeySequence.StandardKey.Find)
    _add(window, menu, "Find &next", window.find_bar.find_next, QKeySequence.StandardKey.FindNext)
    _add(
        window,
        menu,
        "Find &previous",
        window.find_bar.find_previous,
        QKeySequence.StandardKey.FindPrevious,
    )
    _add(window, menu, "R&eplace…", lambda: window.find_bar.open_find(True), "Ctrl+H")


def build_help_menu(window, bar) -> None:
    menu = bar.addMenu("&Help")
    _add(window, menu, "Cite-Assist &help", lambda: show_shortcuts(window), "F1")
    _add(window, menu, "&About Cite-Assist", lambda: show_about(window))


def shortcuts_html() -> str:
    rows = "".join(f"<tr><td><b>{k}</b></td><td>{v}</td></tr>" for k, v in SHORTCUTS)
    return f"<table cellspacing='6'>{rows}</table>"


def show_shortcuts(window):
    """F1: the help page (keyboard, workflows, what each label means)."""
    from assistant.gui.help_page import HelpDialog

    box = HelpDialog(window, SHORTCUTS)
    box.show()
    window.last_help_box = box
    return box


def about_text(window) -> str:
    """Version, the models in use and the device (what a bug report needs)."""
    import onnxruntime

    from assistant import __version__

    engine, s = window.engine, window.settings
    status = None
    try:
        status = engine.status() if engine.ready else None
    except Exception:  # a broken library: still show the rest
        status = None
    encoder = (status.model if status and status.model else s.encoder) or "minilm (default)"
    # the cross-encoder in use (the quality tier picks it), not the setting ("auto")
    reranker = (status.reranker if status and status.model else s.reranker) or "off"
    device = (
        f"{status.device.upper()} {status.precision}".strip()
        if status and status.device
        else f"{s.device} (models not loaded yet)"
    )
    return (
        f"<h3>Cite-Assist {__version__}</h3>"
        "<p>Offline citation recommendations from your own library.</p>"
        f"<p>Encoder: <b>{encoder}</b><br>Reranker: <b>{reranker}</b><br>"
        f"Quality: <b>{status.quality if status and status.quality else s.quality}</b><br>"
        f"Intent labels: <b>{'on' if s.use_intent else 'off'}</b><br>"
        f"Device: <b>{device}</b> (onnxruntime {onnxruntime.__version__}, providers "
        f"{', '.join(onnxruntime.get_available_providers())})<br>"
        f"Library: {engine.db_path}</p>" + _model_devices_html()
    )


def _model_devices_html() -> str:
    """One line per loaded model: the device it really runs on (and any CPU fallback)."""
    from html import escape

    from assistant.service.models import loaded_model_runtimes

    rows = loaded_model_runtimes()
    if not rows:
        return ""
    lines = [
        f"{escape(r['name'])}: {r['device'].upper()} {r['precision']}"
        + "".join(f" — {escape(n)}" for n in r["notes"])
        for r in rows
    ]
    return "<p>Models loaded:<br>" + "<br>".join(lines) + "</p>"


def show_about(window) -> QMessageBox:
    box = QMessageBox(QMessageBox.Icon.Information, "About Cite-Assist", about_text(window))
    box.setParent(window, box.windowFlags())
    box.setTextFormat(Qt.TextFormat.RichText)
    box.setWindowModality(Qt.WindowModality.WindowModal)
    box.open()
    window.last_help_box = box
    return box


def fit_to_screen(window) -> None:
    """Never larger than the screen's available area (QT_SCALE_FACTOR=1.5 included)."""
    screen = window.screen() or QGuiApplication.primaryScreen()
    if screen is None:
        return
    area = screen.availableGeometry()
    width = min(window.width(), area.width())
    height = min(window.height(), area.height() - 30)  # the title bar
    if (width, height) != (window.width(), window.height()):
        window.resize(width, height)
    window.setMaximumSize(16777215, 16777215)


def size_docks(window) -> None:
    """Library ~22 %, results ~34 %, the editor the rest and never below EDITOR_MIN_WIDTH."""
    width = max(window.width(), 600)
    library = window.findChild(QDockWidget, "Library")
    results = window.findChild(QDockWidget, "Recommendations")
    lib_w = max(LIBRARY_MIN_WIDTH, int(width * 0.22))
    res_w = max(RESULTS_MIN_WIDTH, int(width * 0.34))
    spare = width - EDITOR_MIN_WIDTH - 30
    if lib_w + res_w > spare:  # a narrow window: the results keep their minimum first
        res_w = max(RESULTS_MIN_WIDTH, min(res_w, spare - LIBRARY_MIN_WIDTH))
        lib_w = max(LIBRARY_MIN_WIDTH, spare - res_w)
    window.resizeDocks([library, results], [lib_w, res_w], Qt.Orientation.Horizontal)


def toggle_library_window(window) -> None:
    """The library dock as a large window of its own (most of the screen: every column, a wide
    details pane) or back in the side panel."""
    dock = window.findChild(QDockWidget, "Library")
    if dock.isFloating():
        dock.setFloating(False)
        size_docks(window)
        return
    screen = window.screen() or QGuiApplication.primaryScreen()
    area = screen.availableGeometry()
    dock.setFloating(True)
    dx, dy = area.width() // 12, area.height() // 12
    dock.setGeometry(area.adjusted(dx, dy, -dx, -dy))
    dock.show()
    dock.raise_()
    dock.activateWindow()
