"""First-run guide: create/import a library or open the bundled sample."""

from __future__ import annotations

from PySide6.QtWidgets import QDialog, QLabel, QPushButton, QVBoxLayout

from assistant.gui.settings import save_settings


class FirstRunDialog(QDialog):
    """Shown once while the library is empty; each button starts a background job."""

    def __init__(self, window) -> None:
        super().__init__(window)
        self.window_ = window
        self.setWindowTitle("Welcome to Cite-Assist")
        layout = QVBoxLayout(self)
        text = QLabel(
            "<h3>Welcome to Cite-Assist</h3>"
            "<p>Cite-Assist recommends citations for what you write, from <b>your own</b> paper library, "
            "entirely offline.</p><p>Start by filling the library: import BibTeX, RIS, CSL-JSON or PDF "
            "files, a folder, or your Zotero database. The models and the search index are then built "
            f"automatically (progress in the library panel).</p><p>Library file: <code>{window.engine.db_path}</code>"
            " (change it in Settings).</p>"
        )
        text.setWordWrap(True)
        layout.addWidget(text)
        for label, slot in (
            ("Import files…", lambda: window.jobs.import_library_dialog("files")),
            ("Import a folder…", lambda: window.jobs.import_library_dialog("folder")),
            ("Import from Zotero…", lambda: window.jobs.import_library_dialog("zotero")),
            ("Try the bundled sample library and draft", self._sample),
        ):
            button = QPushButton(label)
            button.clicked.connect(lambda _c=False, s=slot: (self.accept(), s()))
            layout.addWidget(button)
        later = QPushButton("Later")
        later.clicked.connect(self.reject)
        layout.addWidget(later)

    def _sample(self) -> None:
        from assistant.gui.sample import start_sample

        start_sample(self.window_)


def maybe_show_first_run(window) -> FirstRunDialog | None:
    """Show the guide when the library is empty (once: remembered in the settings)."""
    library = window.library_panel.library
    window.settings.first_run_done = True
    save_settings(window.settings)
    if library is not None and library.count() > 0:
        return None
    dialog = FirstRunDialog(window)
    dialog.open()
    window.first_run_dialog = dialog
    return dialog
