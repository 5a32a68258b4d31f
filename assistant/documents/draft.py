"""Drafts (LaTeX, Markdown, plain text): paragraphs, sentences and existing citation markers.

``parse_draft(path_or_text, fmt)`` returns a :class:`Document` whose sentences carry
``start``/``end`` offsets into the original text and ``text`` equal to that exact slice,
so an editor can highlight existing citations and mark missing ones. Regions that are
not prose (preamble, comments, math and float environments, code blocks, YAML front
matter, the bibliography) are masked out before splitting, keeping offsets intact.
"""

from __future__ import annotations

import re
from pathlib import Path

from assistant.documents.markers import delatex as _delatex
from assistant.documents.markers import find_markers, resolve_markers, strip_markers
from assistant.documents.model import Document, DocumentError, Paragraph, Section, Sentence
from assistant.documents.references import LABEL_RE, parse_reference
from assistant.documents.sentences import split_sentences
from assistant.textfile import BinaryFileError, FileRefused, decode_text, max_file_bytes, read_file

#: Size cap of a draft read from disk (a manuscript is far smaller; ``ASSISTANT_MAX_FILE_MB`` overrides).
MAX_DRAFT_BYTES = 64 * 1024 * 1024

FORMATS = {
    "tex": "latex",
    "latex": "latex",
    "md": "markdown",
    "markdown": "markdown",
    "txt": "text",
    "text": "text",
    "plain": "text",
    "numeric": "text",
}
_LATEX_SKIP_ENVS = (
    "equation",
    "equation*",
    "align",
    "align*",
    "gather",
    "gather*",
    "multline",
    "multline*",
    "eqnarray",
    "eqnarray*",
    "figure",
    "figure*",
    "table",
    "table*",
    "tabular",
    "verbatim",
    "lstlisting",
    "minted",
    "algorithm",
    "algorithmic",
    "tikzpicture",
    "thebibliography",
    "abstract",
    "displaymath",
    "math",
    "comment",
)
_LATEX_HEADING = re.compile(
    r"\\(part|chapter|section|subsection|subsubsection|paragraph)\*?\s*(?:\[[^\]]*\])?\s*\{([^{}]*(?:\{[^{}]*\}[^{}]*)*)\}"
)
_MD_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.MULTILINE)
_REFS_HEADING = re.compile(
    r"^(?:#+\s*)?(?:\d+\.?\s*)?(references|bibliography|works cited)\s*:?\s*$",
    re.IGNORECASE | re.MULTILINE,
)


def detect_format(text: str, path: Path | None = None) -> str:
    if path is not None and path.suffix.lower().lstrip(".") in FORMATS:
        return FORMATS[path.suffix.lower().lstrip(".")]
    if re.search(r"\\(?:begin\{document\}|section\*?\{|cite[tp]?\{|documentclass)", text):
        return "latex"
    if re.search(r"\[-?@[\w:.\-]+|^#{1,6}\s", text, re.MULTILINE):
        return "markdown"
    return "text"


def _mask(chars: list[str], start: int, end: int) -> None:
    for i in range(start, end):
        if chars[i] != "\n":
            chars[i] = " "


