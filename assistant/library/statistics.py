"""Counts over the whole library: intent labels of the citation edges, how often each paper is
cited, the author lists the ranker's bibliographic signals are built from, and the summary of
``assistant library stats``."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path


class LibraryStatistics:
    """Whole-library counts of :class:`~assistant.library.store.Library` (which provides
    ``conn``, ``path``, ``count()`` and ``schema_version``)."""

    conn: sqlite3.Connection
    path: Path

    def intent_counts(self) -> dict[str, int]:
        """``intent -> labelled citation edges`` over the whole library."""
        return dict(
            self.conn.execute(
                "SELECT intent, count(*) FROM citations WHERE intent IS NOT NULL GROUP BY intent"
            )
        )

    def intent_counts_to(self, paper_ids: Iterable[int]) -> dict[int, dict[str, int]]:
        """``paper id -> intent -> labelled edges citing it`` (papers never cited with a label
        are left out)."""
        ids = [int(p) for p in paper_ids]
        out: dict[int, dict[str, int]] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for cited, intent, n in self.conn.execute(
                f"SELECT cited_id, intent, count(*) FROM citations WHERE cited_id IN ({marks}) "
                "AND intent IS NOT NULL GROUP BY cited_id, intent",
                chunk,
            ):
                out.setdefault(cited, {})[intent] = int(n)
        return out

    def citing_counts(self) -> dict[int, int]:
        """``paper id -> distinct papers citing it`` (trashed papers' edges included)."""
        return {
            int(cited): int(n)
            for cited, n in self.conn.execute(
                "SELECT cited_id, COUNT(DISTINCT citing_id) FROM citations "
                "WHERE cited_id IS NOT NULL GROUP BY cited_id"
            )
        }

    def citing_counts_of(self, paper_ids: Iterable[int]) -> dict[int, int]:
        """:meth:`citing_counts` of ``paper_ids`` only (papers never cited are left out)."""
        ids = [int(p) for p in paper_ids]
        out: dict[int, int] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            out.update(
                (int(cited), int(n))
                for cited, n in self.conn.execute(
                    "SELECT cited_id, COUNT(DISTINCT citing_id) FROM citations "
                    f"WHERE cited_id IN ({marks}) GROUP BY cited_id",
                    chunk,
                )
            )
        return out

    def author_lists(self) -> Iterator[list]:
        """The author list (``"Last, First"`` strings) of each paper outside the trash, in
        storage order; a list that is not readable JSON is left out."""
        for (raw,) in self.conn.execute("SELECT authors FROM papers WHERE deleted_at IS NULL"):
            try:
                authors = json.loads(raw or "[]")
            except (ValueError, TypeError):
                continue
            if isinstance(authors, list):
                yield authors

    def stats(self) -> dict:
        """Counts for ``assistant library stats``."""
        q = lambda sql: self.conn.execute(sql).fetchone()[0]  # noqa: E731
        size = sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal")) if p.exists())
        return {
            "path": str(self.path),
            "papers": self.count(),
            "by_entry_type": dict(
                self.conn.execute(
                    "SELECT entry_type, count(*) FROM papers GROUP BY entry_type "
                    "ORDER BY count(*) DESC"
                )
            ),
            "with_abstract": q("SELECT count(*) FROM papers WHERE abstract != ''"),
            "without_abstract": q("SELECT count(*) FROM papers WHERE abstract = ''"),
            "with_doi": q("SELECT count(*) FROM papers WHERE doi IS NOT NULL"),
            "without_doi": q("SELECT count(*) FROM papers WHERE doi IS NULL"),
            "with_pdf": q("SELECT count(*) FROM papers WHERE pdf_path IS NOT NULL"),
            "records": q("SELECT count(*) FROM paper_records"),
            "citations": q("SELECT count(*) FROM citations"),
            "citations_with_intent": q("SELECT count(*) FROM citations WHERE intent IS NOT NULL"),
            "schema_version": self.schema_version,
            "db_size_bytes": size,
        }
