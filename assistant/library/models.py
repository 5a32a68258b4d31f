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
