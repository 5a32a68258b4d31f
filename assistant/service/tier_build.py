"""The background build of a quality tier's index: :class:`JobLock`, the service's job lock that
a background build yields, and :class:`TierBuilder`, the thread that builds the wanted tier's
index and then switches the service to it (see :mod:`assistant.service.quality`)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from assistant.errors import AssistantError, Cancelled
from assistant.progress import ProgressEvent
from assistant.retrieval.index import IndexBusyError

log = logging.getLogger(__name__)


class JobLock:
    """The service's job lock (re-entrant) that a background build yields: a job that must wait
    for it raises :attr:`waiting`, and the build stops at its next chunk (its embedded chunks are
    kept: it resumes once the job is done)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._waiting = 0
        self._count = threading.Lock()

    @property
    def waiting(self) -> bool:
        return self._waiting > 0

    def __enter__(self) -> JobLock:
        if not self._lock.acquire(blocking=False):
            with self._count:
                self._waiting += 1
            try:
                self._lock.acquire()
            finally:
                with self._count:
                    self._waiting -= 1
        return self

    def __exit__(self, *_exc) -> None:
        self._lock.release()

    def background(self) -> threading.RLock:
        """The lock itself, for the background build (its waiting is not counted)."""
        return self._lock


class TierBuilder:
    """Builds the wanted tier's index on a thread of its own, then switches the service to it.

    ``build(encoder, progress, cancelled)`` runs one build under the job lock (the service's
    ``_build_tier``); ``load()`` loads the wanted tier's encoder; ``done()`` is called after a
    finished build (re-choose the tier, open the new snapshot); ``failed(message)`` when loading
    or building failed for a reason a retry would not cure (a missing weight); ``changed()`` on
    every progress step, from this thread."""

    def __init__(
        self,
        lock: JobLock,
        load: Callable[[], object],
        build: Callable[[object, Callable, Callable[[], bool]], object],
        done: Callable[[], None],
        failed: Callable[[str], None],
        changed: Callable[[], None],
        papers: int,
    ) -> None:
        self._lock, self._load, self._build = lock, load, build
        self._papers = papers  # in the library: the share built counts the resumed ones
        self._done, self._failed, self._changed = done, failed, changed
        self._stop = threading.Event()
        self.fraction: float | None = None  # of the library's papers, once embedding started
        self.thread = threading.Thread(target=self._run, name="tier-build", daemon=True)

    def start(self) -> TierBuilder:
        self.thread.start()
        return self

    @property
    def running(self) -> bool:
        return self.thread.is_alive()

    def stop(self, wait_s: float = 5.0) -> None:
        """Stop at the next batch (the chunks embedded so far are kept for the next run)."""
        self._stop.set()
        if self.thread.is_alive() and threading.current_thread() is not self.thread:
            self.thread.join(wait_s)

    def _progress(self, event: ProgressEvent) -> None:
        if event.stage == "embed" and event.total:
            done = max(0, self._papers - event.total) + event.done  # stored/resumed + embedded
            self.fraction = min(1.0, done / max(1, self._papers))
            self._changed()

    def _cancelled(self) -> bool:
        return self._stop.is_set() or self._lock.waiting

    def _run(self) -> None:
        try:
            encoder = self._load()
        except AssistantError as exc:  # a missing weight, no export tools: one line, fast stays
            log.warning("the best quality tier is unavailable: %s", exc)
            self._failed(str(exc))
            return
        while not self._stop.is_set():
            while self._lock.waiting and not self._stop.is_set():
                time.sleep(0.05)  # let the job that asked for the lock have it first
            with self._lock.background():
                if self._stop.is_set():
                    return
                try:
                    self._build(encoder, self._progress, self._cancelled)
                    finished = True
                except Cancelled:
                    continue  # a job wanted the lock (or the service closes): resume after it
                except IndexBusyError:  # another program's long index job
                    finished = False
                except AssistantError as exc:
                    log.warning("building the best tier's index failed: %s", exc)
                    self._failed(str(exc))
                    return
                if finished:
                    self.fraction = 1.0
                    self._done()
                    return
            self._stop.wait(5.0)  # try again later, the job lock free meanwhile

    def describe(self) -> str:
        if self.fraction is None:
            return "starting"
        return f"{int(100 * self.fraction)}% built"
