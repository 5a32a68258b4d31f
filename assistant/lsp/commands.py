"""``workspace/executeCommand`` handlers of the language server: add a .bib entry, recommend
citations here (answers at once, the pick follows), find missing citations."""

from __future__ import annotations

import logging
from pathlib import Path

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from assistant.errors import Cancelled
from assistant.lsp import backend, bibfiles, diagnostics
from assistant.lsp.edits import EditPlan, citation_insert, is_empty, plan
from assistant.lsp.text import DocState

log = logging.getLogger(__name__)


class CommandsMixin:
    """Mixed into :class:`~assistant.lsp.server.CiteAssistServer`."""

    async def cmd_add_bib_entry(self, *args):
        uri, key = _args(args, (str, str), "uri, key")
        doc = self._require(uri)
        bibs = await self.bib_set(doc)
        return await self._add_entries(doc, bibs, key, [])

    async def _add_entries(self, doc: DocState, bibs, key: str, doc_edits, label: str = ""):
        """Apply ``doc_edits`` plus, when the .bib lacks ``key``, its entry."""
        addition, entry_text = None, ""
        if bibs.target is not None:
            entry_text = await self.run_io(self.backend.bibtex, key) or ""
            info = await self.run_io(self.backend.paper, key) if entry_text else None
            if entry_text:
                addition = bibfiles.addition_for(bibs, key, entry_text, info.doi if info else None)
        elif not doc_edits:
            self._warn(
                f"{Path(doc.uri).name} names no .bib file (\\bibliography{{…}}, "
                "\\addbibresource{…} or bibliography: in the front matter): nothing added"
            )
            return {"added": False, "reason": "no .bib file"}
        if addition is None and not doc_edits:
            return {
                "added": False,
                "reason": "already in the .bib" if entry_text else "unknown key",
            }
        bib_doc = self._bib_doc(addition.path) if addition is not None else None
        todo = plan(
            self.client_capabilities,
            doc_edits,
            addition,
            bib_doc,
            self._encoding,
            entry_text,
            can_apply=self._can_apply_edits(),
        )
        applied = await self._apply(todo, label or f"Cite {key}")
        return {
            "added": addition is not None and applied,
            "path": str(addition.path) if addition else None,
            "applied": applied,
        }

    def _can_apply_edits(self) -> bool:
        caps = self.client_capabilities
        return bool(caps and caps.workspace and caps.workspace.apply_edit)

    async def _apply(self, todo: EditPlan, label: str) -> bool:
        """Write what the client cannot (a new .bib it cannot create), send it the rest."""
        if todo.write_directly is not None:
            await self.run_io(
                self.backend.append_bib_entry, todo.write_directly.path, todo.entry_text
            )
            self.bibs.invalidate(todo.write_directly.path)
            self._refresh_all(0.1)
        if is_empty(todo.edit):
            return True
        if not self._can_apply_edits():
            self._warn("this editor cannot apply workspace edits; the citation was not inserted")
            return False
        result = await self.workspace_apply_edit_async(
            types.ApplyWorkspaceEditParams(edit=todo.edit, label=label)
        )
        if not result.applied:
            self._warn(f"the editor did not apply the edit: {result.failure_reason or 'refused'}")
        self._refresh_all(0.1)
        return bool(result.applied)

    async def cmd_recommend_here(self, *args):
        uri, sl, sc, el, ec = _args(args, (str, int, int, int, int), "uri, line, char, line, char")
        doc = self._require(uri)
        if not self.backend.ready:
            message = (
                "recommendations are still loading; try again in a moment"
                if self.state in ("starting", "loading")
                else f"recommendations unavailable: {self.state_message}"
            )
            self._warn(message, types.MessageType.Info)
            return {"suggestions": [], "chosen": None, "reason": message}
        start = doc.lines.offset(types.Position(sl, sc))
        end = doc.lines.offset(types.Position(el, ec))
        selection = (start, end) if end > start else None
        if selection is not None and not any(c.isspace() for c in doc.text[start:end]):
            selection = None  # one word (what Eglot sends for the point): a caret, not a span
        if selection is None:
            start, end = backend.sentence_bounds(doc.text, start)

        def job(cancelled):
            q_start, q_end = selection or (start, start)
            query = self.backend.query(doc.text, doc.style, q_start, q_end, doc.manuscript)
            return self.backend.recommend(query, 5, cancelled)

        try:
            found = await self.run_cancellable(self.rec_pool, job, doc)
        except Cancelled:
            return {"suggestions": [], "chosen": None, "reason": "the document changed"}
        suggestions = [
            {"key": s.key, "title": s.title, "year": s.year, "intent": s.intent} for s in found
        ]
        if not found:
            self._warn("no recommendations for this sentence", types.MessageType.Info)
            return {"suggestions": suggestions, "chosen": None}
        labels = [
            f"{s.key} — {s.title[:60]} ({s.year or 'n.d.'}){' · ' + s.intent_chip if s.intent_chip else ''}"
            for s in found
        ]
        # answer now (editors time out waiting for a pick); the pick and the insert follow
        self.loop.create_task(self._pick_and_cite(uri, doc, start, end, found, labels))
        return {"suggestions": suggestions, "chosen": None, "pending": True}

    async def _pick_and_cite(self, uri, doc, start, end, found, labels) -> None:
        try:
            await self._pick_and_cite_now(uri, doc, start, end, found, labels)
        except Exception as exc:  # the client went away, the document closed ...
            log.warning("recommend here: %s", exc)

    async def _pick_and_cite_now(self, uri, doc, start, end, found, labels) -> None:
        snippet = " ".join(doc.text[start:end].split())
        choice = await self.window_show_message_request_async(
            types.ShowMessageRequestParams(
                type=types.MessageType.Info,
                message=f"Cite-Assist: citations for “{snippet[:90]}”",
                actions=[types.MessageActionItem(title=label) for label in labels],
            )
        )
        if choice is None or choice.title not in labels:
            return
        chosen = found[labels.index(choice.title)]
        key = chosen.key
        current = self._require(uri)
        if current.text[start:end] != doc.text[start:end]:
            self._warn("the sentence changed meanwhile; nothing inserted")
            return
        bibs = await self.bib_set(current)
        cite_key = bibs.key_for_doi(chosen.doi) or key  # the .bib's own key for this paper
        insert = citation_insert(current, start, end, cite_key)
        await self._add_entries(current, bibs, key, [(current, *insert)], f"Cite {key}")

    async def cmd_find_missing(self, *args):
        (uri,) = _args(args, (str,), "uri")
        doc = self._require(uri)
        found = await self.run_cancellable(
            self.finder_pool,
            lambda cancelled: self.backend.find_missing(doc.text, doc.style, cancelled=cancelled),
        )
        marks = diagnostics.marks_from(found)
        current = self._require(uri)
        marks = diagnostics.reanchor(marks, doc.text, current.text)
        self.missing[uri] = marks
        await self.publish_diagnostics(uri)
        note = "" if self.backend.ready else " (suggestions once the models are loaded)"
        self._warn(
            f"{len(marks)} sentence(s) read as needing a citation{note}", types.MessageType.Info
        )
        return {"count": len(marks), "with_suggestions": self.backend.ready}

    def _require(self, uri: str) -> DocState:
        doc = self._doc(uri)
        if doc is None:
            raise JsonRpcInvalidParams(f"{uri} is not an open LaTeX or Markdown document")
        return doc


def _args(args: tuple, kinds: tuple, names: str) -> tuple:
    if len(args) == 1 and isinstance(args[0], list):
        args = tuple(args[0])
    if len(args) != len(kinds) or not all(
        isinstance(a, k) and not isinstance(a, bool) for a, k in zip(args, kinds)
    ):
        raise JsonRpcInvalidParams(f"expected arguments ({names}), got {list(args)!r}")
    return args
