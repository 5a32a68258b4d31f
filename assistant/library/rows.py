"""How a paper is stored in a row of ``papers``: the columns read, JSON columns, content hashes,
the field-by-field merge of two records of one work and the snapshot a history event keeps of a
paper (pure functions, no connection)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from assistant.library.models import Paper

PAPER_COLUMNS = (
    "id, citekey, entry_type, doi, arxiv_id, title, abstract, authors, year, venue, keywords, url, "
    "pdf_path, source_file, extra, added_at, updated_at, editors, deleted_at, pinned"
)
#: The paper's own columns a user may edit; any other name is a BibTeX field kept in ``extra``.
CORE_FIELDS = (
    "citekey",
    "entry_type",
    "title",
    "authors",
    "editors",
    "year",
    "venue",
    "doi",
    "arxiv_id",
    "url",
    "pdf_path",
    "keywords",
    "abstract",
)
#: what a history event records of a paper (editing, merging; ``editing.revert`` reads it back)
SNAPSHOT_FIELDS = (*CORE_FIELDS, "extra", "pinned", "deleted_at")
#: a paper row and its first original record text (``paper_from_row`` reads it)
SELECT = (
    f"SELECT {', '.join('p.' + c.strip() for c in PAPER_COLUMNS.split(','))}, "
    "(SELECT text FROM paper_records r WHERE r.paper_id = p.id ORDER BY r.id LIMIT 1) FROM papers p"
)
#: the same without the record text (NULL in its place)
SELECT_FIELDS = SELECT.split(", (SELECT text")[0] + ", NULL FROM papers p"
#: the papers outside the trash
LIVE = "p.deleted_at IS NULL"


def now() -> str:
    """The time stamps stored (UTC, to the second)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def json_column(value, kind: type):
    """A JSON list/object column; a damaged value (not JSON, another type) is read as its text
    (one list item, or ``{"damaged": text}``) rather than failing every reader of the library."""
    try:
        out = json.loads(value) if isinstance(value, str | bytes) else value
    except ValueError:
        out = None
    if isinstance(out, kind):
        return out
    if value in (None, "", b""):
        return kind()
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    return [text] if kind is list else {"damaged": text}


def paper_from_row(row: tuple) -> Paper:
    """The :class:`Paper` of a ``SELECT``/``SELECT_FIELDS`` row."""
    return Paper(
        id=row[0],
        citekey=row[1],
        entry_type=row[2],
        doi=row[3],
        arxiv_id=row[4],
        title=row[5],
        abstract=row[6],
        authors=json_column(row[7], list),
        year=row[8],
        venue=row[9],
        keywords=json_column(row[10], list),
        url=row[11],
        pdf_path=row[12],
        source_file=row[13],
        extra=json_column(row[14], dict),
        added_at=row[15],
        updated_at=row[16],
        editors=json_column(row[17], list),
        deleted_at=row[18],
        pinned=bool(row[19]),
        original_text=row[20] or "",
    )


def content_hash(paper: Paper) -> str:
    """Hash of what the indexes see (title, abstract, keywords): changes iff re-indexing is needed."""
    text = "\x1f".join((paper.title or "", paper.abstract or "", "\x1e".join(paper.keywords)))
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


def record_hash(fmt: str, text: str) -> str:
    """Identity of one original record text (re-importing it is a no-op)."""
    return hashlib.sha1(f"{fmt}\x00{text.strip()}".encode()).hexdigest()


def merge_papers(old: Paper, new: Paper) -> Paper:
    """The richer of two records of the same work, field by field (``old`` wins ties)."""
    merged = replace(old)
    for name in ("title", "venue", "doi", "arxiv_id", "url", "pdf_path", "year", "source_file"):
        if not getattr(merged, name) and getattr(new, name):
            setattr(merged, name, getattr(new, name))
    if (  # the old record names a PDF that is not there, the new one a file that is
        new.pdf_path
        and new.pdf_path != old.pdf_path
        and Path(new.pdf_path).is_file()
        and not Path(old.pdf_path or "").is_file()
    ):
        merged.pdf_path = new.pdf_path
    if len(new.abstract or "") > len(old.abstract or ""):
        merged.abstract = new.abstract
    if len(new.authors) > len(old.authors):
        merged.authors = list(new.authors)
    if len(new.editors) > len(old.editors):
        merged.editors = list(new.editors)
    if new.entry_type and (old.entry_type in ("misc", "") or (new.doi and not old.doi)):
        merged.entry_type = new.entry_type  # the record carrying the DOI is the canonical version
    seen = {k.lower() for k in old.keywords}
    merged.keywords = list(old.keywords) + [k for k in new.keywords if k.lower() not in seen]
    merged.extra = {**new.extra, **old.extra}
    return merged


def snapshot(paper: Paper) -> dict:
    """Every stored field of ``paper`` as plain JSON values (a history event's before/after)."""
    return {name: getattr(paper, name) for name in SNAPSHOT_FIELDS}
