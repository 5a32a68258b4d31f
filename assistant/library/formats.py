"""RIS and CSL-JSON renderings of a paper (the counterparts of the RIS/CSL-JSON importers)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

import rispy

from assistant.library.models import Paper

RIS_TYPES = {
    "article": "JOUR",
    "inproceedings": "CONF",
    "conference": "CONF",
    "proceedings": "CONF",
    "book": "BOOK",
    "inbook": "CHAP",
    "incollection": "CHAP",
    "phdthesis": "THES",
    "mastersthesis": "THES",
    "techreport": "RPRT",
    "unpublished": "UNPB",
    "dataset": "DATA",
    "software": "COMP",
    "online": "ELEC",
}
CSL_TYPES = {
    "article": "article-journal",
    "inproceedings": "paper-conference",
    "conference": "paper-conference",
    "proceedings": "book",
    "book": "book",
    "inbook": "chapter",
    "incollection": "chapter",
    "phdthesis": "thesis",
    "mastersthesis": "thesis",
    "techreport": "report",
    "unpublished": "manuscript",
    "dataset": "dataset",
    "software": "software",
    "online": "webpage",
}
#: (paper.extra field, rispy key) in output order: volume VL, number IS, publisher PB, address CY
_RIS_EXTRA = (
    ("volume", "volume"),
    ("number", "number"),
    ("publisher", "publisher"),
    ("address", "place_published"),
)
_CSL_EXTRA = {
    "publisher": "publisher",
    "address": "publisher-place",
    "volume": "volume",
    "number": "issue",
    "isbn": "ISBN",
    "issn": "ISSN",
    "series": "collection-title",
    "note": "note",
    "location": "event-place",
}
_RANGE = re.compile(r"^\s*(\w+)\s*(?:-{1,3}|\u2013|\u2014)\s*(\w+)\s*$")


class _RisWriter(rispy.RisWriter):
    """rispy's RIS writer without its ``1.``/``2.`` record-number lines (which no RIS reader
    needs and the export never wrote)."""

    def set_header(self, count: int) -> str:
        return ""


#: SN (ISSN and ISBN), like AU or KW, may occur more than once in a record
_LIST_TAGS = [*rispy.LIST_TYPE_TAGS, "SN"]


def _one_line(value) -> str:
    """``value`` with its blanks squashed: one line, no leading or trailing blank."""
    value = str(value)
    if value.isprintable() and "  " not in value and value.strip(" ") == value:
        return value  # (nothing to squash: the common case, without splitting)
    return " ".join(value.split())


def paper_to_ris_record(paper: Paper) -> dict:
    """One rispy record (rispy's field names, in output order); the citekey is the ``id``."""
    rec: dict = {"type_of_reference": RIS_TYPES.get(paper.entry_type, "GEN")}
    if paper.citekey:
        rec["id"] = paper.citekey
    rec["title"] = paper.title
    if any(a != "others" for a in paper.authors):
        rec["authors"] = [a for a in paper.authors if a != "others"]
    if paper.editors:
        rec["secondary_authors"] = list(paper.editors)
    if paper.year:
        rec["year"] = paper.year
    if paper.venue:
        rec["journal_name" if paper.entry_type == "article" else "secondary_title"] = paper.venue
    pages = str(paper.extra.get("pages", ""))
    if pages:
        m = _RANGE.match(pages)
        rec["start_page"] = m.group(1) if m else pages
        if m:
            rec["end_page"] = m.group(2)
    for name, key in _RIS_EXTRA:
        if paper.extra.get(name):
            rec[key] = paper.extra[name]
    numbers = [paper.extra[n] for n in ("issn", "isbn") if paper.extra.get(n)]
    if numbers:
        rec["issn"] = numbers
    if paper.extra.get("note"):
        rec["notes"] = [paper.extra["note"]]
    if paper.doi:
        rec["doi"] = paper.doi
    if paper.url:
        rec["urls"] = [paper.url]
    if paper.pdf_path:
        rec["file_attachments1"] = paper.pdf_path
    if paper.keywords:
        rec["keywords"] = list(paper.keywords)
    if paper.abstract:
        rec["abstract"] = paper.abstract
    # every value on one line (issue #29): a line break would start a tag line of its own
    return {
        k: [_one_line(x) for x in v] if isinstance(v, list) else _one_line(v)
        for k, v in rec.items()
    }


def papers_to_ris(papers: Iterable[Paper]) -> str:
    """RIS records (``TY`` ... ``ER``) written by ``rispy.dumps``, a blank line after each."""
    records = [paper_to_ris_record(p) for p in papers]
    if not records:
        return ""
    return rispy.dumps(records, implementation=_RisWriter, list_tags=_LIST_TAGS) + "\n"


def paper_to_ris(paper: Paper) -> str:
    """One RIS record (``TY`` ... ``ER``); the citekey is the ``ID``."""
    return rispy.dumps(
        [paper_to_ris_record(paper)], implementation=_RisWriter, list_tags=_LIST_TAGS
    )


def _csl_name(name: str) -> dict:
    if "," in name:
        family, given = (p.strip() for p in name.split(",", 1))
        return {"family": family, "given": given} if given else {"family": family}
    return {"literal": name}


def paper_to_csl(paper: Paper) -> dict:
    """One CSL-JSON item; ``id`` is the citekey."""
    item: dict = {"id": paper.citekey, "type": CSL_TYPES.get(paper.entry_type, "article")}
    item["citation-key"] = paper.citekey  # read back as the key (an ``id`` alone is not)
    item["title"] = paper.title
    if paper.authors:
        item["author"] = [_csl_name(a) for a in paper.authors if a != "others"]
    if paper.editors:
        item["editor"] = [_csl_name(e) for e in paper.editors]
    if paper.year:
        item["issued"] = {"date-parts": [[paper.year]]}
    if paper.venue:
        item["container-title"] = paper.venue
    if paper.extra.get("pages"):
        item["page"] = str(paper.extra["pages"])
    for name, key in _CSL_EXTRA.items():
        if paper.extra.get(name):
            item[key] = str(paper.extra[name])
    if paper.doi:
        item["DOI"] = paper.doi
    if paper.url:
        item["URL"] = paper.url
    if paper.keywords:
        item["keyword"] = ", ".join(paper.keywords)
    if paper.abstract:
        item["abstract"] = paper.abstract
    return item


def papers_to_csljson(papers: Iterable[Paper]) -> str:
    """A CSL-JSON array, one item per line group, stable key order."""
    # one item a line through the C encoder (``indent`` falls back to the pure-Python one: 5x slower)
    items = [json.dumps(paper_to_csl(p), ensure_ascii=False) for p in papers]
    return "[\n" + ",\n".join(items) + "\n]\n" if items else "[]\n"
