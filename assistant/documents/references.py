"""Bibliography: split the reference list into entries and parse each entry.

There is no maintained, offline, pure-Python reference-string parser (GROBID is
Java, anystyle Ruby, refextract is tied to INSPIRE's knowledge bases and does not
return titles), so this is a careful rule-based parser for the styles found in
computer-science papers: ACM ("Authors. Year. Title. In Venue. pages."), and the
"Authors. Title. Venue, Year." family (IEEE/Springer/SIAM-like); DOIs, arXiv ids
and URLs are taken from anywhere in the entry. See tests/test_documents_references.py.
"""

from __future__ import annotations

import re

from assistant.documents.model import Reference

DOI_RE = re.compile(
    r"(?:https?://(?:dx\.)?doi\.org/|doi:\s*|DOI:?\s*)?(10\.\d{4,9}/[^\s\"<>]+)", re.IGNORECASE
)
ARXIV_RE = re.compile(
    r"(?:arXiv[:\s]*(?:preprint\s+)?(?:arXiv:)?|abs/|arxiv\.org/(?:abs|pdf)/)\s*(\d{4}\.\d{4,5})(?:v\d+)?",
    re.IGNORECASE,
)
URL_RE = re.compile(r"https?://[^\s]+")
YEAR = r"(?:19[5-9]\d|20[0-4]\d)"
LABEL_RE = re.compile(r"^\s*(?:\[(\d{1,4})\]|(\d{1,4})\.\s)\s*")
_INITIAL = re.compile(r"^(?:[A-Z]\.?){1,3}$|^[A-Z][a-z]?\.$|^(?:[A-Z]\.-?)+[A-Z]?\.?$")
_PARTICLES = {
    "van",
    "von",
    "de",
    "der",
    "den",
    "di",
    "da",
    "del",
    "della",
    "le",
    "la",
    "du",
    "dos",
    "ter",
    "zu",
}
_SUFFIXES = {"jr", "jr.", "sr", "sr.", "ii", "iii", "iv"}


def join_lines(lines: list[str]) -> str:
    """Join wrapped lines of one entry: de-hyphenate words, keep URLs/DOIs unbroken."""
    out = ""
    for ln in lines:
        ln = ln.strip()
        if not out:
            out = ln
            continue
        last_tok = out.rsplit(" ", 1)[-1]
        if (
            re.search(r"(?:https?:|doi\.org|10\.\d{4,9}/)\S*$", last_tok)
            and (out.endswith(("/", ".", "-", "_", ":", "=", "?", "&")) or ln.startswith("//"))
            and not ln[:1].isupper()
        ):
            out += ln
        elif out.endswith("-") and len(out) > 1 and out[-2].isalpha() and ln[:1].islower():
            out = out[:-1] + ln
        elif out.endswith("-") and len(out) > 1 and out[-2].isalpha() and ln[:1].isupper():
            out += ln  # "Multi-" + "Task": keep the hyphen
        else:
            out += " " + ln
    return out


