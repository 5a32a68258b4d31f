"""The application service: the one core API the CLI and the GUI call (no Qt, no click).

``Service`` (see :mod:`assistant.service.engine` for its thread-safety contract) opens a library,
imports, indexes, recommends and runs training jobs; :mod:`assistant.service.writing` builds
queries, citation edits and manuscript analyses. The faces import from here only; the
dataclasses they handle are re-exported below.

The names are imported on first use (PEP 562): ``assistant recommend`` or ``assistant index``
loads the retrieval stack but not the importers, the BibTeX writer or the manuscript analysis
(issue 32: a cold command's start-up). ``from assistant.service import Service`` imports what
``Service`` needs, as before.
"""

from __future__ import annotations

import importlib

#: exported name -> (module, attribute); None: the module itself
_EXPORTS: dict[str, tuple[str, str | None]] = {
    "textops": ("assistant.documents.textops", None),
    "Document": ("assistant.documents.model", "Document"),
    "DocumentError": ("assistant.documents.model", "DocumentError"),
    "MissingCitation": ("assistant.documents.model", "MissingCitation"),
    "SuggestedPaper": ("assistant.documents.model", "SuggestedPaper"),
    "AssistantError": ("assistant.errors", "AssistantError"),
    "Cancelled": ("assistant.errors", "Cancelled"),
    "AppendResult": ("assistant.library.bibfile", "AppendResult"),
    "BibChange": ("assistant.library.bibfile", "BibChange"),
    "BibFileError": ("assistant.library.bibfile", "BibFileError"),
    "apply_bib_change": ("assistant.library.bibfile", "apply_bib_change"),
    "read_bib": ("assistant.library.bibfile", "read_bib"),
    "ImportReport": ("assistant.library.models", "ImportReport"),
    "Paper": ("assistant.library.models", "Paper"),
    "LibraryOpenError": ("assistant.library.schema", "LibraryOpenError"),
    "database_error": ("assistant.library.schema", "database_error"),
    "Library": ("assistant.library.store", "Library"),
    "CancelCheck": ("assistant.progress", "CancelCheck"),
    "Progress": ("assistant.progress", "Progress"),
    "ProgressEvent": ("assistant.progress", "ProgressEvent"),
    "check_cancelled": ("assistant.progress", "check_cancelled"),
    "content_words": ("assistant.retrieval.bm25", "content_words"),
    "INDEX_KINDS": ("assistant.retrieval.index", "KINDS"),
    "IndexReport": ("assistant.retrieval.index", "IndexReport"),
    "parse_intent_preference": ("assistant.retrieval.intent_stage", "parse_intent_preference"),
    "PipelineConfig": ("assistant.retrieval.pipeline", "PipelineConfig"),
    "Recommendation": ("assistant.retrieval.pipeline", "Recommendation"),
    "RecommendationResult": ("assistant.retrieval.pipeline", "RecommendationResult"),
    "RequestOptions": ("assistant.retrieval.pipeline", "RequestOptions"),
    "MODES": ("assistant.retrieval.query", "MODES"),
    "EmptyQueryError": ("assistant.retrieval.query", "EmptyQueryError"),
    "Query": ("assistant.retrieval.query", "Query"),
    "build_query": ("assistant.retrieval.query", "build_query"),
    "detect_mode": ("assistant.retrieval.query", "detect_mode"),
    "strip_citation_markers": ("assistant.retrieval.query", "strip_citation_markers"),
    "RerankerSetting": ("assistant.retrieval.reranker_setting", "RerankerSetting"),
    "resolve_reranker": ("assistant.retrieval.reranker_setting", "resolve_reranker"),
    "IntentChip": ("assistant.service.chips", "IntentChip"),
    "chip_texts": ("assistant.service.chips", "chip_texts"),
    "intent_chip": ("assistant.service.chips", "intent_chip"),
    "intent_chips": ("assistant.service.chips", "intent_chips"),
    "sentence_label": ("assistant.service.chips", "sentence_label"),
    "IMPORTED_STAGE": ("assistant.service.engine", "IMPORTED_STAGE"),
    "IndexStatus": ("assistant.service.engine", "IndexStatus"),
    "LibraryMissingError": ("assistant.service.engine", "LibraryMissingError"),
    "Service": ("assistant.service.engine", "Service"),
    "ServiceSettings": ("assistant.service.engine", "ServiceSettings"),
    "import_summary": ("assistant.service.engine", "import_summary"),
    "open_library": ("assistant.service.engine", "open_library"),
    "paper_bibtex": ("assistant.service.engine", "paper_bibtex"),
    "require_library": ("assistant.service.engine", "require_library"),
    "excluded_ids": ("assistant.service.exclusions", "excluded_ids"),
    "manuscript_cited_ids": ("assistant.service.exclusions", "manuscript_cited_ids"),
    "own_ids": ("assistant.service.exclusions", "own_ids"),
    "QUALITIES": ("assistant.service.quality", "QUALITIES"),
    "QualityError": ("assistant.service.quality", "QualityError"),
    "TierChoice": ("assistant.service.quality", "TierChoice"),
    "check_quality": ("assistant.service.quality", "check_quality"),
    "MANUSCRIPT_K": ("assistant.service.writing", "MANUSCRIPT_K"),
    "CitationInsert": ("assistant.service.writing", "CitationInsert"),
    "ManuscriptAnalysis": ("assistant.service.writing", "ManuscriptAnalysis"),
    "analyse_manuscript": ("assistant.service.writing", "analyse_manuscript"),
    "find_passage": ("assistant.service.writing", "find_passage"),
    "manuscript_style": ("assistant.service.writing", "manuscript_style"),
    "pdf_exclusions": ("assistant.service.writing", "pdf_exclusions"),
    "plan_citation": ("assistant.service.writing", "plan_citation"),
    "query_for_selection": ("assistant.service.writing", "query_for_selection"),
    "query_for_text": ("assistant.service.queries", "query_for_text"),
    "query_in_manuscript": ("assistant.service.writing", "query_in_manuscript"),
    "read_manuscript": ("assistant.service.writing", "read_manuscript"),
    "sync_manuscript_bib": ("assistant.service.writing", "sync_manuscript_bib"),
    "write_pending_entries": ("assistant.service.writing", "write_pending_entries"),
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    try:
        module, attr = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = importlib.import_module(module)
    if attr is not None:
        value = getattr(value, attr)
    globals()[name] = value  # the next lookup is a plain global
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
