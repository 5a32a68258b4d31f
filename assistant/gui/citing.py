"""Citing from the main window: the manuscript's .bib file, Insert (a result, Alt+n, a paper
picked in the library) at the sentence the results are for, Copy BibTeX, and the .bib sync on
save (the citations controller)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QFileDialog

from assistant.gui.editor import DocumentState, ManuscriptEditor
from assistant.gui.parts import WindowPart
from assistant.gui.settings import remember_bib
from assistant.service import plan_citation, sync_manuscript_bib, textops


@dataclass
class PickedPaper:
    """A paper chosen in the library (picker, table) where a recommendation is expected."""

    paper: object


def _relative_name(bib: Path, manuscript: Path | None) -> str:
    """How the manuscript names its .bib (relative to the manuscript's folder when it can)."""
    if manuscript is not None:
        try:
            return str(Path(bib).resolve().relative_to(Path(manuscript).resolve().parent))
        except ValueError:
            pass
    return str(bib)


class CitationController(WindowPart):
    """Where citations go and how they are inserted; ``anchor`` is the sentence the shown
    results were computed for (set by the recommend controller)."""

    def __init__(self, window) -> None:
        super().__init__(window)
        self.anchor = None
        self.cite_picker = None
        self._cited_watch = None

    # --- bibliography file --------------------------------------------------------------------
    def bib_path_for(self, state: DocumentState) -> Path | None:
        """The manuscript's .bib file, asked once per manuscript and remembered."""
        if state.bib_path is None:
            self.choose_bib_dialog(state)
        return state.bib_path

    def choose_bib_dialog(self, state: DocumentState | None = None) -> None:
        state = state or self.current_state()
        start = str(
            state.bib_path or (state.path.with_suffix(".bib") if state.path else "references.bib")
        )
        path, _ = QFileDialog.getSaveFileName(
            self.window,
            "Bibliography file for this manuscript",
            start,
            "BibTeX (*.bib)",
            options=QFileDialog.Option.DontConfirmOverwrite,
        )
        if path:
            self.set_bib_path(state, Path(path))

    def set_bib_path(self, state: DocumentState, path: Path) -> None:
        state.bib_path = Path(path).resolve()
        if state.path is not None:
            remember_bib(state.path, state.bib_path)
        self.set_status(f"Citations go to {state.bib_path}")

    # --- insert / copy ------------------------------------------------------------------------
    def insert_recommendation(self, rec) -> bool:
        """Insert the citation (one undo step) and queue its .bib entry for the next save.

        The .bib file is written when the manuscript is saved, with the entries of the
        citations still in the text then: undoing an Insert so also drops its entry, and
        nothing touches the .bib before the draft itself is saved.
        """
        editor, state = self.current_editor(), self.current_state()
        paper = rec.paper
        if state.read_only:
            self.show_error(
                "Read-only text", "Citations are inserted into manuscripts, not into imported PDFs."
            )
            return False
        bib = self.bib_path_for(state)
        if bib is None:
            return False
        editor_range = editor.selection_range()
        where = self.anchored_range(editor, rec)
        if where is None:
            return False
        start, end = where
        try:
            settings = getattr(self.window, "settings", None)
            plan = plan_citation(
                self.engine,
                rec.paper,
                editor.toPlainText(),
                start,
                end,
                state.style,
                bib,
                command=getattr(settings, "cite_command", "\\cite"),
                markdown_form=getattr(settings, "markdown_cite", textops.PANDOC_MERGED),
                pending=list(state.pending_bib),
            )
        except Exception as exc:
            self.show_error("Cannot update the bibliography", f"{bib}: {exc}")
            return False
        key = plan.key
        if plan.bib.writes and key not in state.pending_bib:
            state.pending_bib[key] = self.engine.paper_bibtex(paper)
        text = editor.toPlainText()
        edits = [plan.edit]
        if state.style == textops.MARKDOWN:
            front = textops.front_matter_edit(text, _relative_name(bib, state.path))
            if front is not None:
                edits.append(front)
        editor.apply_edits(edits)
        self.follow_anchor(editor, text, plan.edit)
        editor.setFocus()  # Ctrl+Z right after a click on Insert undoes it
        if plan.bib.writes:
            where = f"{bib.name} gets its entry when you save the manuscript"
        else:
            where = f"entry already in {bib.name}"
        moved = (start, end) != editor_range
        self.set_status(
            f"Cited {key}; {where} (Ctrl+Z undoes both)"
            + (
                "; inserted in the sentence the results are for (the caret had moved)"
                if moved
                else ""
            )
        )
        self.watch_citation(editor, key)
        return True

    def write_pending_bib(self, editor: ManuscriptEditor):
        """On save: the .bib holds the entries of every cited key the library knows, the app's
        entries of keys no longer cited go (``sync_manuscript_bib``); returns its report."""
        state = editor.state
        if state.bib_path is None:
            state.pending_bib.clear()
            return None
        panel = getattr(self.window, "library_panel", None)
        try:
            report = sync_manuscript_bib(
                self.engine,
                state.bib_path,
                editor.toPlainText(),
                state.style,
                state.pending_bib,
                library=getattr(panel, "library", None),
            )
        except Exception as exc:
            self.show_error("Cannot update the bibliography", f"{state.bib_path}: {exc}")
            return None
        state.pending_bib.clear()
        return report

    def copy_bibtex(self, rec) -> str:
        text = self.engine.paper_bibtex(rec.paper)
        QGuiApplication.clipboard().setText(text)
        self.set_status(f"BibTeX of {rec.paper.citekey} copied to the clipboard")
        return text

    def insert_result(self, n: int) -> bool:
        """Insert the ``n``-th visible recommendation (Alt+n)."""
        cards = self.results_panel.cards
        return self.insert_recommendation(cards[n - 1].rec) if 0 < n <= len(cards) else False

    # --- citing a known paper ------------------------------------------------------------------
    def cite_paper(self, paper) -> bool:
        """Cite ``paper`` at the cursor with the same insertion path as a recommendation."""
        if paper is None:
            return False
        return self.insert_recommendation(PickedPaper(paper))

    def search_and_cite(self):
        """Ctrl+Shift+C: the quick picker; the chosen paper is cited at the cursor."""
        from assistant.gui.library_dialogs import CitePicker

        library = self.library_panel.library
        if library is None:
            self.show_error("No library", "Open or import a library first.")
            return None
        picker = CitePicker(library, self.window)
        picker.accepted.connect(lambda: self.cite_paper(picker.chosen))
        picker.open()
        self.cite_picker = picker
        return picker

    def anchored_range(self, editor, rec) -> tuple[int, int] | None:
        """Where ``rec`` is cited: the caret/selection for a paper picked by hand; for a result,
        the sentence its list was computed for, wherever the caret is now. None (with a notice)
        when that sentence was edited or is in another tab."""
        current = editor.selection_range()
        anchor = self.anchor
        if isinstance(rec, PickedPaper) or anchor is None:
            return current
        where = anchor.locate(editor.toPlainText()) if anchor.editor is editor else None
        if where is None:
            self.results_panel.set_message(
                "⚠ The sentence these results were computed for was edited or is in another tab: "
                "nothing was inserted. Place the cursor and press Recommend (Ctrl+R) again."
            )
            self.set_status("Not inserted: the results are for a sentence that changed")
            return None
        start, end = where
        if start <= current[0] <= end and start <= current[1] <= end:
            return current  # the caret is still in that sentence
        return where

    def follow_anchor(self, editor, before: str, edit) -> None:
        """After an Insert into the anchored sentence (``before``: the text before it), the anchor
        covers the sentence with its new citation: the list's next result goes there too."""
        anchor = self.anchor
        where = anchor.locate(before) if anchor is not None and anchor.editor is editor else None
        if where is None or not (where[0] <= edit.start <= where[1] + 1):
            return
        delta = len(edit.replacement) - (edit.end - edit.start)
        start, end = where[0], max(where[1] + delta, where[0])
        anchor.moved_to(start, end, editor.toPlainText()[start:end])

    def watch_citation(self, editor, key: str) -> None:
        """Keep "Cited KEY" in the status line only while the citation is in the text."""
        self._cited_watch = (editor, key)
        if not getattr(editor, "_cited_watch_on", False):
            editor.textChanged.connect(lambda e=editor: self._check_citation(e))
            editor._cited_watch_on = True

    def _check_citation(self, editor) -> None:
        watch = self._cited_watch
        if not watch or watch[0] is not editor:
            return
        key = watch[1]
        if not self.window.status_label.text().startswith(f"Cited {key}"):
            self._cited_watch = None  # the status moved on: stop watching
            return
        if key not in textops.cited_keys(editor.toPlainText(), editor.state.style):
            self._cited_watch = None
            self.set_status(f"Citation of {key} undone (its .bib entry is not written)")