def split_entries(lines: list[tuple]) -> list[tuple[int | None, str]]:
    """Entries from the reference section's lines ``(text, x0, column_left[, gap_before])``.

    Numbered lists start an entry at each ``[n]``/``n.`` label; otherwise an entry starts at
    each line that is not indented relative to its column (hanging indents) or, when no line
    is indented (natbib/plainnat style), after a vertical gap wider than the line spacing.
    ``gap_before`` is the distance to the previous line's top in the same column (None at
    a column or page change).
    """
    rows = [(t[0], t[1], t[2], t[3] if len(t) > 3 else None) for t in lines]
    labelled = sum(1 for t, _, _, _ in rows if LABEL_RE.match(t))
    entries: list[tuple[int | None, list[str]]] = []
    indented = sum(1 for _, x0, left, _ in rows if x0 > left + 2.0)
    gaps = sorted(g for *_, g in rows if g is not None and g > 0)
    if labelled >= max(2, 0.15 * len(rows)):
        for text, _, _, _ in rows:
            m = LABEL_RE.match(text)
            if m and (not entries or _plausible_next(entries, int(m.group(1) or m.group(2)))):
                entries.append((int(m.group(1) or m.group(2)), [text[m.end() :]]))
            elif entries:
                entries[-1][1].append(text)
    elif indented >= 0.15 * len(rows) or not gaps:
        for text, x0, left, _ in rows:
            if not entries or x0 <= left + 2.0:
                entries.append((None, [text]))
            else:
                entries[-1][1].append(text)
    else:
        spacing = gaps[len(gaps) // 4]  # a typical within-entry line spacing
        for text, _, _, gap in rows:
            prev_end = entries[-1][1][-1].rstrip().endswith(".") if entries else True
            if (
                not entries
                or (gap is not None and gap > 1.25 * spacing)
                or (gap is None and prev_end)
            ):
                entries.append((None, [text]))
            else:
                entries[-1][1].append(text)
    return [(n, join_lines(ls)) for n, ls in entries if "".join(ls).strip()]


def _plausible_next(entries, n: int) -> bool:
    prev = entries[-1][0]
    return prev is None or n == prev + 1 or (n > prev and n - prev <= 3)


def _clean(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip(" .,;:")


def split_authors(text: str) -> list[str]:
    """'A. Smith, Bo Lee, and C. D. Doe' -> ['Smith, A.', 'Lee, Bo', 'Doe, C. D.']."""
    text = re.sub(r"\(eds?\.?\)|\beds?\.$|\bet al\.?|\band others\b", "", text, flags=re.IGNORECASE)
    parts = re.split(r"\s*,\s*and\s+|\s+and\s+|\s*&\s*|\s*;\s*|\s*,\s*", text)
    names: list[str] = []
    for part in parts:
        part = re.sub(r"\s+", " ", part).strip(" ,;:")
        if part.endswith(".") and not _INITIAL.match(part.rsplit(" ", 1)[-1]):
            part = part.rstrip(".")
        if not part:
            continue
        toks = part.split()
        if names and (len(toks) == 1 and (_INITIAL.match(toks[0]) or toks[0].lower() in _SUFFIXES)):
            # "Smith, J." (Last, First style) or "Hal Daumé, III"
            prev = names[-1]
            names[-1] = prev + " " + toks[0] if "," in prev else f"{prev}, {toks[0]}"
            continue
        names.append(_last_first(toks))
    return [n for n in names if n and any(c.isalpha() for c in n)]


def _last_first(toks: list[str]) -> str:
    if len(toks) == 1:
        return toks[0]
    suffix = ""
    if toks[-1].lower().strip(",") in _SUFFIXES:
        suffix, toks = " " + toks[-1], toks[:-1]
    if all(_INITIAL.match(t) for t in toks[1:]) and not _INITIAL.match(toks[0]):  # "Smith J." style
        return f"{toks[0]}{suffix}, {' '.join(toks[1:])}"
    i = len(toks) - 1
    while i > 1 and toks[i - 1].lower() in _PARTICLES:
        i -= 1
    return f"{' '.join(toks[i:])}{suffix}, {' '.join(toks[:i])}"


def _title_end(s: str) -> int:
    """Index where the title (first sentence of ``s``) ends."""
    for m in re.finditer(
        r"[.?!](?=\s+[\"“(]?[A-Z0-9])|[.?!]$|[.,](?=\s+(?:arXiv|CoRR|abs/|https?:|doi:|in\s))", s
    ):
        before = s[: m.start()].rsplit(" ", 1)[-1]
        if m.group(0) == "." and (
            _INITIAL.match(before + ".") or before.lower() in {"vs", "e.g", "i.e", "al", "st"}
        ):
            continue
        return m.end()
    return len(s)


_VENUE_START = re.compile(
    r"^\s*(?:In\b|Proc|Journal|Trans|ACM\b|IEEE|arXiv|CoRR|Technical|PhD|Master|"
    r"Ph\.D|\d|https?:|Springer|Elsevier|MIT Press|Morgan)"
)
_VENUE_DETAILS = re.compile(
    r"\d+\s*,\s*\d+|\(\d{4}\)|\d+\s*[–-]\s*\d+|\bvol\.|\bpp\.", re.IGNORECASE
)


def _extend_question_title(rest: str, end: int) -> int:
    """'Respect my authority! HITS without hyperlinks. In SIGIR.': a title ending in '?'/'!' may
    go on with a subtitle; take the next sentence too unless it looks like the venue."""
    if end < 2 or rest[end - 1] not in "?!":
        return end
    nxt = _title_end(rest[end:])
    segment = rest[end : end + nxt]
    if (
        3 <= len(segment.strip()) <= 150
        and len(segment.split()) > 3
        and not _VENUE_START.match(segment)
        and not _VENUE_DETAILS.search(segment)
        and segment.strip().endswith(".")
    ):
        return end + nxt
    return end


def parse_reference(raw: str, number: int | None = None) -> Reference:
    """Parse one entry's text into a :class:`Reference` (fields left empty when unsure)."""
    text = _clean(raw)
    ref = Reference(raw=text, number=number)
    m = DOI_RE.search(text)
    if m:
        ref.doi = m.group(1).rstrip(".,;)]").lower()
    m = ARXIV_RE.search(text)
    if m:
        ref.arxiv_id = m.group(1)
    m = URL_RE.search(text)
    if m:
        ref.url = m.group(0).rstrip(".,;)")
    body = URL_RE.sub("", text).strip()
    # ACM: "Authors. 2019. Title. In Venue." (or "2020. Title." without authors)
    m = re.match(rf"^(?:(.*?)[.,]\s+)?\(?({YEAR})[a-z]?\)?\.\s+(.+)$", body)
    if m and (m.group(1) is None or len(m.group(1)) < 600):
        authors, year, rest = m.group(1) or "", m.group(2), m.group(3)
        ref.year = int(year)
        ref.authors = split_authors(authors)
        end = _extend_question_title(rest, _title_end(rest))
        ref.title = _clean(rest[:end])
        ref.venue = _venue(rest[end:])
        return ref
    # "Authors. Title. Venue, Year." : authors end at the first '. ' not after an initial
    years = re.findall(rf"\b({YEAR})[a-z]?\b", body)
    if years:
        ref.year = int(years[-1])
    pos = 0
    for m in re.finditer(r"\.\s+", body):
        before = body[: m.start()].rsplit(" ", 1)[-1]
        if _INITIAL.match(before + ".") or before.lower() in {"al", "jr"}:
            continue
        pos = m.end()
        break
    if pos:
        ref.authors = split_authors(body[:pos].strip())
        rest = body[pos:]
        end = _title_end(rest)
        ref.title = _clean(rest[:end].strip('“”"'))
        ref.venue = _venue(rest[end:])
    else:
        ref.title = _clean(body)
    return ref


_VENUE_ABBREV = {
    "proc",
    "conf",
    "int",
    "intl",
    "j",
    "trans",
    "vol",
    "no",
    "symp",
    "assoc",
    "comput",
    "inf",
    "res",
    "dev",
    "annu",
    "natl",
    "sci",
    "eng",
    "univ",
    "dept",
    "ed",
    "eds",
    "pp",
    "st",
}


def _venue(rest: str) -> str:
    rest = rest.strip()
    rest = re.sub(r"^In\s+", "", rest)
    end = len(rest)
    for m in re.finditer(r"\.\s+(?=[A-Z0-9])|,\s*\d|\(\d{4}\)|\.$", rest):
        before = rest[: m.start()].rsplit(" ", 1)[-1].lower().strip("(")
        if m.group(0).startswith(".") and (before in _VENUE_ABBREV or len(before) == 1):
            continue
        end = m.start()
        break
    venue = rest[:end]
    return _clean(re.sub(rf"\b{YEAR}\b.*$", "", venue) or venue)[:200]
