"""Rebuild the bundled demo library ``assistant/resources/sample/library.bib`` from the full ACM-DL library.

Topic: click-based / unbiased learning to rank and online evaluation (plus neighbouring ranking
work), so that ``assistant/resources/sample/draft.tex`` gets meaningful recommendations. Seeds are the
references of three ACM-CR dev papers on that topic; neighbours come from FTS queries. Only
@article/@inproceedings records with a DOI and an abstract, none from the ACM-CR blacklist.

    python -m tools.build_sample --db acm.sqlite --acm-cr ../shared/data/acm-cr
"""

from __future__ import annotations

import re
from pathlib import Path

import click

from assistant.config import RESOURCES_DIR
from assistant.library.export import write_bibtex
from assistant.library.store import Library

SEEDS = ("ictir-2020/3409256.3409820", "wsdm-2020/3336191.3371820", "sigir-2020/3397271.3401188")
QUERIES = {
    "unbiased learning to rank": 20,
    "counterfactual learning to rank": 18,
    "position bias clicks": 12,
    "click model web search": 20,
    "interleaving online evaluation": 12,
    "online learning to rank": 18,
    "propensity estimation examination": 8,
    "clickthrough data implicit feedback": 16,
    "dueling bandit gradient descent": 6,
    "learning to rank listwise": 8,
    "off-policy evaluation ranking": 8,
    "query performance prediction": 6,
    "neural ranking model ad-hoc retrieval": 10,
    "BM25 probabilistic relevance": 6,
    "pseudo relevance feedback": 6,
    "evaluation metric user model": 8,
    "ranked list truncation": 6,
    "personal search email": 6,
    "trust bias presentation bias": 6,
    "LambdaMART gradient boosted trees ranking": 6,
}
HEADER = (
    "% Cite-Assist sample library: click-based and unbiased learning to rank, online evaluation,\n"
    "% click models and neural ranking. Records from the ACM-CR ACM-DL dump (Boudin et al., JCDL 2021,\n"
    "% Unlicense), exported with Cite-Assist's stable citekeys.\n\n"
)


def select_sample(lib: Library, acm_cr: Path) -> list[int]:
    """Paper ids of the sample, in a stable order (seed references first, then query neighbours)."""
    blacklist = {
        line.strip().lower()
        for line in (acm_cr / "blacklist.txt").read_text().splitlines()
        if line.strip()
    }
    chosen: list[int] = []

    def add(paper) -> None:
        if (
            paper
            and paper.id not in chosen
            and paper.abstract
            and paper.doi
            and paper.doi not in blacklist
            and paper.entry_type in ("article", "inproceedings")
        ):
            chosen.append(paper.id)

    for seed in SEEDS:
        for line in (acm_cr / "dev" / f"{seed}.dois").read_text().splitlines():
            match = re.search(r"(10\.\d{4,}/\S+)", line)
            if match and not line.startswith("-"):
                add(lib.get_by_doi(match.group(1)))
    for query, k in QUERIES.items():
        for paper in lib.search(query, limit=2 * k)[:k]:
            add(paper)
    return chosen


@click.command()
@click.option(
    "--db", type=click.Path(exists=True, dir_okay=False), required=True, help="Full ACM-DL library."
)
@click.option("--acm-cr", "acm_cr", type=click.Path(exists=True, file_okay=False), required=True)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    default=str(RESOURCES_DIR / "sample" / "library.bib"),
)
def main(db: str, acm_cr: str, output: str) -> None:
    with Library(db) as lib:
        papers = lib.get_many(select_sample(lib, Path(acm_cr)))
    with open(output, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(HEADER)
        write_bibtex(papers, fh)
    click.echo(
        f"wrote {len(papers)} entries to {output} ({Path(output).stat().st_size / 1000:.0f} KB)"
    )


if __name__ == "__main__":  # pragma: no cover
    main()
