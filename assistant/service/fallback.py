"""Recommending before any index exists: the library's keyword (BM25, SQLite FTS5) search.

Used while the first index is being built or after indexing was cancelled: the user gets
keyword matches with a notice instead of an error.
"""

from __future__ import annotations

import time
from pathlib import Path

from assistant.library.groups import collection_paper_ids
from assistant.library.store import Library
from assistant.retrieval.pipeline import PipelineConfig, Recommendation, RecommendationResult
from assistant.retrieval.query import Query
from assistant.retrieval.searcher import EmptyLibraryError
from assistant.service.exclusions import excluded_ids

NOTICE = (
    "No search index yet: these are keyword (BM25) matches only. "
    "Index the library (Index now) for full recommendations."
)


def keyword_fallback(db_path: Path, query: Query, config: PipelineConfig) -> RecommendationResult:
    """The top ``config.k`` keyword matches of the query's focus text (filters honoured)."""
    start = time.perf_counter()
    text = query.text or " ".join(p for p in (query.title, query.abstract) if p)
    library = Library(Path(db_path))  # its own connection: a job may hold the job connection
    try:
        if library.count() == 0:
            raise EmptyLibraryError(
                f"the library {db_path} is empty: import papers first (Library ▸ Import files)"
            )
        excluded = set(config.exclude_ids) | excluded_ids(library, query, config)
        members = (
            set(collection_paper_ids(library, config.collection_ids))
            if config.collection_ids
            else None
        )
        max_year = config.max_year
        if max_year is None and config.filter_by_year:
            max_year = query.year
        items = []
        for paper in library.search(text, limit=max(50, 5 * config.k)):
            if paper.id in excluded or (members is not None and paper.id not in members):
                continue
            if max_year is not None and paper.year and paper.year > max_year:
                continue
            items.append(Recommendation(paper=paper, score=0.0, ranks={"final": len(items) + 1}))
            if len(items) >= config.k:
                break
    finally:
        library.close()
    for rank, item in enumerate(items, start=1):
        item.score = 1.0 / rank
    mode = query.mode if query.mode != "auto" else query.resolved_mode()
    elapsed = (time.perf_counter() - start) * 1000
    return RecommendationResult(
        query=query, mode=mode, items=items, timings_ms={"total": elapsed}, warnings=[NOTICE]
    )
