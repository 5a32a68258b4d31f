"""``parse_pdf``: a PDF manuscript -> :class:`Document` (front matter, sections, sentences,
citation markers linked to the parsed bibliography).

Bad input never crashes or hangs: unreadable files raise :class:`DocumentError` with a
clear reason; anything readable gives a Document, flagged ``partial`` with ``warnings``
when incomplete (time cap, page cap, no text layer, no references...).
"""

from __future__ import annotations

import errno
import logging
import os
import re
import stat
import time
from pathlib import Path

import pymupdf

from assistant.documents.layout import Line, PageLines, body_font_size, extract_pages
from assistant.documents.markers import find_markers, resolve_markers
from assistant.documents.model import Document, DocumentError
from assistant.documents.references import parse_reference, split_entries
from assistant.documents.structure import (
    FRONT_RE,
    REFERENCES_RE,
    build_sections,
    classify_lines,
    is_heading,
)
from assistant.documents.text import Dehyphenator, TimeLimitReached, repair_ligature_glyphs

log = logging.getLogger(__name__)

DEFAULT_TIME_LIMIT_S = 20.0
DEFAULT_MAX_PAGES = 150
MAX_FILE_BYTES = 300 * 1024 * 1024


def open_pdf(path: str | Path) -> pymupdf.Document:
    """Open a PDF or raise DocumentError naming the problem (missing, encrypted, corrupt, empty)."""
    p = Path(path)
    try:
        st = os.stat(p)
    except OSError as exc:
        reason = "symbolic link loop" if exc.errno == errno.ELOOP else "file not found"
        if exc.errno not in (errno.ELOOP, errno.ENOENT):
            reason = f"cannot read: {exc.strerror or exc}"
        raise DocumentError(str(p), reason) from None
    if not stat.S_ISREG(st.st_mode):
        raise DocumentError(str(p), "not a regular file (a folder, FIFO or device); not read")
    size = st.st_size
    if size == 0:
        raise DocumentError(str(p), "empty file (0 bytes)")
    if size > MAX_FILE_BYTES:
        raise DocumentError(
            str(p), f"file too large ({size // 2**20} MiB > {MAX_FILE_BYTES // 2**20} MiB)"
        )
    try:
        doc = pymupdf.open(p, filetype="pdf")
    except Exception as exc:  # pymupdf raises FileDataError / RuntimeError variants
        if not _has_eof(p) and _has_header(p):
            raise DocumentError(
                str(p), "the PDF is truncated or damaged (it has no end-of-file marker)"
            ) from None
        reason = str(exc).replace(f"'{p}'", "").replace("  ", " ")
        raise DocumentError(str(p), f"not a readable PDF ({reason})") from None
    if doc.needs_pass and not doc.authenticate(""):
        doc.close()
        raise DocumentError(str(p), "the PDF is encrypted with a password; decrypt it first")
    if doc.page_count == 0:
        repaired = getattr(doc, "is_repaired", False)
        doc.close()
        raise DocumentError(
            str(p),
            "the PDF is damaged or truncated (no readable pages)"
            if repaired or not _has_eof(p)
            else "the PDF has no pages",
        )
    return doc


