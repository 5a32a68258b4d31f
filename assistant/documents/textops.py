"""Manuscript text operations behind the editor (no Qt).

Citation markers of the three manuscript styles, the query under the cursor or
selection (with the automatic mode), and where/how a citation is inserted.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from pathlib import Path

from assistant.documents import markers
from assistant.documents.sentences import detect_mode

LATEX, MARKDOWN, NUMERIC = "latex", "markdown", "numeric"

# The marker patterns are the documents layer's (one definition for PDFs, drafts and the
# editor): ``\cite{a,b}``/``\citep[p.~3]{a}``, Pandoc ``[see @a; @b, p. 3]``, ``[3, 5-7]``.
LATEX_CITE_RE = markers.LATEX_CITE_RE
MARKDOWN_CITE_RE = markers.PANDOC_RE
MARKDOWN_KEY_RE = markers.PANDOC_KEY_RE
NUMERIC_CITE_RE = markers.NUMERIC_RE
#: An explicit empty slot the user typed where a citation belongs.
EMPTY_SLOT_RE = re.compile(
    r"\\[A-Za-z]*cite[A-Za-z]*\*?\{\s*\}|\[@\??\]|\[\?\]|\[cite\]|\[citation needed\]"
)

_SENTENCE_END_RE = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[A-Z0-9\\\[(\"'])")
_ABBREV_RE = re.compile(
    r"(?:\b(?:e\.g|i\.e|et al|etc|cf|vs|Fig|Eq|Sec|Tab|resp|approx|no|vol|pp)\.|\b[A-Z]\.)$"
)


@dataclass
class CitationSpan:
    """A citation marker in the text: ``[start, end)`` and the keys (or numbers) it names."""

    start: int
    end: int
    keys: list[str]
    style: str


@dataclass
class QuerySpec:
    """The text to recommend for and the automatically chosen mode."""

    text: str
    mode: str  # local | paragraph | global
    start: int
    end: int


@dataclass
class Edit:
    """Replace ``text[start:end]`` with ``replacement`` (applied by the editor)."""

    start: int
    end: int
    replacement: str


def style_for_path(path: Path | str | None) -> str:
    """Citation style of a manuscript from its extension (.tex → LaTeX, .md → Markdown, else numeric)."""
    suffix = Path(path).suffix.lower() if path else ""
    if suffix in (".tex", ".ltx", ".latex"):
        return LATEX
    if suffix in (".md", ".markdown", ".rmd", ".qmd"):
        return MARKDOWN
    return NUMERIC


def citation_spans(text: str, style: str | None = None) -> list[CitationSpan]:
    """All citation markers of ``text`` (every style when ``style`` is None)."""
    spans: list[CitationSpan] = []
    if style in (None, LATEX):
        for m in LATEX_CITE_RE.finditer(text):
            keys = [k.strip() for k in m.group(1).split(",") if k.strip()]
            spans.append(CitationSpan(m.start(), m.end(), keys, LATEX))
    if style in (None, MARKDOWN):
        for m in MARKDOWN_CITE_RE.finditer(text):
            keys = MARKDOWN_KEY_RE.findall(m.group(0))
            if keys:
                spans.append(CitationSpan(m.start(), m.end(), keys, MARKDOWN))
    if style in (None, NUMERIC, MARKDOWN, LATEX):
        taken = [(s.start, s.end) for s in spans]
        for m in NUMERIC_CITE_RE.finditer(text):
            if any(a <= m.start() < b for a, b in taken):
                continue
            spans.append(
                CitationSpan(
                    m.start(), m.end(), re.split(r"\s*[,;]\s*", m.group(1).strip()), NUMERIC
                )
            )
    return sorted(spans, key=lambda s: s.start)


def cited_keys(text: str, style: str | None = None) -> set[str]:
    """Keys already cited in the manuscript (numeric markers excluded)."""
    return {k for s in citation_spans(text, style) if s.style != NUMERIC for k in s.keys}


_BLANK_LINE_RE = re.compile(r"\r?\n[ \t\r]*\n")
#: how far back a paragraph start is looked for (a longer "paragraph" is cut there)
_MAX_PARAGRAPH = 20000


def paragraph_bounds(text: str, pos: int) -> tuple[int, int]:
    """``[start, end)`` of the paragraph containing ``pos``, separated by blank lines (also
    CRLF ones and lines holding only spaces)."""
    pos = max(0, min(pos, len(text)))
    lo = max(0, pos - _MAX_PARAGRAPH)
    start = lo
    for m in _BLANK_LINE_RE.finditer(text, lo, pos):
        start = m.end()
    m = _BLANK_LINE_RE.search(text, pos)
    end = m.start() if m else len(text)
    return start, end


def sentence_bounds(text: str, pos: int) -> tuple[int, int]:
    """``[start, end)`` of the sentence containing ``pos`` (within its paragraph)."""
    p_start, p_end = paragraph_bounds(text, pos)
    para = text[p_start:p_end]
    cuts = [0]
    for m in _SENTENCE_END_RE.finditer(para):
        if _ABBREV_RE.search(para[: m.start()]):
            continue
        cuts.append(m.end())
    cuts.append(len(para))
    rel = pos - p_start
    for a, b in itertools.pairwise(cuts):
        if a <= rel < b or b == len(para):
            seg = para[a:b]
            lead = len(seg) - len(seg.lstrip())
            return p_start + a + lead, p_start + a + len(seg.rstrip())
    return p_start, p_end


def query_at(text: str, sel_start: int, sel_end: int) -> QuerySpec:
    """The query for a selection (or the sentence under the cursor) and its automatic mode
    (the one rule of ``retrieval.query.detect_mode``, as in the CLI)."""
    if sel_end < sel_start:
        sel_start, sel_end = sel_end, sel_start
    if sel_end > sel_start:
        chunk = text[sel_start:sel_end]
        return QuerySpec(chunk.strip(), detect_mode(chunk), sel_start, sel_end)
    start, end = sentence_bounds(text, sel_start)
    return QuerySpec(text[start:end].strip(), detect_mode(text[start:end]), start, end)


def context_for_mode(text: str, spec: QuerySpec, mode: str) -> QuerySpec:
    """Widen/narrow the query text when the user overrides the automatic mode."""
    if mode == spec.mode or mode == "auto":
        return spec
    if mode == "paragraph":
        start, end = paragraph_bounds(text, spec.start)
        end = max(end, spec.end)
        return QuerySpec(text[start:end].strip(), mode, start, end)
    if mode == "global":
        return QuerySpec(text[:6000].strip(), mode, spec.start, spec.end)
    start, end = sentence_bounds(text, spec.start)
    return QuerySpec(text[start:end].strip(), mode, start, end)


#: The citation commands a user can choose in Settings (LaTeX) and the two Pandoc forms.
LATEX_COMMANDS = ("\\cite", "\\citep", "\\citet", "\\parencite", "\\autocite")
PANDOC_SEPARATE, PANDOC_MERGED = "[@key]", "[@key1; @key2]"
MARKDOWN_FORMS = (PANDOC_MERGED, PANDOC_SEPARATE)
_LATEX_CMD_RE = re.compile(r"\\([A-Za-z]+\*?)")
_WORD_CHAR_RE = re.compile(r"\w")


def format_citation(
    key: str, style: str, number: int | None = None, command: str = "\\cite"
) -> str:
    """The marker for one citation in ``style`` (``command``: the LaTeX command to use)."""
    if style == LATEX:
        cmd = command if command in LATEX_COMMANDS else "\\cite"
        return f"{cmd}{{{key}}}"
    if style == MARKDOWN:
        return f"[@{key}]"
    return f"[{number if number is not None else key}]"


def _strip_back(text: str, pos: int, lower: int) -> int:
    """Move ``pos`` left over whitespace and sentence-final punctuation (cite before the period)."""
    pos = max(lower, min(pos, len(text)))
    while pos > lower and text[pos - 1] in " \t\n":
        pos -= 1
    while pos > lower and text[pos - 1] in "\"')]" and _closing_quote(text, pos - 1, lower):
        pos -= 1
    while pos > lower and text[pos - 1] in ".!?;:":
        pos -= 1
    return pos


def _closing_quote(text: str, i: int, lower: int) -> bool:
    """``text[i]`` closes a quote/parenthesis right after sentence-final punctuation (``."``)."""
    return i > lower and text[i - 1] in ".!?"


def _word_end(text: str, pos: int) -> int:
    """Never inside a word: a position between two word characters moves to the word's end."""
    while (
        0 < pos < len(text)
        and _WORD_CHAR_RE.match(text[pos - 1])
        and _WORD_CHAR_RE.match(text[pos])
    ):
        pos += 1
    return pos


def _span_command(text: str, span: CitationSpan) -> str:
    m = _LATEX_CMD_RE.match(text, span.start)
    return "\\" + m.group(1) if m else ""


def _add_to_span(text: str, span: CitationSpan, key: str, style: str, number: int | None) -> Edit:
    """Add ``key`` to an existing marker (``\\cite{a,b}``, ``[@a; @b]``, ``[1, 2]``)."""
    if key in span.keys:
        return Edit(span.end, span.end, "")
    if style == LATEX:
        close = span.start + text[span.start : span.end].rfind("}")
        return Edit(close, close, ("," if span.keys else "") + key)
    close = span.end - 1
    if style == MARKDOWN:
        return Edit(close, close, f"; @{key}")
    return Edit(close, close, f", {number if number is not None else key}")


def _adjacent_span(
    text: str, pos: int, style: str, command: str, markdown_form: str
) -> CitationSpan | None:
    """A marker of the same kind touching ``pos`` (only spaces/``~`` between) to merge into."""
    if style == MARKDOWN and markdown_form == PANDOC_SEPARATE:
        return None
    for span in citation_spans(text, style):
        if span.style != style:
            continue
        before = text[span.end : pos] if span.end <= pos else None
        after = text[pos : span.start] if span.start >= pos else None
        touching = (before is not None and before.strip(" ~") == "") or (
            after is not None and after.strip(" ~") == ""
        )
        if not touching:
            continue
        if style == LATEX and _span_command(text, span) != command:
            continue
        if style == LATEX and re.search(r"\[[^\]]*\]", text[span.start : span.end]):
            continue  # a marker with a page/prenote stays as the author wrote it
        return span
    return None


def insertion_point(text: str, sel_start: int, sel_end: int) -> int:
    """Where a citation goes: a selection's end, else the caret's sentence end, in both
    cases before the final punctuation and never inside a word."""
    if sel_end < sel_start:
        sel_start, sel_end = sel_end, sel_start
    if sel_end > sel_start:
        pos = _strip_back(text, sel_end, sel_start)
        return _word_end(text, pos)
    s_start, s_end = sentence_bounds(text, sel_start)
    return _word_end(text, _strip_back(text, s_end, s_start))


def citation_edit(
    text: str,
    sel_start: int,
    sel_end: int,
    key: str,
    style: str,
    number: int | None = None,
    command: str = "\\cite",
    markdown_form: str = PANDOC_MERGED,
) -> Edit:
    """How to insert a citation of ``key`` for the cursor/selection.

    Priority: an empty slot (``\\cite{}``, ``[@?]``, ``[?]``) in the sentence; the citation
    marker under the caret (the key is added to it); otherwise the selection's end or the
    caret's sentence end, before the final punctuation and never inside a word, merged into
    a citation of the same kind that already stands there.
    """
    if sel_end < sel_start:
        sel_start, sel_end = sel_end, sel_start
    s_start, s_end = sentence_bounds(text, sel_start)
    lo, hi = min(s_start, sel_start), max(s_end, sel_end)
    slot = EMPTY_SLOT_RE.search(text, lo, hi)
    if slot:
        return Edit(slot.start(), slot.end(), format_citation(key, style, number, command))
    if sel_start == sel_end:
        for span in citation_spans(text, style):
            if span.start < sel_start < span.end and span.style == style:
                return _add_to_span(text, span, key, style, number)
    pos = insertion_point(text, sel_start, sel_end)
    span = _adjacent_span(text, pos, style, command, markdown_form)
    if span is not None:
        return _add_to_span(text, span, key, style, number)
    marker = format_citation(key, style, number, command)
    before = text[pos - 1] if pos > 0 else ""
    if style == LATEX:
        prefix = "~" if before and not before.isspace() and before not in "~(" else ""
    else:
        prefix = " " if before and not before.isspace() and before not in "([" else ""
    return Edit(pos, pos, prefix + marker)


_FRONT_MATTER_RE = re.compile(r"\A---[ \t]*\n(.*?)\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S)


def front_matter_edit(text: str, bib_name: str) -> Edit | None:
    """Markdown: add ``bibliography: <bib_name>`` to the YAML front matter (created when there is
    none) so Pandoc finds the entries; None when the manuscript already names one."""
    m = _FRONT_MATTER_RE.match(text)
    if m:
        if re.search(r"^bibliography\s*:", m.group(1), re.M):
            return None
        at = m.start(1) + len(m.group(1))
        return Edit(at, at, f"\nbibliography: {bib_name}")
    return Edit(0, 0, f"---\nbibliography: {bib_name}\n---\n\n")


def apply_edit(text: str, edit: Edit) -> str:
    return text[: edit.start] + edit.replacement + text[edit.end :]


_TEX_TITLE_RE = re.compile(r"\\title(?:\[[^\]]*\])?\{((?:[^{}]|\{[^{}]*\})*)\}", re.S)
_TEX_ABSTRACT_RE = re.compile(r"\\begin\{abstract\}(.*?)\\end\{abstract\}", re.S)
_TEX_BIB_RE = re.compile(r"\\(?:bibliography|addbibresource)(?:\[[^\]]*\])?\{([^}]+)\}")
_MD_FIELD_RE = re.compile(r"^(title|abstract|bibliography):\s*[\"']?(.+?)[\"']?\s*$", re.M)
_YAML_LIST_ITEM_RE = re.compile(r"^\s*-\s*[\"']?(.+?)[\"']?\s*$")


def _front_matter(text: str) -> str:
    """The YAML header of a Markdown manuscript (``---`` ... ``---``/``...``), else ''."""
    if not text.startswith("---"):
        return ""
    m = re.match(r"---[ \t]*\r?\n(.*?)\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|$)", text, re.S)
    return m.group(1) if m else ""


def _yaml_values(header: str, name: str) -> list[str]:
    """The value(s) of a top-level YAML field: ``name: x``, ``name: [x, y]`` or a ``- x`` list."""
    lines = header.splitlines()
    for i, line in enumerate(lines):
        m = re.match(rf"^{name}:\s*(.*?)\s*$", line)
        if not m:
            continue
        value = m.group(1)
        if value.startswith("[") and value.endswith("]"):
            return [v.strip().strip("\"'") for v in value[1:-1].split(",") if v.strip()]
        if value and value not in ("|", ">"):
            return [value.strip("\"'")]
        out = []
        for item in lines[i + 1 :]:
            mm = _YAML_LIST_ITEM_RE.match(item)
            if not mm:
                break
            out.append(mm.group(1))
        return out
    return []


def manuscript_meta(text: str, style: str) -> tuple[str, str]:
    """The manuscript's title and abstract (LaTeX ``\\title``/abstract env, Markdown YAML header)."""
    title = abstract = ""
    if style == LATEX:
        m = _TEX_TITLE_RE.search(text)
        title = re.sub(r"\s+", " ", m.group(1)).strip() if m else ""
        m = _TEX_ABSTRACT_RE.search(text)
        abstract = re.sub(r"\s+", " ", m.group(1)).strip() if m else ""
    elif style == MARKDOWN and text.startswith("---"):
        header = text[: text.find("\n---", 3) + 1] if "\n---" in text[3:] else ""
        for name, value in _MD_FIELD_RE.findall(header):
            if name == "title":
                title = value
            elif name == "abstract":
                abstract = value
    return title, abstract


_TEX_AUTHOR_RE = re.compile(r"\\author\s*(?:\[[^\]]*\])?\s*\{")
_TEX_NOISE_RE = re.compile(
    r"\\(?:thanks|inst|footnote|orcid|email|affiliation)\s*\{[^{}]*\}|\$[^$]*\$"
)


def manuscript_authors(text: str, style: str) -> list[str]:
    """The manuscript's authors as written: every LaTeX ``\\author{A \\and B}`` (acmart's one
    ``\\author`` per person too; affiliation lines after ``\\\\`` dropped) or the Markdown YAML
    ``author:`` (a name, a list, or ``- name: X`` items)."""
    from pylatexenc.latex2text import LatexNodes2Text

    names: list[str] = []
    if style == LATEX:
        for m in _TEX_AUTHOR_RE.finditer(text):
            depth, i = 1, m.end()
            while i < len(text) and depth:
                depth += {"{": 1, "}": -1}.get(text[i], 0)
                i += 1
            body = _TEX_NOISE_RE.sub("", text[m.end() : i - 1])
            for part in re.split(r"\\and\b|\band\b|,|;", body):
                part = re.split(r"\\\\", part)[0]
                part = " ".join(LatexNodes2Text().latex_to_text(part).split())
                if part and len(part.split()) <= 5:
                    names.append(part)
    elif style == MARKDOWN:
        for value in _yaml_values(_front_matter(text), "author"):
            value = re.sub(r"^name:\s*", "", value).strip("\"' ")
            names.extend(n.strip() for n in re.split(r"\band\b|;", value) if n.strip())
    return list(dict.fromkeys(names))


def bib_names(text: str, style: str) -> list[str]:
    """Every bibliography file a manuscript names, as written (``\\bibliography{a,b}``,
    ``\\addbibresource{refs.bib}``, YAML ``bibliography: refs.bib`` or a list), ``.bib`` added."""
    names: list[str] = []
    if style == LATEX:
        for m in _TEX_BIB_RE.finditer(text):
            line_start = text.rfind("\n", 0, m.start()) + 1
            if re.search(r"(?<!\\)%", text[line_start : m.start()]):
                continue  # commented out
            names.extend(n.strip() for n in m.group(1).split(",") if n.strip())
    elif style == MARKDOWN:
        names = _yaml_values(_front_matter(text), "bibliography")
    out = []
    for name in names:
        name = name if name.lower().endswith(".bib") else name + ".bib"
        if name not in out:
            out.append(name)
    return out


def bib_files_from_manuscript(text: str, path: Path | None, style: str) -> list[Path]:
    """The .bib files a manuscript names, resolved against its folder.

    A manuscript may name an existing .bib anywhere (``../shared.bib``), but a name that would
    make the program create a file outside its own folder (``\\bibliography{/etc/x}``) is left out.
    """
    if path is None:
        return []
    folder = Path(path).parent.resolve()
    out = []
    for name in bib_names(text, style):
        bib = (folder / Path(name).expanduser()).resolve()
        if bib.is_file() or bib.is_relative_to(folder):
            out.append(bib)
    return out


def bib_from_manuscript(text: str, path: Path | None, style: str) -> Path | None:
    """The .bib file a manuscript names first (``\\bibliography{refs}``, ``bibliography: refs.bib``)
    that the program may write: an existing file anywhere (``../shared.bib``), or a new one inside
    the manuscript's folder — never a file created elsewhere (``\\bibliography{/etc/x}``)."""
    if path is None:
        return None
    folder = Path(path).parent.resolve()
    for bib in bib_files_from_manuscript(text, path, style):
        if bib.is_file() or bib.is_relative_to(folder):
            return bib
    return None
