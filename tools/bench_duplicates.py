"""Duplicate finder on a real library: groups with two DOIs, and precision/recall on planted copies.

Usage: ``python tools/bench_duplicates.py LIBRARY.sqlite [--plant 100] [--seed 1]``. Works on a
copy. First lists the finder's groups on the library as it is (the ACM-DL archive holds one
record per DOI, so every group there is a candidate for hand-checking). Then plants ``--plant``
copies of random papers as another source would write them (no DOI, no pages, one typo in a
title word) and reports how many groups are exactly a planted pair (precision) and how many
planted pairs were found (recall). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path


def _typo(title: str, rng: random.Random) -> str | None:
    words = [i for i, w in enumerate(title.split()) if len(w) >= 6 and w.isalpha()]
    if not words:
        return None
    parts = title.split()
    i = rng.choice(words)
    w = parts[i]
    j = rng.randrange(1, len(w) - 2)
    parts[i] = w[:j] + w[j + 1] + w[j] + w[j + 2 :]
    return " ".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("library")
    ap.add_argument("--plant", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    from assistant.library.duplicates import find_duplicates
    from assistant.library.store import Library

    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "lib.sqlite"
        shutil.copy(args.library, db)
        lib = Library(db)
        t0 = time.perf_counter()
        before = find_duplicates(lib)
        find_s = time.perf_counter() - t0
        two_dois = sum(len({p.doi for p in lib.get_many(g.ids) if p.doi}) > 1 for g in before)
        ids = lib.paper_ids()
        planted: dict[int, int] = {}
        with lib.transaction():
            for pid in rng.sample(ids, len(ids)):
                if len(planted) >= args.plant:
                    break
                p = lib.get(pid)
                title = _typo(p.title, rng) if p.authors and p.year else None
                if not title:
                    continue
                extra = {k: v for k, v in p.extra.items() if k not in ("pages", "numpages")}
                copy = replace(
                    p, id=None, citekey=None, doi=None, title=title, extra=extra, original_text=""
                )
                out = lib.add_paper(copy)
                if out.status == "added":
                    planted[out.id] = pid
        groups = [g for g in find_duplicates(lib) if set(g.ids) & set(planted)]
        exact = sum(len(g.ids) == 2 and planted.get(max(g.ids)) == min(g.ids) for g in groups)
        print(
            json.dumps(
                {
                    "papers": len(ids),
                    "groups_before_planting": len(before),
                    "groups_with_two_dois": two_dois,
                    "find_s": round(find_s, 1),
                    "planted_copies": len(planted),
                    "groups_with_a_planted_copy": len(groups),
                    "exact_planted_pairs": exact,
                    "precision_on_planted": round(exact / len(groups), 3) if groups else None,
                    "recall_on_planted": round(exact / len(planted), 3) if planted else None,
                    "not_exact": [
                        [
                            (p.id, p.citekey, p.doi, p.year, p.venue[:40], p.title[:80])
                            for p in lib.get_many(g.ids)
                        ]
                        + g.evidence
                        for g in groups
                        if not (len(g.ids) == 2 and planted.get(max(g.ids)) == min(g.ids))
                    ],
                    "groups_before": [
                        [re.sub(r"\s+", " ", p.title)[:80] for p in lib.get_many(g.ids)]
                        for g in before[:20]
                    ],
                }
            )
        )
        lib.close()


if __name__ == "__main__":
    main()
