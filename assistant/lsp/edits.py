"""Workspace edits: a citation inserted in the manuscript, an entry appended to its .bib."""

from __future__ import annotations

from dataclasses import dataclass

from lsprotocol import types

from assistant.lsp import backend
from assistant.lsp.bibfiles import BibAddition
from assistant.lsp.text import DocState, LineIndex, path_to_uri


@dataclass
class EditPlan:
    """What applying a change takes: the workspace edit for the client, and a .bib entry the
    server writes itself when the client cannot create files (None otherwise)."""

    edit: types.WorkspaceEdit
    write_directly: BibAddition | None = None
    entry_text: str = ""


def _client_can(caps: types.ClientCapabilities | None) -> tuple[bool, bool]:
    ws = getattr(caps, "workspace", None) if caps else None
    we = getattr(ws, "workspace_edit", None) if ws else None
    document_changes = bool(getattr(we, "document_changes", False)) if we else False
    ops = getattr(we, "resource_operations", None) or [] if we else []
    can_create = document_changes and any(str(getattr(op, "value", op)) == "create" for op in ops)
    return document_changes, can_create


def citation_insert(doc: DocState, start: int, end: int, key: str) -> tuple[int, int, str]:
    """Where and how a citation of ``key`` goes for the text ``[start, end)`` (a sentence or a
    selection): an empty ``\\cite{}`` there, else before the sentence's final punctuation."""
    edit = backend.citation_edit(doc.text, start, end, key, doc.style)
    return edit.start, edit.end, edit.replacement


def plan(
    caps: types.ClientCapabilities | None,
    doc_edits: list[tuple[DocState, int, int, str]],
    addition: BibAddition | None,
    bib_doc: DocState | None,
    encoding: str,
    entry_text: str = "",
    can_apply: bool = True,
) -> EditPlan:
    """The workspace edit for ``doc_edits`` (offsets into each document's current text) and a
    .bib ``addition`` (``bib_doc`` = the .bib as open in the editor, if it is)."""
    document_changes, can_create = _client_can(caps)
    doc_changes: list = []
    changes: dict[str, list[types.TextEdit]] = {}
    for doc, start, end, new_text in doc_edits:
        edit = types.TextEdit(range=doc.lines.range(start, end), new_text=new_text)
        if document_changes:
            doc_changes.append(
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(
                        uri=doc.uri, version=doc.version
                    ),
                    edits=[edit],
                )
            )
        else:
            changes.setdefault(doc.uri, []).append(edit)
    direct = None
    if addition is not None:
        uri = bib_doc.uri if bib_doc is not None else path_to_uri(addition.path)
        if not can_apply or (addition.create and bib_doc is None and not can_create):
            direct = addition  # the client cannot create files (or edit at all): the server writes
        else:
            if bib_doc is not None:
                lines, version, offset = bib_doc.lines, bib_doc.version, len(bib_doc.text)
            else:
                base = "" if addition.create else _disk_text(addition)
                lines, version, offset = LineIndex(base, encoding), None, len(base)
            pos = lines.position(offset)
            edit = types.TextEdit(range=types.Range(pos, pos), new_text=addition.text)
            if document_changes:
                if addition.create and bib_doc is None:
                    doc_changes.append(
                        types.CreateFile(
                            uri=uri, options=types.CreateFileOptions(ignore_if_exists=True)
                        )
                    )
                doc_changes.append(
                    types.TextDocumentEdit(
                        text_document=types.OptionalVersionedTextDocumentIdentifier(
                            uri=uri, version=version
                        ),
                        edits=[edit],
                    )
                )
            else:
                changes.setdefault(uri, []).append(edit)
    edit = (
        types.WorkspaceEdit(document_changes=doc_changes)
        if document_changes
        else types.WorkspaceEdit(changes=changes)
    )
    return EditPlan(edit, direct, entry_text)


def _disk_text(addition: BibAddition) -> str:
    try:
        return backend.read_text_file(addition.path)
    except (OSError, backend.AssistantError):  # unreadable or refused (FIFO, too large)
        return ""


def is_empty(edit: types.WorkspaceEdit) -> bool:
    return not (edit.document_changes or edit.changes)
