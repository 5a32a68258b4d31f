"""Finding and merging duplicate papers.

The finder groups papers with the same DOI, or with fuzzy-equal titles (rapidfuzz) of the same
year and first author. A merge keeps one paper and its citekey; the others' fields fill its gaps,
their imported records, citation edges, collections and tags move to it, their citekeys become
aliases (old ``\\cite{}``s still resolve, exports write the kept key) and their full field values
are kept in the kept paper's edit history.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from rapidfuzz import fuzz

from assistant.library.editing import snapshot
from assistant.library.groups import LibraryEditError
from assistant.library.models import Paper
from assistant.library.store import merge_papers

#: token-sort ratio (0-100) above which two titles of the same year and first author are one work
TITLE_THRESHOLD = 92.0
_MIN_TITLE_KEY = 8  # "Preface", "Keynote": too short to say two papers are the same


@dataclass
class DuplicateGroup:
    ids: list[int]  # the suggested paper to keep first (the richest record)
    reason: str  # "doi" | "title"
    score: float  # lowest pairwise title similarity in the group (100 for a DOI group)


def _richness(row: tuple) -> tuple:
    pid, _title, _tkey, _year, _akey, doi, abstract_len, n_records = row
    return (doi is not None, abstract_len, n_records, -pid)


def find_duplicates(lib, threshold: float = TITLE_THRESHOLD) -> list[DuplicateGroup]:
    """Groups of papers (not in the trash) that look like one work, largest groups first."""
    rows = lib.conn.execute(
        "SELECT p.id, p.title, p.title_key, p.year, p.author_key, lower(p.doi), length(p.abstract), "
        "(SELECT count(*) FROM paper_records r WHERE r.paper_id = p.id) "
        "FROM papers p WHERE p.deleted_at IS NULL"
    ).fetchall()
    by_id = {r[0]: r for r in rows}
    parent: dict[int, int] = {}
    reason: dict[int, str] = {}
    worst: dict[int, float] = {}

    def find(x: int) -> int:
        while parent.get(x, x) != x:
            parent[x] = parent.get(parent[x], parent[x])
            x = parent[x]
        return x

    def union(a: int, b: int, why: str, score: float) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[rb] = ra
            reason[ra] = "doi" if "doi" in (why, reason.get(ra), reason.get(rb)) else "title"
            worst[ra] = min(score, worst.get(ra, 100.0), worst.get(rb, 100.0))

    by_doi: dict[str, list[int]] = defaultdict(list)
    blocks: dict[tuple, list[int]] = defaultdict(list)
    for r in rows:
        if r[5]:
            by_doi[r[5]].append(r[0])
        if len(r[2]) >= _MIN_TITLE_KEY and r[4]:  # anonymous "Editorial Board"s are many works
            blocks[(r[3], r[4])].append(r[0])
    for ids in by_doi.values():
        for other in ids[1:]:
            union(ids[0], other, "doi", 100.0)
    for ids in blocks.values():
        if len(ids) < 2:
            continue
        for i, a in enumerate(ids):
            for b in ids[i + 1 :]:
                ta, tb = by_id[a], by_id[b]
                if ta[2] == tb[2]:
                    score = 100.0
                else:
                    score = fuzz.token_sort_ratio(ta[1].lower(), tb[1].lower())
                if score >= threshold:
                    union(a, b, "title", score)
    groups: dict[int, list[int]] = defaultdict(list)
    for pid in list(parent):
        groups[find(pid)].append(pid)
    for root in list(groups):
        if root not in groups[root]:
            groups[root].append(root)
    out = []
    for root, ids in groups.items():
        ids = sorted(set(ids), key=lambda i: _richness(by_id[i]), reverse=True)
        out.append(DuplicateGroup(ids, reason.get(root, "title"), worst.get(root, 100.0)))
    out.sort(key=lambda g: (-len(g.ids), g.ids[0]))
    return out


def merge(lib, keep_id: int, other_ids: list[int]) -> Paper:
    """Merge ``other_ids`` into ``keep_id`` (see the module docstring); returns the kept paper."""
    other_ids = [int(i) for i in other_ids if int(i) != int(keep_id)]
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
        before = snapshot(kept)
        merged = replace(kept)
        for other in others:
            merged = merge_papers(merged, other)
        now = datetime.now(UTC).isoformat(timespec="seconds")
        for other in others:
            oid = other.id
            lib.conn.execute(
                "UPDATE paper_records SET paper_id = ? WHERE paper_id = ?", (kept.id, oid)
            )
            lib.conn.execute(
                "UPDATE citations SET citing_id = ? WHERE citing_id = ?", (kept.id, oid)
            )
            lib.conn.execute("UPDATE citations SET cited_id = ? WHERE cited_id = ?", (kept.id, oid))
            lib.conn.execute(
                "DELETE FROM citations WHERE citing_id = cited_id AND citing_id = ?", (kept.id,)
            )
            lib.conn.execute(
                "INSERT OR IGNORE INTO collection_items (collection_id, paper_id) "
                "SELECT collection_id, ? FROM collection_items WHERE paper_id = ?",
                (kept.id, oid),
            )
            lib.conn.execute(
                "INSERT OR IGNORE INTO paper_tags (paper_id, tag) SELECT ?, tag FROM paper_tags "
                "WHERE paper_id = ?",
                (kept.id, oid),
            )
            lib.conn.execute(
                "UPDATE paper_history SET paper_id = ? WHERE paper_id = ?", (kept.id, oid)
            )
            lib.conn.execute(
                "UPDATE citekey_aliases SET paper_id = ? WHERE paper_id = ?", (kept.id, oid)
            )
            lib.conn.execute("DELETE FROM collection_items WHERE paper_id = ?", (oid,))
            lib.conn.execute("DELETE FROM paper_tags WHERE paper_id = ?", (oid,))
            lib.remove(oid)
            lib.conn.execute(
                "INSERT OR IGNORE INTO citekey_aliases (alias, paper_id, added_at) VALUES (?, ?, ?)",
                (other.citekey, kept.id, now),
            )
        lib._update(merged, now)
        after = snapshot(merged)
        before["merged_papers"] = [
            {**snapshot(o), "id": o.id, "citekey": o.citekey} for o in others
        ]
        lib.conn.execute(
            "INSERT INTO paper_history (paper_id, changed_at, action, before, after) VALUES (?,?,?,?,?)",
            (
                kept.id,
                now,
                "merge",
                json.dumps(before, ensure_ascii=False),
                json.dumps(after, ensure_ascii=False),
            ),
        )
        lib.mark_changed()
        return lib.get(kept.id)


def merge_group(lib, group: DuplicateGroup) -> Paper:
    """Merge a finder group into its first (richest) paper."""
    return merge(lib, group.ids[0], group.ids[1:])
