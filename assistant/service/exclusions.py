"""The ONE exclusion rule of the product: what a manuscript is never recommended.

* **The manuscript itself** -- ``Query.manuscript_id`` and every library paper that is the same
  work as the query's title / DOI / year (a preprint, an imported PDF) -- is always left out.
* **What it already cites** -- ``Query.cited_ids`` (the citekeys of the text and the linked
  references of a PDF, see :func:`manuscript_cited_ids`) and the library's citations of
  ``manuscript_id`` -- is left out when ``PipelineConfig.exclude_cited`` (the GUI's "Hide cited").

Every face (GUI, CLI, language server, manuscript analysis, the keyword fallback) gets it from
:meth:`assistant.service.Service.recommend`; the ACM-CR protocol uses its own blacklist
(``exclude_ids``) and no manuscript rule, so its figures do not depend on this module.
"""

from __future__ import annotations

from collections.abc import Iterable

from assistant.documents import textops
from assistant.documents.model import Document
from assistant.library.store import Library
from assistant.retrieval.pipeline import PipelineConfig
from assistant.retrieval.query import Query


def own_ids(
    library: Library, title: str | None, doi: str | None = None, year: int | None = None
) -> tuple[int, ...]:
    """Library papers that are the manuscript itself (same DOI, or same title and year)."""
    if not (title or doi):
        return ()
    return tuple(library.same_work_ids(title, doi=doi, year=year))


def excluded_ids(library: Library, query: Query, config: PipelineConfig) -> set[int]:
    """Library ids ``query`` must not be recommended (the rule above; ``config.exclude_ids``
    is added by the pipeline)."""
    out: set[int] = set(own_ids(library, query.title, query.doi, query.year))
    if query.manuscript_id is not None:
        out.add(int(query.manuscript_id))
    if config.exclude_cited:
        out.update(int(i) for i in query.cited_ids)
        if query.manuscript_id is not None:
            out.update(c.cited_id for c in library.citations_from(query.manuscript_id))
    return out


def cited_key_ids(library: Library, keys: Iterable[str]) -> tuple[int, ...]:
    """Library ids of citekeys (unknown keys skipped), in the order given."""
    ids = []
    for key in keys:
        paper = library.get_by_citekey(key)
        if paper is not None and paper.id is not None:
            ids.append(int(paper.id))
    return tuple(dict.fromkeys(ids))


def manuscript_cited_ids(
    library: Library | None, text: str, style: str, document: Document | None = None
) -> tuple[int, ...]:
    """What a manuscript already cites, as library ids: the keys its text cites
    (``textops.cited_keys``, looked up in ``library`` when there is one) and, for a parsed
    PDF, its references linked to the library."""
    ids = []
    if library is not None:
        ids += cited_key_ids(library, sorted(textops.cited_keys(text, style)))
    if document is not None:
        ids += [int(r.paper_id) for r in document.references if r.paper_id is not None]
    return tuple(dict.fromkeys(ids))