def _latex_mask(text: str) -> tuple[str, dict]:
    """Blank out non-prose LaTeX, keeping offsets; returns the scan text and metadata."""
    chars = list(text)
    meta: dict = {}
    for m in re.finditer(r"(?<!\\)%[^\n]*", text):
        _mask(chars, m.start(), m.end())
    begin = re.search(r"\\begin\{document\}", text)
    if begin:
        _mask(chars, 0, begin.end())
        end = re.search(r"\\end\{document\}", text)
        if end:
            _mask(chars, end.start(), len(text))
    m = re.search(r"\\title\s*(?:\[[^\]]*\])?\{((?:[^{}]|\{[^{}]*\})*)\}", text)
    if m:
        meta["title"] = _delatex(m.group(1))
        _mask(chars, m.start(), m.end())
    scan = "".join(chars)
    for env in _LATEX_SKIP_ENVS:
        e = re.escape(env)
        for m in re.finditer(rf"\\begin\{{{e}\}}(.*?)\\end\{{{e}\}}", scan, re.DOTALL):
            if env == "abstract":
                meta["abstract"] = _delatex(m.group(1))
            if env == "thebibliography":
                meta["bibitems"] = [
                    (mm.group(1), _delatex(mm.group(2)))
                    for mm in re.finditer(
                        r"\\bibitem(?:\[[^\]]*\])?\{([^}]*)\}(.*?)(?=\\bibitem|\\end\{thebibliography\}|$)",
                        m.group(1),
                        re.DOTALL,
                    )
                ]
            _mask(chars, m.start(), m.end())
        scan = "".join(chars)
    for m in re.finditer(r"\$\$.*?\$\$|\\\[.*?\\\]", scan, re.DOTALL):
        _mask(chars, m.start(), m.end())
    for m in re.finditer(
        r"\\(?:maketitle|label\{[^}]*\}|bibliography\{[^}]*\}|bibliographystyle\{[^}]*\}|"
        r"author\{[^}]*\}|date\{[^}]*\}|keywords\{[^}]*\}|usepackage(?:\[[^\]]*\])?\{[^}]*\})",
        scan,
    ):
        _mask(chars, m.start(), m.end())
    return "".join(chars), meta


def _markdown_mask(text: str) -> tuple[str, dict]:
    chars = list(text)
    meta: dict = {}
    fm = re.match(r"^---\n(.*?)\n(?:---|\.\.\.)\n", text, re.DOTALL)
    if fm:
        t = re.search(r"^title:\s*[\"']?(.+?)[\"']?\s*$", fm.group(1), re.MULTILINE)
        if t:
            meta["title"] = t.group(1)
        _mask(chars, 0, fm.end())
    for m in re.finditer(r"^(```|~~~).*?^\1[^\n]*$", text, re.DOTALL | re.MULTILINE):
        _mask(chars, m.start(), m.end())
    for m in re.finditer(r"\$\$.*?\$\$|<!--.*?-->", text, re.DOTALL):
        _mask(chars, m.start(), m.end())
    for m in re.finditer(
        r"^\s*!\[[^\]]*\]\([^)]*\)\s*$|^\s*\|.*\|\s*$", text, re.MULTILINE
    ):  # images, tables
        _mask(chars, m.start(), m.end())
    return "".join(chars), meta


