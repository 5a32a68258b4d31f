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
    format_name,
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
    "webpage": "misc",
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


def _name(person) -> str:
    if isinstance(person, str | int | float):
        return format_name(clean_text(str(person)))
    if not isinstance(person, dict):
        return ""
    if person.get("literal"):
        return clean_text(str(person["literal"]))
    family = " ".join(
        str(p) for p in (person.get("non-dropping-particle"), person.get("family")) if p
    )
    given = person.get("given") or ""
    family, given = clean_text(family), clean_text(str(given))
    return f"{family}, {given}" if given else family


class _Fields:
    """Reads an item's fields whatever JSON type they hold; an odd one (a list where a string
    belongs, a number, an object) is read as text or ignored, with a warning naming the field."""

    def __init__(self, item: dict):
        self.item = item
        self.notes: list[str] = []

    def text(self, key: str, first: bool = False) -> str:
        value = self.item.get(key)
        if value is None or value == "":
            return ""
        if isinstance(value, str):
            return value
        if isinstance(value, bool):
            self.notes.append(f"field '{key}' is a boolean; ignored")
            return ""
        if isinstance(value, int | float):
            return str(value)
        if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
            if first:
                self.notes.append(f"field '{key}' is a list; its first value is used")
                return str(value[0]) if value else ""
            self.notes.append(f"field '{key}' is a list; its values are joined")
            return " ".join(str(v) for v in value)
        self.notes.append(f"field '{key}' is a {type(value).__name__}, not text; ignored")
        return ""

    def names(self, key: str) -> list[str]:
        value = self.item.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            self.notes.append(f"field '{key}' is not a list of names; read as one name")
            value = [value]
        names = [_name(p) for p in value]
        if any(not n for n in names):
            self.notes.append(f"field '{key}' has {names.count('')} unreadable name(s); skipped")
        return [n for n in names if n]


def raw_date(item: dict) -> str:
    """The first date of the item as written (``date-parts`` year, ``raw``/``literal``, or a bare string)."""
    for key in ("issued", "published-print", "published-online", "created"):
        date = item.get(key)
        if isinstance(date, dict):
            parts = date.get("date-parts") or [[]]
            if isinstance(parts, str | int) and str(parts).strip():
                return str(parts)  # "date-parts": "2019-05" (not the CSL shape, but clear)
            if isinstance(parts, list) and parts and isinstance(parts[0], str | int) and parts[0]:
                return str(parts[0])  # "date-parts": [2019, 5]
            if (
                isinstance(parts, list)
                and parts
                and isinstance(parts[0], list)
                and parts[0]
                and isinstance(parts[0][0], str | int)
                and parts[0][0]
            ):
                return str(parts[0][0])
            if date.get("raw") or date.get("literal"):
                return str(date.get("raw") or date.get("literal"))
        elif isinstance(date, (str, int)) and str(date).strip():
            return str(date)
    return ""


def _year(item: dict) -> int | None:
    return parse_year(raw_date(item))


def csl_to_paper(item: dict, raw: str, source: str, notes: list[str] | None = None) -> Paper:
    """Map one CSL item to a ``Paper``; warnings about odd fields go to ``notes``."""
    if not isinstance(item, dict):
        raise ValueError(f"expected a JSON object, got {type(item).__name__}")
    f = _Fields(item)
    url = f.text("URL", first=True)
    extra = {name: clean_text(f.text(key)) for key, name in _EXTRA.items() if item.get(key)}
    keywords = f.text("keyword") or f.text("keywords")
    number = f.text("number")
    paper = Paper(
        title=clean_text(f.text("title")),
        # a CSL ``id`` is an opaque identifier (Zotero: "http://zotero.org/…/items/ABCD", "item-3"):
        # the key comes from ``citation-key`` only, else from the library's citekey pattern
        citekey=f.text("citation-key").strip() or None,
        entry_type=TYPES.get(f.text("type"), "misc"),
        abstract=clean_text(f.text("abstract")),
        authors=f.names("author"),
        editors=f.names("editor"),
        year=_year(item),
        venue=clean_text(f.text("container-title") or f.text("event")),
        doi=normalize_doi(f.text("DOI")) or (normalize_doi(url) if "doi.org" in url else None),
        arxiv_id=find_arxiv_id(url, number),
        keywords=split_keywords(keywords),
        url=clean_url(url),
        source_file=source,
        original_text=raw,
        extra={k: v for k, v in extra.items() if v},
    )
    if notes is not None:
        notes.extend(f.notes)
    return paper


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
    line, counted = 1, 0  # the line number is counted on from the previous item: linear time
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text):
            raise ImportFileError("truncated JSON: the array is not closed with ']'")
        if text[pos] == "]":
            return
        obj, end = decoder.raw_decode(text, pos)
        line += text.count("\n", counted, pos)
        counted = pos
        yield line, text[pos:end], obj
        pos = end


def _label(item) -> str:
    ident = item.get("id", "?") if isinstance(item, dict) else "?"
    return f"item '{str(ident)[:60]}'"


def parse_csljson_text(text: str, source: str) -> ParsedFile:
    result = ParsedFile(source, nbytes=len(text))
    try:
        for line, raw, item in _iter_items(text, source):
            notes: list[str] = []
            try:
                paper = csl_to_paper(item, raw, source, notes)
            except (ValueError, TypeError, AttributeError, KeyError, IndexError) as exc:
                result.issues.append(ImportIssue(source, line, f"malformed CSL item: {exc}"))
                result.skip("malformed")
                continue
            label = _label(item)
            for note in notes:
                result.issues.append(ImportIssue(source, line, f"{label}: {note}", "warning"))
            if not paper.title:
                result.issues.append(ImportIssue(source, line, f"{label} has no title; skipped"))
                result.skip("no title")
                continue
            result.add(paper, line, "csljson", raw_date(item), label)
    except json.JSONDecodeError as exc:
        result.issues.append(
            ImportIssue(
                source,
                exc.lineno,
                f"invalid JSON: {exc.msg} (column {exc.colno}); the rest of the file was not read",
            )
        )
        result.skip("malformed")
    except RecursionError:
        result.issues.append(
            ImportIssue(source, 0, "JSON nested too deeply to be a CSL item; the rest was not read")
        )
        result.skip("malformed")
    return result


def parse_csljson_file(path: str | Path) -> ParsedFile:
    """Read and parse one CSL-JSON file (raises ``ImportFileError`` for unreadable files)."""
    return parse_text_file(path, parse_csljson_text)
