"""The main window: manuscript tabs, library panel, results panel, background jobs. It builds the
widgets, menus and toolbar and composes the controllers that do the work: ``documents``
(manuscript tabs), ``citations`` (.bib file, Insert, Copy BibTeX), ``recommender`` (query and
result list), ``jobs`` (library import/index/adapt on the engine thread) and ``flagged``."""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QAction, QIcon, QKeySequence
from PySide6.QtWidgets import (
    QComboBox,
    QDockWidget,
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
from assistant.gui.citing import CitationController
from assistant.gui.documents_ops import DocumentsController
from assistant.gui.flagged import FlaggedList, FlaggedNavigator
from assistant.gui.library_jobs import LibraryJobs
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
from assistant.gui.recommend import RecommendController
from assistant.gui.results_panel import ResultsPanel
from assistant.gui.settings import AppSettings, SettingsDialog, load_settings, save_settings
from assistant.gui.workers import JobRunner
from assistant.service import MODES, QUALITIES, Service, ServiceSettings

#: papers per embedding batch in the GUI: Cancel acts between batches (about a second on a CPU)
INDEX_BATCH = 8

ICON_PATH = RESOURCES_DIR / "icons" / "cite-assist.svg"

#: the settings the engine is built from: a change replaces the engine
ENGINE_SETTINGS = (
    "db_path",
    "encoder",
    "device",
    "reranker",
    "ranker",
    "my_names",
    "use_intent",
    "quality",
)


class MainWindow(QMainWindow):
    """Cite-Assist's main window. Every slow call runs on the engine thread (``self.runner``)."""

    recommendations_ready = Signal(object)  # RecommendationResult (for tests and status)
    engine_ready = Signal(object)  # IndexStatus
    error_shown = Signal(str)
    tier_changed = Signal()  # the quality tier switched or its background build progressed

    def __init__(self, settings: AppSettings | None = None) -> None:
        super().__init__()
        self.settings = settings or load_settings()
        self.setWindowTitle("Cite-Assist")
        if ICON_PATH.exists():
            self.setWindowIcon(QIcon(str(ICON_PATH)))
        self.resize(1400, 860)
        self.runner = JobRunner(self)  # engine jobs: models, import, index, adapt, analysis
        self.rec_runner = JobRunner(self)  # recommendations only: never wait behind a job
        self.engine = self._new_engine()
        self.last_error_dialog: QMessageBox | None = None
        self.documents = DocumentsController(self)
        self.citations = CitationController(self)
        self.recommender = RecommendController(self)
        self.jobs = LibraryJobs(self)
        self.flagged = FlaggedNavigator(self)

        self.tabs = QTabWidget()
        self.tabs.setTabsClosable(True)
        self.tabs.setDocumentMode(True)
        self.tabs.tabCloseRequested.connect(self.documents.close_tab)
        self.setCentralWidget(self.tabs)

        self.library_panel = LibraryPanel()
        self.library_panel.import_requested.connect(self.jobs.import_library_dialog)
        self.library_panel.rebuild_requested.connect(self.jobs.rebuild_index)
        self.library_panel.cite_requested.connect(self.citations.cite_paper)
        self.library_panel.cancel_button.clicked.connect(lambda: self.runner.cancel("engine"))
        self.library_panel.index_now_requested.connect(self.jobs.rebuild_index)
        self._dock(self.library_panel, "Library", Qt.DockWidgetArea.LeftDockWidgetArea)
        self.results_panel = ResultsPanel()
        self.results_panel.insert_requested.connect(self.citations.insert_recommendation)
        self.results_panel.copy_requested.connect(self.citations.copy_bibtex)
        self.results_panel.need_changed.connect(self.recommender.need_changed)
        # "Hide cited" is the service's exclusion rule (exclude_cited): recommend again
        self.results_panel.exclude_cited.toggled.connect(
            lambda _on: self.recommender.need_changed("")
        )
        self._dock(self.results_panel, "Recommendations", Qt.DockWidgetArea.RightDockWidgetArea)
        self.results_panel.leave_requested.connect(self.back_to_text)
        self.flagged_list = FlaggedList()
        self.flagged_list.activated.connect(self.flagged.go_to_mark)
        self._dock(self.flagged_list, "Flagged sentences", Qt.DockWidgetArea.LeftDockWidgetArea)
        self.tabifyDockWidget(
            self.findChild(QDockWidget, "Library"), self.findChild(QDockWidget, "Flagged sentences")
        )
        self.findChild(QDockWidget, "Library").raise_()
        self.tabs.currentChanged.connect(lambda _i: self.flagged.show_flagged())

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
        self.runner.stage_reached.connect(self.jobs.stage_reached)
        self.rec_runner.busy_changed.connect(self._busy_changed)
        self.tier_changed.connect(self.jobs.show_index_state)
        self._restore_filters()
        self.documents.new_document()
        # other programs' changes to the library (CLI, language server): refresh (issue 31)
        self.library_watch = LibraryWatch(self)

    # --- construction -------------------------------------------------------------------------
    def _new_engine(self) -> Service:
        """The service for the settings; its background tier build reports through
        :attr:`tier_changed` (emitted on the build's thread, delivered on this one)."""
        engine = Service(self._engine_settings())
        engine.on_change(self.tier_changed.emit)
        return engine

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
            quality=s.quality if s.quality in QUALITIES else "auto",  # a hand-edited gui.ini
            background=True,  # the other tier's index is built beside, never blocking
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
        self._build_file_menu(bar.addMenu("&File"))
        self._build_library_menu(bar.addMenu("&Library"))
        self.edit_menu = bar.addMenu("&Edit")
        self._build_recommend_menu(bar.addMenu("&Recommend"))
        build_edit_menu(self, bar)
        build_help_menu(self, bar)
        self._build_toolbar()

    def _build_file_menu(self, file_menu) -> None:
        docs = self.documents
        self._action(file_menu, "&New", docs.new_document, QKeySequence.StandardKey.New)
        self._action(
            file_menu, "&Open manuscript…", docs.open_dialog, QKeySequence.StandardKey.Open
        )
        self._action(file_menu, "&Save", docs.save_current, QKeySequence.StandardKey.Save)
        self._action(file_menu, "Save &as…", docs.save_as_dialog, QKeySequence.StandardKey.SaveAs)
        file_menu.addSeparator()
        self.pdf_action = self._action(
            file_menu, "Import manuscript &PDF…", docs.import_pdf_dialog, "Ctrl+Shift+P"
        )
        self._action(file_menu, "Choose the &bibliography file…", self.citations.choose_bib_dialog)
        file_menu.addSeparator()
        self._action(file_menu, "&Quit", self.close, QKeySequence.StandardKey.Quit)

    def _build_library_menu(self, lib_menu) -> None:
        jobs, panel = self.jobs, self.library_panel
        self._action(
            lib_menu, "Import &files…", lambda: jobs.import_library_dialog("files"), "Ctrl+I"
        )
        self._action(lib_menu, "Import a f&older…", lambda: jobs.import_library_dialog("folder"))
        self._action(lib_menu, "Import from &Zotero…", lambda: jobs.import_library_dialog("zotero"))
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
            lambda: panel.edits.export_papers(),
            tip="Write the whole library as BibTeX, RIS or CSL-JSON (by the file's extension)",
        )
        self._action(lib_menu, "Find &duplicates…", panel.curation.duplicates_dialog)
        self._action(
            lib_menu, "Citation &keys (pattern, regenerate)…", panel.curation.citekey_dialog
        )
        lib_menu.addSeparator()
        self._action(lib_menu, "&Rebuild index", jobs.rebuild_index)
        self._action(
            lib_menu,
            "&Adapt to my library…",
            jobs.adapt_to_library,
            tip="Fine-tune the search model on this library's citations, then re-index",
        )
        self._action(lib_menu, "&Settings…", self.settings_dialog, "Ctrl+,")

    def _build_recommend_menu(self, rec_menu) -> None:
        self.recommend_action = self._action(
            rec_menu,
            "&Recommend citations",
            self.recommender.recommend,
            "Ctrl+R",
            "Recommend citations for the selection or the sentence at the cursor",
        )
        self._action(
            rec_menu, "Find &missing citations", self.documents.find_missing, "Ctrl+Shift+M"
        )
        self._action(
            rec_menu,
            "&Search and cite…",
            self.citations.search_and_cite,
            "Ctrl+Shift+C",
            "Find a paper of the library by title, author, key or DOI and cite it at the cursor",
        )
        self._action(rec_menu, "&Cancel", self.escape, "Esc")
        rec_menu.addSeparator()
        for n in range(1, 10):
            action = self._action(
                rec_menu,
                f"Insert result &{n}",
                lambda n=n: self.citations.insert_result(n),
                f"Alt+{n}",
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
        self._action(rec_menu, "Next &flagged sentence", self.flagged.next_flagged, "F8")
        self._action(
            rec_menu, "Previous flagged sentence", self.flagged.previous_flagged, "Shift+F8"
        )

    def _build_toolbar(self) -> None:
        toolbar = QToolBar("Main")
        toolbar.setObjectName("mainToolbar")
        toolbar.setMovable(False)
        self.addToolBar(toolbar)
        self.recommend_button = QPushButton("Recommend")
        self.recommend_button.setObjectName("recommendButton")
        self.recommend_button.setToolTip("Recommend citations (Ctrl+R)")
        self.recommend_button.clicked.connect(self.recommender.recommend)
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

    # --- keyboard ------------------------------------------------------------------------------
    def back_to_text(self) -> None:
        """Esc from the results or the flagged list: the keyboard goes back to the manuscript."""
        editor = self.documents.current_editor()
        if editor is not None:
            editor.setFocus(Qt.FocusReason.ShortcutFocusReason)

    def escape(self) -> None:
        """Esc: cancel a running recommendation; from the side panels, back to the text."""
        self.rec_runner.cancel("recommend")
        focus = self.focusWidget()
        for panel in (self.results_panel, self.flagged_list):
            if focus is not None and (focus is panel or panel.isAncestorOf(focus)):
                self.back_to_text()

    def focus_results(self) -> bool:
        """Ctrl+Shift+R: the keyboard goes to the first result card (arrows, Enter, Esc)."""
        dock = self.findChild(QDockWidget, "Recommendations")
        dock.show()
        dock.raise_()
        return self.results_panel.focus_card(0)

    # --- errors / status ----------------------------------------------------------------------
    def job_failed(self, message: str, trace: str) -> None:
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
            engine_changed = any(
                getattr(new, name) != getattr(self.settings, name) for name in ENGINE_SETTINGS
            )
            self.settings = new
            self.results_panel.exclude_cited.setChecked(new.exclude_cited)
            save_settings(new)
            if engine_changed:
                self.switch_engine()

    def switch_engine(self) -> None:
        self.rec_runner.cancel("recommend")
        old = self.engine
        self.engine = self._new_engine()
        self.runner.submit("close", lambda p, c: old.close())
        self.jobs.start()

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
        if not self.library_panel.edits.save_pending_edits() or not self.documents.maybe_save_all():
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
