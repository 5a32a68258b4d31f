"""PDF layout: text lines in reading order, without running headers, footers and page numbers.

Works on pymupdf's ``dict`` output. Columns are detected per page from line
positions (two-column ACM/IEEE templates and single-column drafts), lines on the
same baseline inside a block are merged ("1" + "INTRODUCTION"), rotated text
(arXiv stamps) is dropped and ligatures are expanded.
"""

from __future__ import annotations

import itertools
import re
import statistics
import time
from collections import Counter
from dataclasses import dataclass

import pymupdf

#: ``dict`` flags: keep whitespace, clip to the media box, expand ligatures, skip image data.
TEXT_FLAGS = pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP

LIGATURES = {
    "\ufb00": "ff",
    "\ufb01": "fi",
    "\ufb02": "fl",
    "\ufb03": "ffi",
    "\ufb04": "ffl",
    "\ufb05": "st",
    "\ufb06": "st",
    "\u00ad": "",
    "\u200b": "",
    "\ufeff": "",
}
_LIG_RE = re.compile("|".join(LIGATURES))
SUPERSCRIPT_DIGITS = str.maketrans("0123456789,", "⁰¹²³⁴⁵⁶⁷⁸⁹˒")


@dataclass
class Line:
    page: int
    x0: float
    y0: float
    x1: float
    y1: float
    text: str
    size: float  # dominant font size
    bold: bool  # most characters bold
    italic: bool
    column: int = 0  # 0 / 1 for two-column pages, -1 spanning both
    block: int = 0
    first_bold: str = ""  # leading bold run (run-in headings "Our contribution.")
    role: str = ""  # "title" once recognised
    max_gap: float = 0.0  # widest horizontal gap between spans (table cells), in points

    @property
    def width(self) -> float:
        return self.x1 - self.x0


@dataclass
class PageLines:
    number: int
    width: float
    height: float
    lines: list[Line]
    two_column: bool
    removed: list[Line]  # headers, footers, page numbers


def fix_ligatures(text: str) -> str:
    return _LIG_RE.sub(lambda m: LIGATURES[m.group(0)], text) if text else text


def _is_bold(span: dict) -> bool:
    font = span.get("font", "")
    return (
        bool(span["flags"] & 16)
        or "Bold" in font
        or font.endswith(("TB", "-B", ".B"))
        or "Black" in font
    )


def _line_from_spans(page_no: int, bbox, spans: list[dict]) -> Line | None:
    parts: list[str] = []
    sizes: Counter = Counter()
    bold_chars = italic_chars = total = 0
    first_bold: list[str] = []
    in_first_bold = True
    base_size = max((s["size"] for s in spans if s["text"].strip()), default=0.0)
    prev_x1 = None
    max_gap = 0.0
    for s in spans:
        text = fix_ligatures(s["text"]).replace(_UNMAPPED, "")
        if not text:
            continue
        if prev_x1 is not None and text.strip() and parts and parts[-1].strip():
            max_gap = max(max_gap, s["bbox"][0] - prev_x1)
        if (
            prev_x1 is not None
            and parts
            and s["bbox"][0] - prev_x1 > 0.2 * s["size"]
            and not parts[-1].endswith(" ")
            and not text.startswith(" ")
        ):
            parts.append(" ")
        prev_x1 = s["bbox"][2]
        n = len(text.strip())
        is_sup = bool(s["flags"] & 1) or (
            base_size and s["size"] < 0.8 * base_size and s["bbox"][3] < bbox[3] - 0.25 * base_size
        )
        if is_sup and text.strip() and re.fullmatch(r"[\d,\s\-–]+", text.strip()):
            text = text.strip().translate(SUPERSCRIPT_DIGITS)
        elif not is_sup:
            sizes[round(s["size"], 1)] += n
        b = _is_bold(s)
        bold_chars += n * b
        italic_chars += n * bool(s["flags"] & 2)
        total += n
        if in_first_bold:
            if b or not text.strip():
                first_bold.append(text)
            else:
                in_first_bold = False
        parts.append(text)
    text = "".join(parts)
    if not text.strip():
        return None
    size = sizes.most_common(1)[0][0] if sizes else base_size
    return Line(
        page_no,
        bbox[0],
        bbox[1],
        bbox[2],
        bbox[3],
        re.sub(r"\s+", " ", text).strip(),
        size,
        bold_chars > total / 2,
        italic_chars > total / 2,
        first_bold="".join(first_bold).strip() if not in_first_bold else "",
        max_gap=max_gap,
    )


