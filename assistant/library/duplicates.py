"""Finding and merging duplicate papers.

The finder groups papers with fuzzy-equal titles (rapidfuzz) of the same year and first author.
Two papers with *different* DOIs are never proposed (the DOI registers distinct works: "CHI
Madness Part 1" and "Part 2", a proceedings paper and its journal reprint), and titles that differ
in a number ("Part 1" / "Part 2", "SIGIR 2019" / "SIGIR 2020") are not the same work. Each group
carries its evidence, in words, for the librarian to check before merging.

A merge keeps one paper and its citekey; the others' fields fill its gaps, their imported records,
citation edges, collections, tags and aliases move to it, their citekeys become aliases (old
``\\cite{}``s still resolve). It is one history event on the kept paper holding everything needed
to undo it: ``editing.revert`` of that event brings every merged-away paper back with its own id,
fields, key, aliases, records, edges, collections, tags and history.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from rapidfuzz import fuzz

from assistant import faults
from assistant.library.groups import LibraryEditError
from assistant.library.models import Paper
from assistant.library.rows import snapshot
from assistant.library.store import merge_papers

#: token-sort ratio (0-100) above which two titles of the same year and first author are one work
TITLE_THRESHOLD = 92.0
_MIN_TITLE_KEY = 8  # "Preface", "Keynote": too short to say two papers are the same
_NUMBER = re.compile(r"\w*\d\w*|\b[ivxlc]+\b")
_NOTICE = re.compile(r"\b(errat(a|um)|corrigend(a|um)|correction|retract(ed|ion)|addendum|reply)\b")
_PAGES = re.compile(r"\d+")
#: venues less alike than this (token-set ratio) are two publications (a paper and its extended
#: abstract, a workshop and a conference version)
VENUE_THRESHOLD = 60.0


@dataclass
class DuplicateGroup:
    ids: list[int]  # the suggested paper to keep first (the richest record)
    reason: str  # "doi" | "title"
    score: float  # lowest pairwise title similarity in the group (100 for a DOI group)
    evidence: list[str] = field(default_factory=list)  # why, one line per pair that joined


def _richness(row: tuple) -> tuple:
    pid, _title, _tkey, _year, _akey, doi, abstract_len, n_records = row[:8]
    return (doi is not None, abstract_len, n_records, -pid)


def _numbers(title: str) -> list[str]:
    return _NUMBER.findall(title.lower())


def _distinct(a: tuple, b: tuple) -> bool:
    """Evidence that two papers of one title stem are two works: different DOIs, numbers
    ("Part 1"/"Part 2", "Session 28A"/"28B"), an erratum, different venues or pages."""
    if a[5] and b[5] and a[5] != b[5]:
        return True
    ta, tb = a[1].lower(), b[1].lower()
    if _numbers(ta) != _numbers(tb) or bool(_NOTICE.search(ta)) != bool(_NOTICE.search(tb)):
        return True
    va, vb = a[8].lower(), b[8].lower()
    if va and vb and fuzz.token_set_ratio(va, vb) < VENUE_THRESHOLD:
        return True
    pa, pb = _PAGES.findall(a[9] or ""), _PAGES.findall(b[9] or "")
    return bool(pa and pb and pa != pb)


def find_duplicates(lib, threshold: float = TITLE_THRESHOLD) -> list[DuplicateGroup]:
    """Groups of papers (not in the trash) that look like one work, largest groups first.

    A group never holds two different DOIs, nor two titles with different numbers."""
    rows = lib.conn.execute(
        "SELECT p.id, p.title, p.title_key, p.year, p.author_key, lower(p.doi), length(p.abstract), "
        "(SELECT count(*) FROM paper_records r WHERE r.paper_id = p.id), p.venue, "
        "json_extract(p.extra, '$.pages') FROM papers p WHERE p.deleted_at IS NULL"
    ).fetchall()
    by_id = {r[0]: r for r in rows}
    parent: dict[int, int] = {}
    doi_of: dict[int, str | None] = {}  # root -> the group's DOI (at most one)
    worst: dict[int, float] = {}
    evidence: dict[int, list[str]] = {}

    def find(x: int) -> int:
        while parent.get(x, x) != x:
            parent[x] = parent.get(parent[x], parent[x])
            x = parent[x]
        return x

    def union(a: int, b: int, score: float, why: str) -> None:
        ra, rb = find(a), find(b)
        if ra == rb:
            return
        da, db = doi_of.get(ra, by_id[ra][5]), doi_of.get(rb, by_id[rb][5])
        if da and db and da != db:
            return  # different DOIs: different works, whatever the titles say
        parent[rb] = ra
        doi_of[ra] = da or db
        worst[ra] = min(score, worst.get(ra, 100.0), worst.get(rb, 100.0))
        evidence[ra] = evidence.get(ra, []) + evidence.pop(rb, []) + [why]

    blocks: dict[tuple, list[int]] = defaultdict(list)
    for r in rows:
        if len(r[2]) >= _MIN_TITLE_KEY and r[4]:  # anonymous "Editorial Board"s are many works
            blocks[(r[3], r[4])].append(r[0])
    for (year, akey), ids in blocks.items():
        if len(ids) < 2:
            continue
        pairs = []
        for i, a in enumerate(ids):
            for b in ids[i + 1 :]:
                ta, tb = by_id[a], by_id[b]
                if _distinct(ta, tb):
                    continue
                score = (
                    100.0 if ta[2] == tb[2] else fuzz.token_sort_ratio(ta[1].lower(), tb[1].lower())
                )
                if score >= threshold:
                    venue = fuzz.token_set_ratio(ta[8].lower(), tb[8].lower()) if ta[8] else 0.0
                    pairs.append((score, venue if tb[8] else 0.0, a, b))
        # the likeliest pairs join first: a copy without a DOI goes to the version (of several
        # with their own DOIs: a paper and its reprint) whose venue it shares
        for score, _venue, a, b in sorted(pairs, reverse=True):
            ta, tb = by_id[a], by_id[b]
            same = "same normalised title" if ta[2] == tb[2] else f"titles {score:.0f}% alike"
            dois = "one DOI" if (ta[5] or tb[5]) else "no DOI"
            venue = "same venue" if ta[8].lower() == tb[8].lower() else "venue alike"
            if not (ta[8] and tb[8]):
                venue = "one venue"
            union(
                a, b, score, f"#{a}~#{b}: {same}, year {year}, first author {akey}, {dois}, {venue}"
            )
    groups: dict[int, list[int]] = defaultdict(list)
    for pid in list(parent):
        groups[find(pid)].append(pid)
    for root in list(groups):
        if root not in groups[root]:
            groups[root].append(root)
    out = []
    for root, ids in groups.items():
        ids = sorted(set(ids), key=lambda i: _richness(by_id[i]), reverse=True)
        out.append(DuplicateGroup(ids, "title", worst.get(root, 100.0), evidence.get(root, [])))
    out.sort(key=lambda g: (-len(g.ids), g.ids[0]))
    return out


def differences(papers: list[Paper]) -> list[str]:
    """What differs between the papers of a group (shown next to the evidence before a merge)."""
    out = []
    for name in ("title", "year", "venue", "doi", "authors", "entry_type"):
        values = {json.dumps(getattr(p, name), ensure_ascii=False) for p in papers}
        if len(values) > 1:
            out.append(f"{name}: " + " | ".join(sorted(values)))
    return out


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _rows(lib, sql: str, args: tuple) -> list[dict]:
    cur = lib.conn.execute(sql, args)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def _absorb(lib, kept_id: int, oid: int, now: str) -> dict:
    """Move everything of paper ``oid`` to ``kept_id`` and delete ``oid``; returns the undo data."""
    faults.point("library.store")
    q = lambda sql: [r[0] for r in lib.conn.execute(sql, (oid,))]  # noqa: E731
    undo = {
        "row": _rows(lib, "SELECT * FROM papers WHERE id = ?", (oid,))[0],
        "records": q("SELECT id FROM paper_records WHERE paper_id = ?"),
        "citing": q("SELECT id FROM citations WHERE citing_id = ? "),
        "cited": q("SELECT id FROM citations WHERE cited_id = ?"),
        "self_citations": _rows(
            lib,
            "SELECT * FROM citations WHERE (citing_id = ? AND cited_id = ?) "
            "OR (citing_id = ? AND cited_id = ?)",
            (oid, kept_id, kept_id, oid),
        ),
        "collections": q("SELECT collection_id FROM collection_items WHERE paper_id = ?"),
        "tags": q("SELECT tag FROM paper_tags WHERE paper_id = ?"),
        "aliases": _rows(lib, "SELECT * FROM citekey_aliases WHERE paper_id = ?", (oid,)),
        "history": _rows(lib, "SELECT * FROM paper_history WHERE paper_id = ?", (oid,)),
    }
    undo["new_collections"] = [
        c
        for c in undo["collections"]
        if not lib.conn.execute(
            "SELECT 1 FROM collection_items WHERE paper_id = ? AND collection_id = ?", (kept_id, c)
        ).fetchone()
    ]
    undo["new_tags"] = [
        t
        for t in undo["tags"]
        if not lib.conn.execute(
            "SELECT 1 FROM paper_tags WHERE paper_id = ? AND tag = ?", (kept_id, t)
        ).fetchone()
    ]
    ex = lib.conn.execute
    ex("UPDATE paper_records SET paper_id = ? WHERE paper_id = ?", (kept_id, oid))
    ex("UPDATE citations SET citing_id = ? WHERE citing_id = ?", (kept_id, oid))
    ex("UPDATE citations SET cited_id = ? WHERE cited_id = ?", (kept_id, oid))
    ex("DELETE FROM citations WHERE citing_id = cited_id AND citing_id = ?", (kept_id,))
    ex(
        "INSERT OR IGNORE INTO collection_items (collection_id, paper_id) "
        "SELECT collection_id, ? FROM collection_items WHERE paper_id = ?",
        (kept_id, oid),
    )
    ex(
        "INSERT OR IGNORE INTO paper_tags (paper_id, tag) SELECT ?, tag FROM paper_tags "
        "WHERE paper_id = ?",
        (kept_id, oid),
    )
    ex("DELETE FROM paper_history WHERE paper_id = ?", (oid,))
    ex("UPDATE citekey_aliases SET paper_id = ? WHERE paper_id = ?", (kept_id, oid))
    ex("DELETE FROM collection_items WHERE paper_id = ?", (oid,))
    ex("DELETE FROM paper_tags WHERE paper_id = ?", (oid,))
    lib.remove(oid)
    ex(
        "INSERT OR IGNORE INTO citekey_aliases (alias, paper_id, added_at) VALUES (?, ?, ?)",
        (undo["row"]["citekey"], kept_id, now),
    )
    return undo


def restore_absorbed(lib, kept_id: int, undo: dict) -> None:
    """Undo :func:`_absorb` (inside the caller's transaction): the paper comes back as it was."""
    row = undo["row"]
    oid = row["id"]
    if lib.conn.execute("SELECT 1 FROM papers WHERE id = ?", (oid,)).fetchone():
        raise LibraryEditError(f"cannot un-merge: paper id {oid} is in use again")
    holder = lib.conn.execute(
        "SELECT citekey FROM papers WHERE citekey = ? OR (doi IS NOT NULL AND doi = ?)",
        (row["citekey"], row["doi"]),
    ).fetchone()
    if holder:
        raise LibraryEditError(
            f"cannot un-merge {row['citekey']}: its citekey or DOI is now used by {holder[0]}"
        )
    ex = lib.conn.execute
    ex("DELETE FROM citekey_aliases WHERE alias = ? AND paper_id = ?", (row["citekey"], kept_id))
    names = list(row)
    ex(
        f"INSERT INTO papers ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
        [row[n] for n in names],
    )
    lib._fts_insert(oid)

    def move(table: str, column: str, ids: list[int]) -> None:
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            ex(
                f"UPDATE {table} SET {column} = ? WHERE id IN ({','.join('?' * len(chunk))})",
                [oid, *chunk],
            )

    move("paper_records", "paper_id", undo["records"])
    move("citations", "citing_id", undo["citing"])
    move("citations", "cited_id", undo["cited"])
    for c in undo["self_citations"]:
        ex(
            f"INSERT OR IGNORE INTO citations ({', '.join(c)}) VALUES ({', '.join('?' * len(c))})",
            list(c.values()),
        )
    for cid in undo["collections"]:
        ex(
            "INSERT OR IGNORE INTO collection_items (collection_id, paper_id) VALUES (?, ?)",
            (cid, oid),
        )
    for cid in undo["new_collections"]:
        ex("DELETE FROM collection_items WHERE collection_id = ? AND paper_id = ?", (cid, kept_id))
    for tag in undo["tags"]:
        ex("INSERT OR IGNORE INTO paper_tags (paper_id, tag) VALUES (?, ?)", (oid, tag))
    for tag in undo["new_tags"]:
        ex("DELETE FROM paper_tags WHERE paper_id = ? AND tag = ?", (kept_id, tag))
    for a in undo["aliases"]:
        ex(
            "INSERT OR REPLACE INTO citekey_aliases (alias, paper_id, added_at) VALUES (?, ?, ?)",
            (a["alias"], oid, a["added_at"]),
        )
    for h in undo["history"]:
        ex(
            "INSERT INTO paper_history (id, paper_id, changed_at, action, before, after) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (h["id"], oid, h["changed_at"], h["action"], h["before"], h["after"]),
        )


def merge(lib, keep_id: int, other_ids: list[int]) -> Paper:
    """Merge ``other_ids`` into ``keep_id`` (see the module docstring); returns the kept paper."""
    other_ids = list(dict.fromkeys(int(i) for i in other_ids if int(i) != int(keep_id)))
    if not other_ids:
        raise LibraryEditError("a merge needs at least two different papers")
    with lib.transaction():
        kept = lib.get(int(keep_id))
        if kept is None:
            raise LibraryEditError(f"no paper with id {keep_id}")
        others = []
        for oid in other_ids:
            other = lib.get(oid)
            if other is None:
                raise LibraryEditError(f"no paper with id {oid}")
            others.append(other)
        merged = replace(kept)
        for other in others:
            merged = merge_papers(merged, other)
        now = _now()
        # the event row first: its id is above the merged-away papers' history rows, which the
        # undo data keeps, so re-inserting them with their own ids can never collide
        event = lib.conn.execute(
            "INSERT INTO paper_history (paper_id, changed_at, action, before, after) "
            "VALUES (?, ?, 'merge', '{}', '{}')",
            (kept.id, now),
        ).lastrowid
        undo = [_absorb(lib, kept.id, other.id, now) for other in others]
        lib._update(merged, now)
        before = snapshot(kept)
        before["merged_papers"] = [
            {**snapshot(o), "id": o.id, "citekey": o.citekey, "doi": o.doi} for o in others
        ]
        before["unmerge"] = undo
        lib.conn.execute(
            "UPDATE paper_history SET before = ?, after = ? WHERE id = ?",
            (
                json.dumps(before, ensure_ascii=False),
                json.dumps(snapshot(merged), ensure_ascii=False),
                event,
            ),
        )
        lib.mark_changed([kept.id])
        return lib.get(kept.id)
