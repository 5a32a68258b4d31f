"""Hover on a cited key: the paper's title, authors, year, venue and abstract."""

from __future__ import annotations

from lsprotocol import types

from assistant.lsp import backend
from assistant.lsp.bibfiles import BibEntry, BibSet
from assistant.lsp.citations import key_at
from assistant.lsp.text import DocState


def display_name(author: str) -> str:
    """``"Last, First"`` -> ``"First Last"``."""
    if "," in author:
        last, first = (p.strip() for p in author.split(",", 1))
        return f"{first} {last}".strip()
    return author.strip()


def short_authors(authors, limit: int = 2) -> str:
    """Surnames: ``"Agarwal, Zaitsev et al."``."""
    names = [a.split(",")[0].strip() if "," in a else a.split()[-1] for a in authors if a.strip()]
    if not names:
        return ""
    if len(names) <= limit:
        return " and ".join(names)
    return ", ".join(names[:limit]) + " et al."


def paper_markdown(info: backend.PaperInfo, note: str = "") -> str:
    """A paper as Markdown: title, authors, venue/year, abstract."""
    lines = [f"**{info.title or info.key}**", ""]
    authors = ", ".join(display_name(a) for a in info.authors)
    if authors:
        lines.append(authors)
    where = " · ".join(p for p in (info.venue, str(info.year) if info.year else "n.d.") if p)
    lines.append(f"*{where}*" + (f" · doi:{info.doi}" if info.doi else ""))
    if note:
        lines += ["", note]
    if info.abstract:
        lines += ["", info.abstract.strip()]
    return "\n".join(lines)


def bib_markdown(entry: BibEntry) -> str:
    where = f"{entry.path.name}:{entry.line + 1}"
    return f"**{entry.title or entry.key}**\n\n*in {where}; not in your Cite-Assist library*" + (
        f" · doi:{entry.doi}" if entry.doi else ""
    )


def hover(doc: DocState, position: types.Position, be: backend.Backend, bibs: BibSet):
    """The hover for the key under ``position`` (None when the cursor is not on a cited key)."""
    span = key_at(doc.text, doc.lines.offset(position), doc.style)
    if span is None:
        return None
    info = be.paper(span.key)
    entry = bibs.find(span.key)
    if info is not None:
        note = (
            ""
            if entry is not None or bibs.target is None
            else (f"Not yet in {bibs.target.path.name}.")
        )
        value = paper_markdown(info, note)
    elif entry is not None:
        value = bib_markdown(entry)
    else:
        value = f"`{span.key}` is neither in the .bib file nor in your Cite-Assist library."
    return types.Hover(
        contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=value),
        range=doc.lines.range(span.start, span.end),
    )