#: A span this long with (almost) no space is a line whose PDF positions words without space
#: glyphs ("Itwasrecentlyshownthat"): its words are re-split from the character positions.
_SPACELESS_MIN = 25
#: Glyphs without a Unicode mapping (math-extension brackets and big operators) come out as
#: U+FFFD; they cannot be recovered, so they are dropped instead of showing "�".
_UNMAPPED = "\ufffd"


def _spaceless(text: str) -> bool:
    """Prose run together: long, (almost) no spaces, nearly all letters (not a URL, e-mail,
    DOI or formula, which are spaceless by nature)."""
    n = len(text)
    if n < _SPACELESS_MIN or text.count(" ") * _SPACELESS_MIN >= n:
        return False
    letters = sum(c.isalpha() for c in text)
    return letters >= 0.85 * (n - text.count(" ")) and not any(c in text for c in "/@_")


def _respace_from_chars(chars: list[dict], size: float) -> str:
    """Span text from its characters, a space wherever the gap to the previous glyph is wider
    than 10 % of the font size (words set apart by positioning, not by space glyphs)."""
    out: list[str] = []
    prev_x1 = None
    for ch in chars:
        c = ch["c"]
        x0, x1 = ch["bbox"][0], ch["bbox"][2]
        if (
            prev_x1 is not None
            and c != " "
            and out
            and out[-1] != " "
            and x0 - prev_x1 > 0.1 * size
        ):
            out.append(" ")
        out.append(c)
        prev_x1 = x1
    return "".join(out)


def _respace_page(page: pymupdf.Page, data: dict) -> None:
    """Re-split spaceless spans of ``data`` (pymupdf ``dict``) from the page's character boxes."""
    wanted = [
        (b, ln, sp)
        for b, block in enumerate(data["blocks"])
        if block.get("type") == 0
        for ln, line in enumerate(block["lines"])
        for sp, span in enumerate(line["spans"])
        if _spaceless(span["text"])
    ]
    if not wanted:
        return
    raw = page.get_text("rawdict", flags=TEXT_FLAGS)
    for b, ln, sp in wanted:
        try:
            raw_span = raw["blocks"][b]["lines"][ln]["spans"][sp]
            span = data["blocks"][b]["lines"][ln]["spans"][sp]
        except (IndexError, KeyError):
            continue
        text = _respace_from_chars(raw_span["chars"], span["size"])
        if text.replace(" ", "") == span["text"].replace(" ", ""):  # same glyphs, new spaces
            span["text"] = text


