"""ACM-CR test collection: citing papers (``.xml``), their reference lists (``.dois``) and queries.

Protocol (``shared/README.md``): paragraph queries = each ``<context>`` (sentences joined),
sentence queries = each ``<s>`` with a ``cites`` attribute; citation markers are removed
from the query text; relevant = cited DOIs present among the candidates; queries with no
relevant candidate are skipped.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from assistant.library.normalize import normalize_doi

_DOIS_LINE = re.compile(r"^\s*-?\[(\d+)\]\s+(\S+)(?:\s+(.*))?$")


@dataclass
class Sentence:
    text: str
    cites: list[str]  # reference numbers as strings ("12")


@dataclass
class Context:
    id: str
    section: str
    sentences: list[Sentence]

    @property
    def text(self) -> str:
        return " ".join(s.text for s in self.sentences)


@dataclass
class CitingPaper:
    """One dev/test paper: metadata, citation contexts and its numbered reference list."""

    paper_id: str  # e.g. "chiir-2020/3343413.3377985"
    doi: str | None
    title: str
    abstract: str
    contexts: list[Context]
    references: dict[str, str]  # "12" -> DOI or URL as given
    pdf: Path | None = None  # the sibling PDF (authors/year are read from it as the product would)
    authors: list[str] = field(default_factory=list)  # "Last, First" (filled by read_pdf_meta)
    year: int | None = None


@dataclass
class EvalQuery:
    qid: str
    level: str  # paragraph | sentence
    text: str  # raw text (markers still in it)
    context: str  # the surrounding paragraph's other sentences (sentence level), else ""
    title: str
    abstract: str
    cited_dois: set[str] = field(default_factory=set)
    paper: str = ""  # the citing paper's id (the group of grouped cross-validation)
    authors: tuple[str, ...] = ()
    year: int | None = None


def read_dois_file(path: Path) -> dict[str, str]:
    """``[n]<TAB>DOI-or-URL[<TAB>venue-year]`` lines -> ``{"n": "DOI-or-URL"}``."""
    refs: dict[str, str] = {}
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        match = _DOIS_LINE.match(line)
        if not match:
            raise ValueError(f"{path}:{lineno}: expected '[n]<TAB>DOI-or-URL', got {line!r}")
        refs[match.group(1)] = match.group(2)
    return refs


def read_citing_paper(xml_path: Path) -> CitingPaper:
    """Parse one ``.xml`` file and merge the sibling ``.dois`` reference list."""
    xml_path = Path(xml_path)
    try:
        root = ET.parse(xml_path).getroot()
    except ET.ParseError as exc:
        raise ValueError(f"{xml_path}: invalid XML ({exc})") from exc
    contexts = []
    for ctx in root.iter("context"):
        sentences = [
            Sentence(
                text=" ".join((s.text or "").split()),
                cites=[c.strip() for c in (s.get("cites") or "").split(",") if c.strip()],
            )
            for s in ctx.iter("s")
        ]
        contexts.append(
            Context(
                id=ctx.get("id", str(len(contexts) + 1)),
                section=ctx.get("section", ""),
                sentences=sentences,
            )
        )
    references: dict[str, str] = {}
    dois_path = xml_path.with_suffix(".dois")
    if dois_path.exists():
        references.update(read_dois_file(dois_path))
    for ref in root.iter("reference"):  # the XML's own list wins where both exist
        if ref.get("id") and (ref.text or "").strip():
            references[ref.get("id")] = ref.text.strip()
    return CitingPaper(
        paper_id=f"{xml_path.parent.name}/{xml_path.stem}",
        doi=normalize_doi(root.findtext("doi")),
        title=" ".join((root.findtext("title") or "").split()),
        abstract=" ".join((root.findtext("abstract") or "").split()),
        contexts=contexts,
        references=references,
        pdf=xml_path.with_suffix(".pdf") if xml_path.with_suffix(".pdf").exists() else None,
    )


def read_pdf_meta(papers: list[CitingPaper]) -> None:
    """Fill each paper's authors and year from its PDF through the documents layer (the header
    and the ACM reference-format line), as the product reads an imported manuscript."""
    from assistant.documents.pdf import parse_pdf

    for paper in papers:
        if paper.pdf is None or paper.authors:
            continue
        doc = parse_pdf(paper.pdf)
        paper.authors, paper.year = list(doc.authors), doc.year


def load_collection(papers_dir: Path | str) -> list[CitingPaper]:
    """All citing papers under ``papers_dir`` (``<venue>/<id>.xml``, or ``.xml`` files directly)."""
    papers_dir = Path(papers_dir)
    if not papers_dir.is_dir():
        raise FileNotFoundError(f"ACM-CR papers directory not found: {papers_dir}")
    files = sorted(papers_dir.rglob("*.xml"))
    if not files:
        raise FileNotFoundError(f"no .xml citing papers under {papers_dir}")
    return [read_citing_paper(f) for f in files]


def read_blacklist(path: Path | str | None) -> set[str]:
    if path is None or not Path(path).exists():
        return set()
    return {d for d in (normalize_doi(line) for line in Path(path).read_text().splitlines()) if d}


def build_queries(
    papers: list[CitingPaper], levels: tuple[str, ...] = ("paragraph", "sentence")
) -> list[EvalQuery]:
    """Paragraph and/or sentence queries with the DOIs they cite (before candidate filtering)."""
    queries: list[EvalQuery] = []
    for paper in papers:

        def cited(numbers: list[str], refs=paper.references) -> set[str]:
            return {d for d in (normalize_doi(refs.get(n)) for n in numbers) if d}

        for ctx in paper.contexts:
            if "paragraph" in levels:
                numbers = [n for s in ctx.sentences for n in s.cites]
                queries.append(
                    EvalQuery(
                        f"{paper.paper_id}/{ctx.id}",
                        "paragraph",
                        ctx.text,
                        "",
                        paper.title,
                        paper.abstract,
                        cited(numbers),
                        paper.paper_id,
                        tuple(paper.authors),
                        paper.year,
                    )
                )
            if "sentence" in levels:
                for i, sent in enumerate(ctx.sentences):
                    if not sent.cites:
                        continue
                    neighbours = " ".join(
                        s.text for j, s in enumerate(ctx.sentences) if abs(j - i) == 1
                    )
                    queries.append(
                        EvalQuery(
                            f"{paper.paper_id}/{ctx.id}/{i + 1}",
                            "sentence",
                            sent.text,
                            neighbours,
                            paper.title,
                            paper.abstract,
                            cited(sent.cites),
                            paper.paper_id,
                            tuple(paper.authors),
                            paper.year,
                        )
                    )
    return queries
