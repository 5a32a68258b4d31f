"""Collections (a tree, user-made or imported from Zotero) and tags of the library's papers.

A paper may be in any number of collections; deleting a collection never deletes a paper.
Tags are free strings per paper (Zotero tags are imported as tags and, as before, keywords).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from assistant.errors import AssistantError


class LibraryEditError(AssistantError):
    """A library operation the user asked for cannot be done (unknown key, bad value, ...)."""


@dataclass
class Collection:
    id: int
    name: str
    parent_id: int | None
    source: str  # "user" | "zotero"
    count: int = 0  # papers directly in it (trash not counted)
    path: str = ""  # "Parent / Child"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def list_collections(lib) -> list[Collection]:
    """Every collection with its paper count, parents before children, by path."""
    rows = lib.conn.execute(
        "SELECT c.id, c.name, c.parent_id, c.source, "
        "(SELECT count(*) FROM collection_items ci JOIN papers p ON p.id = ci.paper_id "
        " WHERE ci.collection_id = c.id AND p.deleted_at IS NULL) FROM collections c"
    ).fetchall()
    by_id = {r[0]: Collection(r[0], r[1], r[2], r[3], r[4]) for r in rows}
    for col in by_id.values():
        parts, cur, seen = [], col, set()
        while cur is not None and cur.id not in seen:
            seen.add(cur.id)
            parts.append(cur.name)
            cur = by_id.get(cur.parent_id) if cur.parent_id is not None else None
        col.path = " / ".join(reversed(parts))
    return sorted(by_id.values(), key=lambda c: (c.path.lower(), c.id))


def find_collection(lib, name_or_id: str | int) -> Collection:
    """A collection by id, path (``A / B``) or unique name; raises :class:`LibraryEditError`."""
    cols = list_collections(lib)
    text = str(name_or_id).strip()
    if text.isdigit():
        for col in cols:
            if col.id == int(text):
                return col
    hits = [c for c in cols if c.path.lower() == text.lower()] or [
        c for c in cols if c.name.lower() == text.lower()
    ]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise LibraryEditError(f"no collection '{text}' (see `assistant library collections`)")
    paths = ", ".join(c.path for c in hits)
    raise LibraryEditError(f"'{text}' names {len(hits)} collections ({paths}): give the path or id")


def create_collection(
    lib,
    name: str,
    parent_id: int | None = None,
    source: str = "user",
    source_key: str | None = None,
) -> int:
    """Create a collection (or return the id of the imported one with the same source key)."""
    name = " ".join(name.split())
    if not name:
        raise LibraryEditError("a collection needs a name")
    with lib.transaction():
        if source_key is not None:
            row = lib.conn.execute(
                "SELECT id FROM collections WHERE source = ? AND source_key = ?",
                (source, source_key),
            ).fetchone()
            if row:
                return row[0]
        cur = lib.conn.execute(
            "INSERT INTO collections (name, parent_id, source, source_key, added_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (name, parent_id, source, source_key, _now()),
        )
    return cur.lastrowid


def rename_collection(lib, collection_id: int, name: str) -> None:
    name = " ".join(name.split())
    if not name:
        raise LibraryEditError("a collection needs a name")
    with lib.transaction():
        lib.conn.execute("UPDATE collections SET name = ? WHERE id = ?", (name, collection_id))


def delete_collection(lib, collection_id: int) -> None:
    """Delete a collection and its sub-collections; the papers stay in the library."""
    ids = _subtree(lib, collection_id)
    with lib.transaction():
        marks = ",".join("?" * len(ids))
        lib.conn.execute(f"DELETE FROM collection_items WHERE collection_id IN ({marks})", ids)
        lib.conn.execute(f"DELETE FROM auto_exports WHERE collection_id IN ({marks})", ids)
        for cid in reversed(ids):
            lib.conn.execute("DELETE FROM collections WHERE id = ?", (cid,))


def _subtree(lib, collection_id: int) -> list[int]:
    ids, frontier = [collection_id], [collection_id]
    while frontier:
        marks = ",".join("?" * len(frontier))
        frontier = [
            r[0]
            for r in lib.conn.execute(
                f"SELECT id FROM collections WHERE parent_id IN ({marks})", frontier
            )
            if r[0] not in ids
        ]
        ids.extend(frontier)
    return ids


def add_to_collection(lib, collection_id: int, paper_ids: Iterable[int]) -> int:
    """Put papers in a collection; returns how many were not in it yet."""
    with lib.transaction():
        n = 0
        for pid in paper_ids:
            n += lib.conn.execute(
                "INSERT OR IGNORE INTO collection_items (collection_id, paper_id) VALUES (?, ?)",
                (collection_id, int(pid)),
            ).rowcount
    return n


def remove_from_collection(lib, collection_id: int, paper_ids: Iterable[int]) -> int:
    with lib.transaction():
        return sum(
            lib.conn.execute(
                "DELETE FROM collection_items WHERE collection_id = ? AND paper_id = ?",
                (collection_id, int(pid)),
            ).rowcount
            for pid in paper_ids
        )


def collection_paper_ids(lib, collection_ids: Iterable[int], recursive: bool = True) -> list[int]:
    """Ids of the (non-trashed) papers in these collections (and their sub-collections)."""
    ids: list[int] = []
    for cid in collection_ids:
        ids.extend(_subtree(lib, int(cid)) if recursive else [int(cid)])
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    return [
        r[0]
        for r in lib.conn.execute(
            f"SELECT DISTINCT ci.paper_id FROM collection_items ci JOIN papers p ON p.id = ci.paper_id "
            f"WHERE ci.collection_id IN ({marks}) AND p.deleted_at IS NULL ORDER BY ci.paper_id",
            ids,
        )
    ]


def collections_of(lib, paper_id: int) -> list[int]:
    return [
        r[0]
        for r in lib.conn.execute(
            "SELECT collection_id FROM collection_items WHERE paper_id = ? ORDER BY collection_id",
            (paper_id,),
        )
    ]


# -- tags ---------------------------------------------------------------------------------------
def tags_of(lib, paper_id: int) -> list[str]:
    return [
        r[0]
        for r in lib.conn.execute(
            "SELECT tag FROM paper_tags WHERE paper_id = ? ORDER BY tag COLLATE NOCASE", (paper_id,)
        )
    ]


def add_tags(lib, paper_id: int, tags: Iterable[str]) -> None:
    with lib.transaction():
        for tag in tags:
            tag = " ".join(str(tag).split())
            if tag:
                lib.conn.execute(
                    "INSERT OR IGNORE INTO paper_tags (paper_id, tag) VALUES (?, ?)",
                    (paper_id, tag),
                )


def remove_tags(lib, paper_id: int, tags: Iterable[str]) -> None:
    with lib.transaction():
        for tag in tags:
            lib.conn.execute(
                "DELETE FROM paper_tags WHERE paper_id = ? AND tag = ?", (paper_id, tag)
            )


def all_tags(lib) -> dict[str, int]:
    """Tag -> number of (non-trashed) papers carrying it."""
    return dict(
        lib.conn.execute(
            "SELECT t.tag, count(*) FROM paper_tags t JOIN papers p ON p.id = t.paper_id "
            "WHERE p.deleted_at IS NULL GROUP BY t.tag ORDER BY t.tag COLLATE NOCASE"
        )
    )


def apply_import_hints(
    lib, paper_id: int, tags: Iterable[str], collections: Iterable[tuple[str, ...]]
) -> None:
    """Record the tags and collection paths an importer read (Zotero) for a stored paper."""
    add_tags(lib, paper_id, tags)
    for path in collections:
        parent = None
        for depth in range(1, len(path) + 1):
            parent = create_collection(
                lib, path[depth - 1], parent, "zotero", "\x1f".join(path[:depth])
            )
        if parent is not None:
            add_to_collection(lib, parent, [paper_id])
