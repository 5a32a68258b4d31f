"""Build ``assistant/resources/acm_stats.json.gz``: the statistics ``assistant bench scale`` draws
synthetic papers from (word and bigram frequencies of titles and abstracts, surname and given-name
frequencies, venues, years, lengths). Counts only, no record is copied; under 200 KB.

    assistant --db acm.sqlite library import ../shared/data/acm-cr/acm-dl   # the ACM-DL archive
    python -m tools.acm_stats --db acm.sqlite [--out assistant/resources/acm_stats.json.gz]
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import re
from collections import Counter
from pathlib import Path

WORD = re.compile(r"[a-z][a-z0-9\-]+|[0-9]+")
VOCAB = 6000
BIGRAMS = 8000
SURNAMES = 2000
GIVEN = 800
VENUES = 200


def _hist(values: list[int], cap: int) -> list[int]:
    counts = Counter(min(v, cap) for v in values)
    return [counts.get(i, 0) for i in range(cap + 1)]


def build(db: Path) -> dict:
    from assistant.library.store import Library

    words: Counter = Counter()
    title_words: Counter = Counter()
    pairs: Counter = Counter()
    surnames: Counter = Counter()
    given: Counter = Counter()
    venues: Counter = Counter()
    years: Counter = Counter()
    title_len, abstract_len, n_authors = [], [], []
    with_abstract = total = 0
    library = Library(db)
    try:
        for paper in library.iter_papers(with_record=False):
            total += 1
            t = WORD.findall((paper.title or "").lower())
            a = WORD.findall((paper.abstract or "").lower())
            title_words.update(t)
            words.update(t)
            words.update(a)
            for seq in (t, a):
                pairs.update(itertools.pairwise(seq))
            title_len.append(len(t))
            if a:
                with_abstract += 1
                abstract_len.append(len(a))
            n_authors.append(len(paper.authors))
            for name in paper.authors:
                last, _, first = name.partition(",")
                surnames[last.strip()] += 1
                if first.strip():
                    given[first.strip().split()[0]] += 1
            venues[f"{paper.entry_type}|{paper.venue or ''}"] += 1
            if paper.year:
                years[int(paper.year)] += 1
    finally:
        library.close()
    vocab = [w for w, _ in words.most_common(VOCAB)]
    index = {w: i for i, w in enumerate(vocab)}
    bigrams = [
        [index[a], index[b], n]
        for (a, b), n in pairs.most_common(BIGRAMS * 3)
        if a in index and b in index
    ][:BIGRAMS]
    return {
        "source": "ACM-DL BibTeX archive (acm-cr/acm-dl.tar.xz), counts only",
        "papers": total,
        "with_abstract": round(with_abstract / max(total, 1), 4),
        "vocab": vocab,
        "word_counts": [words[w] for w in vocab],
        "title_counts": [title_words.get(w, 0) for w in vocab],
        "bigrams": bigrams,
        "surnames": surnames.most_common(SURNAMES),
        "given": given.most_common(GIVEN),
        "venues": venues.most_common(VENUES),
        "years": sorted(years.items()),
        "title_len": _hist(title_len, 40),
        "abstract_len": _hist([min(n // 10, 60) for n in abstract_len], 60),  # tens of words
        "authors_len": _hist(n_authors, 20),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parents[1] / "assistant/resources/acm_stats.json.gz",
    )
    args = parser.parse_args()
    stats = build(args.db)
    data = json.dumps(stats, separators=(",", ":"), ensure_ascii=False).encode()
    args.out.write_bytes(gzip.compress(data, 9, mtime=0))
    print(
        json.dumps(
            {"out": str(args.out), "bytes": args.out.stat().st_size, "papers": stats["papers"]}
        )
    )


if __name__ == "__main__":
    main()
