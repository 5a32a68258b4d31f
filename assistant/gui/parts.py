"""The base of the main window's controllers: each owns one thing the window does (documents,
citations, recommending, library jobs, flagged sentences) and is composed by ``MainWindow``."""

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
