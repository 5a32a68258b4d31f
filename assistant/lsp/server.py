"""``assistant lsp``: the language server (pygls over stdio).

Threads: the asyncio loop reads messages and answers everything quick itself; the library's
lookups and .bib parsing run on an I/O thread, recommendations on one worker thread, the
missing-citation finder on another, model loading on a loader thread. Nothing slow runs on the
loop, so the editor never waits on a model: the first completion after start gets library keys
(``isIncomplete``) while the models load, recommendations join once they are ready
(``citeAssist/status`` notifications and ``$/progress`` tell the client).

A recommendation job stops (between pipeline stages) when its document changes or the client
sends ``$/cancelRequest`` for its request.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from assistant import __version__
from assistant.errors import Cancelled
from assistant.lsp import backend, bibfiles, completion, diagnostics, features, framing
from assistant.lsp.commands import CommandsMixin
from assistant.lsp.navigation import NavigationMixin
from assistant.lsp.protocol import SafeProtocol, report_unreadable
from assistant.lsp.text import DocState, uri_to_path

log = logging.getLogger(__name__)

STATUS_NOTIFICATION = "citeAssist/status"
_LIBRARY_CHECK_S = 2.0


class CiteAssistServer(CommandsMixin, NavigationMixin, LanguageServer):
    """The Cite-Assist language server for LaTeX and Markdown manuscripts: the state its feature
    handlers share (:mod:`assistant.lsp.features` registers them from one table), the worker
    threads, start-up (library keys, models) and diagnostics scheduling."""

    def __init__(self, be: backend.Backend, recommend: bool = True, cache_size: int = 64) -> None:
        super().__init__(
            "cite-assist",
            __version__,
            protocol_cls=SafeProtocol,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        )
        self.backend = be
        self.recommend_enabled = recommend
        self.docs: dict[str, DocState] = {}
        self.keys: completion.KeyIndex | None = None
        self.state = "starting"
        self.state_message = ""
        self._serving_tier = ""  # the quality tier whose index made the cached lists
        self.bibs = bibfiles.BibCache(self._open_bib_text)
        self.rec_cache = completion.RecommendationCache(cache_size)
        self.missing: dict[str, list[diagnostics.MissingMark]] = {}
        self._cited: dict[str, tuple[int, list[str]]] = {}
        self.loop: asyncio.AbstractEventLoop | None = None
        self._keys_event: asyncio.Event | None = None  # set once the first keys are in
        self._keys_loading = False
        self._keys_again = False
        self._diag_handles: dict[str, asyncio.TimerHandle] = {}
        self._last_library_check = 0.0
        self._stopping = threading.Event()
        self._tokens: set[threading.Event] = set()
        self.shutdown_requested = False
        self.io_pool = ThreadPoolExecutor(1, thread_name_prefix="cite-assist-io")
        self.rec_pool = ThreadPoolExecutor(1, thread_name_prefix="cite-assist-recommend")
        self.finder_pool = ThreadPoolExecutor(1, thread_name_prefix="cite-assist-finder")
        self.loader_pool = ThreadPoolExecutor(1, thread_name_prefix="cite-assist-loader")
        self.keys_pool = ThreadPoolExecutor(1, thread_name_prefix="cite-assist-keys")
        # never waited for: its thread may block in read() when the server leaves
        self.stdin_pool = ThreadPoolExecutor(1, thread_name_prefix="cite-assist-stdin")
        features.register(self)  # the handlers, from one table

    # --- plumbing -----------------------------------------------------------------------------
    def report_server_error(self, error: Exception, source) -> None:
        """Malformed input is answered (parse error); nothing pops up in the user's editor."""
        if report_unreadable(self.protocol, error):
            return
        log.error("server error (%s): %s", getattr(source, "__name__", source), error)

    def start_io(self, stdin=None, stdout=None) -> None:
        """Serve over stdio with the hardened frame reader (:mod:`assistant.lsp.framing`)."""
        import sys

        from pygls.io_ import StdoutWriter

        self._stop_event = threading.Event()
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        frames = framing.run_frames(
            self._stop_event,
            stdin or sys.stdin.buffer,
            self.protocol,
            self.report_server_error,
            self.stdin_pool,
        )
        try:
            asyncio.run(frames)
        except BrokenPipeError:
            log.error("the connection to the client is lost; shutting down")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()

    def post(self, fn: Callable, *args) -> None:
        """Run ``fn(*args)`` on the message loop (from any thread)."""
        if self.loop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(fn, *args)

    async def run_io(self, fn: Callable, *args):
        return await asyncio.get_running_loop().run_in_executor(self.io_pool, partial(fn, *args))

    async def run_cancellable(self, pool: ThreadPoolExecutor, fn: Callable, doc=None):
        """Run ``fn(cancelled)`` on ``pool``; ``cancelled()`` turns true on ``$/cancelRequest``,
        shutdown, or (with ``doc``) when that document changes. Raises :class:`Cancelled`."""
        token = threading.Event()
        self._tokens.add(token)
        generation = doc.generation if doc is not None else None

        def cancelled() -> bool:
            if token.is_set() or self._stopping.is_set():
                return True
            if doc is None:
                return False
            current = self.docs.get(doc.uri)
            return current is None or current.generation != generation

        def job():
            backend.check_cancelled(cancelled)
            return fn(cancelled)

        future = pool.submit(job)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            token.set()
            future.cancel()
            raise
        finally:
            self._tokens.discard(token)

    def _status(self, state: str, message: str) -> None:
        """Tell the client; ``self.state`` follows the models (keys reloads leave it alone)."""
        if state != "keys":
            self.state, self.state_message = state, message
        papers = len(self.keys) if self.keys is not None else None
        self.protocol.notify(
            STATUS_NOTIFICATION, {"state": state, "message": message, "papers": papers}
        )
        self.window_log_message(
            types.LogMessageParams(
                type=types.MessageType.Info, message=f"Cite-Assist: {state}: {message}"
            )
        )

    def _warn(self, message: str, kind=types.MessageType.Warning) -> None:
        self.window_show_message(
            types.ShowMessageParams(type=kind, message=f"Cite-Assist: {message}")
        )

    def _open_bib_text(self, path: Path) -> tuple[str, int | None] | None:
        for doc in list(self.docs.values()):
            if doc.path is not None and doc.path.resolve() == Path(path).resolve():
                return doc.text, doc.version
        return None

    def _bib_doc(self, path: Path) -> DocState | None:
        for doc in list(self.docs.values()):
            if doc.path is not None and doc.path.resolve() == Path(path).resolve():
                return doc
        return None

    async def bib_set(self, doc: DocState) -> bibfiles.BibSet:
        return await self.run_io(bibfiles.bib_set, doc, self.bibs)

    def _doc(self, uri: str) -> DocState | None:
        doc = self.docs.get(uri)
        return doc if doc is not None and doc.style is not None else None

    @property
    def _encoding(self) -> str:
        enc = getattr(self.workspace, "position_encoding", None)
        return str(getattr(enc, "value", enc) or "utf-16")

    # --- start-up -----------------------------------------------------------------------------
    def _start(self) -> None:
        self.loop = asyncio.get_running_loop()
        self._keys_event = asyncio.Event()
        self.loop.create_task(self._load_keys())
        if self.recommend_enabled:  # one listener: _load_models runs again on library changes
            self.backend.on_change(lambda: self.post(self._tier_changed))
            self.loop.create_task(self._load_models())
        else:
            self._status("off", "recommendations are switched off (--no-recommend)")

    async def _load_keys(self) -> None:
        """Load the library's keys: the newest at once, then the whole list. A reload asked for
        while one runs is folded into it (one more pass), and the keys already loaded serve
        every request meanwhile: ``_keys_event`` is set once and never replaced, so a request
        that waits for the first keys is always woken."""
        if self._keys_loading:
            self._keys_again = True
            return
        self._keys_loading = True
        try:
            while True:
                self._keys_again = False
                await self._read_keys()
                if not self._keys_again or self._stopping.is_set():
                    break
        finally:
            self._keys_loading = False

    async def _read_keys(self) -> None:
        def load(limit: int = -1) -> completion.KeyIndex:
            found = self.backend.keys(limit)
            index = completion.KeyIndex(found.entries, found.aliases)
            index.searching(["_"], 1)  # build the word index here, not on the first keystroke
            return index

        try:
            if self.keys is None:  # the newest papers at once (a 112k library takes seconds)
                partial = await self.run_io(load, completion.MAX_KEY_ITEMS)
                partial.complete = False
                self.keys = partial
                self._keys_event.set()
            # the whole list on its own thread: lookups and .bib reads go on meanwhile
            self.keys = await asyncio.get_running_loop().run_in_executor(self.keys_pool, load)
            gc.freeze()  # 100k long-lived entries: out of the collector's full scans
        except Exception as exc:
            log.warning("cannot read the library: %s", exc)
            self._warn(f"cannot read the library: {exc}", types.MessageType.Error)
            if self.keys is None or not self.keys.complete:
                self.keys = completion.KeyIndex([])
        self._keys_event.set()
        self._status("keys", f"{len(self.keys)} library keys loaded from {self.backend.db_path}")
        for uri in list(self.docs):
            self._schedule_diagnostics(uri, 0.0)

    def set_quality(self, value) -> None:
        """The editor's ``initializationOptions.quality`` (auto | fast | best; else a warning)."""
        problem = self.backend.set_quality(value)
        if problem:
            self._warn(problem)

    def _tier_changed(self) -> None:
        """The quality tier switched or its background build progressed: say so."""
        if self.state == "ready":
            tier = self.backend.serving_tier()
            if self._serving_tier and tier != self._serving_tier:
                self.rec_cache.clear()  # lists made from the other tier's index
            self._serving_tier = tier
            self._status("ready", self.backend.describe())

    async def _load_models(self) -> None:
        self._status("loading", "loading the recommendation models")
        token = await self._progress_begin("Cite-Assist", "Loading the recommendation models")

        def progress(event) -> None:  # a ProgressEvent
            if event.message:
                self.post(self._progress_report, token, event.message)

        try:
            message = await asyncio.get_running_loop().run_in_executor(
                self.loader_pool, partial(self.backend.prepare, progress, self._stopping.is_set)
            )
        except Cancelled:
            return
        except Exception as exc:
            log.warning("recommendations unavailable: %s", exc)
            self._status("failed", str(exc))
            self._warn(f"recommendations unavailable: {exc}")
            self._progress_end(token, "recommendations unavailable")
            return
        self.rec_cache.clear()
        self._status("ready", message)
        self._progress_end(token, "recommendations ready")

    async def _progress_begin(self, title: str, message: str) -> str | None:
        caps = self.client_capabilities
        if not (caps and caps.window and caps.window.work_done_progress):
            return None
        token = f"cite-assist-{uuid.uuid4()}"
        try:  # pygls' work-done progress: window/workDoneProgress/create, then $/progress
            await asyncio.wait_for(self.work_done_progress.create_async(token), timeout=10)
        except Exception:
            return None
        self.work_done_progress.begin(
            token, types.WorkDoneProgressBegin(title=title, message=message)
        )
        return token

    def _progress_report(self, token: str | None, message: str) -> None:
        if token is not None:
            self.work_done_progress.report(
                token, types.WorkDoneProgressReport(message=message[:120])
            )

    def _progress_end(self, token: str | None, message: str) -> None:
        if token is not None:
            self.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))

    async def wait_keys(self) -> completion.KeyIndex | None:
        if self._keys_event is None:
            return None
        if self._keys_event.is_set():  # (wait_for on a done wait would swallow a cancellation)
            return self.keys
        try:
            await asyncio.wait_for(self._keys_event.wait(), timeout=30)
        except TimeoutError:
            return None
        return self.keys

    def _check_library(self) -> None:
        """Reload keys (and the recommender) when the library changed on disk (CLI import)."""
        now = time.monotonic()
        if now - self._last_library_check < _LIBRARY_CHECK_S or self.loop is None:
            return
        if self._keys_loading:  # that load reads the library as it is now
            return
        self._last_library_check = now

        async def check() -> None:
            try:  # its own thread: a count over 100k papers must not delay .bib reads
                changed = await asyncio.get_running_loop().run_in_executor(
                    self.keys_pool, self.backend.library_changed
                )
            except Exception:
                return
            if changed:  # the old keys serve until the new list replaces them
                await self._load_keys()
                if self.recommend_enabled and self.state in ("ready", "failed"):
                    # new papers: the loader indexes them and swaps the recommender in
                    await self._load_models()

        self.loop.create_task(check())

    def stop(self) -> None:
        """Stop background work (shutdown): running jobs see ``cancelled()``."""
        self._stopping.set()
        for token in list(self._tokens):
            token.set()
        for pool in (
            self.rec_pool,
            self.finder_pool,
            self.io_pool,
            self.loader_pool,
            self.keys_pool,
        ):
            pool.shutdown(wait=False, cancel_futures=True)

    # --- documents ----------------------------------------------------------------------------
    def _refresh_all(self, delay: float = 0.0) -> None:
        for uri in list(self.docs):
            self._schedule_diagnostics(uri, delay)

    def _schedule_diagnostics(self, uri: str, delay: float) -> None:
        if self.loop is None:
            return
        handle = self._diag_handles.pop(uri, None)
        if handle is not None:
            handle.cancel()
        self._diag_handles[uri] = self.loop.call_later(
            delay, lambda: self.loop.create_task(self.publish_diagnostics(uri))
        )

    async def publish_diagnostics(self, uri: str) -> None:
        raw = self.docs.get(uri)
        if raw is not None and raw.style is None:
            await self._publish_bib_diagnostics(raw)
            return
        doc = self._doc(uri)
        if doc is None:
            return
        keys = await self.wait_keys()
        bibs = await self.bib_set(doc)
        current = self._doc(uri)
        if current is None or current.generation != doc.generation or keys is None:
            return  # a newer version is on its way
        if not keys.complete:
            return  # the newest keys only: the whole list re-runs the diagnostics
        found = diagnostics.key_diagnostics(doc, keys, bibs)
        found += diagnostics.missing_diagnostics(doc, self.missing.get(uri, []))
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=found, version=doc.version)
        )


def create_server(
    db_path: Path | None = None,
    recommend: bool = True,
    cache_size: int = 64,
    quality: str | None = None,
) -> CiteAssistServer:
    return CiteAssistServer(
        backend.Backend(db_path, quality=quality), recommend=recommend, cache_size=cache_size
    )


__all__ = ["STATUS_NOTIFICATION", "CiteAssistServer", "create_server", "uri_to_path"]
