"""Are the intent chips informative? Prints JSON (issue #34, item 2).

For the ACM-CR dev papers' paragraph and sentence queries, built as the product builds them
(``evaluation.acm_cr.protocol_query``, variant ``product``: the context plus the citing paper's
title, abstract, authors and year), the full pipeline (learned ranker, reranker and intent stage
as the service configures them; the protocol's candidates) returns a top-10 list. On it, the
chips the product shows are read with the one rule of every face (``service.chips``: a
per-paper chip only when it is worth showing, else at most one sentence-level label):

* ``lists_with_several_labels``: share of result lists showing more than one distinct label
  (per-paper chips and the sentence label together); ``lists_with_several_labels_raw`` counts
  every card's label, shown or not;
* ``results_with_chip``: share of results showing a per-paper chip;
* ``chip_accuracy``: on the results the citing paper really cites, the share of shown
  per-paper labels equal to the intent of the citing paper's real context sentence(s) for that
  paper. PROXY: the dev set has no intent annotations, so that "real" intent is the shipped
  intent model's label of those sentences (markers stripped; several sentences: the mean of
  their class probabilities). ``all_labels_accuracy`` is the same for every card's label,
  ``sentence_label_accuracy`` for the query's own sentence-level label (what a chip-free list
  would say), so a chip is worth showing when its accuracy beats that baseline.

Usage: ``python -m tools.eval_chips --db LIBRARY.sqlite [--papers ../shared/data/acm-cr/dev]
[--limit N]`` (the library must be indexed: ``assistant index``).
"""

from __future__ import annotations

import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import click
import numpy as np

DEFAULT_PAPERS = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "acm-cr" / "dev"
TOP = 10


def real_intents(papers, classifier) -> dict[tuple[str, str], str]:
    """``(citing paper id, cited DOI) -> label`` of the sentences that cite that DOI."""
    from assistant.documents.markers import strip_citation_markers
    from assistant.library.normalize import normalize_doi

    texts: dict[tuple[str, str], list[str]] = defaultdict(list)
    for paper in papers:
        for ctx in paper.contexts:
            for sent in ctx.sentences:
                for number in sent.cites:
                    doi = normalize_doi(paper.references.get(number))
                    text = strip_citation_markers(sent.text)
                    if doi and text:
                        texts[(paper.paper_id, doi)].append(text)
    keys = list(texts)
    flat = [t for k in keys for t in texts[k]]
    probs = classifier.predict_proba(flat) if flat else np.zeros((0, len(classifier.labels)))
    out, at = {}, 0
    for key in keys:
        n = len(texts[key])
        out[key] = classifier.labels[int(np.argmax(probs[at : at + n].mean(axis=0)))]
        at += n
    return out


def shown_labels(items) -> tuple[list[str | None], str | None]:
    """Per card the label of its shown chip (None: no chip), and the list's sentence label."""
    from assistant.service.chips import intent_chips, sentence_intent

    per_card = [c.label if c.shown else None for c in intent_chips(items)]
    found = sentence_intent(items)
    return per_card, (found[0] if found else None)


def _share(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


def evaluate(db: Path, papers_dir: Path, limit: int | None = None) -> dict:
    from assistant.evaluation.acm_cr import protocol_setup
    from assistant.inference.intent import load_intent_classifier
    from assistant.library.store import Library
    from assistant.retrieval.pipeline import Recommender, pipeline_config

    start = time.perf_counter()
    library = Library(db)
    setup = protocol_setup(library, papers_dir, pdf_meta=True)
    doi_of = setup.doi_of
    classifier = load_intent_classifier()
    gold = real_intents(setup.papers, classifier)
    config = pipeline_config(k=TOP)  # the service's defaults: ranker, reranker, intent stage
    run = setup.run_config(config, candidates=max(config.candidates, 100))
    recommender = Recommender(library, config)
    out: dict = {
        "db": str(db),
        "papers": str(papers_dir),
        "candidates": len(setup.by_doi),
        "config": {"ranker": config.ranker, "reranker": config.reranker, "k": TOP},
        "proxy": "real intent = the shipped intent model's label of the citing sentence(s)",
        "levels": {},
    }
    for level in ("paragraph", "sentence"):
        queries = setup.queries((level,), limit)
        c = defaultdict(int)
        for q in queries:
            query = setup.query(q, "product")
            items = recommender.recommend(query, run).items[:TOP]
            per_card, sentence = shown_labels(items)
            c["lists"] += 1
            c["results"] += len(items)
            c["chips"] += sum(1 for lab in per_card if lab)
            shown = {lab for lab in per_card if lab} | ({sentence} if sentence else set())
            c["several"] += len(shown) > 1
            c["several_raw"] += len({it.intent for it in items if it.intent}) > 1
            for item, chip in zip(items, per_card):
                real = gold.get((q.paper, doi_of.get(item.paper.id, "")))
                if real is None:
                    continue  # not cited by this paper (or no context sentence for it)
                c["cited"] += 1
                c["all_right"] += item.intent == real
                if chip:
                    c["chip_n"] += 1
                    c["chip_right"] += chip == real
                if sentence:
                    c["sentence_n"] += 1
                    c["sentence_right"] += sentence == real
        out["levels"][level] = {
            "queries": c["lists"],
            "lists_with_several_labels": _share(c["several"], c["lists"]),
            "lists_with_several_labels_raw": _share(c["several_raw"], c["lists"]),
            "results_with_chip": _share(c["chips"], c["results"]),
            "cited_results": c["cited"],
            "chip_accuracy": _share(c["chip_right"], c["chip_n"]),
            "chip_accuracy_n": c["chip_n"],
            "all_labels_accuracy": _share(c["all_right"], c["cited"]),
            "sentence_label_accuracy": _share(c["sentence_right"], c["sentence_n"]),
            "sentence_label_n": c["sentence_n"],
        }
    library.close()
    out["seconds"] = round(time.perf_counter() - start, 1)
    return out


@click.command()
@click.option("--db", type=click.Path(exists=True, dir_okay=False), required=True)
@click.option("--papers", type=click.Path(exists=True, file_okay=False), default=None)
@click.option("--limit", type=int, default=None, help="Use only the first N queries per level.")
def main(db: str, papers: str | None, limit: int | None) -> None:
    """Print the chip informativeness figures as JSON."""
    papers_dir = Path(papers) if papers else DEFAULT_PAPERS.resolve()
    if not papers_dir.is_dir():
        raise click.ClickException(f"ACM-CR dev papers not found at {papers_dir} (--papers)")
    result = evaluate(Path(db), papers_dir, limit)
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
