"""``assistant eval pdf DIR``: PDF parsing quality against the ACM-CR annotations.

For every ``<venue>/<id>.pdf`` with its ``.xml`` (title, abstract, citing sentences with
``cites``) and ``.dois`` (numbered reference list), reports:

- ``title_exact``: share of PDFs whose title equals the XML title (case/space/punctuation-insensitive);
- ``abstract_f1``: mean bag-of-tokens F1 of the abstract;
- ``ref_count_accuracy``: share of PDFs with as many parsed references as ``.dois`` lines;
- ``linking_precision`` / ``linking_recall``: reference -> library DOI links, against the
  ``.dois`` DOIs present in the library (``--db``; the ACM-DL library by default when built);
- ``citing_sentence_recall``: XML sentences with ``cites`` found (fuzzy match) among our
  sentences that carry a citation marker;
- ``marker_f1``: micro F1 of XML ``cites`` numbers vs our resolved reference numbers for the
  matched sentence (unmatched gold sentences count as misses);
- ``sentence_exact_rate``: XML sentences (not anonymised) equal to one of our sentences
  (layout + de-hyphenation + sentence splitting);
- ``parse_seconds_median`` (wall clock) and ``parse_cpu_seconds_median`` (process CPU time, less
  sensitive to a loaded machine), and per-paper figures with ``--per-paper``.
"""

from __future__ import annotations

import re
import statistics
import time
from collections import Counter
from pathlib import Path

from assistant.errors import AssistantError

SENTENCE_MATCH_THRESHOLD = 85.0


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^a-z0-9]+", " ", (text or "").lower())).strip()


def token_f1(pred: str, gold: str) -> float:
    p, g = Counter(_norm(pred).split()), Counter(_norm(gold).split())
    if not p or not g:
        return float(not p and not g)
    overlap = sum((p & g).values())
    if not overlap:
        return 0.0
    prec, rec = overlap / sum(p.values()), overlap / sum(g.values())
    return 2 * prec * rec / (prec + rec)


def _strip_numeric(text: str) -> str:
    return re.sub(r"\[[\d,\s\-–—]+\]", " ", text)


def _best_match(gold: str, choices: list[str]) -> int | None:
    """Index of our sentence matching a gold sentence: whole-sentence similarity, or the gold
    sentence contained in a longer one of ours (merged sentences, anonymised author names)."""
    from rapidfuzz import fuzz

    best, best_score = None, SENTENCE_MATCH_THRESHOLD
    for i, choice in enumerate(choices):
        score = fuzz.ratio(gold, choice)
        if len(choice) > len(gold) and score < 95:
            score = max(score, fuzz.partial_ratio(gold, choice))
        if score >= best_score and (best is None or score > best_score):
            best, best_score = i, score
    return best


def _sentence_boundaries(xml_path: Path, choices: list[str]) -> tuple[int, int]:
    """(gold sentences, those equal to one of ours): XML sentences whose text was not edited
    (``anonymised``) against our sentences, normalised, similarity >= 95."""
    import xml.etree.ElementTree as ET

    from rapidfuzz import fuzz, process

    gold = [
        _norm(_strip_numeric(s.text or ""))
        for s in ET.parse(xml_path).getroot().iter("s")
        if not s.get("anonymised")
    ]
    hits = sum(
        1
        for g in gold
        if choices and process.extractOne(g, choices, scorer=fuzz.ratio, score_cutoff=95)
    )
    return len(gold), hits


