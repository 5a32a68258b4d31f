"""``assistant eval acm-cr``: the ACM-CR citation-recommendation protocol over a library.

Candidates = the library's @article/@inproceedings records with a DOI, minus the blacklist
(the citing papers). Paragraph queries = each ``<context>``; sentence queries = each cited
``<s>``; markers are removed; relevant = cited DOIs among the candidates; queries with none
are skipped. Metrics per stage (BM25, dense, fused, reranked): R@10, nDCG@10, MRR@100, R@100.

Three query variants: ``plain`` (the passage alone: the protocol as published),
``enhanced`` (plus the citing paper's title/abstract, and the neighbouring sentences for
sentence queries) and ``product`` (enhanced plus the citing paper's authors and year, read from
its PDF through the documents layer, as the app reads an imported manuscript).

With a learned ranker (``config.ranker``) a ``ranked`` stage is added; ``collect`` receives the
ranker's feature rows of every query (``training.ranker`` fits and cross-validates on them).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from assistant.documents.abbreviations import find_abbreviations
from assistant.evaluation.acm_cr_data import (
    CitingPaper,
    EvalQuery,
    build_queries,
    load_collection,
    read_blacklist,
    read_pdf_meta,
)
from assistant.evaluation.metrics import (
    mean_metrics,
    percentile_ms,
    query_metrics,
    write_trec_qrels,
    write_trec_run,
)
from assistant.library.normalize import normalize_doi
from assistant.progress import Progress, ProgressEvent

LEVELS = ("paragraph", "sentence")
VARIANTS = ("plain", "enhanced", "product")
CANDIDATE_TYPES = ("article", "inproceedings")


def candidate_map(library, blacklist: set[str]) -> tuple[dict[str, int], set[int]]:
    """``({doi: paper id} of the protocol's candidates, {ids of every other library paper})``."""
    by_doi: dict[str, int] = {}
    others: set[int] = set()
    for paper in library.iter_papers():
        doi = normalize_doi(paper.doi)
        if (
            paper.entry_type in CANDIDATE_TYPES
            and doi
            and doi not in blacklist
            and doi not in by_doi
        ):
            by_doi[doi] = int(paper.id)
        else:
            others.add(int(paper.id))
    return by_doi, others


def _find_blacklist(papers_dir: Path) -> Path | None:
    for folder in (papers_dir, *papers_dir.parents[:2]):
        if (folder / "blacklist.txt").exists():
            return folder / "blacklist.txt"
    return None


def manuscript_abbreviations(paper) -> dict[str, str]:
    """The abbreviations a citing paper defines in the text the benchmark gives of it."""
    return find_abbreviations(
        " ".join([paper.title, paper.abstract] + [c.text for c in paper.contexts])
    )


def abbreviations_by_paper(papers) -> dict[str, tuple]:
    """``{citing paper id: the (short, long) pairs it defines}``, as ``protocol_query`` takes them."""
    return {p.paper_id: tuple(manuscript_abbreviations(p).items()) for p in papers}


def protocol_query(q, variant: str, abbreviations: tuple = ()):
    """The product's ``Query`` for a dev query under a protocol variant: ``plain`` (context
    only), ``enhanced`` (+ the citing paper's title, abstract, neighbouring text and the
    ``abbreviations`` it defines) or ``product`` (+ its authors and year)."""
    from assistant.retrieval.query import build_query

    enhanced = variant in ("enhanced", "product")
    product = variant == "product"
    return build_query(
        q.text,
        "paragraph" if q.level == "paragraph" else "local",
        title=q.title if enhanced else None,
        abstract=q.abstract if enhanced else None,
        context=q.context if enhanced else None,
        enhance=enhanced,
        authors=q.authors if product else (),
        year=q.year if product else None,
        abbreviations=abbreviations if enhanced else (),
    )


def protocol_config(config, others, candidates: int = 100, depth: int = 100):
    """The ACM-CR protocol's run of a ``PipelineConfig`` (built by
    ``retrieval.pipeline.pipeline_config``): the blacklist and the papers that are no candidates
    (``others``) left out, no manuscript rule, no year filter, no de-duplication,
    ``candidates`` fused candidates and at least ``depth`` per retriever."""
    return replace(
        config,
        exclude_ids=frozenset(others),
        exclude_cited=False,
        filter_by_year=False,
        depth=max(config.depth, depth),
        candidates=candidates,
        dedupe=False,
    )


@dataclass
class ProtocolSetup:
    """What every run of the ACM-CR protocol sets up before its first query (``eval acm-cr``,
    ``tools/eval_chips.py``, ``tools/eval_reranker.py``, ``tools/intent_need_eval.py``): the
    citing papers, the blacklist, the candidates of the library and the abbreviations each citing
    paper defines. Built by :func:`protocol_setup`."""

    papers_dir: Path
    papers: list[CitingPaper]
    blacklist: Path | None  # the blacklist file read (None: none found, every paper may win)
    by_doi: dict[str, int]  # the protocol's candidates: {DOI: library paper id}
    others: set[int]  # every other library paper: left out of every run
    abbreviations: dict[str, tuple]  # {citing paper id: the (short, long) pairs it defines}

    @property
    def doi_of(self) -> dict[int, str]:
        """``{candidate paper id: DOI}``: a ranked id back to the protocol's answer key."""
        return {pid: doi for doi, pid in self.by_doi.items()}

    def queries(self, levels=LEVELS, limit: int | None = None) -> list[EvalQuery]:
        """The dev queries of ``levels`` that cite at least one candidate (the first ``limit``)."""
        queries = [q for q in build_queries(self.papers, tuple(levels)) if self.relevant(q)]
        return queries[:limit] if limit else queries

    def relevant(self, q: EvalQuery) -> set[str]:
        """The DOIs ``q`` cites that are candidates (its relevant documents)."""
        return q.cited_dois & self.by_doi.keys()

    def query(self, q: EvalQuery, variant: str):
        """The product's ``Query`` of ``q`` under a protocol variant (:func:`protocol_query`)."""
        return protocol_query(q, variant, self.abbreviations.get(q.paper, ()))

    def run_config(self, config, candidates: int = 100, depth: int = 100):
        """``config`` as the protocol runs it (:func:`protocol_config`)."""
        return protocol_config(config, self.others, candidates=candidates, depth=depth)

    def keep_candidates(self, ids: set[int]) -> None:
        """Only the candidates among ``ids`` stay candidates; the rest join ``others``."""
        self.others |= {pid for pid in self.by_doi.values() if pid not in ids}
        self.by_doi = {doi: pid for doi, pid in self.by_doi.items() if pid in ids}


def protocol_setup(
    library,
    papers_dir: Path | str,
    *,
    blacklist: Path | str | None = None,
    pdf_meta: bool = False,
    abbreviations: bool = True,
) -> ProtocolSetup:
    """Set up the ACM-CR protocol on ``library`` for the citing papers under ``papers_dir``.

    ``blacklist``: the file of DOIs that are never candidates (default: ``blacklist.txt`` in
    ``papers_dir`` or one of the two folders above it). ``pdf_meta``: read each citing paper's
    authors and year from its PDF (the ``product`` variant needs them). ``abbreviations``: collect
    the abbreviations each citing paper defines (enhanced and product queries expand them)."""
    papers_dir = Path(papers_dir)
    bl_path = Path(blacklist) if blacklist else _find_blacklist(papers_dir)
    by_doi, others = candidate_map(library, read_blacklist(bl_path))
    papers = load_collection(papers_dir)
    if pdf_meta:
        read_pdf_meta(papers)
    return ProtocolSetup(
        papers_dir=papers_dir,
        papers=papers,
        blacklist=bl_path,
        by_doi=by_doi,
        others=others,
        abbreviations=abbreviations_by_paper(papers) if abbreviations else {},
    )


def evaluate_acm_cr(
    papers_dir: Path | str,
    library,
    config=None,
    levels=LEVELS,
    *,
    variants=VARIANTS[:2],
    recommender=None,
    blacklist: Path | str | None = None,
    run_dir: Path | str | None = None,
    limit: int | None = None,
    progress: Progress | None = None,
    covered_only: bool = False,
    collect: list | None = None,
    abbreviations: bool = True,
) -> dict:
    """Run the protocol; returns ``{"levels": {level: {variant: {stage: metrics}}}, "latency_ms": ..., ...}``.

    ``config`` is a ``PipelineConfig`` (its ``reranker`` adds the reranked stage);
    ``recommender`` may be passed to reuse a loaded one. Run files (TREC) go to ``run_dir``.
    ``covered_only`` restricts the candidates to papers that already have a vector (a fair
    stage comparison while the dense index is partial; not the published protocol).
    ``abbreviations``: enhanced/product queries expand the abbreviations the citing paper
    defines (in its title, abstract and contexts), as the product does with the draft.
    """
    # long: the ACM-CR protocol (levels x variants x stages, latency, run files) read top to bottom
    from assistant.retrieval.pipeline import PipelineConfig, Recommender

    config = config or (recommender.config if recommender else PipelineConfig())
    setup = protocol_setup(
        library,
        papers_dir,
        blacklist=blacklist,
        pdf_meta="product" in variants,
        abbreviations=abbreviations,
    )
    if not setup.by_doi:
        raise ValueError(
            f"the library {getattr(library, 'path', '')} has no candidates "
            "(@article/@inproceedings records with a DOI)"
        )
    recommender = recommender or Recommender(library, config)
    if covered_only:
        import numpy as np

        setup.keep_candidates(set(np.load(recommender.searcher.paths.dense / "ids.npy").tolist()))
    doi_of, bl_path = setup.doi_of, setup.blacklist
    queries = setup.queries(levels, limit)
    run_config = setup.run_config(config, candidates=max(config.candidates, 100))
    use_dense = config.use_dense and recommender.searcher.has_dense
    stages = (["bm25"] if config.use_bm25 else []) + (["dense"] if use_dense else [])
    stages += (["fused"] if len(stages) == 2 else []) + (["ranked"] if config.ranker else [])
    stages += ["reranked"] if config.reranker else []
    per_query: dict[tuple[str, str, str], list[dict]] = {}
    runs: dict[tuple[str, str, str], dict[str, list[tuple[str, float]]]] = {}
    latency: dict[str, list[float]] = {"prefilter": [], "reranked": []}
    total, done = len(queries) * len(variants), 0
    for variant in variants:
        for q in queries:
            relevant = setup.relevant(q)
            query = setup.query(q, variant)
            t = time.perf_counter()
            pre = recommender.prefilter(query, run_config)
            latency["prefilter"].append((time.perf_counter() - t) * 1000)
            rankings = {
                "bm25": list(zip(pre.bm25[0].tolist(), pre.bm25[1].tolist())),
                "dense": list(zip(pre.dense[0].tolist(), pre.dense[1].tolist())),
                "fused": pre.fused[:100],
            }
            ranked_items = None
            if config.ranker or collect is not None:
                ranked_items = recommender._candidates(pre, replace(run_config, candidates=200))
            if collect is not None:
                ids, x = recommender.ranker_features(pre, query, ranked_items)
                collect.append(
                    {
                        "qid": q.qid,
                        "level": q.level,
                        "variant": variant,
                        "group": q.paper,
                        "ids": ids,
                        "x": x,
                        "y": [1 if pid in doi_of and doi_of[pid] in relevant else 0 for pid in ids],
                        "relevant": sorted(relevant),
                        "dois": [doi_of.get(pid) for pid in ids],
                        # what re-fusing and reranking it offline needs
                        "bm25": pre.bm25,
                        "dense": pre.dense,
                        "focus": pre.parts.focus,
                        "prefilter_ms": latency["prefilter"][-1],
                    }
                )
            items = None
            if config.ranker:
                items = recommender.rank(pre, query, replace(run_config, candidates=100))
                rankings["ranked"] = [(it.paper.id, it.score) for it in items]
            if "reranked" in stages:  # as the product: on the ranker's order when it runs
                t = time.perf_counter()
                items = recommender._rerank(
                    pre.parts, items or recommender._candidates(pre, run_config), run_config
                )
                latency["reranked"].append(
                    (time.perf_counter() - t) * 1000 + latency["prefilter"][-1]
                )
                rankings["reranked"] = [(it.paper.id, it.score) for it in items]
            for stage in stages:
                ranked = [
                    (doi_of[pid], score) for pid, score in rankings[stage][:100] if pid in doi_of
                ]
                per_query.setdefault((q.level, variant, stage), []).append(
                    query_metrics([d for d, _ in ranked], relevant)
                )
                runs.setdefault((q.level, variant, stage), {})[q.qid] = ranked
            done += 1
            if progress:
                progress(ProgressEvent(done, total, "query", f"query {done}/{total}"))
    result: dict = {
        "levels": {},
        "queries": {},
        "config": _config_dict(run_config),
        "covered_only": covered_only,
        "candidates": len(setup.by_doi),
        "blacklist": str(bl_path) if bl_path else None,
        "warnings": []
        if bl_path
        else [
            "NO BLACKLIST FOUND: the citing papers themselves are candidates, so these figures "
            "are inflated; pass --blacklist acm-cr/blacklist.txt"
        ],
    }
    for (level, variant, stage), rows in per_query.items():
        result["levels"].setdefault(level, {}).setdefault(variant, {})[stage] = mean_metrics(rows)
        result["queries"][level] = len(rows)
    result["latency_ms"] = {
        name: {"p50": percentile_ms(v, 50), "p95": percentile_ms(v, 95), "n": len(v)}
        for name, v in latency.items()
        if v
    }
    if run_dir:
        run_dir = Path(run_dir)
        files = []
        for (level, variant, stage), run in runs.items():
            files.append(
                str(
                    write_trec_run(
                        run_dir / f"{level}-{variant}-{stage}.run", run, f"{stage}-{variant}"
                    )
                )
            )
        for level in {q.level for q in queries}:
            qrels = {q.qid: setup.relevant(q) for q in queries if q.level == level}
            files.append(str(write_trec_qrels(run_dir / f"{level}.qrels", qrels)))
        result["run_files"] = sorted(files)
    return result


def _config_dict(config) -> dict:
    out = asdict(config)
    out["exclude_ids"] = f"{len(config.exclude_ids)} ids"
    return out


def format_table(result: dict) -> str:
    lines = [
        f"{'level':<10} {'variant':<9} {'stage':<9} {'R@10':>6} {'nDCG@10':>8} {'MRR':>6} {'R@100':>6}"
    ]
    for level, variants in result["levels"].items():
        for variant, stages in variants.items():
            for stage, m in stages.items():
                lines.append(
                    f"{level:<10} {variant:<9} {stage:<9} {m['R@10']:>6.3f} {m['nDCG@10']:>8.3f} "
                    f"{m['MRR']:>6.3f} {m['R@100']:>6.3f}"
                )
    for name, lat in result.get("latency_ms", {}).items():
        lines.append(
            f"latency {name}: p50 {lat['p50']:.1f} ms, p95 {lat['p95']:.1f} ms over {lat['n']} queries"
        )
    return "\n".join(lines)
