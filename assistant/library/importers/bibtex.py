"""BibTeX importer built on bibtexparser v2.

bibtexparser resolves ``@string`` macros and strips enclosing braces/quotes; this module adds
``crossref`` inheritance, month macros, LaTeX → Unicode and the mapping to ``Paper``.
Entry-type policy: every entry becomes a paper except ACM-DL ``@dataset`` "Review ID"
records (reviews of another paper, not citable works), which are counted as skipped.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import bibtexparser
from bibtexparser.model import DuplicateBlockKeyBlock, Entry, ParsingFailedBlock

from assistant.library.importers.common import ParsedFile, parse_text_file
from assistant.library.models import ImportIssue, Paper
from assistant.library.normalize import (
    clean_text,
    clean_url,
    find_arxiv_id,
    normalize_doi,
    parse_year,
    split_authors,
    split_keywords,
)

# bibtexparser logs every failed block itself; we report them as ImportIssues instead.
logging.getLogger("bibtexparser").setLevel(logging.CRITICAL)

MONTHS = {
    m: i
    for i, m in enumerate(
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"],
        start=1,
    )
}
#: biblatex types BibTeX styles do not know (the URL stays in ``url``)
_BIBTEX_TYPE = {"online": "misc", "electronic": "misc", "www": "misc"}
_MAIN_FIELDS = {
    "title",
    "author",
    "year",
    "doi",
    "abstract",
    "keywords",
    "url",
    "journal",
    "journaltitle",
    "booktitle",
    "crossref",
    "eprint",
    "archiveprefix",
    "file",
    "pdf",
    "date",
}
#: Fields a crossref'd entry inherits from its parent (BibTeX semantics: only when missing).
_INHERIT = (
    "booktitle",
    "year",
    "publisher",
    "address",
    "editor",
    "series",
    "volume",
    "isbn",
    "month",
    "journal",
    "organization",
)


_MONTH_NAMES = dict(
    zip(
        MONTHS,
        [
            "January",
            "February",
            "March",
            "April",
            "May",
            "June",
            "July",
            "August",
            "September",
            "October",
            "November",
            "December",
        ],
        strict=True,
    )
)
_BARE = re.compile(r"[A-Za-z0-9_:.+\-]+")
_VERBATIM_BRACE = re.compile(r"\\([{}])")


def _top_level_parts(value: str) -> list[str]:
    """``value`` split at each ``#`` outside braces and quotes."""
    parts, buf, depth, quoted = [], [], 0, False
    for ch in value:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth = max(0, depth - 1)
        elif ch == '"' and depth == 0:
            quoted = not quoted
        elif ch == "#" and depth == 0 and not quoted:
            parts.append("".join(buf))
            buf = []
            continue
        buf.append(ch)
    parts.append("".join(buf))
    return [p.strip() for p in parts]


def concatenate(value: str, strings: dict[str, str]) -> str:
    """BibTeX ``#`` concatenation left unresolved by bibtexparser (``"A" # " B"``, ``proc # acm``,
    ``jan # "~1"``): the parts joined, ``@string`` macros and month names expanded. A value that
    is not a concatenation (``C# in depth`` from ``{C# in depth}``) is returned unchanged."""
    if "#" not in value:
        return value
    parts = _top_level_parts(value)
    if len(parts) < 2 or not all(parts):
        return value

    def delimited(p: str) -> bool:
        return len(p) >= 2 and ((p[0] == "{" and p[-1] == "}") or (p[0] == '"' and p[-1] == '"'))

    def macro(p: str) -> bool:
        return p.isdigit() or p.lower() in strings or p.lower() in _MONTH_NAMES

    if not all(delimited(p) or _BARE.fullmatch(p) for p in parts):
        return value
    if not any(delimited(p) for p in parts) and not all(macro(p) for p in parts):
        return value
    out = []
    for p in parts:
        if delimited(p):
            out.append(p[1:-1])
        elif p.lower() in strings:
            out.append(strings[p.lower()])
        elif p.lower() in _MONTH_NAMES:
            out.append(_MONTH_NAMES[p.lower()])
        else:
            out.append(p)  # a number, or an undefined macro kept as written
    return "".join(out)


def _fields(entry: Entry, strings: dict[str, str] | None = None) -> dict[str, str]:
    out: dict[str, str] = {}
    for f in entry.fields:
        value = f.value if isinstance(f.value, str) else str(f.value)
        out.setdefault(f.key.lower(), concatenate(value.strip(), strings or {}).strip())
    return out


