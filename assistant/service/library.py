"""Library operations of the service: the faces (GUI, CLI) manage the library through these.

:class:`LibraryManager` (assistant.library.manager) is the typed API: find/show, edit with
validation and history, trash, duplicates and merge, collections and tags, exports and
auto-exports, attachments, citekey patterns, and the table view (:class:`PaperTable`).
"""

from __future__ import annotations

from assistant.library.duplicates import differences
from assistant.library.groups import Collection, LibraryEditError, find_collection
from assistant.library.manager import LibraryManager, PaperDetails
from assistant.library.table import COLUMNS, PaperTable, View, parse_search

__all__ = [
    "COLUMNS",
    "Collection",
    "LibraryEditError",
    "LibraryManager",
    "PaperDetails",
    "PaperTable",
    "View",
    "differences",
    "find_collection",
    "parse_search",
]
