"""Workspace navigation handlers of the language server: find references, rename, document
and workspace symbols of ``.bib`` entries, ``.bib`` diagnostics (logic in :mod:`refs`)."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from assistant.lsp import refs
from assistant.lsp.text import DocState


class NavigationMixin:
    """Mixed into :class:`~assistant.lsp.server.CiteAssistServer`."""

    async def _publish_bib_diagnostics(self, doc: DocState) -> None:
        """Duplicate keys and entries no manuscript of the workspace cites, in an open .bib."""
        bib = refs.Source(doc.uri, doc.text, None, self._encoding)
        snapshot = self._workspace_snapshot()

        def job():
            if bib.text.count("@") > refs.MAX_UNUSED_CHECK:  # a shared big .bib: no walk
                return refs.bib_diagnostics(bib, None)
            return refs.bib_diagnostics(bib, refs.cited_keys(refs.sources(*snapshot)))

        found = await self.run_io(job)
        current = self.docs.get(doc.uri)
        if current is None or current.generation != doc.generation:
            return
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=doc.uri, diagnostics=found, version=doc.version)
        )

    # --- the key across the workspace (references, rename, symbols) -------------------------
    def _workspace_snapshot(self) -> tuple[list[DocState], Path | None, str]:
        """What :func:`refs.sources` reads, taken on the loop (the docs change there)."""
        root = getattr(self.workspace, "root_path", None)
        return list(self.docs.values()), Path(root) if root else None, self._encoding

    def _key_at(self, uri: str, position: types.Position) -> tuple[str, DocState] | None:
        doc = self.docs.get(uri)
        if doc is None:
            return None
        source = refs.Source(doc.uri, doc.text, doc.style, self._encoding)
        key = refs.key_under_cursor(source, doc.lines.offset(position))
        return (key, doc) if key else None

    async def _references(self, params: types.ReferenceParams):
        found = self._key_at(params.text_document.uri, params.position)
        if found is None:
            return None
        snapshot = self._workspace_snapshot()
        declaration = params.context.include_declaration if params.context else True
        return await self.run_io(
            lambda: refs.references(found[0], refs.sources(*snapshot), declaration)
        )

    def _prepare_rename(self, params: types.PrepareRenameParams):
        found = self._key_at(params.text_document.uri, params.position)
        if found is None:
            return None
        key, doc = found
        offset = doc.lines.offset(params.position)
        start = doc.text.rfind(key, max(0, offset - len(key)), offset + len(key))
        if start < 0:
            return None
        return types.PrepareRenamePlaceholder(
            range=doc.lines.range(start, start + len(key)), placeholder=key
        )

    async def _rename(self, params: types.RenameParams):
        found = self._key_at(params.text_document.uri, params.position)
        if found is None:
            return None
        if not refs.valid_key(params.new_name):
            raise JsonRpcInvalidParams(f"{params.new_name!r} cannot be a BibTeX key")
        snapshot = self._workspace_snapshot()
        return await self.run_io(
            lambda: refs.rename(found[0], params.new_name, refs.sources(*snapshot))
        )

    def _document_symbols(self, params: types.DocumentSymbolParams):
        doc = self.docs.get(params.text_document.uri)
        if doc is None or doc.style is not None:
            return None
        return refs.document_symbols(refs.Source(doc.uri, doc.text, None, self._encoding))

    async def _workspace_symbols(self, params: types.WorkspaceSymbolParams):
        snapshot = self._workspace_snapshot()
        return await self.run_io(
            lambda: refs.workspace_symbols(params.query, refs.sources(*snapshot))
        )
