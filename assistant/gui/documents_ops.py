"""Manuscript tabs of the main window: new/open/save/close, manuscript PDF import, missing
citations (the documents controller; citations and the .bib file are ``citing.py``'s)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QMessageBox

from assistant.gui.editor import DocumentState, ManuscriptEditor, MarginMark
from assistant.gui.flagged import count_text
from assistant.gui.parts import WindowPart
from assistant.gui.settings import bib_for_manuscript
from assistant.service import (
    ProgressEvent,
    analyse_manuscript,
    pdf_exclusions,
    read_manuscript,
    textops,
)
from assistant.textfile import (
    BinaryFileError,
    FileRefused,
    TextFormat,
    decode_text,
    encode_text,
    max_file_bytes,
    read_file,
    unencodable,
    write_atomic,
)

MANUSCRIPT_FILTER = (
    "Manuscripts (*.tex *.md *.markdown *.txt);;LaTeX (*.tex);;Markdown (*.md);;Text (*.txt)"
)


def document_text(doc) -> str:
    """Readable text of a parsed Document (``Document.display_text``: the service's manuscript
    analysis reads the same text)."""
    return doc.display_text()


def missing_marks(text: str, missing) -> list[MarginMark]:
    """Locate missing-citation sentences in ``text`` as margin marks."""
    marks = []
    cursor = 0
    for item in missing:
        sentence = (item.sentence or "").strip()
        start, end = getattr(item, "start", None), getattr(item, "end", None)
        if start is not None and end is not None and 0 <= start < end <= len(text):
            pos, sentence = start, text[start:end]
        else:
            if not sentence:
                continue
            pos = text.find(sentence, cursor)
            if pos < 0:
                pos = text.find(sentence)
            if pos < 0:
                continue
        cursor = pos + len(sentence)
        reasons = (
            ", ".join(getattr(item, "reasons", []) or []) or "reads like a claim needing a citation"
        )
        titles = [r.title for r in (getattr(item, "recommendations", None) or [])][:3]
        tip = f"Missing citation? ({reasons}; score {item.score:.2f})"
        if titles:
            tip += "\nSuggestions:\n- " + "\n- ".join(titles)
        marks.append(MarginMark(pos, pos + len(sentence), tip, float(item.score), titles))
    return marks


class DocumentsController(WindowPart):
    """The manuscript tabs: one ``ManuscriptEditor`` per manuscript or imported PDF."""

    # --- tabs ---------------------------------------------------------------------------------
    def current_editor(self) -> ManuscriptEditor:
        editor = self.tabs.currentWidget()
        if editor is None:
            editor = self.new_document()
        return editor

    def current_state(self) -> DocumentState:
        return self.current_editor().state

    def _add_tab(self, editor: ManuscriptEditor, state: DocumentState) -> ManuscriptEditor:
        editor.state = state
        editor.marks_changed.connect(lambda _n, e=editor: self.window.flagged.show_flagged(e))
        editor.document().modificationChanged.connect(
            lambda _m, e=editor: self._update_tab_title(e)
        )
        index = self.tabs.addTab(editor, state.display_name)
        self.tabs.setCurrentIndex(index)
        editor.setFocus()
        return editor

    def _update_tab_title(self, editor: ManuscriptEditor) -> None:
        index = self.tabs.indexOf(editor)
        if index >= 0:
            star = "*" if editor.document().isModified() else ""
            self.tabs.setTabText(index, editor.state.display_name + star)

    def new_document(self) -> ManuscriptEditor:
        editor = ManuscriptEditor(style=textops.LATEX)
        return self._add_tab(editor, DocumentState(style=textops.LATEX))

    def open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.window, "Open manuscript", "", MANUSCRIPT_FILTER)
        if path:
            self.open_file(Path(path))

    def open_file(self, path: Path) -> ManuscriptEditor | None:
        """Open a manuscript (.tex/.md/.txt) in a new tab (or focus it if already open)."""
        path = Path(path).resolve()
        for i in range(self.tabs.count()):
            if getattr(self.tabs.widget(i).state, "path", None) == path:
                self.tabs.setCurrentIndex(i)
                return self.tabs.widget(i)
        try:
            text, text_format = decode_text(read_file(path, limit=max_file_bytes(64 * 2**20)))
        except FileRefused as exc:
            self.show_error("Cannot open the manuscript", str(exc))
            return None
        except BinaryFileError as exc:
            self.show_error("Cannot open the manuscript", f"{path}: {exc}")
            return None
        style = textops.style_for_path(path)
        editor = ManuscriptEditor(style=style)
        editor.setPlainText(text)
        editor.document().setModified(False)
        state = DocumentState(
            path=path, style=style, bib_path=bib_for_manuscript(path), text_format=text_format
        )
        if state.bib_path is None:
            state.bib_path = textops.bib_from_manuscript(text, path, style)
        current = self.tabs.currentWidget()
        if current is not None and current.state.path is None and not current.toPlainText():
            self.tabs.removeTab(self.tabs.indexOf(current))  # replace the empty Untitled tab
        self.set_status(
            f"Opened {path}"
            + (
                ""
                if text_format == TextFormat()
                else f" ({text_format.describe()}, kept when saved)"
            )
        )
        self._add_tab(editor, state)
        editor.mark_clicked.connect(lambda _mark: self.window.recommender.recommend())
        if style in (textops.LATEX, textops.MARKDOWN):
            self.find_missing(editor)
        return editor

    def save_current(self) -> bool:
        editor = self.current_editor()
        if editor.state.read_only:
            return self.save_as_dialog()
        if editor.state.path is None:
            return self.save_as_dialog()
        return self._write(editor, editor.state.path)

    def save_as_dialog(self) -> bool:
        editor = self.current_editor()
        path, _ = QFileDialog.getSaveFileName(
            self.window, "Save manuscript", str(editor.state.path or ""), MANUSCRIPT_FILTER
        )
        if not path:
            return False
        editor.state.path = Path(path).resolve()
        editor.state.read_only = False
        editor.setReadOnly(False)
        editor.state.style = textops.style_for_path(path)
        editor.set_style(editor.state.style)
        return self._write(editor, editor.state.path)

    def _write(self, editor: ManuscriptEditor, path: Path) -> bool:
        from dataclasses import replace

        text, fmt = editor.toPlainText(), editor.state.text_format
        lost, was = unencodable(text, fmt), fmt.encoding
        if lost:  # never drop what the user typed: switch this file to UTF-8 and say so
            fmt = replace(fmt, encoding="utf-8", bom=b"")
        try:
            write_atomic(path, encode_text(text, fmt), library=self.engine.db_path)
        except FileRefused as exc:  # read-only file, FIFO, the library...: one clear line
            self.show_error("Cannot save", str(exc))
            return False
        except OSError as exc:
            self.show_error("Cannot save", f"{path}: {exc}")
            return False
        editor.state.text_format = fmt
        editor.document().setModified(False)
        self._update_tab_title(editor)
        report = self.window.citations.write_pending_bib(editor)
        bib_note = f"; {report.message()}" if report is not None and report.message() else ""
        self.set_status(f"Saved {path}{bib_note}")
        if lost:
            chars = " ".join(lost[:10])
            self.show_error(
                "Saved as UTF-8",
                f"{path.name} was stored in {was}, which cannot store some of "
                f"its characters now ({chars}); it was saved "
                "as UTF-8. If the LaTeX preamble says \\usepackage[latin1]{inputenc}, change it to utf8.",
                icon=QMessageBox.Icon.Warning,
            )
        return True

    def close_tab(self, index: int) -> None:
        editor = self.tabs.widget(index)
        if editor is not None and not self._maybe_save(editor):
            return
        self.tabs.removeTab(index)
        if self.tabs.count() == 0:
            self.new_document()

    def _maybe_save(self, editor: ManuscriptEditor) -> bool:
        if (
            not editor.document().isModified()
            or editor.state.read_only
            or getattr(self.window, "quiet_close", False)
        ):
            return True
        answer = QMessageBox.question(
            self.window,
            "Unsaved changes",
            f"Save the changes to {editor.state.display_name}?",
            QMessageBox.StandardButton.Save
            | QMessageBox.StandardButton.Discard
            | QMessageBox.StandardButton.Cancel,
        )
        if answer == QMessageBox.StandardButton.Save:
            self.tabs.setCurrentWidget(editor)
            return self.save_current()
        return answer == QMessageBox.StandardButton.Discard

    def maybe_save_all(self) -> bool:
        return all(self._maybe_save(self.tabs.widget(i)) for i in range(self.tabs.count()))

    # --- manuscript PDF -----------------------------------------------------------------------
    def import_pdf_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self.window, "Import manuscript PDF", "", "PDF (*.pdf)"
        )
        if path:
            self.import_pdf(Path(path))

    def import_pdf(self, path: Path) -> int:
        """Extract a manuscript PDF in the background; show it with citations and missing-citation marks."""
        path = Path(path)

        def job(progress, cancelled):
            progress(ProgressEvent(0, None, "pdf", f"Reading {path.name}…"))
            doc = read_manuscript(path, "pdf")
            try:
                self_ids, cited_ids = pdf_exclusions(self.engine, doc)
            except Exception:  # linking helps; never a reason to lose the PDF
                self_ids, cited_ids = (), ()
            progress(
                ProgressEvent(0, None, "analyse", "Looking for sentences that need a citation…")
            )
            analysis = analyse_manuscript(
                self.engine, doc, recommend=self.engine.ready, cancelled=cancelled
            )
            return doc, analysis.missing, self_ids, cited_ids

        def done(payload) -> None:
            doc, missing, self_ids, cited_ids = payload
            text = document_text(doc)
            editor = ManuscriptEditor(style=textops.NUMERIC)
            editor.setPlainText(text)
            editor.document().setModified(False)
            editor.setReadOnly(False)
            state = DocumentState(
                path=None,
                style=textops.NUMERIC,
                title=doc.title,
                abstract=doc.abstract,
                read_only=True,
                extras={"pdf": str(path), "doc": doc, "self_ids": self_ids, "cited_ids": cited_ids},
            )
            self._add_tab(editor, state)
            self.tabs.setTabText(self.tabs.indexOf(editor), f"{path.name} (PDF)")
            editor.set_marks(missing_marks(text, missing))
            self.window.flagged.show_flagged(editor)
            editor.mark_clicked.connect(lambda _mark: self.window.recommender.recommend())
            warn = f" — {len(doc.warnings)} warning(s)" if doc.warnings else ""
            self.set_status(
                f"{path.name}: {sum(1 for _ in doc.sentences())} sentences, "
                f"{len(doc.citing_sentences())} with citations; {count_text(len(editor.marks))}"
                f"{warn}"
            )

        def failed(message, trace) -> None:
            self.show_error("Cannot import the PDF", f"{path.name}: {message}", trace)

        self.set_status(f"Reading {path.name}…")
        return self.runner.submit(
            "pdf",
            job,
            on_done=done,
            on_error=failed,
            on_progress=lambda e: self.set_status(e.message),
        )

    def find_missing(self, editor: ManuscriptEditor | None = None) -> int | None:
        """Mark sentences of a manuscript that read as needing a citation (background job)."""
        editor = editor or self.current_editor()
        state = editor.state
        text = editor.toPlainText()
        pdf_doc = state.extras.get("doc")  # a PDF tab: the same analysis as on load, same count

        def job(progress, cancelled):
            if pdf_doc is not None:  # a PDF tab: the same analysis as on load, same count
                return analyse_manuscript(None, pdf_doc, cancelled=cancelled).missing
            return analyse_manuscript(None, text, fmt=state.style, cancelled=cancelled).missing

        def done(missing) -> None:
            if editor.toPlainText() != text:
                return  # edited meanwhile: offsets are stale
            editor.set_marks(missing_marks(text, missing))
            self.window.flagged.show_flagged(editor)
            self.set_status(count_text(len(editor.marks)))

        return self.runner.submit(
            "analyse",
            job,
            on_done=done,
            on_error=lambda m, t: self.show_error("Cannot analyse the manuscript", m, t),
        )
