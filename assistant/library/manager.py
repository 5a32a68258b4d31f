"""One typed entry point to the library operations for the faces (GUI, CLI) and the service.

No Qt, no click: every method is a plain call on the open :class:`Library`; user errors are
:class:`LibraryEditError` (an ``AssistantError``) with a one-line message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from assistant.library import attachments, autoexport, duplicates, editing, groups
from assistant.library.export import export_bibtex
from assistant.library.groups import Collection, LibraryEditError
from assistant.library.models import Paper
from assistant.library.table import PaperTable
from assistant.progress import Progress

__all__ = ["LibraryEditError", "LibraryManager", "PaperDetails"]


@dataclass
class PaperDetails:
    """Everything ``library show`` and the details pane display about one paper."""

    paper: Paper
    records: list[dict]
    history: list[editing.HistoryEntry]
    aliases: list[str]
    collections: list[Collection] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)


class LibraryManager:
    """Library operations on one open :class:`~assistant.library.store.Library`."""

    def __init__(self, lib) -> None:
        self.lib = lib

    @classmethod
    def open(cls, path) -> LibraryManager:
        """Open (create, migrate) the library file at ``path``."""
        from assistant.library.store import Library

        return cls(Library(path))

    def close(self) -> None:
        self.lib.close()

    def render(self, paper_ids: list[int], fmt: str = "bibtex") -> str:
        """The export text of these papers (for the clipboard)."""
        from assistant.library.export import render

        return render(self.lib.get_many(paper_ids), fmt)

    # -- finding ------------------------------------------------------------------------------
    def find(self, key: str, include_trashed: bool = True) -> Paper:
        """A paper by citekey (or a merged-away alias), DOI or numeric id."""
        key = key.strip()
        paper = None
        if key.isdigit():
            paper = self.lib.get(int(key))
        if paper is None:
            paper = self.lib.get_by_citekey(key, include_trashed=include_trashed)
        if paper is None:
            paper = self.lib.get_by_doi(key)
        if paper is None:
            raise LibraryEditError(f"no paper '{key}' (give a citekey, DOI or id)")
        return paper

    def details(self, paper_id: int) -> PaperDetails:
        paper = self.lib.get(paper_id)
        if paper is None:
            raise LibraryEditError(f"no paper with id {paper_id}")
        cols = {c.id: c for c in groups.list_collections(self.lib)}
        return PaperDetails(
            paper=paper,
            records=self.lib.records(paper_id),
            history=editing.history(self.lib, paper_id),
            aliases=self.aliases(paper_id),
            collections=[cols[c] for c in groups.collections_of(self.lib, paper_id) if c in cols],
            tags=groups.tags_of(self.lib, paper_id),
        )

    def aliases(self, paper_id: int) -> list[str]:
        return [
            r[0]
            for r in self.lib.conn.execute(
                "SELECT alias FROM citekey_aliases WHERE paper_id = ? ORDER BY alias", (paper_id,)
            )
        ]

    def table(self) -> PaperTable:
        return PaperTable(self.lib)

    # -- editing -------------------------------------------------------------------------------
    def edit(self, paper_id: int, changes: dict) -> Paper:
        return editing.edit_paper(self.lib, paper_id, changes)

    def history(self, paper_id: int) -> list[editing.HistoryEntry]:
        return editing.history(self.lib, paper_id)

    def revert(self, history_id: int) -> Paper:
        return editing.revert(self.lib, history_id)

    def trash(self, paper_ids) -> int:
        return editing.trash(self.lib, paper_ids)

    def restore(self, paper_ids) -> int:
        return editing.restore(self.lib, paper_ids)

    def trashed(self) -> list[Paper]:
        return editing.trashed(self.lib)

    def empty_trash(self, *, confirmed: bool) -> int:
        return editing.empty_trash(self.lib, confirmed=confirmed)

    # -- duplicates ------------------------------------------------------------------------------
    def duplicates(self, threshold: float = duplicates.TITLE_THRESHOLD):
        return duplicates.find_duplicates(self.lib, threshold)

    def merge(self, keep_id: int, other_ids: list[int]) -> Paper:
        return duplicates.merge(self.lib, keep_id, other_ids)

    # -- collections and tags ------------------------------------------------------------------
    def collections(self) -> list[Collection]:
        return groups.list_collections(self.lib)

    def collection(self, name_or_id: str | int) -> Collection:
        return groups.find_collection(self.lib, name_or_id)

    def create_collection(self, name: str, parent_id: int | None = None) -> int:
        return groups.create_collection(self.lib, name, parent_id)

    def rename_collection(self, collection_id: int, name: str) -> None:
        groups.rename_collection(self.lib, collection_id, name)

    def delete_collection(self, collection_id: int) -> None:
        groups.delete_collection(self.lib, collection_id)

    def add_to_collection(self, collection_id: int, paper_ids) -> int:
        with self.lib.transaction():
            self.lib.mark_changed()  # a collection's auto-export follows its membership too
            return groups.add_to_collection(self.lib, collection_id, paper_ids)

    def remove_from_collection(self, collection_id: int, paper_ids) -> int:
        with self.lib.transaction():
            self.lib.mark_changed()
            return groups.remove_from_collection(self.lib, collection_id, paper_ids)

    def collection_paper_ids(self, collection_ids) -> list[int]:
        return groups.collection_paper_ids(self.lib, collection_ids)

    def tags(self) -> dict[str, int]:
        return groups.all_tags(self.lib)

    def add_tags(self, paper_id: int, tags) -> None:
        groups.add_tags(self.lib, paper_id, tags)

    def remove_tags(self, paper_id: int, tags) -> None:
        groups.remove_tags(self.lib, paper_id, tags)

    # -- export -------------------------------------------------------------------------------
    def export(
        self,
        output: str | Path,
        fmt: str = "bibtex",
        citekeys: list[str] | None = None,
        ids: list[int] | None = None,
        collection_id: int | None = None,
        allow_missing: bool = False,
    ) -> tuple[int, list[str]]:
        if collection_id is not None:
            ids = (ids or []) + groups.collection_paper_ids(self.lib, [collection_id])
        return export_bibtex(self.lib, output, citekeys, ids, allow_missing, fmt)

    def auto_exports(self) -> list[autoexport.AutoExport]:
        return autoexport.list_auto_exports(self.lib)

    def add_auto_export(self, path, collection_id: int | None = None, fmt: str = "bibtex"):
        return autoexport.add_auto_export(self.lib, path, collection_id, fmt)

    def remove_auto_export(self, path) -> bool:
        return autoexport.remove_auto_export(self.lib, path)

    def unconfirmed_auto_exports(self, confirmable: bool = False) -> list[autoexport.AutoExport]:
        """Targets named by the library file but not confirmed on this machine (inert); only
        those that may be confirmed when ``confirmable``."""
        return autoexport.unconfirmed(self.lib, confirmable)

    def confirm_auto_export(self, path) -> autoexport.AutoExport:
        return autoexport.confirm_auto_export(self.lib, path)

    # -- attachments --------------------------------------------------------------------------
    def pdf_file(self, paper: Paper) -> Path | None:
        return attachments.pdf_file(self.lib, paper)

    def attach_folder(self, folder, progress: Progress | None = None) -> attachments.AttachReport:
        return attachments.attach_folder(self.lib, folder, progress)

    # -- citekeys -----------------------------------------------------------------------------
    def citekey_pattern(self) -> str:
        return self.lib.citekey_pattern()

    def set_citekey_pattern(self, pattern: str | None) -> None:
        editing.set_citekey_pattern(self.lib, pattern)

    def regenerate_citekeys(self, paper_ids=None) -> list[tuple[str, str]]:
        return editing.regenerate_citekeys(self.lib, paper_ids)

    def set_pinned(self, paper_id: int, pinned: bool = True) -> Paper:
        return editing.set_pinned(self.lib, paper_id, pinned)
