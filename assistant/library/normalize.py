"""Field normalisation shared by all importers: LaTeX/HTML → Unicode, DOIs, names, dedup keys.

The fast paths matter: the full ACM-DL import normalises ~115k records, so the common
accent macros (``{\\'e}``, ``\\"{o}``) are decoded with a table and pylatexenc is only
called for values that still contain LaTeX after that.
"""

from __future__ import annotations

import html
import re
import unicodedata

from assistant.fold import fold

_ACCENTS = {
    "'": "\u0301",
    "`": "\u0300",
    "^": "\u0302",
    '"': "\u0308",
    "~": "\u0303",
    "=": "\u0304",
    ".": "\u0307",
    "u": "\u0306",
    "v": "\u030c",
    "H": "\u030b",
    "c": "\u0327",
    "k": "\u0328",
    "r": "\u030a",
    "d": "\u0323",
    "b": "\u0331",
}
_SYMBOLS = {
    "i": "ı",
    "j": "ȷ",
    "o": "ø",
    "O": "Ø",
    "l": "ł",
    "L": "Ł",
    "ae": "æ",
    "AE": "Æ",
    "oe": "œ",
    "OE": "Œ",
    "aa": "å",
    "AA": "Å",
    "ss": "ß",
    "dh": "ð",
    "DH": "Ð",
    "th": "þ",
    "TH": "Þ",
    "texttimes": "×",
    "&": "&",
    "%": "%",
    "$": "$",
    "#": "#",
    "_": "_",
    "{": "{",
    "}": "}",
    "textendash": "–",
    "textemdash": "—",
    "ldots": "…",
    "dots": "…",
    "textquoteright": "’",
    "textquoteleft": "‘",
    "copyright": "©",
    "textregistered": "®",
    "texttrademark": "™",
}
# \'{e}  {\'e}  \'e  \'\i  \c{c}  \v s
_ACCENT_RE = re.compile(
    r"\{?\\([`'^\"~=.])\s*(?:\{\\?([A-Za-z])\}|\\?([A-Za-z]))\}?"
    r"|\{?\\([uvHckrdb])(?:\{\\?([A-Za-z])\}|\s+\\?([A-Za-z]))\}?"
)
_SYMBOL_RE = re.compile(
    r"\{?\\(texttimes|textendash|textemdash|textquoteright|textquoteleft|ldots|dots|"
    r"copyright|textregistered|texttrademark|ae|AE|oe|OE|aa|AA|ss|dh|DH|th|TH|"
    r"[ijoOlL])(?![A-Za-z])(?:\{\})?\s?\}?|\\([&%$#_{}])"
)
_TAG_RE = re.compile(r"</?([A-Za-z][\w:-]*);?(?:\s[^<>]*)?/?>")
_BLOCK_TAGS = frozenset(
    {"p", "br", "div", "li", "ul", "ol", "title", "sec", "jats:p", "jats:title", "jats:sec"}
)
_WS_RE = re.compile(r"\s+")
_DOI_PREFIX_RE = re.compile(r"^(?:https?://(?:dx\.)?doi\.org/|doi:\s*)", re.I)
_DOI_RE = re.compile(r"10\.\d{1,9}(?:\.\d+)*/\S+")
_ARXIV_RE = re.compile(
    r"(?:arxiv[:/ ]|abs/)\s*(\d{4}\.\d{4,5}|[a-z-]+(?:\.[A-Z]{2})?/\d{7})(?:v\d+)?", re.I
)

_latex_converter = None


def _accent(match: re.Match) -> str:
    cmd = match.group(1) or match.group(4)
    letter = next(g for g in match.groups()[1:3] + match.groups()[4:6] if g)  # \'{\i} gives "i"
    return unicodedata.normalize("NFC", letter + _ACCENTS[cmd])


def _symbol(match: re.Match) -> str:
    return _SYMBOLS[match.group(1) or match.group(2)]


