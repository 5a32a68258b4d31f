"""Papers of the library (``papers`` and their original records in ``paper_records``): reading,
full-text search, and storing with deduplication (DOI, then normalised title + year + first
author) into the richer record."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import replace

from assistant.library import citekeys
from assistant.library.models import ImportOutcome, Paper
from assistant.library.normalize import author_key, normalize_doi, title_key
from assistant.library.rows import (
    LIVE,
    SELECT,
    SELECT_FIELDS,
    content_hash,
    merge_papers,
    paper_from_row,
    record_hash,
)
from assistant.library.rows import now as _now

_FTS_SPECIAL = re.compile(r'["*:()^]|\b(AND|OR|NOT|NEAR)\b')
_TOKEN = re.compile(r"\w+", re.UNICODE)


class PaperStore:
    """Paper reads and writes of :class:`~assistant.library.store.Library` (which provides
    ``conn``, ``transaction()``, ``mark_changed()``, the FTS helpers and the key index)."""

    conn: sqlite3.Connection

    def count(self) -> int:
        """Papers in the library (the trash not counted)."""
        return self.conn.execute(
            "SELECT count(*) FROM papers p WHERE p.deleted_at IS NULL"
        ).fetchone()[0]

    def get(self, paper_id: int) -> Paper | None:
        row = self.conn.execute(f"{SELECT} WHERE p.id = ?", (paper_id,)).fetchone()
        return paper_from_row(row) if row else None

    def get_many(self, ids: Iterable[int]) -> list[Paper]:
        """Papers for ``ids`` in the given order (missing ids are left out)."""
        ids = list(ids)
        found: dict[int, Paper] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for row in self.conn.execute(f"{SELECT} WHERE p.id IN ({marks})", chunk):
                found[row[0]] = paper_from_row(row)
        return [found[i] for i in ids if i in found]

    def get_by_doi(self, doi: str) -> Paper | None:
        doi = normalize_doi(doi)
        row = (
            self.conn.execute(f"{SELECT} WHERE p.doi = ? AND {LIVE}", (doi,)).fetchone()
            if doi
            else None
        )
        return paper_from_row(row) if row else None

    def same_work_ids(
        self, title: str | None, doi: str | None = None, year: int | None = None
    ) -> list[int]:
        """Papers that are this work: the same DOI, or the same normalised title (of at least 8
        characters) with a year at most one apart when both are known. Keeps a manuscript that is
        already in the library out of its own recommendations."""
        ids: set[int] = set()
        doi = normalize_doi(doi)
        if doi:
            ids.update(
                r[0]
                for r in self.conn.execute(
                    "SELECT id FROM papers WHERE doi = ? AND deleted_at IS NULL", (doi,)
                )
            )
        tkey = title_key(title or "")
        if len(tkey) >= 8:
            for pid, other in self.conn.execute(
                "SELECT id, year FROM papers WHERE title_key = ? AND deleted_at IS NULL", (tkey,)
            ):
                if year is None or other is None or abs(int(other) - int(year)) <= 1:
                    ids.add(pid)
        return sorted(ids)

    def iter_papers(self, batch_size: int = 1000, with_record: bool = True) -> Iterator[Paper]:
        """All papers by id (the trash left out), fetched in batches (safe on a 100k-paper library).
        ``with_record=False`` leaves ``original_text`` empty (exports do not need it: 2x faster)."""
        last = -1
        select = SELECT if with_record else SELECT_FIELDS
        while True:
            rows = self.conn.execute(
                f"{select} WHERE p.id > ? AND {LIVE} ORDER BY p.id LIMIT ?", (last, batch_size)
            ).fetchall()
            if not rows:
                return
            for row in rows:
                yield paper_from_row(row)
            last = rows[-1][0]

    def paper_ids(self) -> list[int]:
        """Ids of the papers outside the trash, ascending."""
        return [
            r[0]
            for r in self.conn.execute("SELECT id FROM papers WHERE deleted_at IS NULL ORDER BY id")
        ]

    def trashed_ids(self) -> list[int]:
        """Ids of the papers in the trash."""
        return [
            r[0] for r in self.conn.execute("SELECT id FROM papers WHERE deleted_at IS NOT NULL")
        ]

    def paper_versions(self) -> dict[int, str]:
        """``id -> content hash`` of the indexed text, for incremental index updates."""
        return dict(
            self.conn.execute("SELECT id, content_hash FROM papers WHERE deleted_at IS NULL")
        )

    def records(self, paper_id: int) -> list[dict]:
        """Every original record merged into a paper (format, source_file, line, text)."""
        cur = self.conn.execute(
            "SELECT format, source_file, line, text, added_at FROM paper_records WHERE paper_id = ? ORDER BY id",
            (paper_id,),
        )
        return [dict(zip(("format", "source_file", "line", "text", "added_at"), r)) for r in cur]

    def search(self, query: str, limit: int = 20) -> list[Paper]:
        """Full-text search (FTS5, BM25 ranked) over title, abstract and keywords.

        Plain words must all match; if nothing does, any word may match. FTS5 syntax
        (quotes, AND/OR/NOT, prefix*) is honoured when present.
        """
        tokens = _TOKEN.findall(query)
        if not tokens:
            return []
        attempts = []
        if _FTS_SPECIAL.search(query):
            attempts.append(query)
        quoted = [f'"{t}"' for t in tokens]
        attempts += [" ".join(quoted), " OR ".join(quoted)]
        for fts_query in attempts:
            try:
                rows = self.conn.execute(
                    "SELECT f.rowid FROM papers_fts f JOIN papers p ON p.id = f.rowid "
                    f"WHERE papers_fts MATCH ? AND {LIVE} "
                    "ORDER BY bm25(papers_fts, 4.0, 1.0, 2.0, 2.0, 2.0, 1.0) LIMIT ?",
                    (fts_query, limit),
                ).fetchall()
            except sqlite3.OperationalError:
                continue
            if rows:
                return self.get_many([r[0] for r in rows])
        return []

    def _find_duplicate(self, paper: Paper, tkey: str, akey: str) -> int | None:
        if paper.doi:
            row = self.conn.execute("SELECT id FROM papers WHERE doi = ?", (paper.doi,)).fetchone()
            if row:
                return row[0]
        if len(tkey) < 8:
            return None  # too short to identify a work ("Keynote", "Preface")
        rows = self.conn.execute(
            "SELECT id, doi FROM papers WHERE title_key = ? AND year IS ? AND author_key = ?",
            (tkey, paper.year, akey),
        ).fetchall()
        for pid, doi in rows:
            if doi is None or paper.doi is None:
                return pid
        return None

    def add_paper(
        self, paper: Paper, record_format: str = "bibtex", line: int | None = None
    ) -> ImportOutcome:
        """Store ``paper``, merging it into an existing record of the same work if there is one.

        Re-adding an identical record (same original text) is a no-op (``unchanged``).
        """
        doi = normalize_doi(paper.doi)
        if doi != paper.doi:
            paper = replace(paper, doi=doi)
        with self.transaction():
            rhash = record_hash(record_format, paper.original_text) if paper.original_text else None
            if rhash:
                row = self.conn.execute(
                    "SELECT p.id, p.citekey FROM paper_records r JOIN papers p ON p.id = r.paper_id "
                    "WHERE r.record_hash = ?",
                    (rhash,),
                ).fetchone()
                if row:
                    return ImportOutcome("unchanged", row[0], row[1])
            tkey, akey = title_key(paper.title or ""), author_key(paper.authors)
            existing_id = self._find_duplicate(paper, tkey, akey)
            now = _now()
            if existing_id is None:
                outcome = self._insert(paper, tkey, akey, now)
            else:
                old = self.get(existing_id)
                merged = merge_papers(old, paper)
                if merged != old:
                    self._update(merged, now)
                outcome = ImportOutcome(
                    "merged" if (merged != old or rhash) else "unchanged", existing_id, old.citekey
                )
            if rhash:
                self.conn.execute(
                    "INSERT INTO paper_records (paper_id, format, source_file, line, record_hash, text, added_at) "
                    "VALUES (?,?,?,?,?,?,?)",
                    (
                        outcome.id,
                        record_format,
                        paper.source_file,
                        line,
                        rhash,
                        paper.original_text,
                        now,
                    ),
                )
            if paper.tags or paper.collections:
                from assistant.library import groups

                groups.apply_import_hints(self, outcome.id, paper.tags, paper.collections)
            return outcome

    def _insert(self, paper: Paper, tkey: str, akey: str, now: str) -> ImportOutcome:
        """A new row for ``paper`` under its own key when it is free, else a generated one."""
        key = (
            paper.citekey
            if citekeys.is_user_key(paper.citekey) and not self._citekey_taken(paper.citekey)
            else self.new_citekey(paper)
        )
        cur = self.conn.execute(
            "INSERT INTO papers (citekey, entry_type, doi, arxiv_id, title, abstract, authors, year, venue, "
            "keywords, url, pdf_path, source_file, extra, title_key, author_key, content_hash, added_at, "
            "updated_at, editors) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                key,
                paper.entry_type or "misc",
                paper.doi,
                paper.arxiv_id,
                paper.title or "",
                paper.abstract or "",
                json.dumps(paper.authors, ensure_ascii=False),
                paper.year,
                paper.venue or "",
                json.dumps(paper.keywords, ensure_ascii=False),
                paper.url,
                paper.pdf_path,
                paper.source_file,
                json.dumps(paper.extra, ensure_ascii=False),
                tkey,
                akey,
                content_hash(paper),
                now,
                now,
                json.dumps(paper.editors, ensure_ascii=False),
            ),
        )
        self.mark_changed([cur.lastrowid])
        return ImportOutcome("added", cur.lastrowid, key)

    def _update(self, paper: Paper, now: str) -> None:
        self.mark_changed([paper.id])
        self._fts_delete(paper.id)
        self.conn.execute(
            "UPDATE papers SET entry_type=?, doi=?, arxiv_id=?, title=?, abstract=?, authors=?, year=?, venue=?, "
            "keywords=?, url=?, pdf_path=?, source_file=?, extra=?, title_key=?, author_key=?, content_hash=?, "
            "updated_at=?, editors=? WHERE id=?",
            (
                paper.entry_type,
                paper.doi,
                paper.arxiv_id,
                paper.title,
                paper.abstract,
                json.dumps(paper.authors, ensure_ascii=False),
                paper.year,
                paper.venue,
                json.dumps(paper.keywords, ensure_ascii=False),
                paper.url,
                paper.pdf_path,
                paper.source_file,
                json.dumps(paper.extra, ensure_ascii=False),
                title_key(paper.title),
                author_key(paper.authors),
                content_hash(paper),
                now,
                json.dumps(paper.editors, ensure_ascii=False),
                paper.id,
            ),
        )
        self._fts_insert(paper.id)

    def update_paper(self, paper: Paper) -> None:
        """Overwrite the stored fields of ``paper`` (by id); the citekey never changes."""
        if paper.id is None:
            raise ValueError("update_paper needs a stored paper (id is None)")
        with self.transaction():
            self._update(replace(paper, doi=normalize_doi(paper.doi)), _now())

    def remove(self, paper_id: int) -> bool:
        """Delete a paper, its original records and its citation edges (explicit user action)."""
        with self.transaction():
            self.mark_changed([paper_id])
            self._fts_delete(paper_id)
            cur = self.conn.execute("DELETE FROM papers WHERE id = ?", (paper_id,))
        return cur.rowcount > 0
