"""Dataclasses shared by every layer: a paper of the library and a citation edge."""

from __future__ import annotations

from dataclasses import dataclass, field

#: The separator the encoders were trained with between title and abstract.
TITLE_ABSTRACT_SEP = " [SEP] "


@dataclass
class Paper:
    """One bibliographic record of the library.

    ``id`` is the stable integer row id (None until stored). ``citekey`` is assigned
    once on first store and never changes. ``original_text`` keeps the record exactly
    as it was imported (BibTeX/RIS/CSL-JSON text) and is never dropped on merge.
    """

    title: str
    id: int | None = None
    citekey: str | None = None
    entry_type: str = "article"
    abstract: str = ""
    authors: list[str] = field(default_factory=list)  # "Last, First" strings
    year: int | None = None
    venue: str = ""
    doi: str | None = None
    arxiv_id: str | None = None
    keywords: list[str] = field(default_factory=list)
    url: str | None = None
    pdf_path: str | None = None
    source_file: str | None = None
    original_text: str = ""
    extra: dict[str, str] = field(default_factory=dict)  # other fields (publisher, pages, ...)
    added_at: str | None = None
    updated_at: str | None = None
    editors: list[str] = field(default_factory=list)  # "Last, First" strings (BibTeX ``editor``)
    deleted_at: str | None = None  # set while the paper is in the trash
    pinned: bool = False  # a pinned citekey is never regenerated
    #: import hints, stored in their own tables (not compared, not part of the record)
    tags: list[str] = field(default_factory=list, compare=False)
    collections: list[tuple[str, ...]] = field(default_factory=list, compare=False)  # name paths

    def encoder_text(self) -> str:
        """The text the bi-encoder embeds: ``title [SEP] abstract`` (title alone if none)."""
        title = (self.title or "").strip()
        abstract = (self.abstract or "").strip()
        return f"{title}{TITLE_ABSTRACT_SEP}{abstract}" if abstract else title

    def lexical_text(self) -> str:
        """The text BM25 indexes: title + abstract + keywords."""
        return " ".join(p for p in (self.title, self.abstract, " ".join(self.keywords)) if p)

    @property
    def first_author_lastname(self) -> str:
        if not self.authors:
            return ""
        return self.authors[0].split(",")[0].strip()


@dataclass
class Citation:
    """A citation edge: ``citing_id`` cites ``cited_id`` in ``context``."""

    citing_id: int
    cited_id: int
    context: str = ""
    section: str = ""
    intent: str | None = None  # background | method | result
    intent_confidence: float | None = None
    id: int | None = None


@dataclass
class ImportOutcome:
    """What ``Library.add_paper`` did with one record."""

    status: str  # "added" | "merged" | "unchanged"
    id: int
    citekey: str


@dataclass
class ImportIssue:
    """A problem met while importing: ``file:line: reason`` (line 0 = the whole file)."""

    file: str
    line: int
    reason: str
    severity: str = "error"  # "error" (record/file not imported) | "warning" (imported anyway)

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.severity}: {self.reason}"


@dataclass
class ImportReport:
    """Summary of a batch import."""

    added: int = 0
    merged: int = 0
    unchanged: int = 0
    skipped: int = 0
    files: int = 0
    issues: list[ImportIssue] = field(default_factory=list)
    skipped_by_reason: dict[str, int] = field(default_factory=dict)
    elapsed_s: float = 0.0
    cpu_s: float = 0.0
    citations_added: int = 0  # citation edges from imported PDFs (their intents still unlabelled)

    @property
    def records(self) -> int:
        return self.added + self.merged + self.unchanged

    def skip(self, reason: str) -> None:
        self.skipped += 1
        self.skipped_by_reason[reason] = self.skipped_by_reason.get(reason, 0) + 1

    def merge_from(self, other: ImportReport) -> None:
        self.added += other.added
        self.merged += other.merged
        self.unchanged += other.unchanged
        self.skipped += other.skipped
        self.files += other.files
        self.citations_added += other.citations_added
        self.issues.extend(other.issues)
        for reason, n in other.skipped_by_reason.items():
            self.skipped_by_reason[reason] = self.skipped_by_reason.get(reason, 0) + n
