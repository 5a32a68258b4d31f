"""The application service: the one core API the CLI and the GUI call (no Qt, no click).

``Service`` (see :mod:`assistant.service.engine` for its thread-safety contract) opens a library,
imports, indexes, recommends and runs training jobs; :mod:`assistant.service.writing` builds
queries, citation edits and manuscript analyses. The faces import from here only; the
dataclasses they handle are re-exported below.
"""

from assistant.documents import textops
from assistant.documents.model import (
    Document,
    DocumentError,
    MissingCitation,
    SuggestedPaper,
)
from assistant.errors import AssistantError, Cancelled
from assistant.library.bibfile import (
    AppendResult,
    BibChange,
    BibFileError,
    apply_bib_change,
    read_bib,
)
from assistant.library.models import ImportReport, Paper
from assistant.library.schema import LibraryOpenError, database_error
from assistant.library.store import Library
from assistant.progress import CancelCheck, Progress, ProgressEvent, check_cancelled
from assistant.retrieval.bm25 import content_words
from assistant.retrieval.index import KINDS as INDEX_KINDS
from assistant.retrieval.index import IndexReport
from assistant.retrieval.intent_stage import parse_intent_preference
from assistant.retrieval.pipeline import (
    PipelineConfig,
    Recommendation,
    RecommendationResult,
    RequestOptions,
)
from assistant.retrieval.query import (
    MODES,
    EmptyQueryError,
    Query,
    build_query,
    detect_mode,
    strip_citation_markers,
)
from assistant.retrieval.reranker_setting import RerankerSetting, resolve_reranker
from assistant.service.chips import (
    IntentChip,
    chip_texts,
    intent_chip,
    intent_chips,
    sentence_label,
)
from assistant.service.engine import (
    IMPORTED_STAGE,
    IndexStatus,
    LibraryMissingError,
    Service,
    ServiceSettings,
    import_summary,
    open_library,
    paper_bibtex,
    require_library,
)
from assistant.service.exclusions import excluded_ids, manuscript_cited_ids, own_ids
from assistant.service.quality import QUALITIES, QualityError, TierChoice, check_quality
from assistant.service.writing import (
    MANUSCRIPT_K,
    CitationInsert,
    ManuscriptAnalysis,
    analyse_manuscript,
    find_passage,
    manuscript_style,
    pdf_exclusions,
    plan_citation,
    query_for_selection,
    query_for_text,
    query_in_manuscript,
    read_manuscript,
    sync_manuscript_bib,
    write_pending_entries,
)

__all__ = [
    "IMPORTED_STAGE",
    "INDEX_KINDS",
    "MANUSCRIPT_K",
    "MODES",
    "QUALITIES",
    "AppendResult",
    "AssistantError",
    "BibChange",
    "BibFileError",
    "CancelCheck",
    "Cancelled",
    "CitationInsert",
    "Document",
    "DocumentError",
    "EmptyQueryError",
    "ImportReport",
    "IndexReport",
    "IndexStatus",
    "IntentChip",
    "Library",
    "LibraryMissingError",
    "LibraryOpenError",
    "ManuscriptAnalysis",
    "MissingCitation",
    "Paper",
    "PipelineConfig",
    "Progress",
    "ProgressEvent",
    "QualityError",
    "Query",
    "Recommendation",
    "RecommendationResult",
    "RequestOptions",
    "RerankerSetting",
    "Service",
    "ServiceSettings",
    "SuggestedPaper",
    "TierChoice",
    "analyse_manuscript",
    "apply_bib_change",
    "build_query",
    "check_cancelled",
    "check_quality",
    "chip_texts",
    "content_words",
    "database_error",
    "detect_mode",
    "excluded_ids",
    "find_passage",
    "import_summary",
    "intent_chip",
    "intent_chips",
    "manuscript_cited_ids",
    "manuscript_style",
    "open_library",
    "own_ids",
    "paper_bibtex",
    "parse_intent_preference",
    "pdf_exclusions",
    "plan_citation",
    "query_for_selection",
    "query_for_text",
    "query_in_manuscript",
    "read_bib",
    "read_manuscript",
    "require_library",
    "resolve_reranker",
    "sentence_label",
    "strip_citation_markers",
    "sync_manuscript_bib",
    "textops",
    "write_pending_entries",
]
