"""Waiting in a scripted Qt session without starving the app's worker threads.

PySide6's ``QTest.qWait`` sleeps in C++ while holding the GIL, so a loop of short ``qWait`` calls
leaves a Python worker thread (model build, import, indexing) a few milliseconds a second: on a
fresh machine the window check then waited past its limit for the first model build. ``pump``
processes events and sleeps with the GIL released (``time.sleep``).
"""

from __future__ import annotations

import time


def pump(ms: int) -> None:
    """Process Qt events for ``ms`` milliseconds, sleeping with the GIL released."""
    from PySide6.QtCore import QEventLoop
    from PySide6.QtWidgets import QApplication

    end = time.monotonic() + ms / 1000
    while True:
        QApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 20)
        left = end - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(0.02, left))


def wait_for(predicate, timeout_s: float, what: str) -> None:
    """Pump events until ``predicate()`` holds; AssertionError after ``timeout_s``."""
    end = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        pump(50)