def parse_draft(source: str | Path, fmt: str | None = None) -> Document:
    """Parse a draft: a ``Path`` is read from disk (``.tex``/``.md``/``.txt``), a ``str`` is the
    draft's text itself (never tried as a file name, however short or long)."""
    # long: one pass over the draft's lines (front matter, environments, paragraphs, markers); its state is local
    path: Path | None = None
    if isinstance(source, Path):
        path = source
        try:
            data = read_file(path, limit=max_file_bytes(MAX_DRAFT_BYTES))
            text, _ = decode_text(data)
        except FileRefused as exc:
            raise DocumentError(str(path), exc.reason) from exc
        except BinaryFileError as exc:
            raise DocumentError(
                str(path),
                f"{exc}: a manuscript is a PDF, LaTeX (.tex), Markdown (.md) "
                "or plain-text (.txt) file",
            ) from exc
        if not text.strip():
            raise DocumentError(str(path), "empty file")
    else:
        text = str(source)
    fmt = FORMATS.get((fmt or "").lower()) or detect_format(text, path)
    if fmt == "latex":
        scan, meta = _latex_mask(text)
        headings = [
            (m.start(), m.end(), _delatex(m.group(2))) for m in _LATEX_HEADING.finditer(scan)
        ]
        kinds = ("latex", "numeric", "author-year")
    elif fmt == "markdown":
        scan, meta = _markdown_mask(text)
        headings = [(m.start(), m.end(), m.group(2).strip()) for m in _MD_HEADING.finditer(scan)]
        kinds = ("pandoc", "numeric", "author-year")
    else:
        scan, meta = text, {}
        headings = [
            (m.start(), m.end(), m.group(0).strip())
            for m in re.finditer(
                r"^(?:\d+(?:\.\d+)*\.?\s+)?[A-Z][^\n.!?]{1,70}$(?=\n\s*\n)", text, re.MULTILINE
            )
            if len(m.group(0).split()) <= 8
            and m.start() > 0
            and not m.group(0).rstrip().endswith((".", ":"))
        ]
        kinds = ("numeric", "author-year")
    doc = Document(
        source=str(path) if path else "<text>",
        format=fmt,
        title=meta.get("title", ""),
        abstract=meta.get("abstract", ""),
        text=text,
    )
    scan_chars = list(scan)
    for s, e, _ in headings:
        _mask(scan_chars, s, e)
    scan = "".join(scan_chars)
    refs_at = _REFS_HEADING.search(text) if fmt != "latex" else None
    refs_start = refs_at.start() if refs_at else len(text)
    if refs_at:
        doc.references = _plain_references(text[refs_at.end() :])
    if fmt == "latex" and meta.get("bibitems"):
        doc.references = [
            parse_reference(body, i + 1) for i, (_, body) in enumerate(meta["bibitems"])
        ]
        for ref, (key, _) in zip(doc.references, meta["bibitems"]):
            ref.key = key.strip()
    bounds = sorted([(s, e, h) for s, e, h in headings if s < refs_start])
    section = Section(heading="")
    doc.sections.append(section)
    h_iter = iter([*bounds, (refs_start, refs_start, None)])
    next_h = next(h_iter)
    index = 0
    for pm in re.finditer(r"\S(?:.*?)(?=\n[ \t]*\n|\Z)", scan[:refs_start], re.DOTALL):
        while next_h is not None and pm.start() >= next_h[0]:
            if next_h[2] is None:
                break
            section = Section(heading=next_h[2])
            doc.sections.append(section)
            next_h = next(h_iter, None)
        _add_paragraph(doc, section, text, scan, pm.start(), pm.end(), index, kinds)
        index += 1
    doc.sections = [s for s in doc.sections if s.paragraphs or s.heading]
    markers = [m for s in doc.sentences() for m in s.markers]
    resolve_markers(markers, doc.references)
    if not doc.title and fmt == "markdown":
        h1 = re.search(r"^#\s+(.+)$", text, re.MULTILINE)
        doc.title = h1.group(1).strip() if h1 else ""
    if not doc.title and fmt == "text" and doc.sections and doc.sections[0].paragraphs:
        first = doc.sections[0].paragraphs[0]
        line = first.sentences[0].text if len(first.sentences) == 1 else ""
        if (
            line
            and "\n" not in line
            and len(line) < 150
            and not line.rstrip().endswith((".", "?", "!"))
        ):
            doc.title = line.strip()
            doc.sections[0].paragraphs.pop(0)
            doc.sections = [s for s in doc.sections if s.paragraphs or s.heading]
    return doc


def _add_paragraph(
    doc: Document, section: Section, text: str, scan: str, start: int, end: int, index: int, kinds
) -> None:
    chunk = scan[start:end]
    para = Paragraph()
    for s, e in split_sentences(chunk):
        a, b = start + s, start + e
        raw = text[a:b]
        if len(re.findall(r"[A-Za-z]{2,}", scan[a:b])) < 3:
            continue
        sent = Sentence(text=raw, section=section.heading, paragraph=index, start=a, end=b)
        sent.markers = find_markers(raw, kinds, max_number=len(doc.references) or None)
        para.sentences.append(sent)
    if para.sentences:
        section.paragraphs.append(para)


def _plain_references(block: str) -> list:
    lines = [ln for ln in block.splitlines() if ln.strip()]
    entries: list[tuple[int | None, list[str]]] = []
    for ln in lines:
        m = LABEL_RE.match(ln.strip()) or re.match(r"^\s*[-*]\s+", ln)
        if m or not entries:
            num = int(m.group(1) or m.group(2)) if m and m.re is LABEL_RE else None
            entries.append((num, [ln.strip()[m.end() :] if m else ln.strip()]))
        else:
            entries[-1][1].append(ln.strip())
    refs = [parse_reference(" ".join(ls), n) for n, ls in entries]
    for i, r in enumerate(refs):
        if r.number is None:
            r.number = i + 1
    return refs


def sentence_plain_text(sentence: Sentence, fmt: str) -> str:
    """Sentence text without markers, LaTeX macros removed (for scoring and queries)."""
    text = strip_markers(sentence.text, sentence.markers)
    return _delatex(text) if fmt == "latex" else re.sub(r"[*_`]+", "", text)
