"""Completion inside ``\\cite{…}`` / ``[@…]``: library keys matching what is typed, then the
recommendations for the sentence around the cursor.

Order: with a typed prefix, matching keys (library and .bib) come first, then recommendations;
with nothing typed yet, recommendations come first, then the library's keys. Each item's detail
has title, authors, year and (for recommendations) the citation intent; its documentation (the
abstract) is filled in by ``completionItem/resolve``. Accepting an item that the manuscript's
.bib lacks runs ``citeAssist.addBibEntry``, which adds the entry through a workspace edit.
"""

from __future__ import annotations

import bisect
import re
from collections import OrderedDict
from dataclasses import dataclass

from lsprotocol import types

from assistant.lsp import backend
from assistant.lsp.bibfiles import BibSet
from assistant.lsp.citations import CiteSlot
from assistant.lsp.hover import paper_markdown, short_authors
from assistant.lsp.text import DocState
from assistant.lsp.words import WordIndex

ADD_BIB_COMMAND = "citeAssist.addBibEntry"
#: at most this many key items per answer (the list is marked incomplete beyond)
MAX_KEY_ITEMS = 100
RECOMMENDATIONS = 10


class KeyIndex:
    """The library's citekeys: sorted case-insensitively for prefix lookups, newest first for
    an empty slot, and searchable by author, title word and year."""

    def __init__(self, entries: list[backend.KeyEntry], aliases: dict[str, str] | None = None):
        self.recent = list(entries)  # newest first (the order the library gives)
        self.entries = sorted(entries, key=lambda e: (e.key.lower(), e.key))
        self.lowered = [e.key.lower() for e in self.entries]
        self.by_key = {e.key: e for e in self.entries}
        self.aliases = dict(aliases or {})
        self._word_index: WordIndex | None = None
        self.complete = True  # False: the newest papers only, while the whole list loads

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, key: str) -> bool:
        return key in self.by_key or key in self.aliases

    def matching(self, prefix: str, limit: int) -> tuple[list[backend.KeyEntry], bool]:
        """Keys starting with ``prefix`` (case-insensitive); True when more than ``limit``."""
        p = prefix.lower()
        i = bisect.bisect_left(self.lowered, p)
        out = []
        while i < len(self.entries) and self.lowered[i].startswith(p):
            if len(out) == limit:
                return out, True
            out.append(self.entries[i])
            i += 1
        return out, False

    def _words(self) -> WordIndex:
        """Authors, title words and year of each paper, newest first (built once)."""
        if self._word_index is None:
            self._word_index = WordIndex(
                f"{' '.join(e.authors)} {e.title} {e.year or ''}" for e in self.recent
            )
        return self._word_index

    def searching(self, query: list[str], limit: int) -> tuple[list[backend.KeyEntry], bool]:
        """Papers with a word starting with each of ``query`` (authors, title, year), newest
        first; True when more than ``limit``."""
        found, more = self._words().search(query, limit)
        return [self.recent[n] for n in found], more


_WORD_RE = re.compile(r"\w+")  # the words of what is typed


def slot_query(doc: DocState, slot: CiteSlot, be: backend.Backend) -> backend.CitationQuery:
    """The product's query for a citation slot being typed: the sentence around it (the slot
    itself left out), the rest of its paragraph as context, the manuscript's title/abstract."""
    a, b = slot.marker_start, slot.marker_end
    blanked = doc.text[:a] + " " * (b - a) + doc.text[b:]
    return be.query(blanked, doc.style, a, a, doc.manuscript, tuple(slot.keys))


