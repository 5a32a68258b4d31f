"""Small pure helpers of the main window: where a result list is anchored, what the results
header shows as the query, and the Index-now notice."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Anchor:
    """The text a result list was computed for: Insert goes there, not to where the caret is now."""

    editor: object
    start: int
    end: int
    text: str
    #: the sentence as it was before each Insert into it (newest last): after Ctrl+Z of an
    #: Insert the sentence is found again as it was
    earlier: list[tuple[int, str]] = field(default_factory=list)

    def locate(self, document: str) -> tuple[int, int] | None:
        """Where the anchored text is now (same place, or moved by edits elsewhere; or as it was
        before an Insert that was undone); None: gone."""
        for start, text in [(self.start, self.text), *reversed(self.earlier)]:
            where = _locate(document, start, text)
            if where is not None:
                return where
        return None

    def moved_to(self, start: int, end: int, text: str) -> None:
        """The sentence now stands at ``start:end`` as ``text`` (after an Insert into it)."""
        self.earlier.append((self.start, self.text))
        self.start, self.end, self.text = start, end, text


def _locate(document: str, start: int, text: str) -> tuple[int, int] | None:
    if document[start : start + len(text)] == text:
        return start, start + len(text)
    found = [i for i in _find_all(document, text)] if text.strip() else []
    if len(found) == 1:
        return found[0], found[0] + len(text)
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
