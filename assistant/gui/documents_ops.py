"""Manuscript tabs of the main window: new/open/save, .bib choice, PDF import, missing citations."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QFileDialog, QMessageBox

from assistant.gui.editor import DocumentState, ManuscriptEditor, MarginMark
from assistant.gui.flagged import count_text
from assistant.gui.settings import bib_for_manuscript, remember_bib
from assistant.service import (
    ProgressEvent,
    analyse_manuscript,
    pdf_exclusions,
    plan_citation,
    read_manuscript,
    sync_manuscript_bib,
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


def _relative_name(bib: Path, manuscript: Path | None) -> str:
    """How the manuscript names its .bib (relative to the manuscript's folder when it can)."""
    if manuscript is not None:
        try:
            return str(Path(bib).resolve().relative_to(Path(manuscript).resolve().parent))
        except ValueError:
            pass
    return str(bib)


class DocumentOps:
    """Mixed into ``MainWindow`` (needs ``tabs``, ``runner``, ``engine``, ``show_error``, ``set_status``)."""

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
        editor.marks_changed.connect(lambda _n, e=editor: self.show_flagged(e))
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
        path, _ = QFileDialog.getOpenFileName(self, "Open manuscript", "", MANUSCRIPT_FILTER)
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
        editor.mark_clicked.connect(lambda _mark: self.recommend())
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
            self, "Save manuscript", str(editor.state.path or ""), MANUSCRIPT_FILTER
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
        report = self.write_pending_bib(editor)
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
            or getattr(self, "quiet_close", False)
        ):
            return True
        answer = QMessageBox.question(
            self,
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
            self,
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
            settings = getattr(self, "settings", None)
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
        panel = getattr(self, "library_panel", None)
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

    # --- manuscript PDF -----------------------------------------------------------------------
    def import_pdf_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Import manuscript PDF", "", "PDF (*.pdf)")
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
            self.show_flagged(editor)
            editor.mark_clicked.connect(lambda _mark: self.recommend())
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
            on_progress=lambda d, t, m: self.set_status(m),
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
            self.show_flagged(editor)
            self.set_status(count_text(len(editor.marks)))

        return self.runner.submit(
            "analyse",
            job,
            on_done=done,
            on_error=lambda m, t: self.show_error("Cannot analyse the manuscript", m, t),
        )
