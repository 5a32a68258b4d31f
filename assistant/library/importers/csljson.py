"""CSL-JSON importer (Zotero/Pandoc/Better BibTeX exports): a JSON array of CSL items.

Items are decoded one by one from the array so every issue names the item's line and the
item's exact JSON text is kept as its original record.
"""

from __future__ import annotations

import json
from pathlib import Path

from assistant.library.importers.common import ImportFileError, ParsedFile, parse_text_file
from assistant.library.models import ImportIssue, Paper
from assistant.library.normalize import (
    clean_text,
    clean_url,
    find_arxiv_id,
    normalize_doi,
    parse_year,
    split_keywords,
)

TYPES = {
    "article-journal": "article",
    "article": "article",
    "article-magazine": "article",
    "article-newspaper": "article",
    "paper-conference": "inproceedings",
    "book": "book",
    "chapter": "inbook",
    "thesis": "phdthesis",
    "report": "techreport",
    "dataset": "dataset",
    "software": "software",
    "webpage": "online",
    "manuscript": "unpublished",
}
_EXTRA = {
    "publisher": "publisher",
    "publisher-place": "address",
    "volume": "volume",
    "issue": "number",
    "page": "pages",
    "ISBN": "isbn",
    "ISSN": "issn",
    "collection-title": "series",
    "note": "note",
    "event-place": "location",
    "language": "language",
}


def _name(person: dict) -> str:
    if person.get("literal"):
        return clean_text(person["literal"])
    family = " ".join(p for p in (person.get("non-dropping-particle"), person.get("family")) if p)
    given = person.get("given", "")
    family, given = clean_text(family), clean_text(given)
    return f"{family}, {given}" if given else family


def raw_date(item: dict) -> str:
    """The first date of the item as written (``date-parts`` year, ``raw``/``literal``, or a bare string)."""
    for key in ("issued", "published-print", "published-online", "created"):
        date = item.get(key)
        if isinstance(date, dict):
            parts = date.get("date-parts") or [[]]
            if parts and isinstance(parts[0], list) and parts[0] and parts[0][0]:
                return str(parts[0][0])
            if date.get("raw") or date.get("literal"):
                return str(date.get("raw") or date.get("literal"))
        elif isinstance(date, (str, int)) and str(date).strip():
            return str(date)
    return ""


def _year(item: dict) -> int | None:
    return parse_year(raw_date(item))


def csl_to_paper(item: dict, raw: str, source: str) -> Paper:
    """Map one CSL item to a ``Paper``."""
    if not isinstance(item, dict):
        raise ValueError(f"expected a JSON object, got {type(item).__name__}")
    url = item.get("URL")
    extra = {name: clean_text(str(item[key])) for key, name in _EXTRA.items() if item.get(key)}
    keywords = item.get("keyword") or item.get("keywords") or ""
    return Paper(
        title=clean_text(str(item.get("title", ""))),
        citekey=str(item.get("citation-key") or item.get("id") or "") or None,
        entry_type=TYPES.get(str(item.get("type", "")), "misc"),
        abstract=clean_text(str(item.get("abstract", ""))),
        authors=[_name(a) for a in item.get("author", []) if isinstance(a, dict)],
        editors=[_name(a) for a in item.get("editor", []) if isinstance(a, dict)],
        year=_year(item),
        venue=clean_text(str(item.get("container-title") or item.get("event") or "")),
        doi=normalize_doi(item.get("DOI"))
        or (normalize_doi(url) if url and "doi.org" in url else None),
        arxiv_id=find_arxiv_id(url, item.get("number")),
        keywords=split_keywords(keywords),
        url=clean_url(url),
        source_file=source,
        original_text=raw,
        extra=extra,
    )


def _iter_items(text: str, source: str):
    """Yield ``(line, raw_json, item)`` for each element of the top-level array (or the single object)."""
    decoder = json.JSONDecoder()
    pos = len(text) - len(text.lstrip())
    if text[pos : pos + 1] == "{":
        obj, end = decoder.raw_decode(text, pos)
        items = (
            obj.get("items")
            if isinstance(obj, dict) and isinstance(obj.get("items"), list)
            else None
        )
        if items is None:
            yield text.count("\n", 0, pos) + 1, text[pos:end], obj
        else:
            for item in items:
                yield 0, json.dumps(item, ensure_ascii=False), item
        return
    if text[pos : pos + 1] != "[":
        raise ImportFileError("not CSL-JSON (expected a JSON array of items)")
    pos += 1
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text):
            raise ImportFileError("truncated JSON: the array is not closed with ']'")
        if text[pos] == "]":
            return
        obj, end = decoder.raw_decode(text, pos)
        yield text.count("\n", 0, pos) + 1, text[pos:end], obj
        pos = end


def parse_csljson_text(text: str, source: str) -> ParsedFile:
    result = ParsedFile(source, nbytes=len(text))
    try:
        for line, raw, item in _iter_items(text, source):
            try:
                paper = csl_to_paper(item, raw, source)
            except (ValueError, TypeError, AttributeError) as exc:
                result.issues.append(ImportIssue(source, line, f"malformed CSL item: {exc}"))
                result.skip("malformed")
                continue
            if not paper.title:
                result.issues.append(
                    ImportIssue(source, line, f"item '{item.get('id', '?')}' has no title; skipped")
                )
                result.skip("no title")
                continue
            result.add(paper, line, "csljson", raw_date(item), f"item '{item.get('id', '?')}'")
    except json.JSONDecodeError as exc:
        result.issues.append(
            ImportIssue(
                source,
                exc.lineno,
                f"invalid JSON: {exc.msg} (column {exc.colno}); the rest of the file was not read",
            )
        )
        result.skip("malformed")
    return result


def parse_csljson_file(path: str | Path) -> ParsedFile:
    """Read and parse one CSL-JSON file (raises ``ImportFileError`` for unreadable files)."""
    return parse_text_file(path, parse_csljson_text)