def _pylatexenc(text: str) -> str:
    global _latex_converter
    if _latex_converter is None:
        from pylatexenc.latex2text import LatexNodes2Text

        _latex_converter = LatexNodes2Text(math_mode="text", strict_latex_spaces=True)
    try:
        return _latex_converter.latex_to_text(text)
    except Exception:  # pylatexenc is lenient but never let one odd value stop an import
        return text


_MATH_RE = re.compile(r"\$[^$]{0,300}?\$")
_CMD_SPAN_RE = re.compile(r"\\[A-Za-z]+\*?(?:\s*\{[^{}]*\})*|\\.")


def _latex_span(match: re.Match) -> str:
    span = match.group(0)
    if span.startswith("$") and not re.search(r"[\\^_{]", span):
        return span  # "$10 and $20": dollars, not math
    return _pylatexenc(span)


def latex_to_unicode(text: str) -> str:
    """Decode LaTeX accents/commands and drop protective braces; plain text passes unchanged.

    Common accents use a table; remaining math (``$\\alpha$``) and commands go through
    pylatexenc span by span (whole-abstract pylatexenc calls cost ~30 ms each).
    """
    if not text:
        return ""
    escaped = "\\{" in text or "\\}" in text or "\\$" in text
    if escaped:  # literal braces/dollars must survive brace stripping and math detection
        text = text.replace("\\{", "\x01").replace("\\}", "\x02").replace("\\$", "\x03")
    if "\\" in text:
        text = _ACCENT_RE.sub(_accent, text)
        text = _SYMBOL_RE.sub(_symbol, text)
    if "$" in text:
        text = _MATH_RE.sub(_latex_span, text)
    if "\\" in text:
        text = _CMD_SPAN_RE.sub(_latex_span, text)
    if "{" in text or "}" in text:
        text = text.replace("{", "").replace("}", "")
    if "~" in text:
        text = re.sub(r"(?<=\w)~(?=\w)", "\u00a0", text)
    if escaped:
        text = text.replace("\x01", "{").replace("\x02", "}").replace("\x03", "$")
    return text


_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


_SURROGATE_RE = re.compile(r"[\ud800-\udfff]")


def clean_text(text: str | None) -> str:
    """LaTeX → Unicode, strip HTML tags/entities (ACM abstracts carry ``<p>``, ``&amp;``), squash spaces."""
    if not text:
        return ""
    if not isinstance(text, str):
        text = str(text)
    if _CONTROL_RE.search(text):  # terminal escapes, NUL, backspace...: never stored or echoed
        text = _CONTROL_RE.sub(" ", text)
    if _SURROGATE_RE.search(text):  # a lone "\ud800" from JSON cannot be stored as UTF-8
        text = _SURROGATE_RE.sub("\ufffd", text)
    text = latex_to_unicode(text)
    if "&" in text:
        text = html.unescape(text)
    if "<" in text and ("</" in text or "/>" in text or "<p>" in text):
        text = _TAG_RE.sub(_tag, text)
    return _WS_RE.sub(" ", text).strip()


def _tag(match: re.Match) -> str:
    return " " if match.group(1).lower() in _BLOCK_TAGS else ""


def normalize_doi(value: str | None) -> str | None:
    """``https://doi.org/10.1145/X`` / ``doi:10.1145/X`` → ``10.1145/x``; None when no DOI."""
    if not value:
        return None
    value = _DOI_PREFIX_RE.sub("", value.strip().strip("{}").strip().replace("\\", ""))
    match = _DOI_RE.search(value)
    if not match:
        return None
    return match.group(0).rstrip(".,;").lower()


def clean_url(value: str | None) -> str | None:
    """A URL field with LaTeX escapes (``\\_``, ``\\%``) undone; None when empty."""
    if not value:
        return None
    value = value.strip()
    return re.sub(r"\\([_%&#~${}])", r"\1", value) if "\\" in value else value


