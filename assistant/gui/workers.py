"""Background work for the GUI: never block the UI thread.

Each job belongs to a *channel* (``"recommend"``, ``"engine"``, ``"pdf"``, ...) and each channel
runs on its own single-thread pool that never expires: recommending runs beside a long
import/index/adapt job, as the service's thread-safety contract allows (recommend reads the last
committed index; jobs are serialised by the service). Submitting to a channel bumps its
generation and cancels the previous job there, and results of a stale generation are dropped,
so a newer request always wins. This is the Qt boundary of the progress contract: jobs report
:class:`~assistant.progress.ProgressEvent` and the runner turns them into signals.
"""

from __future__ import annotations

import logging
import os
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal, Slot

from assistant.service import Cancelled, Progress, ProgressEvent, check_cancelled

log = logging.getLogger(__name__)

#: ``fn(progress, cancelled) -> result``; ``progress(ProgressEvent)``.
JobFn = Callable[[Progress, Callable[[], bool]], Any]
#: Channels that share a thread (closing an old service runs after its jobs).
_POOL_OF = {"close": "engine"}


#: niceness of the job threads (import, index, adapt): the recommend thread keeps the CPU first
JOB_NICENESS = 10


def lower_thread_priority(niceness: int = JOB_NICENESS) -> bool:
    """Run the calling thread (and the compute threads it starts) at low priority (Linux: a
    thread's own nice value; elsewhere nothing). Returns whether it took effect."""
    if not hasattr(os, "setpriority"):
        return False
    try:
        tid = threading.get_native_id()
        if os.getpriority(os.PRIO_PROCESS, tid) < niceness:
            os.setpriority(os.PRIO_PROCESS, tid, niceness)
        return True
    except OSError:
        return False


class CancelToken:
    """A thread-safe cancel flag handed to the pipeline as ``cancelled()``."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    def __call__(self) -> bool:
        return self._event.is_set()


class JobSignals(QObject):
    """Carrier of a job's signals (lives in the UI thread; emitted from the pool thread)."""

    progress = Signal(str, int, object)  # channel, generation, ProgressEvent
    finished = Signal(str, int, object)  # channel, generation, result
    failed = Signal(str, int, str, str)  # channel, generation, message, traceback
    cancelled = Signal(str, int)


class _Job(QRunnable):
    def __init__(
        self, channel: str, generation: int, fn: JobFn, token: CancelToken, signals: JobSignals
    ):
        super().__init__()
        self.setAutoDelete(True)
        self.channel, self.generation, self.fn, self.token, self.signals = (
            channel,
            generation,
            fn,
            token,
            signals,
        )

    def _progress(self, event: ProgressEvent) -> None:
        check_cancelled(self.token)
        self.signals.progress.emit(self.channel, self.generation, event)

    def run(self) -> None:  # pool thread
        if self.channel != "recommend":
            lower_thread_priority()
        if self.token():
            self.signals.cancelled.emit(self.channel, self.generation)
            return
        try:
            result = self.fn(self._progress, self.token)
        except Cancelled:
            self.signals.cancelled.emit(self.channel, self.generation)
            return
        except BaseException as exc:
            if self.token():
                self.signals.cancelled.emit(self.channel, self.generation)
                return
            log.debug("job %s#%d failed", self.channel, self.generation, exc_info=True)
            message = str(exc) or type(exc).__name__
            self.signals.failed.emit(self.channel, self.generation, message, traceback.format_exc())
            return
        if self.token():
            self.signals.cancelled.emit(self.channel, self.generation)
        else:
            self.signals.finished.emit(self.channel, self.generation, result)


@dataclass
class _Callbacks:
    on_done: Callable[[Any], None] | None = None
    on_error: Callable[[str, str], None] | None = None
    on_progress: Callable[[ProgressEvent], None] | None = None
    on_cancel: Callable[[], None] | None = None
    token: CancelToken = field(default_factory=CancelToken)


