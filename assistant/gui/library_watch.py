"""Notice changes other programs (the CLI, the language server, a second window) made to the
library and refresh the window: ``PRAGMA data_version`` of the library panel's connection,
polled once a second on a ``QTimer`` (a cheap read; no file watching)."""

from __future__ import annotations

import logging

from PySide6.QtCore import QObject, QTimer, Signal

log = logging.getLogger(__name__)

POLL_MS = 1000


class LibraryWatch(QObject):
    """Polls the panel's connection; on a change refreshes table, counts and index state."""

    changed = Signal()

    def __init__(self, window, interval_ms: int = POLL_MS) -> None:
        super().__init__(window)
        self.window = window
        self._library = None
        self._version: int | None = None
        self.timer = QTimer(self)
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self.poll)
        self.timer.start()

    def poll(self) -> bool:
        """Refresh when another connection committed since the last poll; True when it did."""
        panel = self.window.library_panel
        library = panel.library
        if library is None:
            self._library = self._version = None
            return False
        try:
            version = library.data_version()
        except Exception as exc:  # a closed/broken library: the panel says so elsewhere
            log.debug("library watch: %s", exc)
            return False
        if library is not self._library:  # a newly opened library: refresh once (the table
            self._library, self._version = library, None  # may predate the first poll)
        if version == self._version:
            return False
        self._version = version
        if panel.details.has_changes():  # never reload over the user's unsaved edits
            self._version = None
            return False
        panel.refresh()
        self.window.jobs.show_index_state()
        self.changed.emit()
        return True
