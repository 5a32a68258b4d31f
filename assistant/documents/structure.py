"""Structure of a PDF's text lines: headings, captions, footnotes, the reference list, and
sections -> paragraphs -> sentences (list items, hanging indents, columns and page breaks)."""

from __future__ import annotations

import re

from assistant.documents.layout import Line, median_line_gap
from assistant.documents.model import Document, Paragraph, Section, Sentence
from assistant.documents.sentences import split_sentences
from assistant.documents.text import Dehyphenator

REFERENCES_RE = re.compile(
    r"^(?:\d+\.?\s*)?(references|bibliography|references and notes|literature cited|works cited)$",
    re.IGNORECASE,
)
FRONT_RE = re.compile(
    r"^(abstract|ccs concepts|keywords|key words|index terms|acm reference format:?)$",
    re.IGNORECASE,
)
APPENDIX_RE = re.compile(
    r"^(?:[A-H](?:\.\d+)*\s+\S|appendix|appendices|supplementary)", re.IGNORECASE
)
CAPTION_RE = re.compile(
    r"^(?:Figure|Fig\.|Table|Listing|Algorithm|Alg\.)\s*[A-Z]?\d+[a-z]?\s*[:.|]", re.IGNORECASE
)
HEADING_NUM_RE = re.compile(r"^((?:\d+|[A-H])(?:\.\d+)*)\.?\s+(\S.*)$")


def is_heading(ln: Line, body: float) -> bool:
    text = ln.text
    if len(text) > 110 or CAPTION_RE.match(text) or not any(c.isalpha() for c in text):
        return False
    if not ln.bold or (text.endswith((".", ",", ";")) and not HEADING_NUM_RE.match(text)):
        return False
    if ln.size >= body + 0.6:
        return True
    return (
        bool(HEADING_NUM_RE.match(text))
        and ln.size >= body - 0.3
        and len(text.split()) <= 12
        and not text.endswith(".")
    )


_FOOTNOTE_START = re.compile(r"^(?:[⁰¹²³⁴⁵⁶⁷⁸⁹]+|[*†‡§]|\d{1,2}(?=\s*[A-Za-z]))\s*\S{3,}")


def classify_lines(lines: list[Line], body: float, result: Document, heights: dict[int, float]):
    """Split lines into main-text items, reference-list lines and captions.

    Main items are ``("h", Line)`` headings and ``("t", Line)`` body lines.
    """
    main: list[tuple[str, Line]] = []
    refs: list[tuple[str, float, float]] = []
    captions: list[list[str]] = []
    in_refs = False
    caption_block: tuple[int, int] | None = None
    footnote_block: tuple[int, int] | None = None
    refs_prev: list[Line | None] = [None]
    col_left: dict[tuple[int, int], float] = {}
    for ln in lines:
        key = (ln.page, ln.column)
        col_left[key] = min(col_left.get(key, ln.x0), ln.x0)
    for ln in lines:
        text = ln.text.strip()
        if ln.role == "title":
            continue
        if REFERENCES_RE.match(text) and (ln.bold or ln.size > body + 0.5):
            in_refs = True
            continue
        if in_refs:
            if is_heading(ln, body) and APPENDIX_RE.match(text) and not re.match(r"^\[\d+\]", text):
                in_refs = False
                main.append(("h", ln))
            elif ln.size >= body - 3.0:
                prev = refs_prev[0]
                gap = (
                    ln.y0 - prev.y0
                    if prev is not None and (prev.page, prev.column) == (ln.page, ln.column)
                    else None
                )
                refs.append((text, ln.x0, col_left[(ln.page, ln.column)], gap))
                refs_prev[0] = ln
            continue
        if CAPTION_RE.match(text) and (ln.bold or ln.size <= body + 0.5):
            captions.append([text])
            caption_block = (ln.page, ln.block)
            continue
        if caption_block == (ln.page, ln.block):
            captions[-1].append(text)
            continue
        caption_block = None
        if is_heading(ln, body):
            main.append(("h", ln))
        elif ln.max_gap > 1.5 * ln.size:  # table row: cells separated by wide gaps
            continue
        elif abs(ln.size - body) <= 0.7:
            main.append(("t", ln))
        elif ln.size < body - 1.0 and ln.y0 > 0.6 * heights.get(ln.page, 792):
            if _FOOTNOTE_START.match(text):
                result.footnotes.append(text)
                footnote_block = (ln.page, ln.block)
            elif footnote_block == (ln.page, ln.block) and result.footnotes:
                result.footnotes[-1] += " " + text
    return main, refs, captions


