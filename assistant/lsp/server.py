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
from assistant.lsp import (
    actions,
    backend,
    bibfiles,
    completion,
    diagnostics,
    framing,
    hover,
)
from assistant.lsp.citations import key_at, key_spans, slot_at
from assistant.lsp.commands import CommandsMixin
from assistant.lsp.navigation import NavigationMixin
from assistant.lsp.protocol import SafeProtocol, report_unreadable
from assistant.lsp.text import DocState, style_for, uri_to_path

log = logging.getLogger(__name__)

STATUS_NOTIFICATION = "citeAssist/status"
_LIBRARY_CHECK_S = 2.0


class CiteAssistServer(CommandsMixin, NavigationMixin, LanguageServer):
    """The Cite-Assist language server for LaTeX and Markdown manuscripts."""

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
        self.bibs = bibfiles.BibCache(self._open_bib_text)
        self.rec_cache = completion.RecommendationCache(cache_size)
        self.missing: dict[str, list[diagnostics.MissingMark]] = {}
        self._cited: dict[str, tuple[int, list[str]]] = {}
        self.loop: asyncio.AbstractEventLoop | None = None
        self._keys_event: asyncio.Event | None = None
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
        self._register()

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
        if self.recommend_enabled:
            self.loop.create_task(self._load_models())
        else:
            self._status("off", "recommendations are switched off (--no-recommend)")

    async def _load_keys(self) -> None:
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
            self.keys = completion.KeyIndex([])
        self._keys_event.set()
        self._status("keys", f"{len(self.keys)} library keys loaded from {self.backend.db_path}")
        for uri in list(self.docs):
            self._schedule_diagnostics(uri, 0.0)

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
        try:
            await asyncio.wait_for(
                self.protocol.send_request_async(
                    types.WINDOW_WORK_DONE_PROGRESS_CREATE,
                    types.WorkDoneProgressCreateParams(token=token),
                ),
                timeout=10,
            )
        except Exception:
            return None
        self.protocol.notify(
            types.PROGRESS,
            types.ProgressParams(token, types.WorkDoneProgressBegin(title=title, message=message)),
        )
        return token

    def _progress_report(self, token: str | None, message: str) -> None:
        if token is not None:
            self.protocol.notify(
                types.PROGRESS,
                types.ProgressParams(token, types.WorkDoneProgressReport(message=message[:120])),
            )

    def _progress_end(self, token: str | None, message: str) -> None:
        if token is not None:
            self.protocol.notify(
                types.PROGRESS,
                types.ProgressParams(token, types.WorkDoneProgressEnd(message=message)),
            )

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
        self._last_library_check = now

        async def check() -> None:
            try:  # its own thread: a count over 100k papers must not delay .bib reads
                changed = await asyncio.get_running_loop().run_in_executor(
                    self.keys_pool, self.backend.library_changed
                )
            except Exception:
                return
            if changed:
                self._keys_event = asyncio.Event()
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
    def _did_open(self, params: types.DidOpenTextDocumentParams) -> None:
        item = params.text_document
        is_bib = item.uri.lower().endswith(".bib") or (
            item.language_id == "bibtex" and not item.uri.lower().endswith((".tex", ".md"))
        )
        style = None if is_bib else style_for(item.uri, item.language_id, item.text)
        self.docs[item.uri] = DocState(item.uri, item.text, item.version, style, self._encoding)
        if is_bib:
            self._refresh_all()
        else:
            self._schedule_diagnostics(item.uri, 0.0)

    def _did_change(self, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        old = self.docs.get(uri)
        if old is None:
            return
        text = self.workspace.get_text_document(uri).source
        doc = old.updated(text, params.text_document.version)
        self.docs[uri] = doc
        if doc.style is None:
            self._refresh_all(delay=0.5)
            return
        if uri in self.missing:
            self.missing[uri] = diagnostics.reanchor(self.missing[uri], old.text, text)
        self._schedule_diagnostics(uri, 0.3)

    def _did_close(self, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        doc = self.docs.pop(uri, None)
        self.missing.pop(uri, None)
        self._cited.pop(uri, None)
        handle = self._diag_handles.pop(uri, None)
        if handle is not None:
            handle.cancel()
        if doc is not None and doc.style is None:
            self._refresh_all()
        elif doc is not None:
            self.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
            )

    def _did_save(self, params: types.DidSaveTextDocumentParams) -> None:
        """A save may have written a .bib (the editor applied our edit to a buffer and saved
        it): diagnostics of every manuscript are checked again."""
        path = uri_to_path(params.text_document.uri)
        if path is not None and path.suffix.lower() == ".bib":
            self.bibs.invalidate(path.resolve())
        self._refresh_all()

    def _did_change_watched(self, params: types.DidChangeWatchedFilesParams) -> None:
        """A .bib changed on disk (saved by another program, or by the editor unopened)."""
        for change in params.changes:
            path = uri_to_path(change.uri)
            if path is not None:
                self.bibs.invalidate(path.resolve())
        self._refresh_all(0.1)

    async def _watch_bib_files(self) -> None:
        caps = self.client_capabilities
        ws = caps.workspace if caps else None
        watched = ws.did_change_watched_files if ws else None
        if not (watched and watched.dynamic_registration):
            return
        options = types.DidChangeWatchedFilesRegistrationOptions(
            watchers=[types.FileSystemWatcher(glob_pattern="**/*.bib")]
        )
        try:
            await self.client_register_capability_async(
                types.RegistrationParams(
                    registrations=[
                        types.Registration(
                            id=f"cite-assist-bib-{uuid.uuid4()}",
                            method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                            register_options=options,
                        )
                    ]
                )
            )
        except Exception as exc:
            log.debug("no file watching: %s", exc)

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

    # --- features -----------------------------------------------------------------------------
    async def _completion(self, params: types.CompletionParams):
        doc = self._doc(params.text_document.uri)
        if doc is None:
            return None
        slot = slot_at(doc.text, doc.lines.offset(params.position), doc.style)
        if slot is None:
            return None
        self._check_library()
        keys = await self.wait_keys()
        bibs = await self.bib_set(doc)
        suggestions, incomplete = None, False
        if self.recommend_enabled:
            if self.backend.ready:
                try:
                    suggestions = await self.suggest(doc, slot)
                except Cancelled:
                    incomplete = True  # the document changed: the client asks again
                except Exception as exc:
                    log.warning("recommendation failed: %s", exc)
            else:
                incomplete = self.state not in ("failed", "off")
        return completion.build_list(
            doc,
            slot,
            keys,
            suggestions,
            bibs,
            incomplete,
            self._label_details(),
            cited=self._cited_keys() if not slot.prefix else None,
        )

    def _cited_keys(self) -> list[str]:
        """Keys the open manuscripts cite (most cited first), kept per document version."""
        from collections import Counter

        counts: Counter = Counter()
        for uri, doc in list(self.docs.items()):
            if doc.style is None:
                continue
            cached = self._cited.get(uri)
            if cached is None or cached[0] != doc.generation:
                cached = (doc.generation, [s.key for s in key_spans(doc.text, doc.style)])
                self._cited[uri] = cached
            counts.update(cached[1])
        return [k for k, _ in counts.most_common()]

    def _label_details(self) -> bool:
        caps = self.client_capabilities
        td = caps.text_document if caps else None
        item = td.completion.completion_item if td and td.completion else None
        return bool(item and item.label_details_support)

    async def suggest(self, doc: DocState, slot) -> list[backend.Suggestion]:
        def job(cancelled):
            query = completion.slot_query(doc, slot, self.backend)
            key = query.cache_key()
            cached = self.rec_cache.get(key)
            if cached is not None:
                return cached
            found = self.backend.recommend(query, completion.RECOMMENDATIONS, cancelled)
            self.rec_cache.put(key, found)
            return found

        return await self.run_cancellable(self.rec_pool, job, doc)

    async def _resolve(self, item: types.CompletionItem) -> types.CompletionItem:
        return await self.run_io(completion.resolve, item, self.backend)

    async def _hover(self, params: types.HoverParams):
        doc = self._doc(params.text_document.uri)
        if doc is None:
            return None
        bibs = await self.bib_set(doc)
        return await self.run_io(hover.hover, doc, params.position, self.backend, bibs)

    async def _definition(self, params: types.DefinitionParams):
        doc = self._doc(params.text_document.uri)
        if doc is None:
            return None
        span = key_at(doc.text, doc.lines.offset(params.position), doc.style)
        if span is None:
            return None
        bibs = await self.bib_set(doc)
        entry = bibs.find(span.key)
        if entry is not None:
            bib_doc = self._bib_doc(entry.path)
            uri = bib_doc.uri if bib_doc is not None else entry.path.resolve().as_uri()
            # entry columns are code points; convert on the bib's own text
            lines = (
                bib_doc.lines
                if bib_doc is not None
                else _line_index(bibs, entry.path, self._encoding)
            )
            line_start = lines.starts[entry.line] if entry.line < len(lines.starts) else 0
            rng = lines.range(line_start + entry.start, line_start + entry.end)
            return types.Location(uri=uri, range=rng)
        for m in diagnostics._BIBITEM_RE.finditer(doc.text):
            if m.group(1).strip() == span.key:
                return types.Location(uri=doc.uri, range=doc.lines.range(m.start(1), m.end(1)))
        return None

    async def _code_action(self, params: types.CodeActionParams):
        doc = self._doc(params.text_document.uri)
        if doc is None:
            return None
        bibs = await self.bib_set(doc)
        return actions.code_actions(doc, params.range, params.context, bibs)

    # --- registration -------------------------------------------------------------------------
    def _register(self) -> None:
        self.feature(types.INITIALIZE)(_plain(lambda params: self._start()))
        self.feature(types.SHUTDOWN)(_plain(self._on_shutdown))
        self.feature(types.TEXT_DOCUMENT_DID_OPEN)(_plain(self._did_open))
        self.feature(types.TEXT_DOCUMENT_DID_CHANGE)(_plain(self._did_change))
        self.feature(types.TEXT_DOCUMENT_DID_CLOSE)(_plain(self._did_close))
        self.feature(types.TEXT_DOCUMENT_DID_SAVE)(_plain(self._did_save))
        self.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)(_plain(self._did_change_watched))
        self.feature(types.INITIALIZED)(_plain(self._initialized))
        self.feature(
            types.TEXT_DOCUMENT_COMPLETION,
            types.CompletionOptions(trigger_characters=["{", ",", "@"], resolve_provider=True),
        )(_plain(self._completion))
        self.feature(types.COMPLETION_ITEM_RESOLVE)(_plain(self._resolve))
        self.feature(types.TEXT_DOCUMENT_HOVER)(_plain(self._hover))
        self.feature(types.TEXT_DOCUMENT_DEFINITION)(_plain(self._definition))
        self.feature(types.TEXT_DOCUMENT_REFERENCES)(_plain(self._references))
        self.feature(types.TEXT_DOCUMENT_PREPARE_RENAME)(_plain(self._prepare_rename))
        self.feature(types.TEXT_DOCUMENT_RENAME)(_plain(self._rename))
        self.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)(_plain(self._document_symbols))
        self.feature(types.WORKSPACE_SYMBOL)(_plain(self._workspace_symbols))
        self.feature(
            types.TEXT_DOCUMENT_CODE_ACTION,
            types.CodeActionOptions(
                code_action_kinds=[
                    types.CodeActionKind.QuickFix,
                    actions.KIND_RECOMMEND,
                    actions.KIND_FIND_MISSING,
                ]
            ),
        )(_plain(self._code_action))
        self.command(completion.ADD_BIB_COMMAND)(_plain(self.cmd_add_bib_entry))
        self.command(actions.RECOMMEND_HERE)(_plain(self.cmd_recommend_here))
        self.command(actions.FIND_MISSING)(_plain(self.cmd_find_missing))

    def _initialized(self, *_args) -> None:
        if self.loop is not None:
            self.loop.create_task(self._watch_bib_files())

    def _on_shutdown(self, *_args) -> None:
        self.shutdown_requested = True
        self.stop()


def _plain(fn: Callable) -> Callable:
    """A plain function calling ``fn`` (pygls tags handlers with attributes; bound methods
    cannot carry them)."""
    if asyncio.iscoroutinefunction(fn):

        async def handler(*args):
            return await fn(*args)

    else:

        def handler(*args):
            return fn(*args)

    handler.__name__ = getattr(fn, "__name__", "handler")
    return handler


def _line_index(bibs: bibfiles.BibSet, path: Path, encoding: str):
    from assistant.lsp.text import LineIndex

    for bib in bibs.files:
        if bib.path == path:
            return LineIndex(bib.text, encoding)
    return LineIndex("", encoding)


def create_server(
    db_path: Path | None = None, recommend: bool = True, cache_size: int = 64
) -> CiteAssistServer:
    return CiteAssistServer(backend.Backend(db_path), recommend=recommend, cache_size=cache_size)


__all__ = ["STATUS_NOTIFICATION", "CiteAssistServer", "create_server", "uri_to_path"]