def find_arxiv_id(*values: str | None) -> str | None:
    """An arXiv identifier found in an eprint/url/journal field, else None."""
    for value in values:
        if value:
            match = _ARXIV_RE.search(value)
            if match:
                return match.group(1)
            if re.fullmatch(r"\d{4}\.\d{4,5}(v\d+)?", value.strip()):
                return value.strip().split("v")[0]
    return None


def _split_top_level(text: str, sep_re: re.Pattern) -> list[str]:
    """Split on ``sep_re`` matches that are outside braces."""
    if "{" not in text:
        return sep_re.split(text)
    parts, start = [], 0
    for match in sep_re.finditer(text):
        head = text[start : match.start()]
        if head.count("{") == head.count("}"):
            parts.append(head)
            start = match.end()
    parts.append(text[start:])
    return parts


_AND_RE = re.compile(r"\s+and\s+", re.I)
_NAME_PARTICLES = {
    "van",
    "von",
    "der",
    "den",
    "de",
    "del",
    "della",
    "di",
    "da",
    "du",
    "le",
    "la",
    "ten",
    "ter",
    "dos",
}


def split_authors(value: str | None) -> list[str]:
    """BibTeX ``A and B`` author list → ``["Last, First", ...]`` in Unicode."""
    if not value:
        return []
    names = []
    if _CONTROL_RE.search(value):  # terminal escapes, NUL...: never stored or echoed
        value = _CONTROL_RE.sub(" ", value)
    for raw in _split_top_level(value.strip(), _AND_RE):
        raw = raw.strip()
        if not raw:
            continue
        if raw.lower() == "others":
            names.append("others")
            continue
        if (
            raw.startswith("{")
            and raw.endswith("}")
            and raw[1:-1].count("{") == raw[1:-1].count("}")
        ):
            names.append(clean_text(raw[1:-1]))  # {Barnes and Noble}: a corporate name, kept whole
            continue
        names.append(
            format_name(clean_text(raw) if ("\\" in raw or "{" in raw or "&" in raw) else raw)
        )
    return names


def format_name(name: str) -> str:
    """``First von Last`` or ``Last, First`` → ``Last, First`` (whitespace squashed)."""
    name = _WS_RE.sub(" ", _CONTROL_RE.sub(" ", name)).strip().strip(",")
    if "," in name or " " not in name:
        return name
    words = name.split(" ")
    cut = len(words) - 1
    while cut > 0 and words[cut - 1].lower() in _NAME_PARTICLES:
        cut -= 1
    last, first = " ".join(words[cut:]), " ".join(words[:cut])
    return f"{last}, {first}" if first else last


_NON_ALNUM = re.compile(r"[^0-9A-Za-z]+")


def ascii_fold(text: str) -> str:
    """Lower-case ASCII letters/digits only (accents removed): ``"Müller-Lüdenscheidt"`` → ``"mullerludenscheidt"``."""
    return _NON_ALNUM.sub("", fold(text)).lower()


def title_key(title: str) -> str:
    """Normalised title for deduplication: accents/punctuation/case/spacing removed."""
    return ascii_fold(title) if len(title) < 300 else ascii_fold(title[:300])


def author_key(authors: list[str]) -> str:
    """Normalised first-author last name for deduplication."""
    if not authors:
        return ""
    return ascii_fold(authors[0].split(",")[0])


def parse_year(value: str | int | None) -> int | None:
    if value is None:
        return None
    match = re.search(r"\b(1[5-9]\d\d|20\d\d|21\d\d)\b", str(value))
    return int(match.group(1)) if match else None


def split_keywords(value: str | list | None) -> list[str]:
    """``a, b; c`` → ``["a", "b", "c"]`` (order kept, duplicates removed)."""
    if not value:
        return []
    items = value if isinstance(value, list) else re.split(r"[;,]\s*|\n", value)
    out: list[str] = []
    seen = set()
    for item in items:
        item = clean_text(str(item))
        if item and item.lower() not in seen:
            seen.add(item.lower())
            out.append(item)
    return out