class JobRunner(QObject):
    """Submits jobs to the engine thread and routes their signals to callbacks (UI thread)."""

    busy_changed = Signal(str, bool)  # channel, running
    stage_reached = Signal(str, str, str)  # channel, stage, message (current jobs only)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.pools: dict[str, QThreadPool] = {}
        self.signals = JobSignals(self)
        self.signals.progress.connect(self._on_progress)
        self.signals.finished.connect(self._on_finished)
        self.signals.failed.connect(self._on_failed)
        self.signals.cancelled.connect(self._on_cancelled)
        self._generation: dict[str, int] = {}
        self._jobs: dict[tuple[str, int], _Callbacks] = {}

    def submit(
        self, channel: str, fn: JobFn, on_done=None, on_error=None, on_progress=None, on_cancel=None
    ) -> int:
        """Run ``fn`` in the background; cancels the channel's previous job. Returns the generation."""
        self.cancel(channel)
        generation = self._generation.get(channel, 0) + 1
        self._generation[channel] = generation
        callbacks = _Callbacks(on_done, on_error, on_progress, on_cancel)
        self._jobs[(channel, generation)] = callbacks
        self._pool(channel).start(_Job(channel, generation, fn, callbacks.token, self.signals))
        self.busy_changed.emit(channel, True)
        return generation

    def cancel(self, channel: str) -> None:
        """Cancel the running/queued job of ``channel`` (its result will be dropped)."""
        for (ch, _gen), callbacks in self._jobs.items():
            if ch == channel:
                callbacks.token.cancel()

    def is_busy(self, channel: str) -> bool:
        return any(ch == channel for ch, _ in self._jobs)

    def generation(self, channel: str) -> int:
        return self._generation.get(channel, 0)

    def _pool(self, channel: str) -> QThreadPool:
        name = _POOL_OF.get(channel, channel)
        pool = self.pools.get(name)
        if pool is None:
            pool = self.pools[name] = QThreadPool(self)
            pool.setMaxThreadCount(1)
            pool.setExpiryTimeout(-1)  # the channel's thread lives as long as the app
        return pool

    def wait(self, msecs: int = 30000) -> bool:
        return all(pool.waitForDone(msecs) for pool in list(self.pools.values()))

    def shutdown(self, msecs: int = 10000) -> None:
        for callbacks in self._jobs.values():
            callbacks.token.cancel()
        for pool in self.pools.values():
            pool.clear()
        for pool in self.pools.values():
            pool.waitForDone(msecs)

    # --- routing (UI thread) ------------------------------------------------------------------
    def _current(self, channel: str, generation: int) -> _Callbacks | None:
        callbacks = self._jobs.get((channel, generation))
        if callbacks is None or generation != self._generation.get(channel):
            return None  # stale: a newer request replaced it
        return callbacks

    def _finish(self, channel: str, generation: int) -> None:
        self._jobs.pop((channel, generation), None)
        if not self.is_busy(channel):
            self.busy_changed.emit(channel, False)

    @Slot(str, int, object)
    def _on_progress(self, channel, generation, event: ProgressEvent) -> None:
        callbacks = self._current(channel, generation)
        if callbacks is None or callbacks.token():
            return
        if event.stage:
            self.stage_reached.emit(channel, event.stage, event.message)
        if callbacks.on_progress:
            callbacks.on_progress(event)

    @Slot(str, int, object)
    def _on_finished(self, channel, generation, result) -> None:
        callbacks = self._current(channel, generation)
        self._finish(channel, generation)
        if callbacks and callbacks.on_done:
            callbacks.on_done(result)

    @Slot(str, int, str, str)
    def _on_failed(self, channel, generation, message, trace) -> None:
        callbacks = self._current(channel, generation)
        self._finish(channel, generation)
        if callbacks and callbacks.on_error:
            callbacks.on_error(message, trace)

    @Slot(str, int)
    def _on_cancelled(self, channel, generation) -> None:
        callbacks = self._jobs.get((channel, generation))
        self._finish(channel, generation)
        if callbacks and callbacks.on_cancel:
            callbacks.on_cancel()
