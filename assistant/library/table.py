"""The library as a table: sort, filter and search done by SQLite, rows fetched by window.

:class:`PaperTable` resolves the current view (search text, column filters, collection, tag,
trash, sort) to the ordered list of paper ids with one SQL query, then hands out rows for any
window of it; the GUI's table model shows 100k+ papers this way without loading them.
Search-as-you-type uses the FTS5 index over title, authors, abstract, keywords, citekey and DOI
(the last word is a prefix).
"""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    select: str  # SQL giving the cell value
    sort: str  # SQL to order by
    filter: str  # SQL the column filter matches (LIKE), or "year"
    visible: bool = True


COLUMNS: tuple[Column, ...] = (
    Column("citekey", "Key", "p.citekey", "p.citekey COLLATE NOCASE", "p.citekey"),
    Column("title", "Title", "p.title", "p.title COLLATE NOCASE", "p.title"),
    Column("authors", "Authors", "p.authors", "p.author_key", "p.authors"),
    Column("year", "Year", "p.year", "p.year", "year"),
    Column("venue", "Venue", "p.venue", "p.venue COLLATE NOCASE", "p.venue"),
    Column("entry_type", "Type", "p.entry_type", "p.entry_type", "p.entry_type", False),
    Column("doi", "DOI", "p.doi", "p.doi", "p.doi", False),
    Column("editors", "Editors", "p.editors", "p.editors", "p.editors", False),
    Column("keywords", "Keywords", "p.keywords", "p.keywords", "p.keywords", False),
    Column("pdf", "PDF", "p.pdf_path IS NOT NULL", "p.pdf_path IS NOT NULL", "p.pdf_path", False),
    Column("added_at", "Added", "p.added_at", "p.added_at", "p.added_at", False),
    Column("updated_at", "Modified", "p.updated_at", "p.updated_at", "p.updated_at", False),
)
COLUMN_KEYS = tuple(c.key for c in COLUMNS)
_BY_KEY = {c.key: c for c in COLUMNS}
_TOKEN = re.compile(r"\w+", re.UNICODE)
_DOI_PREFIX = re.compile(r"^\s*(?:https?://(?:dx\.)?doi\.org/|doi:\s*)?(10\.\d{2,9}/\S*)\s*$", re.I)
_YEAR_RANGE = re.compile(r"^\s*(\d{4})?\s*(-|–|\.\.)\s*(\d{4})?\s*$")
_YEAR_CMP = re.compile(r"^\s*(<=|>=|<|>|=)?\s*(\d{4})\s*$")


def fts_query(text: str) -> str | None:
    """An FTS5 query for search-as-you-type: every word must match, the last as a prefix.

    A last word of one letter is left out until the next keystroke (a one-letter prefix matches
    most of a library and costs a scan; the prefix indexes cover 2 and 3 letters)."""
    tokens = _TOKEN.findall(text)
    if len(tokens) > 0 and len(tokens[-1]) < 2:
        tokens = tokens[:-1]
    if not tokens:
        return None
    parts = [f'"{t}"' for t in tokens[:-1]] + [f'"{tokens[-1]}"*']
    return " ".join(parts)


_FIELD_FILTER = re.compile(r'(?<!\S)([A-Za-z_]+):(?:"([^"]*)"|(\S+))')
_FILTER_ALIASES = {
    "author": "authors",
    "key": "citekey",
    "type": "entry_type",
    "editor": "editors",
    "keyword": "keywords",
    "journal": "venue",
    "booktitle": "venue",
}


def parse_search(text: str) -> tuple[str, dict[str, str]]:
    """Split the search box text into free words and ``column:value`` filters
    (``year:2010-2015 venue:"SIGIR Forum" neural``); an unknown ``name:`` stays a word."""
    filters: dict[str, str] = {}

    def take(match: re.Match) -> str:
        key = _FILTER_ALIASES.get(match.group(1).lower(), match.group(1).lower())
        if key not in _BY_KEY:
            return match.group(0)
        filters[key] = match.group(2) if match.group(2) is not None else match.group(3)
        return " "

    rest = _FIELD_FILTER.sub(take, text)
    return " ".join(rest.split()), filters


@dataclass
class View:
    """What the table shows: search text, column filters, collection/tag, trash, sort."""

    search: str = ""
    filters: dict[str, str] = field(default_factory=dict)  # column key -> text
    collection_ids: tuple[int, ...] = ()
    tag: str | None = None
    trash: bool = False  # show the trash instead of the library
    sort: str = "year"
    descending: bool = True


