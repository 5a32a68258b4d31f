"""The language server's features as small handlers ``handler(server, params)`` (``server``: the
:class:`~assistant.lsp.server.CiteAssistServer`, which imports this module), registered from
one table (``FEATURES``, ``COMMANDS``) as the pygls examples do: document sync, completion, hover,
definition, code actions here; references, rename and symbols in :mod:`navigation`; the
``workspace/executeCommand`` handlers in :mod:`commands`. The server (:mod:`server`) holds the
state they share: open documents, the key index, the .bib cache, the worker pools."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from lsprotocol import types

from assistant.errors import Cancelled
from assistant.lsp import actions, backend, bibfiles, completion, diagnostics, hover
from assistant.lsp.citations import key_at, key_spans, slot_at
from assistant.lsp.commands import CommandsMixin
from assistant.lsp.navigation import NavigationMixin
from assistant.lsp.text import DocState, LineIndex, path_to_uri, style_for, uri_to_path

log = logging.getLogger(__name__)


# --- life cycle -------------------------------------------------------------------------------
def initialize(server, params) -> None:
    options = getattr(params, "initialization_options", None)
    if isinstance(options, dict) and options.get("quality") is not None:
        server.set_quality(options["quality"])
    server._start()


def initialized(server, *_args) -> None:
    if server.loop is not None:
        server.loop.create_task(watch_bib_files(server))


def shutdown(server, *_args) -> None:
    server.shutdown_requested = True
    server.stop()


# --- document sync ----------------------------------------------------------------------------
def did_open(server, params: types.DidOpenTextDocumentParams) -> None:
    item = params.text_document
    is_bib = item.uri.lower().endswith(".bib") or (
        item.language_id == "bibtex" and not item.uri.lower().endswith((".tex", ".md"))
    )
    style = None if is_bib else style_for(item.uri, item.language_id, item.text)
    server.docs[item.uri] = DocState(item.uri, item.text, item.version, style, server._encoding)
    if is_bib:
        server._refresh_all()
    else:
        server._schedule_diagnostics(item.uri, 0.0)


def did_change(server, params: types.DidChangeTextDocumentParams) -> None:
    uri = params.text_document.uri
    old = server.docs.get(uri)
    if old is None:
        return
    text = server.workspace.get_text_document(uri).source
    doc = old.updated(text, params.text_document.version)
    server.docs[uri] = doc
    if doc.style is None:
        server._refresh_all(delay=0.5)
        return
    if uri in server.missing:
        server.missing[uri] = diagnostics.reanchor(server.missing[uri], old.text, text)
    server._schedule_diagnostics(uri, 0.3)


def did_close(server, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    doc = server.docs.pop(uri, None)
    server.missing.pop(uri, None)
    server._cited.pop(uri, None)
    handle = server._diag_handles.pop(uri, None)
    if handle is not None:
        handle.cancel()
    if doc is not None and doc.style is None:
        server._refresh_all()
    elif doc is not None:
        server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
        )


def did_save(server, params: types.DidSaveTextDocumentParams) -> None:
    """A save may have written a .bib (the editor applied our edit to a buffer and saved
    it): diagnostics of every manuscript are checked again."""
    path = uri_to_path(params.text_document.uri)
    if path is not None and path.suffix.lower() == ".bib":
        server.bibs.invalidate(path.resolve())
    server._refresh_all()


def did_change_watched(server, params: types.DidChangeWatchedFilesParams) -> None:
    """A .bib changed on disk (saved by another program, or by the editor unopened)."""
    for change in params.changes:
        path = uri_to_path(change.uri)
        if path is not None:
            server.bibs.invalidate(path.resolve())
    server._refresh_all(0.1)


async def watch_bib_files(server) -> None:
    caps = server.client_capabilities
    ws = caps.workspace if caps else None
    watched = ws.did_change_watched_files if ws else None
    if not (watched and watched.dynamic_registration):
        return
    options = types.DidChangeWatchedFilesRegistrationOptions(
        watchers=[types.FileSystemWatcher(glob_pattern="**/*.bib")]
    )
    try:
        await server.client_register_capability_async(
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


# --- requests ---------------------------------------------------------------------------------
async def completion_list(server, params: types.CompletionParams):
    doc = server._doc(params.text_document.uri)
    if doc is None:
        return None
    slot = slot_at(doc.text, doc.lines.offset(params.position), doc.style)
    if slot is None:
        return None
    server._check_library()
    keys = await server.wait_keys()
    bibs = await server.bib_set(doc)
    suggestions, incomplete = None, False
    if server.recommend_enabled:
        if server.backend.ready:
            try:
                suggestions = await suggest(server, doc, slot)
            except Cancelled:
                incomplete = True  # the document changed: the client asks again
            except Exception as exc:
                log.warning("recommendation failed: %s", exc)
        else:
            incomplete = server.state not in ("failed", "off")
    return completion.build_list(
        doc,
        slot,
        keys,
        suggestions,
        bibs,
        incomplete,
        _label_details(server),
        cited=_cited_keys(server) if not slot.prefix else None,
    )


def _cited_keys(server) -> list[str]:
    """Keys the open manuscripts cite (most cited first), kept per document version."""
    counts: Counter = Counter()
    for uri, doc in list(server.docs.items()):
        if doc.style is None:
            continue
        cached = server._cited.get(uri)
        if cached is None or cached[0] != doc.generation:
            cached = (doc.generation, [s.key for s in key_spans(doc.text, doc.style)])
            server._cited[uri] = cached
        counts.update(cached[1])
    return [k for k, _ in counts.most_common()]


def _label_details(server) -> bool:
    caps = server.client_capabilities
    td = caps.text_document if caps else None
    item = td.completion.completion_item if td and td.completion else None
    return bool(item and item.label_details_support)


async def suggest(server, doc: DocState, slot) -> list[backend.Suggestion]:
    def job(cancelled):
        query = completion.slot_query(doc, slot, server.backend)
        key = query.cache_key()
        cached = server.rec_cache.get(key)
        if cached is not None:
            return cached
        found = server.backend.recommend(query, completion.RECOMMENDATIONS, cancelled)
        server.rec_cache.put(key, found)
        return found

    return await server.run_cancellable(server.rec_pool, job, doc)


async def resolve(server, item: types.CompletionItem) -> types.CompletionItem:
    return await server.run_io(completion.resolve, item, server.backend)


async def hover_at(server, params: types.HoverParams):
    doc = server._doc(params.text_document.uri)
    if doc is None:
        return None
    bibs = await server.bib_set(doc)
    return await server.run_io(hover.hover, doc, params.position, server.backend, bibs)


async def definition(server, params: types.DefinitionParams):
    doc = server._doc(params.text_document.uri)
    if doc is None:
        return None
    span = key_at(doc.text, doc.lines.offset(params.position), doc.style)
    if span is None:
        return None
    bibs = await server.bib_set(doc)
    entry = bibs.find(span.key)
    if entry is not None:
        bib_doc = server._bib_doc(entry.path)
        uri = bib_doc.uri if bib_doc is not None else path_to_uri(entry.path)
        # entry columns are code points; convert on the bib's own text
        lines = (
            bib_doc.lines
            if bib_doc is not None
            else _line_index(bibs, entry.path, server._encoding)
        )
        line_start = lines.starts[entry.line] if entry.line < len(lines.starts) else 0
        rng = lines.range(line_start + entry.start, line_start + entry.end)
        return types.Location(uri=uri, range=rng)
    for m in diagnostics._BIBITEM_RE.finditer(doc.text):
        if m.group(1).strip() == span.key:
            return types.Location(uri=doc.uri, range=doc.lines.range(m.start(1), m.end(1)))
    return None


async def code_action(server, params: types.CodeActionParams):
    doc = server._doc(params.text_document.uri)
    if doc is None:
        return None
    bibs = await server.bib_set(doc)
    return actions.code_actions(doc, params.range, params.context, bibs)


def _line_index(bibs: bibfiles.BibSet, path: Path, encoding: str):
    for bib in bibs.files:
        if bib.path == path:
            return LineIndex(bib.text, encoding)
    return LineIndex("", encoding)


# --- the table --------------------------------------------------------------------------------
class Feature(NamedTuple):
    method: str
    handler: Callable  # handler(server, params)
    options: object = None


COMPLETION_OPTIONS = types.CompletionOptions(
    trigger_characters=["{", ",", "@"], resolve_provider=True
)
CODE_ACTION_OPTIONS = types.CodeActionOptions(
    code_action_kinds=[
        types.CodeActionKind.QuickFix,
        actions.KIND_RECOMMEND,
        actions.KIND_FIND_MISSING,
    ]
)

FEATURES = (
    Feature(types.INITIALIZE, initialize),
    Feature(types.INITIALIZED, initialized),
    Feature(types.SHUTDOWN, shutdown),
    Feature(types.TEXT_DOCUMENT_DID_OPEN, did_open),
    Feature(types.TEXT_DOCUMENT_DID_CHANGE, did_change),
    Feature(types.TEXT_DOCUMENT_DID_CLOSE, did_close),
    Feature(types.TEXT_DOCUMENT_DID_SAVE, did_save),
    Feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES, did_change_watched),
    Feature(types.TEXT_DOCUMENT_COMPLETION, completion_list, COMPLETION_OPTIONS),
    Feature(types.COMPLETION_ITEM_RESOLVE, resolve),
    Feature(types.TEXT_DOCUMENT_HOVER, hover_at),
    Feature(types.TEXT_DOCUMENT_DEFINITION, definition),
    Feature(types.TEXT_DOCUMENT_CODE_ACTION, code_action, CODE_ACTION_OPTIONS),
    Feature(types.TEXT_DOCUMENT_REFERENCES, NavigationMixin._references),
    Feature(types.TEXT_DOCUMENT_PREPARE_RENAME, NavigationMixin._prepare_rename),
    Feature(types.TEXT_DOCUMENT_RENAME, NavigationMixin._rename),
    Feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL, NavigationMixin._document_symbols),
    Feature(types.WORKSPACE_SYMBOL, NavigationMixin._workspace_symbols),
)
COMMANDS = (
    (completion.ADD_BIB_COMMAND, CommandsMixin.cmd_add_bib_entry),
    (actions.RECOMMEND_HERE, CommandsMixin.cmd_recommend_here),
    (actions.FIND_MISSING, CommandsMixin.cmd_find_missing),
)


def register(server) -> None:
    """Register every feature and command of the tables on ``server``."""
    for feature in FEATURES:
        server.feature(feature.method, feature.options)(bound(feature.handler, server))
    for name, handler in COMMANDS:
        server.command(name)(bound(handler, server))


def bound(fn: Callable, server) -> Callable:
    """A plain function calling ``fn(server, *args)`` (pygls tags handlers with attributes;
    bound methods cannot carry them)."""
    if asyncio.iscoroutinefunction(fn):

        async def handler(*args):
            return await fn(server, *args)

    else:

        def handler(*args):
            return fn(server, *args)

    handler.__name__ = getattr(fn, "__name__", "handler")
    return handler
