"""Dataclasses of the documents layer: a parsed manuscript and what we derive from it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from assistant.bibwriter import braced, entry_text, names
from assistant.errors import AssistantError
from assistant.fold import fold


class DocumentError(AssistantError):
    """A file that cannot be read as a document at all (encrypted, corrupt, not a PDF...)."""

    def __init__(self, path: str, reason: str):
        super().__init__(reason, file=path)
        self.path = path


@dataclass
class Reference:
    """One bibliography entry, parsed. ``number`` is its printed label ([3] -> 3) when numbered."""

    raw: str
    number: int | None = None
    authors: list[str] = field(default_factory=list)  # "Last, First" strings
    title: str = ""
    year: int | None = None
    venue: str = ""
    doi: str | None = None
    arxiv_id: str | None = None
    url: str | None = None
    key: str | None = None  # citation key in drafts (\bibitem{key})
    paper_id: int | None = None  # linked library paper
    match: str | None = None  # "doi" | "title" when linked
    match_score: float = 0.0

    @property
    def first_author_lastname(self) -> str:
        return self.authors[0].split(",")[0].strip() if self.authors else ""

    def to_bibtex(self, key: str | None = None) -> str:
        """A BibTeX stub for an unmatched reference (what the user can add to the library):
        @inproceedings when the venue looks like proceedings, else @article/@misc."""
        if key is None:
            last = re.sub(r"[^a-z]", "", fold(self.first_author_lastname).lower()) or "ref"
            word = next(
                (w for w in re.findall(r"[a-z]+", fold(self.title).lower()) if len(w) > 3), ""
            )
            key = f"{last}{self.year or ''}{word}"
        venue = self.venue or ""
        if re.search(
            r"journal|transactions|trans\.|review|letters|magazine|\d+\s*,\s*\d+",
            venue,
            re.IGNORECASE,
        ):
            kind = "article"
        elif re.search(r"proc|conference|workshop|symposium", venue, re.IGNORECASE) or re.search(
            r"\b[A-Z]{3,}", venue
        ):
            # "Proceedings of ...", or a venue acronym ("NAACL", "SIGIR '19")
            kind = "inproceedings"
        else:
            kind = "article" if venue and not self.arxiv_id else "misc"
        fields = [
            ("title", braced(self.title or self.raw[:200]) if self.title or self.raw else ""),
            ("author", names(self.authors) if self.authors else ""),
            ("year", braced(str(self.year)) if self.year else ""),
            (
                "booktitle" if kind == "inproceedings" else "journal",
                braced(self.venue) if self.venue and kind != "misc" else "",
            ),
            ("doi", braced(self.doi, verbatim=True) if self.doi else ""),
            ("eprint", braced(self.arxiv_id, verbatim=True) if self.arxiv_id else ""),
            ("url", braced(self.url, verbatim=True) if self.url else ""),
            ("note", braced(f"Parsed from: {self.raw}")),
        ]
        return entry_text(kind, key, [f for f in fields if f[1]]).rstrip("\n")


@dataclass
class CitationMarker:
    """A citation marker in a sentence. ``start``/``end`` are offsets in the sentence text.

    ``kind``: numeric ([3], [3-5]), superscript, author-year ((Smith et al., 2020)),
    latex (\\cite{key}) or pandoc ([@key]). ``labels`` are the printed numbers or keys;
    ``references`` the indices into ``Document.references`` it resolves to.
    """

    text: str
    start: int
    end: int
    kind: str
    labels: list[str] = field(default_factory=list)
    references: list[int] = field(default_factory=list)


@dataclass
class Sentence:
    text: str
    markers: list[CitationMarker] = field(default_factory=list)
    section: str = ""
    paragraph: int = 0  # global paragraph index in the document
    page: int | None = None  # 0-based page of the sentence start (PDFs)
    start: int | None = None  # offsets in the source text (drafts)
    end: int | None = None

    def reference_indices(self) -> list[int]:
        out: list[int] = []
        for m in self.markers:
            out.extend(i for i in m.references if i not in out)
        return out


@dataclass
class Paragraph:
    sentences: list[Sentence] = field(default_factory=list)
    page: int | None = None

    @property
    def text(self) -> str:
        return " ".join(s.text for s in self.sentences)


@dataclass
class Section:
    heading: str
    number: str = ""
    level: int = 1
    paragraphs: list[Paragraph] = field(default_factory=list)


@dataclass
class CitationContext:
    """A citing sentence with its neighbours, section and the references/papers it cites."""

    sentence: str
    before: str
    after: str
    section: str
    references: list[int]  # indices into Document.references
    paper_ids: list[int]  # linked library papers among them


@dataclass
class Document:
    """A parsed manuscript (PDF or draft)."""

    source: str
    title: str = ""
    authors: list[str] = field(default_factory=list)
    abstract: str = ""
    keywords: list[str] = field(default_factory=list)
    doi: str | None = None
    year: int | None = None
    sections: list[Section] = field(default_factory=list)
    references: list[Reference] = field(default_factory=list)
    captions: list[str] = field(default_factory=list)
    footnotes: list[str] = field(default_factory=list)
    page_count: int = 0
    warnings: list[str] = field(default_factory=list)
    partial: bool = False  # True when the result is incomplete (time cap, no text layer, ...)
    format: str = "pdf"
    #: a draft's own text (sentence offsets point into it); "" for a PDF (see ``display_text``)
    text: str = field(default="", repr=False)

    def display_text(self) -> str:
        """The text a manuscript is read in: a draft's own text; for a PDF, title, abstract,
        then the sections and their paragraphs (what the GUI's PDF tab shows)."""
        if self.text:
            return self.text
        parts = []
        if self.title:
            parts.append(self.title)
        if self.abstract:
            parts.append("Abstract\n" + self.abstract)
        for section in self.sections:
            if section.heading:
                parts.append(f"{section.number} {section.heading}".strip())
            for paragraph in section.paragraphs:
                if paragraph.sentences:
                    parts.append(" ".join(s.text for s in paragraph.sentences))
        return "\n\n".join(parts) + "\n"

    def sentences(self) -> Iterator[Sentence]:
        for section in self.sections:
            for paragraph in section.paragraphs:
                yield from paragraph.sentences

    def citing_sentences(self) -> list[Sentence]:
        return [s for s in self.sentences() if s.markers]

    def citation_contexts(self) -> list[CitationContext]:
        """Every citing sentence with its neighbours in the same paragraph."""
        out: list[CitationContext] = []
        for section in self.sections:
            for paragraph in section.paragraphs:
                sents = paragraph.sentences
                for i, s in enumerate(sents):
                    if not s.markers:
                        continue
                    refs = s.reference_indices()
                    ids = [self.references[r].paper_id for r in refs if self.references[r].paper_id]
                    out.append(
                        CitationContext(
                            sentence=s.text,
                            before=sents[i - 1].text if i > 0 else "",
                            after=sents[i + 1].text if i + 1 < len(sents) else "",
                            section=section.heading,
                            references=refs,
                            paper_ids=list(dict.fromkeys(ids)),
                        )
                    )
        return out

    def to_dict(self) -> dict:
        from dataclasses import asdict

        return asdict(self)


@dataclass
class MissingCitation:
    """A sentence that reads as needing a citation but has none."""

    sentence: str
    section: str
    score: float
    reasons: list[str] = field(default_factory=list)
    paragraph: int = 0
    start: int | None = None
    end: int | None = None
    recommendations: list[SuggestedPaper] = field(default_factory=list)


@dataclass
class SuggestedPaper:
    """A library paper recommended for a sentence that misses a citation."""

    paper_id: int
    title: str
    year: int | None
    doi: str | None
    citekey: str | None
    score: float
    intent: str | None = None
    #: the per-paper intent chip when it says something (``service.chips``), else None
    intent_chip: str | None = None


@dataclass
class ImportReport:
    """What ``import_pdf`` did."""

    path: str
    paper_id: int | None
    title: str
    doi: str | None
    created: bool
    references: int = 0
    linked: int = 0
    citations_added: int = 0
    unmatched: list[Reference] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    partial: bool = False

    def unmatched_bibtex(self) -> str:
        return "\n\n".join(r.to_bibtex() for r in self.unmatched)
