"""Diagnostics: cited keys that nothing defines, and sentences that read as needing a citation.

- ``unknown-key`` (Warning): in neither the manuscript's .bib files (nor its ``\\bibitem``s) nor
  the Cite-Assist library.
- ``not-in-bib`` (Warning): in the library but not in the .bib: BibTeX would print "?"; the quick
  fix adds the entry.
- ``missing-citation`` (Information): the manuscript finder's uncited claims (published by the
  "Find missing citations in this document" action), with its suggested keys in ``data``. They
  follow their sentence while the document is edited and disappear once it changes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lsprotocol import types

from assistant.lsp import backend
from assistant.lsp.bibfiles import BibSet
from assistant.lsp.citations import key_spans
from assistant.lsp.completion import KeyIndex
from assistant.lsp.text import DocState

SOURCE = "cite-assist"
UNKNOWN_KEY = "unknown-key"
NOT_IN_BIB = "not-in-bib"
MISSING_CITATION = "missing-citation"
_BIBITEM_RE = re.compile(r"\\bibitem\s*(?:\[[^\]]*\])?\s*\{([^}]*)\}")


def bibitem_keys(doc: DocState) -> set[str]:
    """Keys defined in the manuscript itself (``\\bibitem{key}`` in a thebibliography)."""
    if doc.style != backend.LATEX:
        return set()
    return {m.group(1).strip() for m in _BIBITEM_RE.finditer(doc.text)}


def key_diagnostics(doc: DocState, keys: KeyIndex, bibs: BibSet) -> list[types.Diagnostic]:
    """One diagnostic per cited key that the .bib (or ``\\bibitem``) does not define."""
    local = bibitem_keys(doc)
    target = bibs.target
    out = []
    for span in key_spans(doc.text, doc.style):
        if span.key in local or bibs.find(span.key) is not None:
            continue
        in_library = span.key in keys
        if in_library and target is None:
            continue  # nowhere to check: the manuscript names no .bib
        where = (
            ", ".join(b.path.name for b in bibs.files)
            if bibs.files
            else "a .bib file (the document names none)"
        )
        if in_library:
            missing_file = "" if target.exists else f" ({target.path.name} does not exist yet)"
            message = (
                f"'{span.key}' is in your Cite-Assist library but not in {where}{missing_file}: "
                f"add its entry to {target.path.name}"
            )
            code, severity = NOT_IN_BIB, types.DiagnosticSeverity.Warning
        else:
            message = f"'{span.key}' is neither in {where} nor in your Cite-Assist library"
            code, severity = UNKNOWN_KEY, types.DiagnosticSeverity.Warning
        out.append(
            types.Diagnostic(
                range=doc.lines.range(span.start, span.end),
                message=message,
                severity=severity,
                source=SOURCE,
                code=code,
                data={"key": span.key},
            )
        )
    return out


@dataclass
class MissingMark:
    """A ``missing-citation`` finding anchored to its sentence text."""

    start: int
    end: int
    sentence: str
    message: str
    keys: list[str] = field(default_factory=list)
    titles: list[str] = field(default_factory=list)


def marks_from(found: list[backend.Missing]) -> list[MissingMark]:
    marks = []
    for item in found:
        reasons = ", ".join(item.reasons[:3])
        message = f"This sentence reads as a claim that needs a citation ({item.score:.2f}"
        message += f": {reasons})" if reasons else ")"
        if item.keys:
            message += ". Suggested: " + ", ".join(item.keys)
        marks.append(
            MissingMark(item.start, item.end, item.sentence, message, item.keys, item.titles)
        )
    return marks


def reanchor(marks: list[MissingMark], old_text: str, new_text: str) -> list[MissingMark]:
    """The marks whose sentence is still in ``new_text`` unchanged, at its new offset."""
    if not marks or old_text == new_text:
        return marks
    # the common prefix/suffix of the edit: marks before it stay, marks after it shift
    n = min(len(old_text), len(new_text))
    head = _common(n, lambda k: old_text[:k] == new_text[:k])
    tail = _common(
        n - head, lambda k: old_text[len(old_text) - k :] == new_text[len(new_text) - k :]
    )
    delta = len(new_text) - len(old_text)
    kept = []
    for mark in marks:
        if mark.end <= head:
            kept.append(mark)
        elif mark.start >= len(old_text) - tail:
            kept.append(
                MissingMark(
                    mark.start + delta,
                    mark.end + delta,
                    mark.sentence,
                    mark.message,
                    mark.keys,
                    mark.titles,
                )
            )
    return kept


def _common(limit: int, same) -> int:
    """The largest ``k <= limit`` with ``same(k)`` (monotone), by bisection over C-level compares."""
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if same(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def missing_diagnostics(doc: DocState, marks: list[MissingMark]) -> list[types.Diagnostic]:
    return [
        types.Diagnostic(
            range=doc.lines.range(m.start, m.end),
            message=m.message,
            severity=types.DiagnosticSeverity.Information,
            source=SOURCE,
            code=MISSING_CITATION,
            data={"keys": m.keys, "titles": m.titles, "start": m.start, "end": m.end},
        )
        for m in marks
        if doc.text[m.start : m.end] == m.sentence
    ]