def _page_lines(page: pymupdf.Page, page_no: int) -> list[Line]:
    data = page.get_text("dict", flags=TEXT_FLAGS)
    _respace_page(page, data)
    out: list[Line] = []
    for bno, block in enumerate(data["blocks"]):
        if block.get("type") != 0:
            continue
        rows: list[tuple[list[float], list[dict]]] = []
        # rows by baseline bucket (2 pt): a line is compared with the rows of its own and the
        # neighbouring buckets only, so a page of 20,000 lines is linear, not quadratic
        by_base: dict[int, list[int]] = {}
        for line in block["lines"]:
            dx, dy = line["dir"]
            if abs(dy) > 0.01 or dx < 0:  # rotated/vertical text (margin stamps)
                continue
            box = list(line["bbox"])
            bucket = int(box[3] // 2.0)
            near = sorted({i for b in (bucket - 1, bucket, bucket + 1) for i in by_base.get(b, ())})
            # merge with a previous row on the same baseline ("1" + "INTRODUCTION")
            for i in near:
                row_box, row_spans = rows[i]
                if abs(row_box[3] - box[3]) < 2.0 and (
                    box[0] > row_box[2] - 1 or box[2] < row_box[0] + 1
                ):
                    row_spans.extend(line["spans"])
                    row_spans.sort(key=lambda s: s["bbox"][0])
                    row_box[0], row_box[1] = min(row_box[0], box[0]), min(row_box[1], box[1])
                    row_box[2], row_box[3] = max(row_box[2], box[2]), max(row_box[3], box[3])
                    moved = int(row_box[3] // 2.0)
                    if i not in by_base.setdefault(moved, []):
                        by_base[moved].append(i)  # its baseline grew: findable from there too
                    break
            else:
                by_base.setdefault(bucket, []).append(len(rows))
                rows.append((box, list(line["spans"])))
        for box, spans in rows:
            ln = _line_from_spans(page_no, box, spans)
            if ln is not None:
                ln.block = bno
                out.append(ln)
    return out


def _assign_columns(lines: list[Line], width: float) -> bool:
    """Mark each line's column; returns True when the page is laid out in two columns."""
    mid = width / 2
    left = sum(1 for ln in lines if ln.x1 <= mid + 8 and ln.width > 0.25 * width)
    right = sum(1 for ln in lines if ln.x0 >= mid - 8 and ln.width > 0.25 * width)
    two = left >= 5 and right >= 5
    for ln in lines:
        if not two or ln.x1 <= mid + 8:
            ln.column = 0
        elif ln.x0 >= mid - 8:
            ln.column = 1
        else:
            ln.column = -1
    return two


def _order(lines: list[Line], two_column: bool) -> list[Line]:
    if not two_column:
        return sorted(lines, key=lambda ln: (round(ln.y0), ln.x0))
    col_lines = [ln for ln in lines if ln.column >= 0]
    top = min((ln.y0 for ln in col_lines), default=0.0)
    head = [ln for ln in lines if ln.column < 0 and ln.y1 <= top + 2]
    rest = [ln for ln in lines if ln.column < 0 and ln.y1 > top + 2]
    return (
        sorted(head, key=lambda ln: (ln.y0, ln.x0))
        + sorted((ln for ln in col_lines if ln.column == 0), key=lambda ln: (ln.y0, ln.x0))
        + sorted((ln for ln in col_lines if ln.column == 1), key=lambda ln: (ln.y0, ln.x0))
        + sorted(rest, key=lambda ln: (ln.y0, ln.x0))
    )


_NUM_RE = re.compile(r"\d+")


def _margin_key(text: str) -> str:
    return _NUM_RE.sub("#", text.lower()).strip()


def _remove_running(pages: list[PageLines]) -> None:
    """Drop running headers/footers (repeated margin text) and page numbers."""
    counts: Counter = Counter()
    for p in pages:
        keys = {_margin_key(ln.text) for ln in p.lines if _in_margin(ln, p)}
        counts.update(keys)
    multi = len(pages) >= 3
    for p in pages:
        keep: list[Line] = []
        for ln in p.lines:
            if _in_margin(ln, p) and (
                re.fullmatch(r"[\divxlc\-–—\s]+|page \d+( of \d+)?", ln.text.lower())
                or (multi and counts[_margin_key(ln.text)] >= 2 and len(ln.text) < 160)
            ):
                p.removed.append(ln)
            else:
                keep.append(ln)
        p.lines = keep


def _in_margin(ln: Line, p: PageLines) -> bool:
    return ln.y1 < 0.08 * p.height or ln.y0 > 0.92 * p.height


def extract_pages(
    doc: pymupdf.Document, deadline: float | None = None, max_pages: int | None = None
) -> tuple[list[PageLines], bool]:
    """Lines of every page in reading order; returns (pages, truncated_by_time_or_page_cap)."""
    pages: list[PageLines] = []
    truncated = False
    for i in range(doc.page_count):
        if (max_pages is not None and i >= max_pages) or (
            deadline is not None and time.monotonic() > deadline
        ):
            truncated = True
            break
        page = doc[i]
        rect = page.rect
        lines = _page_lines(page, i)
        two = _assign_columns(lines, rect.width)
        pages.append(PageLines(i, rect.width, rect.height, _order(lines, two), two, []))
    _remove_running(pages)
    return pages, truncated


def body_font_size(lines: list[Line]) -> float:
    """The most frequent font size weighted by characters: the body text size."""
    sizes: Counter = Counter()
    for ln in lines:
        sizes[round(ln.size * 2) / 2] += len(ln.text)
    if not sizes:
        return 10.0
    return sizes.most_common(1)[0][0]


def median_line_gap(lines: list[Line]) -> float:
    gaps = [
        b.y0 - a.y0
        for a, b in itertools.pairwise(lines)
        if a.column == b.column and 0 < b.y0 - a.y0 < 30
    ]
    return statistics.median(gaps) if gaps else 12.0
