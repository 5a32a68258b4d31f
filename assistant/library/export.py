"""BibTeX, RIS and CSL-JSON export with the library's stable citekeys.

Entries are written from the normalised fields (Unicode, UTF-8 file) so that exporting and
re-importing gives the same records and the same citekeys (the exported keys are kept as
user keys on import).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

from assistant import filewrite
from assistant.bibwriter import braced, entry_text, names, one_line
from assistant.library.models import Paper
from assistant.textfile import FileRefused

_MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
_FIELD_ORDER = (
    "publisher",
    "address",
    "series",
    "volume",
    "number",
    "pages",
    "numpages",
    "articleno",
    "month",
    "isbn",
    "issn",
    "location",
    "edition",
    "editor",
    "note",
    "organization",
    "school",
    "institution",
    "howpublished",
    "issue_date",
)
_SKIP_EXTRA = {
    "author",
    "title",
    "year",
    "journal",
    "booktitle",
    "doi",
    "url",
    "abstract",
    "keywords",
    "eprint",
    "archiveprefix",
    "file",
    "crossref",
}


def bibtex_pages(value: str) -> str:
    """A page range as BibTeX expects it: ``1039–1040`` / ``1039-1040`` → ``1039--1040``."""
    return re.sub(r"(?<=\w)\s*(?:-{1,3}|\u2013|\u2014)\s*(?=\w)", "--", value)


def paper_to_bibtex(paper: Paper) -> str:
    """One ``@type{citekey, ...}`` entry for ``paper`` (written by :mod:`assistant.bibwriter`)."""
    fields: list[tuple[str, str]] = []
    if paper.authors:
        fields.append(("author", names(paper.authors)))
    if paper.editors:
        fields.append(("editor", names(paper.editors)))
    fields.append(("title", braced(paper.title)))
    if paper.year:
        fields.append(("year", braced(str(paper.year))))
    elif paper.extra.get("year"):  # a year the importer could not read is kept as written
        fields.append(("year", braced(str(paper.extra["year"]))))
    if paper.venue:
        fields.append(
            ("journal" if paper.entry_type == "article" else "booktitle", braced(paper.venue))
        )
    extra = dict(paper.extra)
    for name in _FIELD_ORDER + tuple(sorted(k for k in extra if k not in _FIELD_ORDER)):
        value = extra.get(name)
        if not value or name in _SKIP_EXTRA or not _valid_name(name):
            continue
        if name == "editor" and paper.editors:
            continue
        if name == "pages":
            fields.append(("pages", braced(bibtex_pages(one_line(value)))))
        elif name == "month" and str(value).isdigit() and 1 <= int(value) <= 12:
            fields.append(("month", _MONTHS[int(value) - 1]))  # the month macro, unbraced
        else:
            fields.append((name, braced(str(value))))
    if paper.doi:
        fields.append(("doi", braced(paper.doi, verbatim=True)))
    if paper.url:
        fields.append(("url", braced(paper.url, verbatim=True)))
    if paper.arxiv_id:
        fields.append(("eprint", braced(paper.arxiv_id, verbatim=True)))
        fields.append(("archiveprefix", braced("arXiv")))
    if paper.pdf_path:
        fields.append(("file", braced(paper.pdf_path, verbatim=True)))
    if paper.keywords:
        fields.append(("keywords", braced(", ".join(paper.keywords))))
    if paper.abstract:
        fields.append(("abstract", braced(paper.abstract)))
    return entry_text(paper.entry_type, paper.citekey, fields)


def _valid_name(name: str) -> bool:
    return name.replace("_", "").replace("-", "").isalnum()


def write_bibtex(papers: Iterable[Paper], out: TextIO) -> int:
    """Write entries to an open text stream; returns how many were written."""
    n = 0
    for paper in papers:
        out.write(paper_to_bibtex(paper))
        out.write("\n")
        n += 1
    return n


FORMATS = ("bibtex", "ris", "csl-json")


def render(papers: Iterable[Paper], fmt: str = "bibtex") -> str:
    """The text of an export file in ``fmt`` (bibtex | ris | csl-json)."""
    from assistant.library import formats

    if fmt == "bibtex":
        return "".join(paper_to_bibtex(p) + "\n" for p in papers)
    if fmt == "ris":
        return formats.papers_to_ris(papers)
    if fmt in ("csl-json", "csljson"):
        return formats.papers_to_csljson(papers)
    raise ValueError(f"unknown export format {fmt!r} (use one of {', '.join(FORMATS)})")


def export_bibtex(
    library,
    output: str | Path,
    citekeys: list[str] | None = None,
    ids: list[int] | None = None,
    allow_missing: bool = False,
    fmt: str = "bibtex",
) -> tuple[int, list[str]]:
    """Export the whole library, or the papers named by ``citekeys``/``ids``, to ``output``
    (``-`` = stdout) in ``fmt``. Returns ``(written, missing citekeys)``; the file is replaced
    atomically. A citekey merged into another paper (an alias) exports that paper.

    When a citekey is not in the library nothing is written (an existing ``output`` is left as it
    was) unless ``allow_missing`` is set, which exports the papers that were found."""
    if fmt not in (*FORMATS, "csljson"):  # refused before anything is read or written
        from assistant.library.groups import LibraryEditError

        raise LibraryEditError(f"unknown export format '{fmt}' (use one of {', '.join(FORMATS)})")
    missing: list[str] = []
    if citekeys is None and ids is None:
        papers: list[Paper] = list(library.iter_papers(with_record=False))  # no record text
    else:
        selected: list[Paper] = library.get_many(ids or [])
        for key in citekeys or []:
            paper = library.get_by_citekey(key)
            if paper is None:
                missing.append(key)
            else:
                selected.append(paper)
        seen: set[int] = set()
        papers = [p for p in selected if not (p.id in seen or seen.add(p.id))]
        if missing and not allow_missing:
            return 0, missing
    text = render(papers, fmt)
    if str(output) == "-":
        sys.stdout.write(text)
        return len(papers), missing
    output = Path(output)
    try:
        # only a regular, writable file is replaced (atomically, keeping its permissions); never
        # through a link, never the library's own files, a FIFO, a device or a read-only file
        filewrite.write_bytes(output, text.encode("utf-8"), library=getattr(library, "path", None))
    except OSError as exc:  # name the file the user asked for, not the temporary one
        raise FileRefused(exc.strerror or str(exc), file=output) from exc
    return len(papers), missing
