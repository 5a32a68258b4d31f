"""RIS importer (rispy does the tag mapping; records are split here to report line numbers)."""

from __future__ import annotations

import re
from pathlib import Path

import rispy

from assistant.library.importers.common import ImportFileError, ParsedFile, parse_text_file
from assistant.library.models import ImportIssue, Paper
from assistant.library.normalize import (
    clean_text,
    clean_url,
    find_arxiv_id,
    format_name,
    normalize_doi,
    parse_year,
    split_keywords,
)

TYPES = {
    "JOUR": "article",
    "JFULL": "article",
    "EJOUR": "article",
    "MGZN": "article",
    "NEWS": "article",
    "CONF": "inproceedings",
    "CPAPER": "inproceedings",
    "BOOK": "book",
    "EBOOK": "book",
    "EDBOOK": "book",
    "CHAP": "inbook",
    "ECHAP": "inbook",
    "THES": "phdthesis",
    "RPRT": "techreport",
    "UNPB": "unpublished",
    "DATA": "dataset",
    "COMP": "software",
    "ELEC": "misc",
    "GEN": "misc",
}
_TAG_LINE = re.compile(r"^([A-Z][A-Z0-9])  -( |$)")


def _split_records(text: str, source: str, result: ParsedFile) -> list[tuple[int, list[str]]]:
    """Split RIS text into records (start line, lines), folding continuation lines."""
    records: list[tuple[int, list[str]]] = []
    current: list[str] | None = None
    start = 0
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        match = _TAG_LINE.match(line)
        tag = match.group(1) if match else None
        if tag == "TY":
            if current is not None:
                result.issues.append(
                    ImportIssue(
                        source,
                        start,
                        "record not closed by 'ER  -' before the next 'TY  -'; imported anyway",
                        "warning",
                    )
                )
                current.append("ER  - ")  # close it as the writer meant to
                records.append((start, current))
            current, start = [line], lineno
        elif current is None:
            result.issues.append(
                ImportIssue(
                    source, lineno, f"text outside a record (expected 'TY  - '): {line[:60]!r}"
                )
            )
            result.skip("malformed")
            # skip until the next TY
        elif tag == "ER":
            current.append(line)
            records.append((start, current))
            current = None
        elif tag:
            current.append(line)
        else:
            current[-1] += " " + line.strip()  # continuation of a multi-line value
    if current is not None:
        result.issues.append(
            ImportIssue(
                source, start, "last record not closed by 'ER  -'; imported anyway", "warning"
            )
        )
        current.append("ER  - ")
        records.append((start, current))
    return records


def ris_to_paper(entry: dict, raw: str, source: str) -> Paper:
    """Map one rispy record to a ``Paper``."""
    title = entry.get("title") or entry.get("primary_title") or entry.get("translated_title") or ""
    authors = [
        format_name(clean_text(a))
        for a in (entry.get("authors") or entry.get("first_authors") or [])
    ]
    venue = (
        entry.get("journal_name")
        or entry.get("secondary_title")
        or entry.get("alternate_title1")
        or entry.get("alternate_title3")
        or ""
    )
    urls = entry.get("urls") or []
    pdf = next(
        (
            f
            for k, f in entry.items()
            if k.startswith("file_attachments")
            and isinstance(f, str)
            and f.lower().endswith(".pdf")
        ),
        None,
    )
    extra: dict[str, str] = {}
    for key, name in (
        ("publisher", "publisher"),
        ("volume", "volume"),
        ("number", "number"),
        ("place_published", "address"),
        ("issn", "issn"),
        ("notes", "note"),
    ):
        value = entry.get(key)
        if value:
            extra[name] = clean_text(" ".join(value) if isinstance(value, list) else str(value))
    entry_type = TYPES.get(entry.get("type_of_reference", "GEN"), "misc")
    if entry_type in ("book", "inbook") and "issn" in extra:  # SN on a book is its ISBN
        extra["isbn"] = extra.pop("issn")
    if entry.get("start_page"):
        extra["pages"] = entry["start_page"] + (
            f"–{entry['end_page']}" if entry.get("end_page") else ""
        )
    doi = normalize_doi(entry.get("doi")) or next(
        (normalize_doi(u) for u in urls if "doi.org" in u), None
    )
    return Paper(
        title=clean_text(title),
        citekey=str(entry.get("id") or "").strip()
        or None,  # our RIS export writes the citekey as ID
        entry_type=entry_type,
        abstract=clean_text(entry.get("abstract") or entry.get("notes_abstract") or ""),
        authors=authors,
        editors=[format_name(clean_text(a)) for a in entry.get("secondary_authors") or []],
        year=parse_year(entry.get("year") or entry.get("publication_year") or entry.get("date")),
        venue=clean_text(venue),
        doi=doi,
        arxiv_id=find_arxiv_id(*urls),
        keywords=split_keywords(entry.get("keywords") or []),
        url=clean_url(urls[0]) if urls else None,
        pdf_path=pdf[7:] if pdf and pdf.startswith("file://") else pdf,
        source_file=source,
        original_text=raw,
        extra=extra,
    )


def parse_ris_text(text: str, source: str) -> ParsedFile:
    result = ParsedFile(source, nbytes=len(text))
    chunks = _split_records(text, source, result)
    if not chunks and not result.issues:
        raise ImportFileError("no RIS records found (expected lines like 'TY  - JOUR')")
    for start, lines in chunks:
        raw = "\n".join(lines)
        try:
            entries = rispy.loads(raw)
        except Exception as exc:
            result.issues.append(ImportIssue(source, start, f"malformed RIS record: {exc}"))
            result.skip("malformed")
            continue
        if not entries:
            result.issues.append(ImportIssue(source, start, "malformed RIS record"))
            result.skip("malformed")
            continue
        try:
            paper = ris_to_paper(entries[0], raw, source)
        except (ValueError, TypeError, AttributeError, KeyError, IndexError) as exc:
            result.issues.append(ImportIssue(source, start, f"malformed RIS record: {exc}"))
            result.skip("malformed")
            continue
        if not paper.title:
            result.issues.append(ImportIssue(source, start, "record has no title (TI/T1); skipped"))
            result.skip("no title")
            continue
        entry = entries[0]
        raw_year = entry.get("year") or entry.get("publication_year") or entry.get("date") or ""
        result.add(paper, start, "ris", str(raw_year).strip("/ "), f"record '{paper.title[:50]}'")
    return result


def parse_ris_file(path: str | Path) -> ParsedFile:
    """Read and parse one RIS file (raises ``ImportFileError`` for unreadable files)."""
    return parse_text_file(path, parse_ris_text)
