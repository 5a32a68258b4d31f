"""Zotero importer: reads a *copy* of ``zotero.sqlite`` (Zotero keeps its file locked).

Regular items (not notes/attachments, not in the trash) become papers; creators keep their
order; tags become keywords; the first PDF attachment gives ``pdf_path`` (resolved against the
Zotero ``storage/`` folder next to the database). The item's fields as JSON are its original record.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
from pathlib import Path

from assistant.library.importers.common import ImportFileError, ParsedFile, ParsedRecord
from assistant.library.models import Paper
from assistant.library.normalize import (
    clean_text,
    clean_url,
    find_arxiv_id,
    normalize_doi,
    parse_year,
    split_keywords,
)

TYPES = {
    "journalArticle": "article",
    "magazineArticle": "article",
    "newspaperArticle": "article",
    "preprint": "article",
    "conferencePaper": "inproceedings",
    "book": "book",
    "bookSection": "inbook",
    "thesis": "phdthesis",
    "report": "techreport",
    "dataset": "dataset",
    "computerProgram": "software",
    "webpage": "online",
    "manuscript": "unpublished",
}
_SKIP_TYPES = ("note", "attachment", "annotation")
_VENUE_FIELDS = (
    "publicationTitle",
    "proceedingsTitle",
    "bookTitle",
    "conferenceName",
    "websiteTitle",
    "university",
    "institution",
)
_EXTRA = {
    "publisher": "publisher",
    "place": "address",
    "volume": "volume",
    "issue": "number",
    "pages": "pages",
    "ISBN": "isbn",
    "ISSN": "issn",
    "series": "series",
    "language": "language",
}


def _copy(path: Path, tmpdir: Path) -> Path:
    dest = tmpdir / "zotero.sqlite"
    try:
        shutil.copy2(path, dest)
        for suffix in ("-wal", "-journal"):
            side = Path(f"{path}{suffix}")
            if side.exists():
                shutil.copy2(side, Path(f"{dest}{suffix}"))
    except OSError as exc:
        raise ImportFileError(f"cannot copy Zotero database: {exc.strerror or exc}") from exc
    return dest


def _rows(conn: sqlite3.Connection, sql: str) -> list[tuple]:
    return conn.execute(sql).fetchall()


def parse_zotero_file(path: str | Path) -> ParsedFile:
    """Read all regular items of a Zotero database (a temporary copy is queried)."""
    path = Path(path)
    result = ParsedFile(str(path), nbytes=path.stat().st_size if path.exists() else 0)
    with tempfile.TemporaryDirectory(prefix="cite-assist-zotero-") as tmp:
        copy = _copy(path, Path(tmp))
        try:
            conn = sqlite3.connect(f"file:{copy}?mode=ro", uri=True)
            tables = {
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
        except sqlite3.DatabaseError as exc:
            raise ImportFileError(f"not a readable SQLite database: {exc}") from exc
        needed = {
            "items",
            "itemTypes",
            "itemData",
            "itemDataValues",
            "fields",
            "creators",
            "itemCreators",
        }
        if not needed <= tables:
            conn.close()
            raise ImportFileError(
                f"not a Zotero database (missing tables: {', '.join(sorted(needed - tables))})"
            )
        try:
            _read(conn, tables, path, result)
        finally:
            conn.close()
    return result


def _read(conn: sqlite3.Connection, tables: set[str], path: Path, result: ParsedFile) -> None:
    # long: one pass over Zotero's tables (items, fields, creators, attachments, collections)
    deleted = (
        {r[0] for r in _rows(conn, "SELECT itemID FROM deletedItems")}
        if "deletedItems" in tables
        else set()
    )
    items = _rows(
        conn,
        "SELECT i.itemID, i.key, t.typeName, i.dateAdded FROM items i "
        "JOIN itemTypes t ON t.itemTypeID = i.itemTypeID ORDER BY i.itemID",
    )
    fields: dict[int, dict[str, str]] = {}
    for item_id, name, value in _rows(
        conn,
        "SELECT d.itemID, f.fieldName, v.value FROM itemData d "
        "JOIN fields f ON f.fieldID = d.fieldID "
        "JOIN itemDataValues v ON v.valueID = d.valueID",
    ):
        fields.setdefault(item_id, {})[name] = str(value)
    creators: dict[int, list[dict]] = {}
    ctype_join = (
        "LEFT JOIN creatorTypes ct ON ct.creatorTypeID = ic.creatorTypeID"
        if "creatorTypes" in tables
        else ""
    )
    ctype_col = "ct.creatorType" if ctype_join else "'author'"
    for item_id, first, last, mode, ctype in _rows(
        conn,
        f"SELECT ic.itemID, c.firstName, c.lastName, c.fieldMode, {ctype_col} FROM itemCreators ic "
        f"JOIN creators c ON c.creatorID = ic.creatorID {ctype_join} ORDER BY ic.itemID, ic.orderIndex",
    ):
        creators.setdefault(item_id, []).append(
            {
                "firstName": first or "",
                "lastName": last or "",
                "fieldMode": mode or 0,
                "creatorType": ctype or "author",
            }
        )
    tags: dict[int, list[str]] = {}
    if {"tags", "itemTags"} <= tables:
        for item_id, name in _rows(
            conn,
            "SELECT it.itemID, t.name FROM itemTags it JOIN tags t ON t.tagID = it.tagID "
            "ORDER BY it.itemID, t.name",
        ):
            tags.setdefault(item_id, []).append(name)
    collections = _collections(conn, tables)
    pdfs: dict[int, str] = {}
    if "itemAttachments" in tables:
        for parent, att_key, att_path, ctype in _rows(
            conn,
            "SELECT a.parentItemID, i.key, a.path, a.contentType FROM itemAttachments a "
            "JOIN items i ON i.itemID = a.itemID WHERE a.parentItemID IS NOT NULL ORDER BY a.itemID",
        ):
            if (
                parent in pdfs
                or not att_path
                or not (ctype == "application/pdf" or att_path.lower().endswith(".pdf"))
            ):
                continue
            if att_path.startswith("storage:"):
                att_path = str(path.parent / "storage" / att_key / att_path[len("storage:") :])
            pdfs[parent] = att_path
    for item_id, key, type_name, added in items:
        if type_name in _SKIP_TYPES or item_id in deleted:
            continue
        data = fields.get(item_id, {})
        record = {
            "key": key,
            "itemType": type_name,
            "dateAdded": added,
            "fields": data,
            "creators": creators.get(item_id, []),
            "tags": tags.get(item_id, []),
        }
        if collections.get(item_id):
            record["collections"] = [" / ".join(p) for p in collections[item_id]]
        raw = json.dumps(record, ensure_ascii=False, sort_keys=True)
        title = clean_text(data.get("title", ""))
        if not title:
            result.skip("no title")
            continue
        paper = _paper(record, title, pdfs.get(item_id), str(path), raw)
        paper.tags = list(record["tags"])
        paper.collections = collections.get(item_id, [])
        result.records.append(ParsedRecord(paper, None, "zotero"))


def _collections(conn: sqlite3.Connection, tables: set[str]) -> dict[int, list[tuple[str, ...]]]:
    """item id -> the name paths (root first) of the Zotero collections it is in."""
    if not {"collections", "collectionItems"} <= tables:
        return {}
    rows = _rows(conn, "SELECT collectionID, collectionName, parentCollectionID FROM collections")
    by_id = {cid: (name or "Untitled", parent) for cid, name, parent in rows}

    def path(cid: int) -> tuple[str, ...]:
        parts, seen = [], set()
        while cid in by_id and cid not in seen:
            seen.add(cid)
            name, parent = by_id[cid]
            parts.append(name)
            cid = parent
        return tuple(reversed(parts))

    out: dict[int, list[tuple[str, ...]]] = {}
    for cid, item_id in _rows(
        conn, "SELECT collectionID, itemID FROM collectionItems ORDER BY collectionID, orderIndex"
    ):
        if cid in by_id:
            out.setdefault(item_id, []).append(path(cid))
    return out


def _paper(record: dict, title: str, pdf: str | None, source: str, raw: str) -> Paper:
    data = record["fields"]

    def name(c: dict) -> str:
        if c["fieldMode"] == 1 or not c["firstName"]:
            return c["lastName"]
        return f"{c['lastName']}, {c['firstName']}"

    people = [c for c in record["creators"] if c["creatorType"] not in ("editor", "seriesEditor")]
    editors = [name(c) for c in record["creators"] if c["creatorType"] == "editor"]
    authors = [name(c) for c in people if c["creatorType"] == "author"] or [name(c) for c in people]
    extra_text = data.get("extra", "")
    doi = normalize_doi(data.get("DOI")) or (
        normalize_doi(extra_text) if "DOI" in extra_text else None
    )
    venue = next((data[f] for f in _VENUE_FIELDS if data.get(f)), "")
    return Paper(
        title=title,
        entry_type=TYPES.get(record["itemType"], "misc"),
        abstract=clean_text(data.get("abstractNote", "")),
        authors=[clean_text(a) for a in authors],
        editors=[clean_text(a) for a in editors],
        year=parse_year(data.get("date")),
        venue=clean_text(venue),
        doi=doi,
        arxiv_id=find_arxiv_id(data.get("url"), extra_text, data.get("archiveID")),
        keywords=split_keywords(record["tags"]),
        url=clean_url(data.get("url")),
        pdf_path=pdf,
        source_file=source,
        original_text=raw,
        extra={name: clean_text(data[key]) for key, name in _EXTRA.items() if data.get(key)},
    )
