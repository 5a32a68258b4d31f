"""The main window's library jobs on the engine thread: opening the library and loading the
models and index, importing, indexing and adapting the encoder, with their progress, Cancel and
the library panel's index state (the import/index jobs controller)."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QMessageBox

from assistant.gui.anchoring import index_notice
from assistant.gui.parts import WindowPart
from assistant.gui.settings import save_settings
from assistant.service import IMPORTED_STAGE, LibraryOpenError, import_summary

log = logging.getLogger(__name__)


class LibraryJobs(WindowPart):
    """Engine jobs (``window.runner``, channel "engine"): one at a time, cancellable."""

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
        self.show_index_state()  # "Index now" from the start when the library has no index
        if prepare:
            self.run_engine_job(
                lambda p, c: self.engine.prepare(p, c),
                "Loading models and index…",
                on_done=self.engine_prepared,
            )

    def run_engine_job(self, fn, message: str, on_done=None) -> int:
        self.set_status(message)
        self.library_panel.show_progress(0, 0, message)
        return self.runner.submit(
            "engine",
            fn,
            on_done=on_done,
            on_error=self.window.job_failed,
            on_progress=self._engine_progress,
            on_cancel=self._engine_cancelled,
        )

    def _engine_progress(self, event) -> None:
        self.library_panel.show_progress(event.done, event.total or 0, event.message)
        self.set_status(event.message)

    def stage_reached(self, channel: str, stage: str, message: str) -> None:
        """An import committed inside a longer job: show the papers and the summary now."""
        if channel == "engine" and stage == IMPORTED_STAGE:
            self.library_panel.refresh()
            self.show_index_state()
            self.library_panel.set_summary(message)
            self.set_status(message)

    def engine_prepared(self, status) -> None:
        self.library_panel.hide_progress()
        self.library_panel.refresh()
        if status is not None:
            self.library_panel.set_status(status)
        self.show_index_state()
        self.set_status(
            "Ready" if status and status.papers else "The library is empty: import papers first"
        )
        self.window.engine_ready.emit(status)

    def _engine_cancelled(self) -> None:
        self.library_panel.hide_progress()
        self.set_status("Cancelled; the current index and model stay in use")
        self.show_index_state()

    def rebuild_index(self, message: str = "Rebuilding the index…") -> None:
        def job(progress, cancelled):
            self.engine.build_index(progress, cancelled)
            return self.engine.status()

        self.run_engine_job(job, message, on_done=self.engine_prepared)

    def adapt_to_library(self, options=None, confirm: bool = True) -> int | None:
        """Fine-tune the encoder on the library in the background (cancellable), then switch to it."""
        if confirm:
            answer = QMessageBox.question(
                self.window,
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
        self.engine_prepared(status)
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
                self.window, "Import a folder of bibliographies/PDFs"
            )
            paths = [folder] if folder else []
        elif kind == "zotero":
            path, _ = QFileDialog.getOpenFileName(
                self.window,
                "Zotero database",
                str(Path.home() / "Zotero"),
                "Zotero (zotero.sqlite)",
            )
            paths = [path] if path else []
        else:
            paths, _ = QFileDialog.getOpenFileNames(
                self.window,
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
        self.show_index_state()
        self.set_status(message)

    def show_index_state(self) -> None:
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
        self.show_index_state()
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
