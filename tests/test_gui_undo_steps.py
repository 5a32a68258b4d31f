"""Issue 31: an insert is one undo step of its own; text typed right after it is another."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt

from assistant.documents import textops


def test_typing_after_an_insert_is_a_separate_undo_step(qtbot):
    from assistant.gui.editor import ManuscriptEditor

    editor = ManuscriptEditor()
    qtbot.addWidget(editor)
    editor.show()
    text = "Dense retrieval works. End."
    editor.setPlainText(text)
    at = text.index(" works")
    editor.apply_edit(textops.Edit(at, at, " \\cite{karpukhin2020dense}"))
    inserted = editor.toPlainText()
    assert inserted == "Dense retrieval \\cite{karpukhin2020dense} works. End."
    qtbot.keyClicks(editor, " and more")  # typed right after the insert, at the caret
    assert editor.toPlainText() == inserted.replace("} works", "} and more works")
    editor.undo()
    assert editor.toPlainText() == inserted  # only the typing went
    editor.undo()
    assert editor.toPlainText() == text  # then the insert, as one step
    editor.redo()
    assert editor.toPlainText() == inserted


def test_two_inserts_undo_one_at_a_time(qtbot):
    from assistant.gui.editor import ManuscriptEditor

    editor = ManuscriptEditor()
    qtbot.addWidget(editor)
    text = "One. Two."
    editor.setPlainText(text)
    editor.apply_edit(textops.Edit(3, 3, " \\cite{a}"))
    first = editor.toPlainText()
    end = first.index(".", first.index("Two"))
    editor.apply_edit(textops.Edit(end, end, " \\cite{b}"))
    qtbot.keyClick(editor, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert editor.toPlainText() == first