# a field value that swallowed the next field: ``title={T} author={A}`` (a missing comma)
_RUN_ON_VALUE = re.compile(r'[}"]\s+([A-Za-z][\w\-]*)\s*=\s*[{"0-9]')
_RUN_ON_RAW = re.compile(r'(?<=[}"])(\s+)(?=[A-Za-z][\w\-]*\s*=\s*[{"0-9])')


def repair_missing_commas(entry: Entry) -> tuple[Entry, list[str]]:
    """An entry whose field ran into the next one for want of a comma, re-read with the commas
    put back (only when that yields more fields); returns ``(entry, names of the run-on fields)``."""
    missing = [
        m.group(1)
        for f in entry.fields
        if isinstance(f.value, str) and (m := _RUN_ON_VALUE.search(f.value))
    ]
    if not missing or not entry.raw:
        return entry, []
    repaired = bibtexparser.parse_string(_RUN_ON_RAW.sub(r",\1", entry.raw))
    if repaired.entries and len(repaired.entries[0].fields) > len(entry.fields):
        return repaired.entries[0], missing
    return entry, []


def _undelimit(entry: Entry) -> None:
    """The fields of an entry bibtexparser set aside (a duplicate key) still carry their ``{}`` or
    ``""``: strip them as for any other entry (``{A and B}`` is two authors, not one)."""
    for f in entry.fields:
        v = f.value.strip() if isinstance(f.value, str) else None
        if v and len(_top_level_parts(v)) == 1 and len(v) >= 2 and (v[0], v[-1]) in _DELIMS:
            f.value = v[1:-1]


_DELIMS = {("{", "}"), ('"', '"')}


def _strings(library) -> dict[str, str]:
    """The file's ``@string`` macros (lower-case names), themselves concatenated when needed."""
    out: dict[str, str] = {}
    for block in library.strings:
        value = block.value if isinstance(block.value, str) else str(block.value)
        # a plain value keeps its spaces: "Proceedings of the " # "ACM" needs the trailing one
        joined = concatenate(value.strip(), out) if "#" in value else value
        out[str(block.key).lower()] = joined
    return out


def _month(value: str) -> str:
    low = value.strip().lower()[:3]
    if low in MONTHS:
        return str(MONTHS[low])
    return value.strip()


def entry_to_paper(
    entry_type: str, key: str, fields: dict[str, str], raw: str, source: str
) -> Paper:
    """Map one BibTeX entry (already crossref-resolved) to a ``Paper``."""
    date = fields.get("date", "")
    extra = {}
    for name, value in fields.items():
        if name in _MAIN_FIELDS or name == "editor" or not value:
            continue
        extra[name] = _month(value) if name == "month" else clean_text(value)
    if extra.get("pages"):  # BibTeX writes a range with "--" (an en dash)
        extra["pages"] = re.sub(r"(?<=\w)\s*-{1,3}\s*(?=\w)", "\u2013", extra["pages"])
    for name in ("doi", "eprint", "pdf", "file"):  # verbatim fields: \{ \} are braces
        if "\\" in fields.get(name, ""):
            fields[name] = _VERBATIM_BRACE.sub(r"\1", fields[name])
    pdf = fields.get("pdf") or None
    if not pdf and fields.get("file"):
        # JabRef/Zotero style: "Description:path/to/file.pdf:PDF"
        parts = [p for p in fields["file"].split(":") if p.lower().endswith(".pdf")]
        pdf = parts[0] if parts else None
    return Paper(
        title=clean_text(fields.get("title", "")),
        citekey=key,
        entry_type=_BIBTEX_TYPE.get(entry_type.lower(), entry_type.lower()),
        abstract=clean_text(fields.get("abstract", "")),
        authors=split_authors(fields.get("author", "")),
        editors=split_authors(fields.get("editor", "")),
        year=parse_year(fields.get("year") or date),
        venue=clean_text(
            fields.get("journal") or fields.get("journaltitle") or fields.get("booktitle") or ""
        ),
        doi=normalize_doi(fields.get("doi")),
        arxiv_id=find_arxiv_id(
            fields.get("eprint") if fields.get("archiveprefix", "").lower() == "arxiv" else None,
            fields.get("url"),
            fields.get("journal"),
        ),
        keywords=split_keywords(fields.get("keywords", "")),
        url=clean_url(fields.get("url")),
        pdf_path=pdf,
        source_file=source,
        original_text=raw,
        extra=extra,
    )


