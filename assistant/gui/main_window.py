"""The main window: manuscript tabs, library panel, results panel, background jobs."""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QAction, QIcon, QKeySequence
from PySide6.QtWidgets import (
    QComboBox,
    QDockWidget,
    QFileDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QTabBar,
    QTabWidget,
    QToolBar,
    QWidget,
)

from assistant.config import RESOURCES_DIR
from assistant.gui.anchoring import Anchor, index_notice, shown_query
from assistant.gui.documents_ops import DocumentOps
from assistant.gui.flagged import FlaggedList, count_text
from assistant.gui.library_panel import LibraryPanel
from assistant.gui.library_watch import LibraryWatch
from assistant.gui.menus import (
    LIBRARY_MIN_WIDTH,
    RESULTS_MIN_WIDTH,
    build_edit_menu,
    build_help_menu,
    central_with_find_bar,
    fit_to_screen,
    size_docks,
    toggle_library_window,
)
from assistant.gui.results_panel import ResultsPanel, _esc
from assistant.gui.settings import AppSettings, SettingsDialog, load_settings, save_settings
from assistant.gui.workers import JobRunner
from assistant.service import (
    IMPORTED_STAGE,
    MODES,
    LibraryOpenError,
    RequestOptions,
    Service,
    ServiceSettings,
    import_summary,
    manuscript_cited_ids,
    query_for_selection,
    textops,
)

log = logging.getLogger(__name__)

#: papers per embedding batch in the GUI: Cancel acts between batches (about a second on a CPU)
INDEX_BATCH = 8

ICON_PATH = RESOURCES_DIR / "icons" / "cite-assist.svg"


@dataclass
class PickedPaper:
    """A paper chosen in the library (picker, table) where a recommendation is expected."""

    paper: object


