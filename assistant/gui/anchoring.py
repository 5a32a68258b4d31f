"""Small pure helpers of the main window: where a result list is anchored, what the results
header shows as the query, and the Index-now notice."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Anchor:
    """The text a result list was computed for: Insert goes there, not to where the caret is now."""

    editor: object
    start: int
    end: int
    text: str

    def locate(self, document: str) -> tuple[int, int] | None:
        """Where the anchored text is now (same place, or moved by edits elsewhere); None: gone."""
        if document[self.start : self.end] == self.text:
            return self.start, self.end
        found = [i for i in _find_all(document, self.text)] if self.text.strip() else []
        if len(found) == 1:
            return found[0], found[0] + len(self.text)
        return None


def _find_all(text: str, part: str):
    i = text.find(part)
    while i >= 0:
        yield i
        i = text.find(part, i + 1)


def shown_query(query) -> str:
    """The query as the header shows it: the text, or for Global the title + abstract it uses."""
    text = query.display_text() if query.text else ""
    if not text:
        text = " — ".join(p for p in (query.title, query.abstract) if p)
    return text if len(text) <= 300 else text[:299] + "…"


def index_notice(papers: int, embedded: int, has_index: bool, stale: bool) -> tuple[bool, str]:
    """``(show, text)`` of the Index-now bar: no index yet, or papers added/removed since."""
    if papers and not has_index:
        return True, (
            f"No search index yet: {papers} papers are not indexed. Until then Recommend uses "
            "keyword (BM25) search only."
        )
    if not stale:
        return False, ""
    diff = papers - embedded
    if diff > 0:
        what = f"{diff} new paper{'s' if diff != 1 else ''} not indexed yet"
    elif diff < 0:
        what = f"{-diff} paper{'s' if diff != -1 else ''} removed or merged since the last index"
    else:
        what = "papers changed since the last index"
    return True, f"The index is out of date: {what}; recommendations use the last index."
