"""Documents layer: manuscripts and PDFs (structure, citation markers, references, missing citations).

Public API (imported lazily so ``import assistant.documents`` stays cheap):
``parse_pdf``, ``parse_draft``, ``import_pdf``, ``find_missing_citations`` and the dataclasses of
:mod:`assistant.documents.model`.
"""

from __future__ import annotations

import importlib

_API = {
    "parse_pdf": "assistant.documents.pdf",
    "parse_draft": "assistant.documents.draft",
    "import_pdf": "assistant.documents.importer",
    "find_missing_citations": "assistant.documents.manuscript",
    "Document": "assistant.documents.model",
    "DocumentError": "assistant.documents.model",
    "MissingCitation": "assistant.documents.model",
    "ImportReport": "assistant.documents.model",
    "Reference": "assistant.documents.model",
}
__all__ = sorted(_API)


def __getattr__(name: str):
    if name in _API:
        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'assistant.documents' has no attribute {name!r}")