def _failure_reason(block: ParsingFailedBlock) -> str:
    error = block.error
    message = getattr(error, "abort_reason", None) or str(error) or type(error).__name__
    if "bibtex:" in message:
        message = message.split("bibtex:", 1)[1]
    head = (block.raw or "").lstrip().split(",", 1)[0][:60]
    return f"malformed entry {head!r}: " + " ".join(message.split())


def is_acm_review(entry_type: str, fields: dict[str, str]) -> bool:
    return entry_type.lower() == "dataset" and fields.get("title", "").startswith("Review ID")


def parse_bibtex_text(text: str, source: str) -> ParsedFile:
    """Parse BibTeX text into records plus issues (malformed entries are reported, not fatal)."""
    # long: one pass over bibtexparser's blocks, each kind of block a few lines
    result = ParsedFile(source, nbytes=len(text))
    library = bibtexparser.parse_string(text)
    strings = _strings(library)
    entries: list[tuple[Entry, int]] = []
    first_line: dict[str, int] = {}
    for block in library.blocks:
        if isinstance(block, Entry):
            entries.append((block, block.start_line))
            first_line.setdefault(block.key.lower(), block.start_line + 1)
        elif isinstance(block, DuplicateBlockKeyBlock):
            dup = block.ignore_error_block
            if isinstance(dup, Entry):  # same key twice: keep it, dedup decides
                _undelimit(dup)
                entries.append((dup, block.start_line))
                result.issues.append(
                    ImportIssue(
                        source,
                        block.start_line + 1,
                        f"citekey '{dup.key}' is used twice in this file (first at line "
                        f"{first_line.get(dup.key.lower(), '?')}); this entry is kept and gets "
                        "another key unless it is the same work",
                        "warning",
                    )
                )
        elif isinstance(block, ParsingFailedBlock):
            result.issues.append(ImportIssue(source, block.start_line + 1, _failure_reason(block)))
            result.skipped["malformed"] = result.skipped.get("malformed", 0) + 1
    has_crossref = any(f.key.lower() == "crossref" for e, _ in entries for f in e.fields)
    by_key = {e.key.lower(): _fields(e, strings) for e, _ in entries} if has_crossref else {}
    for entry, start in entries:
        entry, run_on = repair_missing_commas(entry)
        if run_on:
            names = ", ".join(f"'{n}'" for n in run_on)
            result.issues.append(
                ImportIssue(
                    source,
                    start + 1,
                    f"entry '{entry.key}': missing comma before field {names}; read as if it "
                    "were there",
                    "warning",
                )
            )
        fields = _fields(entry, strings)
        if is_acm_review(entry.entry_type, fields):
            result.skip("acm review record (@dataset 'Review ID')")
            continue
        parent_key = fields.get("crossref", "").lower()
        if parent_key:
            parent = by_key.get(parent_key)
            if parent is None:
                result.issues.append(
                    ImportIssue(
                        source,
                        start + 1,
                        f"crossref '{fields['crossref']}' not found in this file",
                        "warning",
                    )
                )
            else:
                for name in _INHERIT:
                    if name in parent and not fields.get(name):
                        fields[name] = parent[name]
                if not fields.get("booktitle") and parent.get("title"):
                    fields["booktitle"] = parent["title"]
        if not clean_text(fields.get("title", "")):
            result.issues.append(
                ImportIssue(source, start + 1, f"entry '{entry.key}' has no title; skipped")
            )
            result.skip("no title")
            continue
        try:
            paper = entry_to_paper(entry.entry_type, entry.key, fields, entry.raw, source)
        except Exception as exc:  # one odd value must not stop the file
            result.issues.append(ImportIssue(source, start + 1, f"entry '{entry.key}': {exc}"))
            result.skip("malformed")
            continue
        result.add(
            paper,
            start + 1,
            "bibtex",
            clean_text(fields.get("year") or fields.get("date", "")),
            f"entry '{entry.key}'",
        )
    return result


def parse_bibtex_file(path: str | Path) -> ParsedFile:
    """Read and parse one ``.bib`` file (raises ``ImportFileError`` for unreadable files)."""
    return parse_text_file(path, parse_bibtex_text)
