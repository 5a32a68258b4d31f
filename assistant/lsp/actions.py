"""Code actions: "Recommend citations here", "Find missing citations in this document", and the
quick fixes of our diagnostics (add a key's entry to the .bib, cite a suggested paper)."""

from __future__ import annotations

from lsprotocol import types

from assistant.lsp import diagnostics as diag
from assistant.lsp.bibfiles import BibSet
from assistant.lsp.completion import ADD_BIB_COMMAND
from assistant.lsp.edits import citation_insert
from assistant.lsp.text import DocState

RECOMMEND_HERE = "citeAssist.recommendHere"
FIND_MISSING = "citeAssist.findMissing"
COMMANDS = (ADD_BIB_COMMAND, RECOMMEND_HERE, FIND_MISSING)

KIND_RECOMMEND = types.CodeActionKind.Refactor
KIND_FIND_MISSING = types.CodeActionKind.Source


def _command(title: str, name: str, *arguments) -> types.Command:
    return types.Command(title=title, command=name, arguments=list(arguments))


def _ours(d: types.Diagnostic) -> bool:
    return d.source == diag.SOURCE and isinstance(d.data, dict)


def code_actions(
    doc: DocState, rng: types.Range, context: types.CodeActionContext, bibs: BibSet
) -> list[types.CodeAction]:
    """The actions for a cursor/selection; fixes first, then the two document actions."""
    only = set(context.only or [])

    def wanted(kind: str) -> bool:
        return not only or any(kind == k or kind.startswith(k + ".") for k in only)

    actions: list[types.CodeAction] = []
    if wanted(types.CodeActionKind.QuickFix):
        for d in context.diagnostics or []:
            if not _ours(d):
                continue
            if d.code == diag.NOT_IN_BIB and bibs.target is not None:
                key = d.data.get("key")
                actions.append(
                    types.CodeAction(
                        title=f"Add {key} to {bibs.target.path.name}",
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[d],
                        is_preferred=True,
                        command=_command(
                            f"Add {key} to {bibs.target.path.name}", ADD_BIB_COMMAND, doc.uri, key
                        ),
                    )
                )
            elif d.code == diag.MISSING_CITATION:
                actions += _cite_fixes(doc, d, bibs)
    text = doc.text
    start = doc.lines.offset(rng.start)
    if wanted(KIND_RECOMMEND) and (rng.start != rng.end or _in_prose(text, start)):
        actions.append(
            types.CodeAction(
                title="Recommend citations here",
                kind=KIND_RECOMMEND,
                command=_command(
                    "Recommend citations here",
                    RECOMMEND_HERE,
                    doc.uri,
                    rng.start.line,
                    rng.start.character,
                    rng.end.line,
                    rng.end.character,
                ),
            )
        )
    if wanted(KIND_FIND_MISSING):
        actions.append(
            types.CodeAction(
                title="Find missing citations in this document",
                kind=KIND_FIND_MISSING,
                command=_command("Find missing citations in this document", FIND_MISSING, doc.uri),
            )
        )
    return actions


def _in_prose(text: str, offset: int) -> bool:
    line_start = text.rfind("\n", 0, offset) + 1
    line_end = text.find("\n", offset)
    line = text[line_start : line_end if line_end >= 0 else len(text)]
    return len(line.split()) >= 3 and not line.lstrip().startswith(("%", "\\begin", "\\end"))


def _cite_fixes(doc: DocState, d: types.Diagnostic, bibs: BibSet) -> list[types.CodeAction]:
    start, end = d.data.get("start"), d.data.get("end")
    if not isinstance(start, int) or not isinstance(end, int) or end > len(doc.text):
        return []
    out = []
    titles = d.data.get("titles") or []
    for i, key in enumerate(d.data.get("keys") or []):
        title = titles[i] if i < len(titles) else ""
        a, b, new_text = citation_insert(doc, start, end, key)
        edit = types.WorkspaceEdit(
            changes={doc.uri: [types.TextEdit(range=doc.lines.range(a, b), new_text=new_text)]}
        )
        label = f"Cite {key}" + (f": {title[:60]}" if title else "")
        action = types.CodeAction(
            title=label,
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[d],
            edit=edit,
            is_preferred=i == 0,
        )
        if bibs.target is not None and bibs.find(key) is None:
            action.command = _command(
                f"Add {key} to {bibs.target.path.name}", ADD_BIB_COMMAND, doc.uri, key
            )
        out.append(action)
    return out