def build_sections(
    result: Document, items: list[tuple[str, Line]], body: float, dehyph: Dehyphenator
) -> None:
    """Fill ``result.sections`` (and abstract/keywords) from classified lines: a heading opens a
    section; paragraphs break on indentation, vertical gaps and list items, and continue across
    columns and pages when the text did not end."""
    # long: one pass over the classified lines of a PDF, opening sections/paragraphs as it goes
    sections: list[Section] = []
    current: Section | None = None
    para_lines: list[Line] = []
    front: str | None = None
    abstract_parts: list[str] = []
    keywords: list[str] = []
    pending_heading: Line | None = None
    gap = median_line_gap([ln for kind, ln in items if kind == "t"])
    col_left: dict[tuple[int, int], float] = {}
    for kind, ln in items:
        if kind == "t":
            key = (ln.page, ln.column)
            col_left[key] = min(col_left.get(key, ln.x0), ln.x0)
    paragraph_counter = [0]
    col_width: dict[tuple[int, int], float] = {}
    for kind, ln in items:
        if kind == "t":
            key = (ln.page, ln.column)
            col_width[key] = max(col_width.get(key, 0.0), ln.width)

    def flush() -> None:
        nonlocal para_lines
        if not para_lines:
            return
        text = dehyph.join([ln.text for ln in para_lines]).lstrip("".join(_BULLET) + " ")
        if front == "abstract":
            abstract_parts.append(text)
        elif front == "keywords":
            keywords.extend(k.strip(" .") for k in re.split(r"[,;·•]", text) if k.strip(" ."))
        elif (
            front is None
            and current is not None
            and _looks_like_prose(para_lines, text, col_width)
            and (current.heading or current.number or _full_sentence(text))
        ):
            current.paragraphs.append(
                _paragraph(text, current.heading, para_lines[0].page, paragraph_counter[0])
            )
            paragraph_counter[0] += 1
        para_lines = []

    for kind, ln in items:
        if kind == "h":
            if (
                pending_heading is not None
                and pending_heading.page == ln.page
                and 0 < ln.y0 - pending_heading.y1 < 6
                and abs(ln.size - pending_heading.size) < 0.3
                and not para_lines
                and not HEADING_NUM_RE.match(ln.text)
            ):
                pending_heading.text += " " + ln.text  # heading wrapped over two lines
                current.heading = _heading_text(pending_heading.text)[1]
                continue
            flush()
            name = ln.text.strip().rstrip(":")
            if FRONT_RE.match(name):
                front = (
                    "abstract"
                    if name.lower() == "abstract"
                    else "keywords"
                    if "key" in name.lower()
                    else "other"
                )
                pending_heading = None
                continue
            front = None
            number, heading = _heading_text(name)
            current = Section(
                heading=heading, number=number, level=number.count(".") + 1 if number else 1
            )
            sections.append(current)
            pending_heading = ln
            continue
        pending_heading = None
        if current is None and front is None:
            # text before the first heading: prose only (title/authors/affiliations are not)
            current = Section(heading="", number="")
            sections.append(current)
        if para_lines and _new_paragraph(para_lines[-1], ln, gap, col_left, para_lines[0]):
            flush()
        para_lines.append(ln)
    flush()
    result.abstract = " ".join(abstract_parts).strip()
    result.keywords = keywords
    result.sections = [s for s in sections if s.paragraphs or s.heading]


def _heading_text(text: str) -> tuple[str, str]:
    m = HEADING_NUM_RE.match(text)
    if m:
        return m.group(1), m.group(2).strip()
    return "", text.strip()


_BULLET = ("•", "◦", "▪", "‣", "●", "○", "■", "□", "➢", "►")


_ITEM_LABEL = re.compile(r"^(?:[•◦▪‣●○■□➢►]|[–—-]|\(?\d{1,2}[.)]|\([a-z]\))\s")


def _new_paragraph(prev: Line, ln: Line, gap: float, col_left: dict, first: Line) -> bool:
    left = col_left.get((ln.page, ln.column), ln.x0)
    offset = ln.x0 - left
    if ln.text.startswith(_BULLET) or (
        _ITEM_LABEL.match(ln.text)
        and (offset > 4.0 or prev.text.rstrip().endswith((".", ":", ";")))
    ):
        return True  # list items are paragraphs of their own
    indented = 4.0 < offset < 40.0
    if indented and _ITEM_LABEL.match(first.text):
        # hanging indent: a line indented more than the item's label continues the item
        first_offset = first.x0 - col_left.get((first.page, first.column), first.x0)
        indented = offset <= first_offset + 2.0
    if ln.page == prev.page and ln.column == prev.column:
        if ln.y0 - prev.y0 > 1.7 * gap or ln.y0 < prev.y0 - 1:
            return True
        return indented
    # column or page change: continue a paragraph that did not end
    return indented or (
        prev.text.rstrip().endswith((".", "?", "!", ":"))
        and ln.text[:1].isupper()
        and abs(ln.x0 - left) > 1.0
    )


def _looks_like_prose(lines: list[Line], text: str, col_width: dict) -> bool:
    """Reject figure/table residue: lines of a few words, mostly numbers or symbols, all short lines
    without sentence punctuation."""
    words = re.findall(r"[A-Za-z]{2,}", text)
    if len(words) < 4:
        return False
    if not text.rstrip().endswith((".", ":", "?", "!", ";", ")")) and all(
        ln.width < 0.5 * col_width.get((ln.page, ln.column), 1e9) for ln in lines
    ):
        return False
    alpha = sum(len(w) for w in words) / max(1, len(text))
    return alpha > 0.5


def _full_sentence(text: str) -> bool:
    """Untitled text before the first heading counts only as real sentences (not affiliations)."""
    return len(text.split()) >= 8 and text.rstrip().endswith((".", "?", "!")) and "@" not in text


def _paragraph(text: str, section: str, page: int, index: int) -> Paragraph:
    para = Paragraph(page=page)
    for s, e in split_sentences(text):
        para.sentences.append(Sentence(text=text[s:e], section=section, paragraph=index, page=page))
    return para