class PaperTable:
    """Ordered paper ids for a :class:`View`, and rows for any window of them."""

    def __init__(self, lib) -> None:
        self.lib = lib
        self.view = View()
        self.ids: list[int] = []
        self._ascending: list[int] = []  # the view's order without the search, ascending
        self._filled = 0  # how many of them have a value in the sort column (blanks come last)
        self._base_desc: list[int] | None = None
        self._rank: dict[bool, dict[int, int]] = {}
        self._base_key: View | None = None
        self._positions: dict[int, int] | None = None

    # -- the view ---------------------------------------------------------------------------
    def _where(self, view: View) -> tuple[list[str], list]:
        where = ["p.deleted_at IS NOT NULL" if view.trash else "p.deleted_at IS NULL"]
        args: list = []
        for key, text in view.filters.items():
            text = (text or "").strip()
            column = _BY_KEY.get(key)
            if not text or column is None:
                continue
            if column.filter == "year":
                clause, values = _year_filter(text)
                where.append(clause)
                args.extend(values)
            else:
                where.append(f"{column.filter} LIKE ? ESCAPE '\\'")
                args.append("%" + re.sub(r"([%_\\\\])", r"\\\1", text) + "%")
        if view.collection_ids:
            from assistant.library.groups import _subtree

            ids = sorted({c for cid in view.collection_ids for c in _subtree(self.lib, cid)})
            where.append(
                "p.id IN (SELECT paper_id FROM collection_items WHERE collection_id IN "
                f"({','.join('?' * len(ids))}))"
            )
            args.extend(ids)
        if view.tag:
            where.append("p.id IN (SELECT paper_id FROM paper_tags WHERE tag = ?)")
            args.append(view.tag)
        return where, args

    def refresh(self, view: View | None = None, reuse_order: bool = False) -> int:
        """Resolve ``view`` (default: the current one) to the ordered ids; returns how many.

        The order without the search (sort, filters, collection, trash) is one SQL query; with
        ``reuse_order`` it is kept while those do not change, and each search keystroke only asks
        FTS5 for the matching ids and keeps them in that order (typing never re-sorts the
        library). Without it (the default) the library is read again."""
        view = view or self.view
        if view.sort not in _BY_KEY:
            raise ValueError(f"unknown column {view.sort!r} (one of {', '.join(COLUMN_KEYS)})")
        base_key = replace(view, search="", descending=False)
        if not reuse_order or base_key != self._base_key:
            where, args = self._where(view)
            column = _BY_KEY[view.sort]
            blank = f"(({column.select}) IS NULL OR ({column.select}) = '')"
            sql = (
                f"SELECT p.id, {blank} FROM papers p WHERE {' AND '.join(where)} "
                f"ORDER BY {blank}, {column.sort}, p.id"
            )
            rows = self.lib.conn.execute(sql, args).fetchall()
            self._ascending = [r[0] for r in rows]
            self._filled = sum(1 for r in rows if not r[1])
            self._base_key = base_key
            self._base_desc = None
            self._rank = {}
        if view.descending:  # papers with a value reversed ((x DESC, id DESC)), blanks still last
            if self._base_desc is None:
                filled = self._ascending[: self._filled]
                self._base_desc = filled[::-1] + self._ascending[self._filled :]
            base = self._base_desc
        else:
            base = self._ascending
        query = fts_query(view.search)
        doi = _DOI_PREFIX.match(view.search)
        if query is None:
            self.ids = list(base)
        else:
            try:
                if doi:  # a DOI being typed: a range of the DOI index, not every "10" "1145"
                    prefix = doi.group(1).lower()
                    sql = "SELECT id FROM papers WHERE doi >= ? AND doi < ?"
                    rows = self.lib.conn.execute(sql, (prefix, prefix + "\uffff"))
                else:
                    sql = "SELECT rowid FROM papers_fts WHERE papers_fts MATCH ?"
                    rows = self.lib.conn.execute(sql, (query,))
                hits = [r[0] for r in rows]
            except sqlite3.OperationalError:  # a query FTS5 refuses: nothing, not a crash
                hits = []
            if len(hits) * 8 < len(base):  # few hits: order them by their rank in the base order
                rank = self._rank.get(view.descending)
                if rank is None:
                    rank = self._rank[view.descending] = {pid: n for n, pid in enumerate(base)}
                self.ids = [base[n] for n in sorted(rank[h] for h in hits if h in rank)]
            else:
                wanted = set(hits)
                self.ids = [i for i in base if i in wanted]
        self._positions = None
        self.view = view
        return len(self.ids)

    def __len__(self) -> int:
        return len(self.ids)

    def rows(self, start: int, count: int, columns=COLUMN_KEYS) -> list[dict]:
        """Display values for rows ``start .. start + count`` of the current order."""
        ids = self.ids[start : start + count]
        if not ids:
            return []
        cols = [_BY_KEY[k] for k in columns]
        select = ", ".join(c.select for c in cols)
        found = {}
        for chunk in range(0, len(ids), 500):
            part = ids[chunk : chunk + 500]
            for row in self.lib.conn.execute(
                f"SELECT p.id, {select} FROM papers p WHERE p.id IN ({','.join('?' * len(part))})",
                part,
            ):
                found[row[0]] = {
                    "id": row[0],
                    **{c.key: _display(c.key, v) for c, v in zip(cols, row[1:])},
                }
        return [found.get(i, {"id": i}) for i in ids]

    def row_of(self, paper_id: int) -> int | None:
        if self._positions is None:
            self._positions = {pid: n for n, pid in enumerate(self.ids)}
        return self._positions.get(paper_id)


def _display(key: str, value):
    if key in ("authors", "editors", "keywords"):
        try:
            names = json.loads(value or "[]")
        except ValueError:
            return str(value or "")
        if key == "keywords":
            return ", ".join(names)
        lasts = [n.split(",")[0].strip() for n in names]
        if len(lasts) > 3:
            return f"{lasts[0]} et al."
        return ", ".join(lasts)
    if key == "pdf":
        return "PDF" if value else ""
    return value


def _year_filter(text: str) -> tuple[str, list]:
    m = _YEAR_RANGE.match(text)
    if m and (m.group(1) or m.group(3)):
        lo, hi = m.group(1), m.group(3)
        clauses, args = [], []
        if lo:
            clauses.append("p.year >= ?")
            args.append(int(lo))
        if hi:
            clauses.append("p.year <= ?")
            args.append(int(hi))
        return " AND ".join(clauses), args
    m = _YEAR_CMP.match(text)
    if m:
        return f"p.year {m.group(1) or '='} ?", [int(m.group(2))]
    return "CAST(p.year AS TEXT) LIKE ?", [f"%{text}%"]