class RecommendationCache:
    """The last recommendations per query (typing a key re-asks for the same sentence)."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._items: OrderedDict[tuple, list[backend.Suggestion]] = OrderedDict()

    def get(self, key: tuple) -> list[backend.Suggestion] | None:
        found = self._items.get(key)
        if found is not None:
            self._items.move_to_end(key)
        return found

    def put(self, key: tuple, value: list[backend.Suggestion]) -> None:
        if self.size <= 0:
            return
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)

    def clear(self) -> None:
        self._items.clear()


@dataclass
class _Candidate:
    key: str
    title: str
    authors: tuple[str, ...]
    year: int | None
    doi: str | None
    in_library: bool
    intent: str | None = None
    intent_chip: str | None = None  # the service's chip text
    rank: int | None = None  # recommendation rank (1 = best)


def _detail(c: _Candidate) -> str:
    who = short_authors(c.authors)
    when = str(c.year) if c.year else "n.d."
    detail = f"{c.title} — {who} ({when})" if who else f"{c.title} ({when})"
    if c.intent_chip:
        detail += f" · {c.intent_chip}"
    if c.rank is not None:
        detail += f" · recommended #{c.rank}"
    if not c.in_library:
        detail += " · .bib only"
    return detail


def build_list(
    doc: DocState,
    slot: CiteSlot,
    keys: KeyIndex | None,
    suggestions: list[backend.Suggestion] | None,
    bibs: BibSet,
    incomplete: bool,
    label_details: bool = False,
    cited: list[str] | None = None,
) -> types.CompletionList:
    """The completion list for ``slot`` (see the module docstring for the order), filtered
    and capped on the server: at most :data:`MAX_KEY_ITEMS` keys, ``isIncomplete`` whenever
    more exist (the editor asks again as the user types). ``cited``: keys the open documents
    cite (offered first when nothing is typed)."""
    # long: the completion order (typed keys, cited keys, recommendations) in one place, each part a few lines
    taken = set(slot.keys)
    recs: dict[str, _Candidate] = {}
    for rank, s in enumerate(suggestions or [], start=1):
        if s.key in taken or s.key in recs:
            continue
        recs[s.key] = _Candidate(
            s.key, s.title, s.authors, s.year, s.doi, True, s.intent, s.intent_chip, rank
        )
    limit = MAX_KEY_ITEMS
    matches: dict[str, _Candidate] = {}  # key-prefix matches
    words: dict[str, _Candidate] = {}  # author / title word / year matches
    truncated = False

    def library(e: backend.KeyEntry) -> _Candidate:
        return recs.get(e.key) or _Candidate(e.key, e.title, e.authors, e.year, e.doi, True)

    def from_bib(entry) -> _Candidate:
        authors = tuple(re.split(r"\s+and\s+", entry.author)) if entry.author else ()
        return _Candidate(entry.key, entry.title, authors, _int(entry.year), entry.doi, False)

    def room() -> bool:
        return len(matches) + len(words) < limit

    prefix = slot.prefix
    if prefix:
        if keys is not None:
            found, more = keys.matching(prefix, limit)
            truncated |= more
            for e in found:
                if e.key not in taken:
                    matches[e.key] = library(e)
        for bib in bibs.files:
            for entry in bib.with_prefix(prefix, limit + 1):
                if not room():
                    truncated = True
                    break
                if (
                    entry.key not in taken
                    and entry.key not in matches
                    and (keys is None or entry.key not in keys)
                ):
                    matches[entry.key] = from_bib(entry)
        typed = _WORD_RE.findall(prefix)
        if keys is not None and room():
            found, more = keys.searching(typed, limit - len(matches))
            truncated |= more
            for e in found:
                if e.key not in taken and e.key not in matches:
                    words[e.key] = library(e)
        for bib in bibs.files:  # .bib entries by author / title word / year (indexed files)
            if not room() or bib.word_index is None:
                continue
            found, more = bib.word_index.search(typed, limit)
            truncated |= more
            for n in found:
                entry = bib.entries[n]
                if not room():
                    truncated = True
                    break
                if (
                    entry.key not in taken
                    and entry.key not in matches
                    and entry.key not in words
                    and (keys is None or entry.key not in keys)
                ):
                    words[entry.key] = from_bib(entry)
    else:
        if keys is not None:
            for key in cited or []:
                e = keys.by_key.get(key)
                if e is not None and key not in taken and room():
                    matches.setdefault(key, library(e))
            for e in keys.recent:
                if not room():
                    break
                if e.key not in taken and e.key not in recs:
                    matches.setdefault(e.key, library(e))
        for bib in bibs.files:
            for entry in bib.entries:
                if not room():
                    break
                if (
                    entry.key not in taken
                    and entry.key not in matches
                    and (keys is None or entry.key not in keys)
                ):
                    matches[entry.key] = from_bib(entry)

    ordered: list[tuple[str, _Candidate]] = []
    if prefix:
        in_matches = sorted(
            matches.values(), key=lambda c: (c.rank is None, c.rank or 0, c.key.lower())
        )
        ordered += [("0", c) for c in in_matches]
        ordered += [("1", c) for c in words.values()]
        ordered += [("2", c) for c in recs.values() if c.key not in matches and c.key not in words]
    else:
        ordered += [("0", c) for c in recs.values()]
        ordered += [("1", c) for c in matches.values() if c.key not in recs]

    edit_range = doc.lines.range(slot.replace_start, slot.replace_end)
    items = []
    for i, (group, c) in enumerate(ordered):
        insert = c.key
        existing = bibs.key_for_doi(c.doi) if c.in_library else None
        if existing and bibs.find(c.key) is None:
            insert = existing  # the .bib has this paper under its own key: cite that one
        needs_entry = (
            c.in_library
            and bibs.target is not None
            and bibs.find(insert) is None
            and existing is None
        )
        who = short_authors(c.authors)
        when = str(c.year) if c.year else "n.d."
        # what the editor filters on: the key, then authors, year and title words
        searchable = f"{insert} {' '.join(c.authors)} {when} {c.title}"
        item = types.CompletionItem(
            label=insert,
            kind=types.CompletionItemKind.Reference,
            detail=_detail(c),
            sort_text=f"{group}{i:05d}",
            filter_text=searchable if group != "2" else prefix + " " + searchable,
            text_edit=types.TextEdit(range=edit_range, new_text=insert),
            data={"uri": doc.uri, "key": insert, "recommended": c.rank is not None},
        )
        if label_details:  # shown on every row by editors that support it (VS Code)
            item.label_details = types.CompletionItemLabelDetails(
                detail=f" {who} {when}" if who else f" {when}",
                description=f"{c.title[:60]} · {c.intent_chip}" if c.intent_chip else c.title[:60],
            )
        if needs_entry:
            item.command = types.Command(
                title=f"Add {insert} to {bibs.target.path.name}",
                command=ADD_BIB_COMMAND,
                arguments=[doc.uri, insert],
            )
        items.append(item)
    complete = keys is None or keys.complete
    if not prefix and items:
        truncated = True  # everything matches an empty slot: the editor asks again as one types
    return types.CompletionList(is_incomplete=incomplete or truncated or not complete, items=items)


def _int(value: str) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def resolve(item: types.CompletionItem, be: backend.Backend) -> types.CompletionItem:
    """Fill the documentation (title, authors, venue, abstract) of one item."""
    data = item.data if isinstance(item.data, dict) else {}
    key = data.get("key") or item.label
    info = be.paper(key)
    if info is not None:
        item.documentation = types.MarkupContent(
            kind=types.MarkupKind.Markdown, value=paper_markdown(info)
        )
    return item
