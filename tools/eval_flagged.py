"""Precision/recall of the missing-citation finder's flagged sentences on ACM-CR PDFs.

    python tools/eval_flagged.py [DIR=../shared/data/acm-cr/dev]

A flagged sentence is right when the curated XML has a citing sentence there (fuzzy match, the
``assistant eval pdf`` matcher). Two settings, each before (``skip_own=False``: no filter of
the abstract and of the paper's own contribution claims) and after (the default):

- ``app``: as the app runs it, sentences that already carry a marker are never flagged;
- ``blind``: markers ignored, i.e. would the finder flag the sentences the authors cited?

Prints one JSON object.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    from assistant.documents.manuscript import find_missing_citations
    from assistant.documents.pdf import parse_pdf
    from assistant.evaluation.acm_cr_data import read_citing_paper
    from assistant.evaluation.pdf_eval import _best_match, _norm, _strip_numeric

    argv = sys.argv[1:] if argv is None else argv
    import os

    shared = Path(
        os.environ.get("ASSISTANT_SHARED_DATA")
        or Path(__file__).resolve().parents[2] / "shared" / "data"
    )
    root = Path(argv[0]) if argv else shared / "acm-cr" / "dev"
    pdfs = sorted(root.glob("*/*.pdf"))
    if not pdfs:
        print(json.dumps({"error": f"no PDFs under {root}"}))
        return 1
    counts = {
        f"{mode}_{when}": {"flagged": 0, "right": 0, "gold": 0, "found": 0}
        for mode in ("app", "blind")
        for when in ("before", "after")
    }
    for pdf in pdfs:
        gold_paper = read_citing_paper(pdf.with_suffix(".xml"))
        gold = [
            _norm(_strip_numeric(s.text))
            for ctx in gold_paper.contexts
            for s in ctx.sentences
            if s.cites
        ]
        doc = parse_pdf(pdf)
        for mode in ("app", "blind"):
            for when in ("before", "after"):
                flagged = find_missing_citations(
                    doc, ignore_markers=mode == "blind", skip_own=when == "after"
                )
                ours = [_norm(_strip_numeric(m.sentence)) for m in flagged]
                c = counts[f"{mode}_{when}"]
                c["flagged"] += len(ours)
                c["right"] += sum(1 for o in ours if _best_match(o, gold) is not None)
                c["gold"] += len(gold)
                c["found"] += sum(1 for g in gold if _best_match(g, ours) is not None)
    out = {"pdfs": len(pdfs), "dir": str(root)}
    for name, c in counts.items():
        out[name] = {
            **c,
            "precision": round(c["right"] / c["flagged"], 4) if c["flagged"] else None,
            "recall": round(c["found"] / c["gold"], 4) if c["gold"] else None,
        }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
