"""Citation markers in sentences and their resolution to bibliography entries.

Numeric: ``[3]``, ``[3, 7]``, ``[3-5]``, ``[40–42]``, superscripts (rendered as
Unicode superscript digits by the layout step). Author-year: ``(Smith et al., 2020;
Lee 2019)``, ``Smith et al. (2020)``. Drafts: ``\\cite{a,b}`` (all natbib/biblatex
variants) and pandoc ``[@key; @other]``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from assistant.documents.model import CitationMarker, Reference
from assistant.fold import fold

_NUM = r"\d{1,4}"
_NUM_ITEM = rf"{_NUM}(?:\s*[-–—]\s*{_NUM})?"
NUMERIC_RE = re.compile(rf"\[\s*({_NUM_ITEM}(?:\s*[,;]\s*{_NUM_ITEM})*)\s*\]")
SUPER_RE = re.compile(r"(?<=[A-Za-z\.,;:)\]’”\"'])([⁰¹²³⁴⁵⁶⁷⁸⁹]+(?:\s*[˒,\-–]\s*[⁰¹²³⁴⁵⁶⁷⁸⁹]+)*)")
_SUP_MAP = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹˒", "0123456789,")
_NAME = r"(?:[A-Z][\w'’\-]+|(?:van|von|de|der|di|da|le|la|den)\s+[A-Z][\w'’\-]+)(?:\s+(?:van|von|de|der)\s+[A-Z][\w'’\-]+)?"
_YEAR = r"(?:19|20)\d{2}[a-z]?"
# Repetitions are bounded ({0,12} names, years, items): a marker never holds more, and an
# unbounded list tried at every word of a long "Smith, Smith, ..." run is quadratic.
_AUTHORS = rf"{_NAME}(?:\s+et\s+al\.?|\s*(?:,\s*{_NAME}){{0,12}},?\s+(?:and|&)\s+{_NAME})?"
_AY_ITEM = rf"(?:(?:e\.g\.|see|cf\.|i\.e\.)[,\s]+)?{_AUTHORS},?\s+{_YEAR}(?:\s*,\s*{_YEAR}){{0,12}}"
PAREN_AY_RE = re.compile(rf"\(\s*({_AY_ITEM}(?:\s*;\s*{_AY_ITEM}){{0,40}})\s*\)")
NARRATIVE_AY_RE = re.compile(rf"({_AUTHORS})\s+\(\s*({_YEAR}(?:\s*,\s*{_YEAR}){{0,12}})\s*\)")
#: ``\cite``, ``\citep[p.~3]``, ``\parencite*``, ... up to the opening brace of the key list
_LATEX_CITE_HEAD = (
    r"\\(?:[a-zA-Z]*cite[a-zA-Z]*|citep|citet|citealp|citeauthor|citeyear|parencite|textcite|autocite|footcite)\*?"
    r"(?:\s*\[[^\]]*\]){0,2}\s*\{"
)
LATEX_CITE_RE = re.compile(_LATEX_CITE_HEAD + r"([^}]*)\}")
#: An unfinished ``\cite{a, b`` ending where the text ends (an editor's cursor): group 1 = the keys so far.
LATEX_CITE_OPEN_RE = re.compile(_LATEX_CITE_HEAD + r"([^{}]*)$")
_PANDOC_KEY_CHARS = r"[\w:.#$%&\-+?<>~/]"
# A bracketed group without nested brackets holding an ``@``: possessive quantifiers and an
# ``@``-free head make it linear-time (an unclosed ``[@a; @a; ...`` cannot backtrack); the keys
# are read from it with PANDOC_KEY_RE (a group without one is not a citation).
PANDOC_RE = re.compile(r"\[([^\[\]@]*+@[^\[\]]*+)\]")
PANDOC_KEY_RE = re.compile(rf"-?@({_PANDOC_KEY_CHARS}*[\w])")
#: An unfinished Pandoc citation ``[see @a; @b`` ending where the text ends: ``before`` = the
#: bracket's text before the last ``@`` (ends with ``[``, a space or ``;``), ``key`` = the key so far.
PANDOC_OPEN_RE = re.compile(rf"\[(?P<before>(?:[^\[\]]*[\s;])?)-?@(?P<key>{_PANDOC_KEY_CHARS}*)$")


def _expand_numbers(body: str, max_span: int = 60) -> list[int]:
    out: list[int] = []
    for item in re.split(r"[,;]", body):
        item = item.strip()
        m = re.fullmatch(r"(\d+)\s*[-–—]\s*(\d+)", item)
        if m:
            a, b = int(m.group(1)), int(m.group(2))
            if a <= b and b - a <= max_span:
                out.extend(range(a, b + 1))
            else:
                out.extend([a, b])
        elif item.isdigit():
            out.append(int(item))
    return out


def find_markers(
    text: str, kinds: Sequence[str] = ("numeric", "author-year"), max_number: int | None = None
) -> list[CitationMarker]:
    """All citation markers in ``text``; numeric ones only when every number is within 1..max_number."""
    found: list[CitationMarker] = []
    taken: list[tuple[int, int]] = []

    def add(m: re.Match, kind: str, labels: list[str]) -> None:
        if any(m.start() < e and s < m.end() for s, e in taken):
            return
        taken.append((m.start(), m.end()))
        found.append(CitationMarker(m.group(0), m.start(), m.end(), kind, labels))

    if "latex" in kinds:
        for m in LATEX_CITE_RE.finditer(text):
            keys = [k.strip() for k in m.group(1).split(",") if k.strip()]
            if keys:
                add(m, "latex", keys)
    if "pandoc" in kinds:
        for m in PANDOC_RE.finditer(text):
            keys = PANDOC_KEY_RE.findall(m.group(1))
            if keys:
                add(m, "pandoc", keys)
    if "numeric" in kinds:
        for m in NUMERIC_RE.finditer(text):
            nums = _expand_numbers(m.group(1))
            if nums and all(1 <= n <= (max_number or 9999) for n in nums):
                add(m, "numeric", [str(n) for n in nums])
        for m in SUPER_RE.finditer(text):
            nums = _expand_numbers(m.group(1).translate(_SUP_MAP))
            if nums and max_number and all(1 <= n <= max_number for n in nums):
                add(m, "superscript", [str(n) for n in nums])
    if "author-year" in kinds:
        for m in PAREN_AY_RE.finditer(text):
            add(m, "author-year", [_ay_label(p) for p in m.group(1).split(";") if p.strip()])
        for m in NARRATIVE_AY_RE.finditer(text):
            years = [y.strip() for y in m.group(2).split(",")]
            add(m, "author-year", [_ay_label(f"{m.group(1)} {y}") for y in years])
    found.sort(key=lambda mk: mk.start)
    return found


def _ay_label(part: str) -> str:
    """'e.g., Smith et al., 2020' -> 'Smith et al. 2020' (authors + year)."""
    part = re.sub(r"^(?:e\.g\.|see|cf\.|i\.e\.)[,\s]+", "", part.strip())
    years = re.findall(_YEAR, part)
    names = re.sub(rf",?\s*{_YEAR}.*$", "", part).strip(" ,")
    return f"{names} {years[0] if years else ''}".strip()


def _norm_name(name: str) -> str:
    name = fold(name, ascii_only=False)
    return "".join(c for c in name if c.isalnum()).lower()


def resolve_markers(markers: list[CitationMarker], references: list[Reference]) -> None:
    """Fill ``marker.references`` (indices into ``references``) in place."""
    by_number = {r.number: i for i, r in enumerate(references) if r.number is not None}
    by_citekey = {r.key: i for i, r in enumerate(references) if r.key}
    by_key: dict[tuple[str, str], list[int]] = {}
    for i, r in enumerate(references):
        if r.year and r.authors:
            by_key.setdefault((_norm_name(r.first_author_lastname), str(r.year)), []).append(i)
    for mk in markers:
        refs: list[int] = []
        if mk.kind in ("numeric", "superscript"):
            refs = [by_number[int(x)] for x in mk.labels if x.isdigit() and int(x) in by_number]
        elif mk.kind in ("latex", "pandoc"):
            refs = [by_citekey[k] for k in mk.labels if k in by_citekey]
        elif mk.kind == "author-year":
            for label in mk.labels:
                i = _resolve_author_year(label, references, by_key)
                if i is not None:
                    refs.append(i)
        mk.references = list(dict.fromkeys(refs))


def _resolve_author_year(label: str, references: list[Reference], by_key) -> int | None:
    m = re.search(rf"({_YEAR})$", label)
    if not m:
        return None
    year, suffix = m.group(0)[:4], m.group(0)[4:]
    names = label[: m.start()].strip()
    first = re.split(r"\s+(?:et\s+al|and|&)\b|,", names)[0].strip()
    first = first.split()[-1] if first else ""
    cands = by_key.get((_norm_name(first), year), [])
    if len(cands) > 1 and suffix:  # 2019a / 2019b: order of appearance in the list
        idx = ord(suffix) - ord("a")
        return cands[idx] if idx < len(cands) else cands[0]
    if len(cands) > 1:
        second = re.search(r"(?:and|&)\s+([\w'’\-]+)", names)
        if second:
            for i in cands:
                if any(
                    _norm_name(second.group(1)) == _norm_name(a.split(",")[0])
                    for a in references[i].authors[1:]
                ):
                    return i
    return cands[0] if cands else None


def strip_markers(text: str, markers: list[CitationMarker]) -> str:
    """The sentence with its markers removed (for queries and classifiers)."""
    out, pos = [], 0
    for mk in sorted(markers, key=lambda m: m.start):
        out.append(text[pos : mk.start])
        pos = mk.end
    out.append(text[pos:])
    s = "".join(out)
    s = re.sub(r"\(\s*\)|\[\s*\]", "", s)
    s = re.sub(r"\s+([.,;:])", r"\1", s)
    return re.sub(r"\s{2,}", " ", s).strip()


_LATEX_DROP_RE = re.compile(
    r"\\(?:part|chapter|section|subsection|subsubsection|paragraph|subparagraph|caption|title|"
    r"author|date|label|bibliography|bibliographystyle|addbibresource|usepackage|documentclass|"
    r"begin|end|input|include|includegraphics|vspace|hspace|newcommand|renewcommand)\*?"
    r"(?:\s*\[[^\]]*\])*(?:\s*\{(?:[^{}]|\{[^{}]*\})*\})?"
)


def strip_latex(text: str) -> str:
    """Prose of a LaTeX fragment for a query: citation markers, sectioning/structure commands
    with their arguments (``\\section{Method}``, ``\\begin{itemize}``, ``\\label{..}``),
    comments and math removed, formatting commands reduced to their text."""
    text = re.sub(r"(?<!\\)%[^\n]*", "", text or "")
    text = LATEX_CITE_RE.sub("", text)
    text = _LATEX_DROP_RE.sub(" ", text)
    text = delatex(text)
    return re.sub(r"\s+([.,;:])", r"\1", text).strip()


def delatex(s: str) -> str:
    """Readable text from a LaTeX fragment (for titles, abstracts, and the claim scorer)."""
    s = re.sub(r"(?<!\\)%[^\n]*", "", s)
    s = re.sub(
        r"\\(?:emph|textbf|textit|texttt|textsc|underline|mbox|text|url|href\{[^}]*\})\s*\{([^{}]*)\}",
        r"\1",
        s,
    )
    s = re.sub(r"\\(?:ref|eqref|cref|Cref|autoref)\{[^}]*\}", "1", s)
    s = re.sub(r"\\(?:label|footnote)\{[^{}]*\}", "", s)
    s = re.sub(r"\$[^$]*\$", "x", s)
    s = (
        s.replace("~", " ")
        .replace("\\&", "&")
        .replace("\\%", "%")
        .replace("``", '"')
        .replace("''", '"')
    )
    s = re.sub(r"\\[a-zA-Z]+\*?", "", s)
    s = s.replace("{", "").replace("}", "").replace("\\", "")
    return re.sub(r"\s+", " ", s).strip()


_EMPTY_PARENS = re.compile(r"\(\s*[,;]?\s*\)")
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([.,;:!?)])")


def strip_citation_markers(text: str) -> str:
    """``text`` without its citation markers (the grammar above: ``\\cite{..}``, ``[12]``,
    ``[@key]``, ``(Smith et al., 2020)``; ``Smith et al. (2020)`` keeps the names), spaces tidied:
    what a retriever should read of a citation context."""
    if not text:
        return ""
    out = re.sub(r"~?\s*" + LATEX_CITE_RE.pattern, "", text)
    out = PANDOC_RE.sub(lambda m: "" if PANDOC_KEY_RE.search(m.group(1)) else m.group(0), out)
    out = re.sub(r"\s*" + NUMERIC_RE.pattern, "", out)
    out = re.sub(r"\s*" + PAREN_AY_RE.pattern, "", out)
    out = NARRATIVE_AY_RE.sub(lambda m: m.group(1), out)
    out = _EMPTY_PARENS.sub("", out)
    out = " ".join(out.split())
    return _SPACE_BEFORE_PUNCT.sub(r"\1", out).strip()
