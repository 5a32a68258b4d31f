"""The bases of the controllers of the main window and of the library panel: each controller
owns one thing its widget does (the window: documents, citations, recommending, library jobs,
flagged sentences; the panel: browsing, collections, editing, curation) and is composed by it."""

from __future__ import annotations


class WindowPart:
    """One part of the main window's behaviour. The window's engine and settings are read on
    each use (Settings may replace both); status and errors go through the window."""

    def __init__(self, window) -> None:
        self.window = window

    @property
    def engine(self):
        return self.window.engine

    @property
    def settings(self):
        return self.window.settings

    @settings.setter
    def settings(self, value) -> None:
        self.window.settings = value

    @property
    def runner(self):
        return self.window.runner

    @property
    def tabs(self):
        return self.window.tabs

    @property
    def library_panel(self):
        return self.window.library_panel

    @property
    def results_panel(self):
        return self.window.results_panel

    def current_editor(self):
        return self.window.documents.current_editor()

    def current_state(self):
        return self.window.documents.current_state()

    def set_status(self, text: str) -> None:
        self.window.set_status(text)

    def show_error(self, *args, **kwargs):
        return self.window.show_error(*args, **kwargs)


class PanelPart:
    """One part of the library panel's behaviour, composed by ``LibraryPanel``. The panel's
    library and manager are read on each use (another library may be opened)."""

    def __init__(self, panel) -> None:
        self.panel = panel

    @property
    def manager(self):
        return self.panel.manager

    @property
    def library(self):
        return self.panel.library

    @property
    def model(self):
        return self.panel.model

    @property
    def table(self):
        return self.panel.table

    @property
    def count_label(self):
        return self.panel.count_label

    def selected_ids(self) -> list[int]:
        return self.panel.browser.selected_ids()

    def run_op(self, func, *args):
        return self.panel.run_op(func, *args)

    def after_change(self, keep_order: bool = False) -> None:
        self.panel.after_change(keep_order)