def evaluate_paper(pdf: Path, library=None) -> dict:
    """All metrics' counts for one citing paper."""
    # long: one table of counts per metric for a citing paper, read top to bottom
    from assistant.documents.pdf import parse_pdf
    from assistant.evaluation.acm_cr_data import read_citing_paper
    from assistant.library.linking import link_references
    from assistant.library.normalize import normalize_doi

    gold = read_citing_paper(pdf.with_suffix(".xml"))
    t0, c0 = time.perf_counter(), time.process_time()
    doc = parse_pdf(pdf)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    out: dict = {
        "paper": gold.paper_id,
        "seconds": round(seconds, 3),
        "cpu_seconds": round(cpu, 3),
        "pages": doc.page_count,
        "warnings": doc.warnings,
        "title_exact": _norm(doc.title) == _norm(gold.title),
        "abstract_f1": round(token_f1(doc.abstract, gold.abstract), 4),
        "refs_parsed": len(doc.references),
        "refs_gold": len(gold.references),
    }
    out["ref_count_ok"] = out["refs_parsed"] == out["refs_gold"]
    if not out["title_exact"]:
        out["title_parsed"], out["title_gold"] = doc.title, gold.title
    # citing sentences and marker resolution
    ours = list(doc.sentences())
    choices = [_norm(_strip_numeric(s.text)) for s in ours]
    tp = fp = fn = found = total = 0
    misses: list[str] = []
    for ctx in gold.contexts:
        for s in ctx.sentences:
            if not s.cites:
                continue
            total += 1
            gold_nums = set(s.cites)
            best = _best_match(_norm(_strip_numeric(s.text)), choices)
            if best is None:
                fn += len(gold_nums)
                misses.append(s.text)
                continue
            sent = ours[best]
            pred = {
                str(doc.references[i].number)
                for i in sent.reference_indices()
                if doc.references[i].number
            }
            if sent.markers:
                found += 1
            else:
                misses.append(s.text)
            tp += len(pred & gold_nums)
            fp += len(pred - gold_nums)
            fn += len(gold_nums - pred)
    out.update(
        citing_total=total,
        citing_found=found,
        marker_tp=tp,
        marker_fp=fp,
        marker_fn=fn,
        citing_misses=misses[:5],
    )
    out["sentences_gold"], out["sentences_exact"] = _sentence_boundaries(
        pdf.with_suffix(".xml"), choices
    )
    if library is not None:
        link_references(doc.references, library)
        gold_links = {}
        for num, value in gold.references.items():
            d = normalize_doi(value)
            if d and library.get_by_doi(d) is not None:
                gold_links[num] = d
        pred_links = {}
        for r in doc.references:
            if r.paper_id is not None and r.number is not None:
                paper = library.get(r.paper_id)
                if paper is not None and paper.doi:  # links to DOI-less records are not DOI links
                    pred_links[str(r.number)] = paper.doi.lower()
        correct = sum(1 for n, d in pred_links.items() if gold_links.get(n) == d)
        out.update(
            link_pred=len(pred_links),
            link_gold=len(gold_links),
            link_correct=correct,
            link_errors=[
                (n, d, gold.references.get(n))
                for n, d in pred_links.items()
                if gold_links.get(n) != d
            ][:5],
        )
    return out


def summarize(rows: list[dict]) -> dict:
    n = len(rows)
    s = lambda k: sum(r.get(k, 0) for r in rows)  # noqa: E731
    tp, fp, fn = s("marker_tp"), s("marker_fp"), s("marker_fn")
    prec = tp / (tp + fp) if tp + fp else 0.0
    rec = tp / (tp + fn) if tp + fn else 0.0
    summary = {
        "papers": n,
        "title_exact": round(s("title_exact") / n, 4) if n else None,
        "abstract_f1": round(statistics.mean(r["abstract_f1"] for r in rows), 4) if n else None,
        "ref_count_accuracy": round(s("ref_count_ok") / n, 4) if n else None,
        "citing_sentence_recall": round(s("citing_found") / s("citing_total"), 4)
        if s("citing_total")
        else None,
        "marker_precision": round(prec, 4),
        "marker_recall": round(rec, 4),
        "marker_f1": round(2 * prec * rec / (prec + rec), 4) if prec + rec else 0.0,
        "sentence_exact_rate": round(s("sentences_exact") / s("sentences_gold"), 4)
        if s("sentences_gold")
        else None,
        "parse_seconds_median": round(statistics.median(r["seconds"] for r in rows), 3)
        if n
        else None,
        "parse_seconds_max": round(max(r["seconds"] for r in rows), 3) if n else None,
        "parse_cpu_seconds_median": round(statistics.median(r["cpu_seconds"] for r in rows), 3)
        if n
        else None,
    }
    if rows and "link_pred" in rows[0]:
        summary["linking_precision"] = (
            round(s("link_correct") / s("link_pred"), 4) if s("link_pred") else None
        )
        summary["linking_recall"] = (
            round(s("link_correct") / s("link_gold"), 4) if s("link_gold") else None
        )
        summary["linking_gold"] = s("link_gold")
    else:
        summary["linking_precision"] = summary["linking_recall"] = None
        summary["linking_note"] = (
            "no library: pass --db (a library holding the cited papers, e.g. ACM-DL imported)"
        )
    return summary


def open_library(db: str | None):
    from assistant.library.store import Library

    if not db:
        return None
    path = Path(db)
    if not path.exists():
        raise AssistantError(f"library not found: {path}")
    return Library(path)