class MainWindow(QMainWindow, DocumentOps):
    """Cite-Assist's main window. Every slow call runs on the engine thread (``self.runner``)."""

    recommendations_ready = Signal(object)  # RecommendationResult (for tests and status)
    engine_ready = Signal(object)  # IndexStatus
    error_shown = Signal(str)

    def __init__(self, settings: AppSettings | None = None) -> None:
        super().__init__()
        self.settings = settings or load_settings()
        self.setWindowTitle("Cite-Assist")
        if ICON_PATH.exists():
            self.setWindowIcon(QIcon(str(ICON_PATH)))
        self.resize(1400, 860)
        self.runner = JobRunner(self)  # engine jobs: models, import, index, adapt, analysis
        self.rec_runner = JobRunner(self)  # recommendations only: never wait behind a job
        self.engine = Service(self._engine_settings())
        self.last_result = None
        self.last_error_dialog: QMessageBox | None = None
        self.cited_ids: tuple[int, ...] = ()

        self.tabs = QTabWidget()
        self.tabs.setTabsClosable(True)
        self.tabs.setDocumentMode(True)
        self.tabs.tabCloseRequested.connect(self.close_tab)
        self.setCentralWidget(self.tabs)

        self.library_panel = LibraryPanel()
        self.library_panel.import_requested.connect(self.import_library_dialog)
        self.library_panel.rebuild_requested.connect(self.rebuild_index)
        self.library_panel.cite_requested.connect(self.cite_paper)
        self.library_panel.cancel_button.clicked.connect(lambda: self.runner.cancel("engine"))
        self.library_panel.index_now_requested.connect(self.rebuild_index)
        self._dock(self.library_panel, "Library", Qt.DockWidgetArea.LeftDockWidgetArea)
        self.results_panel = ResultsPanel()
        self.results_panel.insert_requested.connect(self.insert_recommendation)
        self.results_panel.copy_requested.connect(self.copy_bibtex)
        self.results_panel.need_changed.connect(self._need_changed)
        # "Hide cited" is the service's exclusion rule (exclude_cited): recommend again
        self.results_panel.exclude_cited.toggled.connect(lambda _on: self._need_changed(""))
        self._dock(self.results_panel, "Recommendations", Qt.DockWidgetArea.RightDockWidgetArea)
        self.results_panel.leave_requested.connect(self.back_to_text)
        self.flagged_list = FlaggedList()
        self.flagged_list.activated.connect(self.go_to_mark)
        self._dock(self.flagged_list, "Flagged sentences", Qt.DockWidgetArea.LeftDockWidgetArea)
        self.tabifyDockWidget(
            self.findChild(QDockWidget, "Library"), self.findChild(QDockWidget, "Flagged sentences")
        )
        self.findChild(QDockWidget, "Library").raise_()
        self.tabs.currentChanged.connect(lambda _i: self.show_flagged())

        self._build_actions()
        self.setCentralWidget(central_with_find_bar(self, self.tabs))
        self.library_panel.setMinimumWidth(LIBRARY_MIN_WIDTH)
        self.results_panel.setMinimumWidth(RESULTS_MIN_WIDTH)
        self.status_label = QLabel("Ready")
        self.status_progress = QProgressBar()
        self.status_progress.setMaximumWidth(220)
        self.status_progress.setVisible(False)
        self.statusBar().addWidget(self.status_label, 1)
        self.statusBar().addPermanentWidget(self.status_progress)
        self.runner.busy_changed.connect(self._busy_changed)
        self.runner.stage_reached.connect(self._stage_reached)
        self.rec_runner.busy_changed.connect(self._busy_changed)
        self._restore_filters()
        self.new_document()
        # other programs' changes to the library (CLI, language server): refresh (issue 31)
        self.library_watch = LibraryWatch(self)

    # --- construction -------------------------------------------------------------------------
    def _engine_settings(self) -> ServiceSettings:
        s = self.settings
        return ServiceSettings(
            db_path=s.db_path,
            encoder=s.encoder or None,
            device=s.device,
            reranker=None if s.reranker == "off" else s.reranker,
            ranker=s.ranker,
            use_intent=s.use_intent,
            authors=tuple(n.strip() for n in s.my_names.split(";") if n.strip()),
            index_batch_size=INDEX_BATCH,
        )

    def _dock(self, widget: QWidget, title: str, area) -> None:
        dock = QDockWidget(title, self)
        dock.setObjectName(title)
        dock.setWidget(widget)
        dock.setFeatures(
            QDockWidget.DockWidgetFeature.DockWidgetMovable
            | QDockWidget.DockWidgetFeature.DockWidgetFloatable
        )
        self.addDockWidget(area, dock)

    def _action(self, menu, text: str, slot, shortcut=None, tip: str = "") -> QAction:
        action = QAction(text, self)
        if shortcut:
            action.setShortcut(QKeySequence(shortcut))
        if tip:
            action.setStatusTip(tip)
        action.triggered.connect(lambda _checked=False: slot())
        menu.addAction(action)
        return action

    def _build_actions(self) -> None:
        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        self._action(file_menu, "&New", self.new_document, QKeySequence.StandardKey.New)
        self._action(
            file_menu, "&Open manuscript…", self.open_dialog, QKeySequence.StandardKey.Open
        )
        self._action(file_menu, "&Save", self.save_current, QKeySequence.StandardKey.Save)
        self._action(file_menu, "Save &as…", self.save_as_dialog, QKeySequence.StandardKey.SaveAs)
        file_menu.addSeparator()
        self.pdf_action = self._action(
            file_menu, "Import manuscript &PDF…", self.import_pdf_dialog, "Ctrl+Shift+P"
        )
        self._action(file_menu, "Choose the &bibliography file…", self.choose_bib_dialog)
        file_menu.addSeparator()
        self._action(file_menu, "&Quit", self.close, QKeySequence.StandardKey.Quit)
        lib_menu = bar.addMenu("&Library")
        self._action(
            lib_menu, "Import &files…", lambda: self.import_library_dialog("files"), "Ctrl+I"
        )
        self._action(lib_menu, "Import a f&older…", lambda: self.import_library_dialog("folder"))
        self._action(lib_menu, "Import from &Zotero…", lambda: self.import_library_dialog("zotero"))
        self._action(
            lib_menu,
            "Library in a &large window",
            lambda: toggle_library_window(self),
            "Ctrl+Shift+L",
            "The library table in a window of its own (again: back into the side panel)",
        )
        self._action(
            lib_menu,
            "&Export library…",
            lambda: self.library_panel.export_papers(),
            tip="Write the whole library as BibTeX, RIS or CSL-JSON (by the file's extension)",
        )
        self._action(lib_menu, "Find &duplicates…", self.library_panel.duplicates_dialog)
        self._action(
            lib_menu, "Citation &keys (pattern, regenerate)…", self.library_panel.citekey_dialog
        )
        lib_menu.addSeparator()
        self._action(lib_menu, "&Rebuild index", self.rebuild_index)
        self._action(
            lib_menu,
            "&Adapt to my library…",
            self.adapt_to_library,
            tip="Fine-tune the search model on this library's citations, then re-index",
        )
        self._action(lib_menu, "&Settings…", self.settings_dialog, "Ctrl+,")
        self.edit_menu = bar.addMenu("&Edit")
        rec_menu = bar.addMenu("&Recommend")
        self.recommend_action = self._action(
            rec_menu,
            "&Recommend citations",
            self.recommend,
            "Ctrl+R",
            "Recommend citations for the selection or the sentence at the cursor",
        )
        self._action(rec_menu, "Find &missing citations", self.find_missing, "Ctrl+Shift+M")
        self._action(
            rec_menu,
            "&Search and cite…",
            self.search_and_cite,
            "Ctrl+Shift+C",
            "Find a paper of the library by title, author, key or DOI and cite it at the cursor",
        )
        self._action(rec_menu, "&Cancel", self.escape, "Esc")
        rec_menu.addSeparator()
        for n in range(1, 10):
            action = self._action(
                rec_menu, f"Insert result &{n}", lambda n=n: self.insert_result(n), f"Alt+{n}"
            )
            action.setVisible(n <= 3)  # all nine shortcuts work; the menu lists three
        self._action(
            rec_menu,
            "Focus the library &search",
            self.library_panel.search_edit.setFocus,
            "Ctrl+Shift+F",
        )
        self._action(
            rec_menu,
            "Go to the &results",
            self.focus_results,
            "Ctrl+Shift+R",
            "Move the keyboard to the result cards (arrows move, Enter inserts, Esc returns)",
        )
        self._action(rec_menu, "Next &flagged sentence", self.next_flagged, "F8")
        self._action(rec_menu, "Previous flagged sentence", self.previous_flagged, "Shift+F8")
        build_edit_menu(self, bar)
        build_help_menu(self, bar)

        toolbar = QToolBar("Main")
        toolbar.setObjectName("mainToolbar")
        toolbar.setMovable(False)
        self.addToolBar(toolbar)
        self.recommend_button = QPushButton("Recommend")
        self.recommend_button.setObjectName("recommendButton")
        self.recommend_button.setToolTip("Recommend citations (Ctrl+R)")
        self.recommend_button.clicked.connect(self.recommend)
        toolbar.addWidget(self.recommend_button)
        toolbar.addWidget(QLabel("  Mode: "))
        self.mode_box = QComboBox()
        for mode in MODES:
            self.mode_box.addItem(mode.capitalize(), mode)
        self.mode_box.setToolTip(
            "Auto (as the CLI): one or two sentences → local, three or more → paragraph; "
            "Global searches with the manuscript's title + abstract"
        )
        toolbar.addWidget(self.mode_box)
        self.mode_label = QLabel("")
        toolbar.addWidget(self.mode_label)

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
        picker = CitePicker(library, self)
        picker.accepted.connect(lambda: self.cite_paper(picker.chosen))
        picker.open()
        self.cite_picker = picker
        return picker

    # --- engine lifecycle ---------------------------------------------------------------------
    def start(self, prepare: bool = True) -> None:
        """Open the library in the panel and load assistant/models/index in the background."""
        try:
            self.library_panel.set_library_path(self.engine.db_path)
        except (
            LibraryOpenError,
            OSError,
        ) as exc:  # e.g. Settings pointed at another program's database
            self.library_panel.library = None
            self.show_error(
                "Cannot open the library", f"{exc}\n\nChoose another library file in Settings."
            )
            return
        self._show_index_state()  # "Index now" from the start when the library has no index
        if prepare:
            self.run_engine_job(
                lambda p, c: self.engine.prepare(p, c),
                "Loading models and index…",
                on_done=self._engine_prepared,
            )

    def run_engine_job(self, fn, message: str, on_done=None) -> int:
        self.set_status(message)
        self.library_panel.show_progress(0, 0, message)
        return self.runner.submit(
            "engine",
            fn,
            on_done=on_done,
            on_error=self._job_failed,
            on_progress=self._engine_progress,
            on_cancel=self._engine_cancelled,
        )

    def _engine_progress(self, done, total, message) -> None:
        self.library_panel.show_progress(done, total, message)
        self.set_status(message)

    def _stage_reached(self, channel: str, stage: str, message: str) -> None:
        """An import committed inside a longer job: show the papers and the summary now."""
        if channel == "engine" and stage == IMPORTED_STAGE:
            self.library_panel.refresh()
            self._show_index_state()
            self.library_panel.set_summary(message)
            self.set_status(message)

    def _engine_prepared(self, status) -> None:
        self.library_panel.hide_progress()
        self.library_panel.refresh()
        if status is not None:
            self.library_panel.set_status(status)
        self._show_index_state()
        self.set_status(
            "Ready" if status and status.papers else "The library is empty: import papers first"
        )
        self.engine_ready.emit(status)

    def _engine_cancelled(self) -> None:
        self.library_panel.hide_progress()
        self.set_status("Cancelled; the current index and model stay in use")
        self._show_index_state()

    def rebuild_index(self, message: str = "Rebuilding the index…") -> None:
        def job(progress, cancelled):
            self.engine.build_index(progress, cancelled)
            return self.engine.status()

        self.run_engine_job(job, message, on_done=self._engine_prepared)

    def adapt_to_library(self, options=None, confirm: bool = True) -> int | None:
        """Fine-tune the encoder on the library in the background (cancellable), then switch to it."""
        if confirm:
            answer = QMessageBox.question(
                self,
                "Adapt to my library",
                "Fine-tune the search model on this library's citation graph and on questions made from "
                "its abstracts, then re-index the library with it.\n\nIt runs in the background: preparing "
                "the training set, up to 15 minutes of training (more steps with a GPU), then re-indexing "
                "every paper — on a 100,000-paper library and a 2-core CPU about an hour in all. "
                "Cancel (in the library panel) keeps the current model; a later run resumes.",
            )
            if answer != QMessageBox.StandardButton.Yes:
                return None

        def job(progress, cancelled):
            return self.engine.adapt_encoder(progress, cancelled, options)

        return self.run_engine_job(
            job, "Adapting the encoder to the library…", on_done=self._adapted
        )

    def _adapted(self, payload) -> None:
        report, status = payload
        self.settings = replace(self.settings, encoder=self.engine.settings.encoder or "")
        save_settings(self.settings)
        self._engine_prepared(status)
        if report.resumed_from_step and report.resumed_from_step >= report.steps_done:
            self.set_status(
                f"Adapted encoder '{self.settings.encoder}' in use: it had already finished its "
                f"{report.steps_done} steps on this library (nothing changed since); add papers "
                "to adapt again."
            )
            return
        loss = (
            f", loss {report.loss_history[0]:.3f} → {report.final_loss:.3f}"
            if report.loss_history
            else ""
        )
        self.set_status(
            f"Adapted encoder '{self.settings.encoder}' in use: {report.steps_done} steps on "
            f"{report.examples} pairs ({report.device}, {report.seconds:.0f} s{loss}); library re-indexed."
        )

    def import_library_dialog(self, kind: str = "files") -> None:
        if kind == "folder":
            folder = QFileDialog.getExistingDirectory(
                self, "Import a folder of bibliographies/PDFs"
            )
            paths = [folder] if folder else []
        elif kind == "zotero":
            path, _ = QFileDialog.getOpenFileName(
                self, "Zotero database", str(Path.home() / "Zotero"), "Zotero (zotero.sqlite)"
            )
            paths = [path] if path else []
        else:
            paths, _ = QFileDialog.getOpenFileNames(
                self,
                "Import into the library",
                "",
                "Bibliographies and PDFs (*.bib *.bibtex *.ris *.json *.pdf);;All files (*)",
            )
        if paths:
            self.import_library([Path(p) for p in paths])

    def import_library(self, paths: list[Path]) -> int:
        """Import files/folders in the background; the papers show as soon as the import has
        committed, then indexing runs as a job of its own (its own progress and Cancel)."""
        before = self.engine.library.count()

        def job(progress, cancelled):
            report = self.engine.import_files(paths, progress, cancelled, index=False)
            return report, self.engine.status()

        generation = self.run_engine_job(
            job, f"Importing {len(paths)} item(s)…", on_done=self._imported
        )
        self.runner._jobs[("engine", generation)].on_cancel = lambda: self._import_cancelled(before)
        return generation

    def _import_cancelled(self, papers_before: int) -> None:
        """Cancel during an import: say whether it was committed or rolled back, refresh."""
        self.library_panel.hide_progress()
        message = self.engine.import_outcome(papers_before)
        self.library_panel.refresh()
        self._show_index_state()
        self.set_status(message)

    def _show_index_state(self) -> None:
        """Counts in the library panel and, when papers are not indexed, an Index-now bar."""
        try:
            status = self.engine.status()
            stale = self.engine.index_stale()
            has_index = self.engine.ready or self.engine.has_index()
        except Exception as exc:  # a closed/broken library: the panel says so elsewhere
            log.warning("index state unavailable: %s", exc)
            return
        self.library_panel.set_status(status)
        self.library_panel.set_stale(
            *index_notice(status.papers, status.embedded, has_index, stale)
        )

    def _imported(self, payload) -> None:
        report, status = payload
        self.library_panel.hide_progress()
        self.library_panel.refresh()
        self.library_panel.set_status(status)
        self._show_index_state()
        issues = getattr(report, "issues", []) or []
        summary = import_summary(report)
        self.library_panel.set_summary(summary)
        self.set_status(summary)
        if self.library_panel.library is not None and self.library_panel.library.count():
            self.rebuild_index(f"{summary} Indexing the new papers…")
        if issues:
            details = "\n".join(str(i) for i in issues[:200])
            self.show_error(
                "Import finished with problems",
                summary + f"\n{len(issues)} problem(s).",
                details,
                icon=QMessageBox.Icon.Warning,
            )

    # --- recommend ----------------------------------------------------------------------------
    def current_mode(self) -> str:
        return self.mode_box.currentData() or "auto"

    def build_query(self):
        """The pipeline Query for the current selection/cursor and the chosen mode (built by the
        service exactly as for ``assistant recommend``)."""
        editor, state = self.current_editor(), self.current_state()
        text = editor.toPlainText()
        start, end = editor.selection_range()
        doc = state.extras.get("doc")  # a manuscript PDF: its references, year and DOI
        self.cited_ids = manuscript_cited_ids(self.library_panel.library, text, state.style, doc)
        return query_for_selection(
            text,
            start,
            end,
            self.current_mode(),
            state.style,
            meta=(state.title, state.abstract) if state.read_only else None,
            cited_ids=self.cited_ids,
            year=getattr(doc, "year", None),
            doi=getattr(doc, "doi", None),
        )

    def recommend(self) -> int | None:
        """Run the pipeline for the selection/cursor on the recommend thread (a newer call wins).

        It never waits for an engine job (import, index, adapt, analysis): those run on the
        engine thread and the recommender keeps using the last committed index meanwhile.
        """
        try:
            query, spec = self.build_query()
        except Exception as exc:
            self.show_error("Cannot recommend", str(exc))
            return None
        self.results_panel.clear_results()  # old cards never stay under a new query
        editor = self.current_editor()
        text = editor.toPlainText()
        self.anchor = Anchor(editor, spec.start, spec.end, text[spec.start : spec.end])
        if not (query.text or query.title or query.abstract):
            self.results_panel.set_message(
                "Nothing to recommend for: place the cursor in a sentence."
            )
            return None
        if (
            query.text
            and not textops.content_words(query.text)
            and not (query.title or query.abstract)
        ):
            self.results_panel.set_message(
                "⚠ The text has no content words (only words such as “the”, “this is”): "
                "select a sentence that says what the cited work is about."
            )
            self.set_status("Nothing to search for: the query has only stop words")
            return None
        k = self.settings.k
        hide_cited = self.results_panel.exclude_cited.isChecked()  # the service's one rule
        self.mode_label.setText(f"  → {spec.mode}")
        self.results_panel.set_message(
            f"Recommending ({spec.mode}) for: “{_esc(spec.text[:140])}”…"
        )
        self.set_status("Recommending…")

        filters = self.results_panel.filter_values()
        max_year = filters["year_max"] if filters["year_max"] < 2100 else None
        intent = filters["intent"] or None
        only_collection = self.library_panel.recommend_collection

        request = RequestOptions(
            k=k,
            max_year=max_year,
            intent_preference=intent,
            collection_ids=(only_collection,) if only_collection is not None else (),
            exclude_cited=hide_cited,
        )

        def job(progress, cancelled):
            return self.engine.recommend(query, request=request, cancelled=cancelled, fallback=True)

        return self.rec_runner.submit(
            "recommend",
            job,
            on_done=self._recommended,
            on_error=self._recommend_failed,
            on_progress=lambda d, t, m: self.set_status(m or "Recommending…"),
            on_cancel=lambda: None,
        )

    def _recommend_failed(self, message: str, trace: str) -> None:
        if "being imported or indexed" in message:
            self.results_panel.set_message(f"⏳ {_esc(message)}")
            self.set_status("Waiting for the first index")
            return
        self._job_failed(message, trace)

    def _recommended(self, result) -> None:
        self.last_result = result
        editor, state = self.current_editor(), self.current_state()
        cited = textops.cited_keys(editor.toPlainText(), state.style)
        cited_ids = set(state.extras.get("cited_ids", ()))
        cited |= {r.paper.citekey for r in result.items if r.paper.id in cited_ids}
        timings = getattr(result, "timings_ms", {}) or {}
        total_ms = timings.get("total", sum(timings.values())) if timings else 0.0
        shown = min(len(result.items), self.settings.k)
        header = (
            f"{shown} recommendations · mode {result.mode} · {total_ms:.0f} ms"
            + f"<br><span style='color:#666'>“{_esc(shown_query(result.query))}”</span>"
        )
        for warning in getattr(result, "warnings", None) or []:
            header += f"<br><span style='color:#b26a00'>⚠ {_esc(warning)}</span>"
        self.results_panel.limit = self.settings.k
        self.results_panel.scope_note = self.library_panel.recommend_scope_note()
        self.results_panel.set_results(
            result.items, header, cited, query_text=result.query.display_text()
        )
        self.set_status(f"{shown} recommendations in {total_ms:.0f} ms ({result.mode})")
        self.library_panel.set_status(self.engine.status())
        self.recommendations_ready.emit(result)

    def back_to_text(self) -> None:
        """Esc from the results or the flagged list: the keyboard goes back to the manuscript."""
        editor = self.current_editor()
        if editor is not None:
            editor.setFocus(Qt.FocusReason.ShortcutFocusReason)

    def escape(self) -> None:
        """Esc: cancel a running recommendation; from the side panels, back to the text."""
        self.rec_runner.cancel("recommend")
        focus = self.focusWidget()
        for panel in (self.results_panel, self.flagged_list):
            if focus is not None and (focus is panel or panel.isAncestorOf(focus)):
                self.back_to_text()

    def anchored_range(self, editor, rec) -> tuple[int, int] | None:
        """Where ``rec`` is cited: the caret/selection for a paper picked by hand; for a result,
        the sentence its list was computed for, wherever the caret is now. None (with a notice)
        when that sentence was edited or is in another tab."""
        current = editor.selection_range()
        anchor = getattr(self, "anchor", None)
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
        anchor = getattr(self, "anchor", None)
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
        watch = getattr(self, "_cited_watch", None)
        if not watch or watch[0] is not editor:
            return
        key = watch[1]
        if not self.status_label.text().startswith(f"Cited {key}"):
            self._cited_watch = None  # the status moved on: stop watching
            return
        if key not in textops.cited_keys(editor.toPlainText(), editor.state.style):
            self._cited_watch = None
            self.set_status(f"Citation of {key} undone (its .bib entry is not written)")

    def _need_changed(self, _need: str) -> None:
        """The "Need" box re-ranks: recommend again for the same text when a list is shown."""
        if self.last_result is not None and self.results_panel.items:
            self.recommend()

    # --- keyboard: results and flagged sentences -------------------------------------------------
    def focus_results(self) -> bool:
        """Ctrl+Shift+R: the keyboard goes to the first result card (arrows, Enter, Esc)."""
        dock = self.findChild(QDockWidget, "Recommendations")
        dock.show()
        dock.raise_()
        return self.results_panel.focus_card(0)

    def show_flagged(self, editor=None) -> None:
        """Refresh the side list from the editor's marks (the one count shown everywhere)."""
        editor = editor or self.tabs.currentWidget()
        if editor is None or editor is not self.tabs.currentWidget():
            return
        self.flagged_list.set_marks(editor.toPlainText(), editor.marks)

    def go_to_mark(self, mark) -> None:
        editor = self.current_editor()
        editor.select_range(mark.start, mark.end)
        editor.centerCursor()
        if mark in editor.marks:
            self.flagged_list.select(editor.marks.index(mark))
        self.recommend()

    def _step_flagged(self, step: int) -> bool:
        editor = self.current_editor()
        if not editor.marks:
            self.set_status(count_text(0))
            return False
        caret, _ = editor.selection_range()
        starts = [m.start for m in editor.marks]
        if step > 0:
            index = next((i for i, s in enumerate(starts) if s > caret), 0)
        else:
            index = next((i for i in range(len(starts) - 1, -1, -1) if starts[i] < caret), -1)
        index %= len(starts)
        dock = self.findChild(QDockWidget, "Flagged sentences")
        dock.show()
        dock.raise_()
        self.go_to_mark(editor.marks[index])
        self.set_status(f"Flagged sentence {index + 1} of {len(starts)}")
        return True

    def next_flagged(self) -> bool:
        return self._step_flagged(1)

    def previous_flagged(self) -> bool:
        return self._step_flagged(-1)

    # --- errors / status ----------------------------------------------------------------------
    def _job_failed(self, message: str, trace: str) -> None:
        self.library_panel.hide_progress()
        self.show_error("Something went wrong", message, trace)

    def show_error(
        self, title: str, message: str, details: str = "", icon=QMessageBox.Icon.Critical
    ) -> QMessageBox:
        """A non-blocking (window-modal) error dialog; errors never go only to the console."""
        box = QMessageBox(icon, title, message, QMessageBox.StandardButton.Ok, self)
        if details:
            box.setDetailedText(details)
        box.setWindowModality(Qt.WindowModality.WindowModal)
        box.open()
        self.last_error_dialog = box
        self.set_status(f"{title}: {message.splitlines()[0] if message else ''}")
        self.error_shown.emit(message)
        return box

    def set_status(self, text: str) -> None:
        self.status_label.setText(text)

    def _busy_changed(self, channel: str, busy: bool) -> None:
        any_busy = self.rec_runner.is_busy("recommend") or any(
            self.runner.is_busy(ch) for ch in ("engine", "pdf", "analyse")
        )
        self.status_progress.setVisible(any_busy)
        self.status_progress.setRange(0, 0)
        if channel == "recommend":
            self.recommend_button.setText("Recommending…" if busy else "Recommend")

    def settings_dialog(self) -> None:
        dialog = SettingsDialog(self.settings, self)
        if dialog.exec():
            new = dialog.result_settings()
            engine_changed = (
                new.db_path,
                new.encoder,
                new.device,
                new.reranker,
                new.ranker,
                new.my_names,
                new.use_intent,
            ) != (
                self.settings.db_path,
                self.settings.encoder,
                self.settings.device,
                self.settings.reranker,
                self.settings.ranker,
                self.settings.my_names,
                self.settings.use_intent,
            )
            self.settings = new
            self.results_panel.exclude_cited.setChecked(new.exclude_cited)
            save_settings(new)
            if engine_changed:
                self.switch_engine()

    def switch_engine(self) -> None:
        self.rec_runner.cancel("recommend")
        old = self.engine
        self.engine = Service(self._engine_settings())
        self.runner.submit("close", lambda p, c: old.close())
        self.start()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if not getattr(self, "_docks_sized", False):
            self._docks_sized = True
            fit_to_screen(self)
            self.size_docks()
        for bar in self.findChildren(QTabBar):  # the docks' tabs: full names, never "L..."
            if bar.parent() is self:
                bar.setElideMode(Qt.TextElideMode.ElideNone)
                bar.setUsesScrollButtons(True)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        old, new = event.oldSize().width(), event.size().width()
        if getattr(self, "_docks_sized", False) and old > 0 and abs(new - old) > 80:
            self.size_docks()

    def size_docks(self) -> None:
        """Library ~22 %, results ~34 %, the editor keeps the rest (never below its minimum)."""
        size_docks(self)

    def _restore_filters(self) -> None:
        panel, s = self.results_panel, self.settings
        panel.year_min.setValue(s.year_min)
        panel.year_max.setValue(s.year_max)
        index = panel.intent_filter.findData(s.intent_filter)
        panel.intent_filter.setCurrentIndex(max(0, index))
        panel.exclude_cited.setChecked(s.exclude_cited)

    def _store_filters(self) -> None:
        f = self.results_panel.filter_values()
        self.settings = replace(
            self.settings,
            year_min=f["year_min"],
            year_max=f["year_max"],
            intent_filter=f["intent"],
            exclude_cited=f["exclude_cited"],
        )

    def closeEvent(self, event) -> None:
        if not self.library_panel.save_pending_edits() or not self.maybe_save_all():
            event.ignore()
            return
        self._store_filters()
        save_settings(self.settings)
        self.rec_runner.shutdown()
        self.runner.shutdown()
        self.engine.close()
        self.library_panel.close_library()
        super().closeEvent(event)

    def delayed(self, msecs: int, fn) -> None:
        QTimer.singleShot(msecs, fn)