def _has_header(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return b"%PDF" in fh.read(1024)
    except OSError:
        return False


def _has_eof(path: Path) -> bool:
    """Whether the file ends with a PDF ``%%EOF`` marker (a truncated download does not)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, os.path.getsize(path) - 2048))
            return b"%%EOF" in fh.read()
    except OSError:
        return False


def parse_pdf(
    path: str | Path, time_limit_s: float = DEFAULT_TIME_LIMIT_S, max_pages: int = DEFAULT_MAX_PAGES
) -> Document:
    """Parse a manuscript PDF. Stops at ``time_limit_s`` / ``max_pages`` with ``partial=True``."""
    start = time.monotonic()
    deadline = start + time_limit_s
    pymupdf.TOOLS.mupdf_display_errors(False)
    doc = open_pdf(path)
    try:
        result = Document(source=str(path), page_count=doc.page_count)
        try:
            # layout gets a third of the budget: building the structure costs about twice as much
            pages, truncated = extract_pages(doc, start + time_limit_s / 3, max_pages)
        except Exception as exc:  # a damaged page stream: keep what we can say
            log.debug("layout failed", exc_info=True)
            result.warnings.append(f"text extraction failed: {exc}")
            result.partial = True
            return result
        if truncated:
            result.partial = True
            result.warnings.append(
                f"stopped after {len(pages)} of {doc.page_count} pages "
                f"({'time limit' if time.monotonic() > deadline else 'page limit'}); result is partial"
            )
        if not any(p.lines for p in pages):
            result.partial = True
            result.warnings.append("no text layer (scanned or image-only PDF?); OCR it first")
            return result
        if getattr(doc, "is_repaired", False):
            result.partial = True
            result.warnings.append(
                "the PDF is damaged (repaired on opening); content may be missing"
            )
        try:
            _build(result, pages, doc, deadline)
        except TimeLimitReached:
            result.partial = True
            result.warnings.append(
                f"time limit ({time_limit_s:g} s) reached while building the structure; "
                "result is partial (raise --time-limit to read it all)"
            )
        except Exception as exc:  # never crash on an odd layout: keep what was found, say so
            log.warning("%s: structure analysis failed", path, exc_info=True)
            result.partial = True
            result.warnings.append(
                f"structure analysis failed ({type(exc).__name__}: {exc}); result is partial"
            )
        if time.monotonic() > deadline and not result.partial:
            result.partial = True
            result.warnings.append("time limit reached while parsing; result may be partial")
        return result
    finally:
        doc.close()


def _build(
    result: Document, pages: list[PageLines], doc: pymupdf.Document, deadline: float | None = None
) -> None:
    lines = [ln for p in pages for ln in p.lines]
    # body size from the text before the bibliography (a long reference list in small print
    # can outweigh the body of a short paper)
    refs_at = next(
        (i for i, ln in enumerate(lines) if REFERENCES_RE.match(ln.text.strip())), len(lines)
    )
    before = lines[:refs_at]
    body = body_font_size(before if sum(len(ln.text) for ln in before) > 400 else lines)
    vocab = _vocabulary(lines)
    lowercase_seen = {w for ln in lines for w in re.findall(r"\b[a-z]{2,}\b", ln.text)}
    dehyph = Dehyphenator(vocab, deadline)
    for i, ln in enumerate(lines):
        if i % 256 == 0:
            dehyph.check_deadline()
        ln.text = repair_ligature_glyphs(ln.text, vocab, lowercase_seen)
    _front_matter(result, pages, body, doc)
    main, refs_lines, captions = classify_lines(
        lines, body, result, {p.number: p.height for p in pages}
    )
    dehyph.check_deadline()
    result.captions = [dehyph.join(parts) for parts in captions]
    result.references = [parse_reference(text, n) for n, text in split_entries(refs_lines)]
    build_sections(result, main, body, dehyph)
    if not result.abstract:
        _run_in_front_matter(result, pages[0], body, dehyph)
    n_refs = max((r.number or 0 for r in result.references), default=0) or len(result.references)
    all_markers = []
    for sent in result.sentences():
        sent.markers = find_markers(
            sent.text, ("numeric", "author-year"), max_number=n_refs or None
        )
        all_markers.extend(sent.markers)
    if sum(1 for m in all_markers if m.kind == "numeric") >= 3:
        # bracketed citations: superscript digits are footnote marks, not citations
        for sent in result.sentences():
            sent.markers = [m for m in sent.markers if m.kind != "superscript"]
        all_markers = [m for m in all_markers if m.kind != "superscript"]
    resolve_markers(all_markers, result.references)
    if any(r.number is not None for r in result.references):
        # a numbered bibliography: "(COVID 2020)"-like author-year matches that resolve to nothing are noise
        for sent in result.sentences():
            sent.markers = [m for m in sent.markers if m.kind != "author-year" or m.references]
    if not result.title:
        result.warnings.append("no title found")
    if not result.references:
        result.warnings.append("no reference list found (not a paper, or an unusual layout)")
    if not result.abstract and not result.references:
        result.partial = True
        result.warnings.append("does not look like a scientific paper (no abstract, no references)")


_RUN_IN_ABSTRACT = re.compile(r"^\s*abstract\s*[.:—–-]\s*", re.IGNORECASE)
_RUN_IN_KEYWORDS = re.compile(r"^\s*(?:keywords|key words|index terms)\s*[.:—–-]\s*", re.IGNORECASE)


def _run_in_front_matter(
    result: Document, first: PageLines, body: float, dehyph: Dehyphenator
) -> None:
    """LNCS/IEEE style: "Abstract. Text..." and "Keywords: a, b" run into their paragraphs on page 1
    (often in a smaller size than the body); taken from the raw lines and removed from the sections."""
    lines = first.lines
    for i, ln in enumerate(lines):
        if not _RUN_IN_ABSTRACT.match(ln.text):
            continue
        parts = [_RUN_IN_ABSTRACT.sub("", ln.text, count=1)]
        for prev, nxt in zip(lines[i:], lines[i + 1 :]):
            if (
                is_heading(nxt, body)
                or _RUN_IN_KEYWORDS.match(nxt.text)
                or abs(nxt.size - ln.size) > 0.6
                or nxt.y0 - prev.y1 > 0.8 * ln.size
                or nxt.column != prev.column
            ):
                break
            parts.append(nxt.text)
        result.abstract = dehyph.join(parts)
        break
    for ln in lines:
        if _RUN_IN_KEYWORDS.match(ln.text):
            body_text = _RUN_IN_KEYWORDS.sub("", ln.text, count=1)
            result.keywords = [
                k.strip(" .") for k in re.split(r"[,;·•]", body_text) if k.strip(" .")
            ]
            break
    if result.abstract:
        head = result.abstract[:60]
        for section in result.sections[:2]:
            section.paragraphs = [p for p in section.paragraphs if head not in p.text]
        result.sections = [s for s in result.sections if s.paragraphs or s.heading]


def _vocabulary(lines: list[Line]) -> set[str]:
    """Lower-cased words of the document, without the halves of words hyphenated at line ends."""
    words: set[str] = set()
    prev_hyphen = False
    for ln in lines:
        toks = re.findall(r"[A-Za-z]{2,}-?", ln.text)
        if prev_hyphen and toks:
            toks = toks[1:]
        prev_hyphen = ln.text.endswith("-")
        words.update(t.lower() for t in toks if not t.endswith("-"))
    return words


def _front_matter(
    result: Document, pages: list[PageLines], body: float, doc: pymupdf.Document
) -> None:
    first = pages[0]
    top_lines = [
        ln
        for ln in first.lines
        if ln.y0 < 0.45 * first.height
        and any(c.isalpha() for c in ln.text)
        and not REFERENCES_RE.match(ln.text.strip())
        and not FRONT_RE.match(ln.text.strip())
    ]
    if top_lines:
        biggest = max(ln.size for ln in top_lines)
        if biggest >= body + 2:
            idx = [
                i
                for i, ln in enumerate(first.lines)
                if ln.size >= biggest - 0.6 and ln in top_lines
            ]
            run = [idx[0]]
            for i in idx[1:]:
                if i == run[-1] + 1:
                    run.append(i)
            result.title = " ".join(first.lines[i].text for i in run).strip()
            for i in run:
                first.lines[i].role = "title"
            after = first.lines[run[-1] + 1 :]
            result.authors = _authors_from_lines(after, body)
    page0 = " ".join(ln.text for ln in first.lines + first.removed)
    m = re.search(r"ACM Reference Format:\s*(.+?)\.\s+((?:19|20)\d\d)\.", page0)
    if m:
        from assistant.documents.references import split_authors

        names = split_authors(m.group(1))
        if names:
            result.authors = names
        result.year = int(m.group(2))
    m = re.search(r"(?:doi\.org/|DOI:?\s*)(10\.\d{4,9}/[^\s]+)", page0, re.IGNORECASE)
    if m:
        result.doi = m.group(1).rstrip(".,;").lower()
    if not result.title:
        meta_title = (doc.metadata or {}).get("title") or ""
        if len(meta_title.split()) >= 3:
            result.title = meta_title.strip()
            result.warnings.append("title taken from the PDF metadata")


def _authors_from_lines(lines: list[Line], body: float) -> list[str]:
    from assistant.documents.references import split_authors

    out: list[str] = []
    for ln in lines[:40]:
        if is_heading(ln, body) or FRONT_RE.match(ln.text.strip()):
            break
        if ln.size >= body + 1.5 and not re.search(
            r"@|university|institute|\d{3}", ln.text, re.IGNORECASE
        ):
            text = re.sub(r"[\d∗*†‡§¶⁰¹²³⁴⁵⁶⁷⁸⁹,]+(?=\s*(?:,|and\b|$))", "", ln.text)
            out.extend(split_authors(text))
    return out
