"""BibTeX export with the library's stable citekeys.

Entries are written from the normalised fields (Unicode, UTF-8 file) so that exporting and
re-importing gives the same records and the same citekeys (the exported keys are kept as
user keys on import).
"""

from __future__ import annotations

import io
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

from assistant.library.models import Paper
from assistant.textfile import FileRefused, write_atomic

_MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
_ESCAPES = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
}
_TRANS = str.maketrans(_ESCAPES)
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


def escape(value: str) -> str:
    """Escape the characters BibTeX/LaTeX treat specially (``& % $ # _ { } ~ \\``)."""
    value = value.translate(_TRANS)
    return value.replace("\u00a0", "~")


def _field(name: str, value: str, raw: bool = False, verbatim: bool = False) -> str:
    """``name = {value}``; ``verbatim`` fields (DOI, URL, file) are written unescaped, as biblatex reads them."""
    if raw:
        return f"  {name} = {value}"
    return f"  {name} = {{{value if verbatim else escape(value)}}}"


def paper_to_bibtex(paper: Paper) -> str:
    """One ``@type{citekey, ...}`` entry for ``paper``."""
    fields: list[str] = []
    if paper.authors:
        fields.append(_field("author", " and ".join(paper.authors)))
    fields.append(_field("title", paper.title))
    if paper.year:
        fields.append(_field("year", str(paper.year)))
    elif paper.extra.get("year"):  # a year the importer could not read is kept as written
        fields.append(_field("year", str(paper.extra["year"])))
    if paper.venue:
        fields.append(
            _field("journal" if paper.entry_type == "article" else "booktitle", paper.venue)
        )
    extra = dict(paper.extra)
    for name in _FIELD_ORDER + tuple(sorted(k for k in extra if k not in _FIELD_ORDER)):
        value = extra.get(name)
        if not value or name in _SKIP_EXTRA or not _valid_name(name):
            continue
        if name == "month" and str(value).isdigit() and 1 <= int(value) <= 12:
            fields.append(_field("month", _MONTHS[int(value) - 1], raw=True))
        else:
            fields.append(_field(name, str(value)))
    if paper.doi:
        fields.append(_field("doi", paper.doi, verbatim=True))
    if paper.url:
        fields.append(_field("url", paper.url, verbatim=True))
    if paper.arxiv_id:
        fields.append(_field("eprint", paper.arxiv_id, verbatim=True))
        fields.append(_field("archiveprefix", "arXiv"))
    if paper.pdf_path:
        fields.append(_field("file", paper.pdf_path, verbatim=True))
    if paper.keywords:
        fields.append(_field("keywords", ", ".join(paper.keywords)))
    if paper.abstract:
        fields.append(_field("abstract", paper.abstract))
    return f"@{paper.entry_type or 'misc'}{{{paper.citekey},\n" + ",\n".join(fields) + "\n}\n"


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


def export_bibtex(
    library,
    output: str | Path,
    citekeys: list[str] | None = None,
    ids: list[int] | None = None,
    allow_missing: bool = False,
) -> tuple[int, list[str]]:
    """Export the whole library, or the papers named by ``citekeys``/``ids``, to ``output``
    (``-`` = stdout). Returns ``(written, missing citekeys)``; the file is replaced atomically.

    When a citekey is not in the library nothing is written (an existing ``output`` is left as it
    was) unless ``allow_missing`` is set, which exports the papers that were found."""
    missing: list[str] = []
    if citekeys is None and ids is None:
        papers: Iterable[Paper] = library.iter_papers()
    else:
        selected: list[Paper] = library.get_many(ids or [])
        for key in citekeys or []:
            paper = library.get_by_citekey(key)
            if paper is None:
                missing.append(key)
            else:
                selected.append(paper)
        papers = selected
        if missing and not allow_missing:
            return 0, missing
    if str(output) == "-":
        return write_bibtex(papers, sys.stdout), missing
    output = Path(output)
    buf = io.StringIO()
    written = write_bibtex(papers, buf)
    try:
        # only a regular, writable file that is not the open library is replaced (atomically,
        # keeping its permissions); never the library, a FIFO, a device or a read-only file
        write_atomic(
            output,
            buf.getvalue().encode("utf-8"),
            protect=[p for p in [getattr(library, "path", None)] if p],
        )
    except OSError as exc:  # name the file the user asked for, not the temporary one
        raise FileRefused(exc.strerror or str(exc), file=output) from exc
    return written, missing
