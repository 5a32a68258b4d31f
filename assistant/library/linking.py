"""Link parsed references to library papers: by DOI, else by fuzzy title + year.

Works with anything that has ``get_by_doi(doi)`` and ``search(query, limit)`` (the
:class:`assistant.library.store.Library` contract). A title match needs a token-sort
ratio >= ``TITLE_THRESHOLD`` on normalised titles and, when both years are known,
|year difference| <= 1; first-author surname agreement lowers the title threshold a
little and disagreement raises it (precision first: a wrong citation edge is worse
than a missing one, and unmatched references are listed for the user).
"""

from __future__ import annotations

import re
from typing import Protocol

from rapidfuzz import fuzz

from assistant.documents.model import Reference
from assistant.fold import fold
from assistant.library.models import Paper

TITLE_THRESHOLD = 92.0
TITLE_THRESHOLD_SAME_AUTHOR = 88.0


class PaperSource(Protocol):
    def get_by_doi(self, doi: str) -> Paper | None: ...

    def search(self, query: str, limit: int = 20) -> list[Paper]: ...


def normalize_title(title: str) -> str:
    t = fold(title or "").lower()
    t = re.sub(r"[^a-z0-9]+", " ", t)
    return re.sub(r"\s+", " ", t).strip()


def _norm_name(name: str) -> str:
    return re.sub(r"[^a-z]", "", fold(name).lower())


def title_score(ref: Reference, paper: Paper) -> float:
    """Similarity of normalised titles (0-100); a title equal to the other's main title
    (before a ':' / '-' / '?' subtitle separator) scores 0.97 x the prefix similarity."""
    a, b = normalize_title(ref.title), normalize_title(paper.title)
    if not a or not b:
        return 0.0
    score = float(fuzz.ratio(a, b))
    if score < 95:
        for short_raw, long_raw in ((ref.title, paper.title), (paper.title, ref.title)):
            m = re.match(r"^(.{12,}?)\s*[:?.\u2013\u2014-]\s+\S", long_raw or "")
            if m and len(normalize_title(short_raw)) < len(normalize_title(long_raw)):
                main = normalize_title(m.group(1))
                score = max(score, 0.97 * fuzz.ratio(normalize_title(short_raw), main))
    return score


_VENUE_STOP = {
    "proceedings",
    "proc",
    "international",
    "conference",
    "annual",
    "acm",
    "the",
    "and",
    "on",
    "of",
    "in",
    "for",
    "workshop",
    "symposium",
    "journal",
    "transactions",
    "research",
    "development",
}


def _venues_compatible(a: str, b: str) -> bool:
    """Unknown venues, or venues sharing half of their distinctive words ("SIGIR" / "SIGIR Forum")."""

    def words(v: str) -> set[str]:
        return {
            w
            for w in normalize_title(v).split()
            if w not in _VENUE_STOP and not re.fullmatch(r"\d+(?:st|nd|rd|th)?", w)
        }

    wa, wb = words(a), words(b)
    return not wa or not wb or len(wa & wb) >= 0.5 * min(len(wa), len(wb))


def _accept(ref: Reference, paper: Paper) -> float | None:
    """The match score when ``paper`` is taken to be ``ref``'s work, else None.

    Title >= 92 (88 with the same first author, 96 with a different one) and years within 1.
    A year further off (reprints, wrong years in the library) needs a long, near-identical title,
    the same first author and a compatible venue (a journal version is another record).
    """
    score = title_score(ref, paper)
    first = _norm_name(ref.first_author_lastname)
    same_author = (
        bool(first) and bool(paper.authors) and first == _norm_name(paper.first_author_lastname)
    )
    other_author = (
        bool(first)
        and bool(paper.authors)
        and not same_author
        and not any(first == _norm_name(a.split(",")[0]) for a in paper.authors)
    )
    gap = abs(ref.year - paper.year) if ref.year and paper.year else 0
    if gap > 1 and not (
        same_author
        and score >= 97
        and len(normalize_title(ref.title)) >= 40
        and _venues_compatible(ref.venue, paper.venue)
    ):
        return None
    threshold = (
        TITLE_THRESHOLD_SAME_AUTHOR if same_author else TITLE_THRESHOLD + (4 if other_author else 0)
    )
    # ties between versions of one title (tutorial/book, conference/journal, reprint): closest year wins
    return score - 0.5 * min(gap, 10) if score >= threshold else None


def link_reference(ref: Reference, source: PaperSource, limit: int = 10) -> Paper | None:
    """The library paper a reference points to, or None. Sets ref.paper_id/match/match_score.

    Candidates come from the library's full-text search: first the title as a phrase, then
    its words (all of them, the library falling back to any of them).
    """
    if ref.doi:
        paper = source.get_by_doi(ref.doi)
        if paper is not None:
            ref.paper_id, ref.match, ref.match_score = paper.id, "doi", 100.0
            return paper
    words = normalize_title(ref.title).split()
    if len(" ".join(words)) < 12:
        return None
    best, best_score = None, 0.0
    for query, n in (
        (f'"{" ".join(words)}"', limit),
        (" ".join(w for w in words if len(w) > 2), 2 * limit),
    ):
        try:
            candidates = source.search(query, limit=n)
        except Exception:  # FTS syntax edge cases must never break a parse
            continue
        for paper in candidates:
            score = _accept(ref, paper)
            if score is not None and score > best_score:
                best, best_score = paper, score
        if best is not None:
            break
    if best is not None:
        ref.paper_id, ref.match, ref.match_score = best.id, "title", best_score
    return best


def link_references(refs: list[Reference], source: PaperSource) -> int:
    """Link every reference in place; returns how many were linked."""
    return sum(1 for r in refs if link_reference(r, source) is not None)
