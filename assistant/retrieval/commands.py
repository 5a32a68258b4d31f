"""CLI: ``assistant index`` and ``assistant recommend``."""

from __future__ import annotations

import json
import sys
import time

import click

from assistant.retrieval.index import KINDS


def _open_library(ctx: click.Context, db: str | None):
    from assistant.cli import resolve_db_path
    from assistant.library.store import Library

    path = resolve_db_path(ctx, db)
    if not path.exists():
        raise click.ClickException(
            f"library not found: {path} (import papers with `assistant library import`)"
        )
    return Library(path)


class _Progress:
    """One status line on stderr with rate and ETA, refreshed at most twice a second."""

    def __init__(self, quiet: bool):
        self.quiet = quiet
        self.last = 0.0

    def __call__(self, p) -> None:
        if self.quiet:
            return
        now = time.monotonic()
        final = p.done >= p.total
        if not final and now - self.last < 0.5:
            return
        self.last = now
        if p.stage == "embed":
            eta = (
                f", ETA {int(p.eta_s // 60)}m{int(p.eta_s % 60):02d}s"
                if p.eta_s is not None
                else ""
            )
            msg = f"embedding {p.done}/{p.total} papers ({p.rate:.1f}/s{eta})"
        elif p.stage == "bm25":
            msg = f"BM25 index over {p.total} papers" + (" done" if final and p.total else "...")
        else:
            msg = f"writing FAISS index ({p.total} vectors)"
        click.echo(f"\r{msg:<78}", nl=final or p.stage != "embed", err=True)


@click.command("index")
@click.option(
    "--db",
    "db",
    type=click.Path(dir_okay=False),
    default=None,
    help="Library DB (default: global --db).",
)
@click.option(
    "--encoder",
    "encoder_name",
    default=None,
    help="Encoder model name or folder (default: minilm).",
)
@click.option(
    "--kind",
    type=click.Choice(KINDS),
    default="auto",
    show_default=True,
    help="FAISS index: exact flat inner product below 200k papers, HNSW above (auto).",
)
@click.option(
    "--max-length",
    type=int,
    default=None,
    help="Tokens embedded per paper (default: the index's, else 128).",
)
@click.option(
    "--reuse-from",
    "reuse_from",
    multiple=True,
    type=click.Path(exists=True, file_okay=False),
    help="Reuse vectors from another index or embedding cache built with the same encoder.",
)
@click.option(
    "--budget",
    "budget_s",
    type=float,
    default=None,
    help="Stop embedding after this many seconds and write a partial index (rerun to continue).",
)
@click.option("--batch-size", type=int, default=32, show_default=True)
@click.option(
    "--rebuild", is_flag=True, help="Discard the existing index and embed everything again."
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="No progress line.")
@click.pass_context
def index(
    ctx,
    db,
    encoder_name,
    kind,
    max_length,
    reuse_from,
    budget_s,
    batch_size,
    rebuild,
    as_json,
    quiet,
):
    """Embed new/changed papers and update the FAISS + BM25 indexes (resumable)."""
    from assistant.config import index_dir_for
    from assistant.retrieval.index import build_index, load_index_encoder

    library = _open_library(ctx, db)
    try:
        if library.count() == 0:
            raise click.ClickException(
                f"the library {library.path} is empty: nothing to index "
                "(import papers with `assistant library import`)"
            )
        encoder = load_index_encoder(index_dir_for(library.path), encoder_name, max_length)
        try:
            report = build_index(
                library,
                encoder,
                _Progress(quiet or as_json),
                kind=kind,
                batch_size=batch_size,
                rebuild=rebuild,
                reuse_from=reuse_from,
                embed_budget_s=budget_s,
            )
        except KeyboardInterrupt:
            click.echo(
                "\ninterrupted: embedded chunks are kept; run `assistant index` again to resume",
                err=True,
            )
            sys.exit(130)
    finally:
        library.close()
    if as_json:
        click.echo(json.dumps(report.as_dict(), indent=2))
        return
    if report.rebuilt_reason:
        click.echo(f"rebuilt: {report.rebuilt_reason}")
    for warning in report.warnings:
        click.echo(f"warning: {warning}", err=True)
    click.echo(
        f"{report.total} papers indexed ({report.kind}): {report.added} added, {report.updated} updated, "
        f"{report.removed} removed, {report.unchanged} unchanged"
        + (f", {report.resumed} resumed" if report.resumed else "")
        + f" in {report.seconds:.1f}s"
        + (f" ({report.embed_rate:.1f} papers/s)" if report.embed_rate else "")
    )


@click.command("recommend")
@click.argument("text", required=False, default="")
@click.option(
    "--db",
    "db",
    type=click.Path(dir_okay=False),
    default=None,
    help="Library DB (default: global --db).",
)
@click.option(
    "--mode",
    type=click.Choice(["auto", "local", "paragraph", "global"]),
    default="auto",
    show_default=True,
)
@click.option("--title", default=None, help="The manuscript's title (enhances the query).")
@click.option("--abstract", default=None, help="The manuscript's abstract (enhances the query).")
@click.option("-k", "k", type=int, default=10, show_default=True, help="Number of recommendations.")
@click.option(
    "--candidates",
    type=int,
    default=100,
    show_default=True,
    help="Prefilter candidates passed on to the reranker.",
)
@click.option(
    "--reranker",
    default="auto",
    show_default=True,
    help="Cross-encoder folder or name; 'auto' = the shipped one if it is enabled by default, 'none' = off.",
)
@click.option(
    "--fusion",
    type=click.Choice(["weighted", "rrf"]),
    default=None,
    help="Fusion of dense and BM25 (default: tuned).",
)
@click.option("--no-dense", is_flag=True, help="BM25 only.")
@click.option("--no-bm25", is_flag=True, help="Dense only.")
@click.option("--no-intent", is_flag=True, help="Skip intent labelling.")
@click.option(
    "--max-year", type=int, default=None, help="Only papers published in or before this year."
)
@click.option(
    "--need",
    default=None,
    metavar="INTENT",
    help="Intent-aware ranking: favour papers the library cites for this purpose "
    "(background, method or result; 'I need a method citation' works too).",
)
@click.option(
    "--bibtex",
    is_flag=True,
    help="Also print each result's BibTeX entry (in JSON: a 'bibtex' field).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def recommend(
    ctx,
    text,
    db,
    mode,
    title,
    abstract,
    k,
    candidates,
    reranker,
    fusion,
    no_dense,
    no_bm25,
    no_intent,
    max_year,
    need,
    bibtex,
    as_json,
):
    """Recommend papers from the library for TEXT (a citation context, paragraph, or nothing + --title/--abstract)."""
    from dataclasses import replace

    from assistant.retrieval.intent_stage import parse_intent_preference
    from assistant.retrieval.pipeline import PipelineConfig, Recommender, shipped_reranker
    from assistant.retrieval.query import EmptyQueryError, Query
    from assistant.retrieval.searcher import RetrievalError

    if k <= 0:
        raise click.BadParameter("must be positive", param_hint="-k")
    try:
        preference = parse_intent_preference(need)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--need") from None
    if preference and no_intent:
        raise click.UsageError("--need ranks by intent: it cannot be combined with --no-intent")
    library = _open_library(ctx, db)
    try:
        config = PipelineConfig(
            k=k,
            candidates=max(candidates, k),
            reranker=None,
            use_dense=not no_dense,
            use_bm25=not no_bm25,
            use_intent=not no_intent,
            max_year=max_year,
            intent_preference=preference,
        )
        if reranker == "auto":
            shipped = shipped_reranker()
            if shipped is not None:
                config = replace(config, reranker=shipped[0])
                if shipped[1] is not None:
                    config = replace(config, rerank_weight=shipped[1])
        elif reranker and reranker.lower() != "none":
            config = replace(config, reranker=reranker)
        if fusion:
            config = replace(config, fusion=fusion)
        try:
            query = Query(text=text or "", mode=mode, title=title, abstract=abstract)
            query.parts()
            result = Recommender(library, config).recommend(query)
        except EmptyQueryError as exc:
            raise click.UsageError(str(exc)) from exc
        except RetrievalError as exc:
            raise click.ClickException(str(exc)) from exc
    finally:
        library.close()
    for w in result.warnings:
        click.echo(f"warning: {w}", err=True)
    if as_json:
        click.echo(json.dumps(result_to_dict(result, bibtex=bibtex), indent=2, ensure_ascii=False))
        return
    need_note = f", ranked for a {preference} citation" if preference else ""
    click.echo(f"mode: {result.mode}{need_note}   ({result.timings_ms.get('total', 0):.0f} ms)")
    for rank, item in enumerate(result.items, start=1):
        p = item.paper
        authors = p.first_author_lastname + (" et al." if len(p.authors) > 1 else "")
        intent = f"  [{item.intent}]" if item.intent else ""
        click.echo(
            f"{rank:>3}. {p.citekey or p.id}  {p.title} ({authors}, {p.year or 'n.d.'})  score {item.score:.3f}{intent}"
        )
    if bibtex and result.items:
        from assistant.library.export import paper_to_bibtex

        click.echo("")
        click.echo("\n".join(paper_to_bibtex(item.paper) for item in result.items), nl=False)


def result_to_dict(result, bibtex: bool = False) -> dict:
    """JSON-friendly view of a RecommendationResult (with each paper's BibTeX entry when ``bibtex``)."""
    if bibtex:
        from assistant.library.export import paper_to_bibtex
    return {
        "query": result.query.display_text(),
        "mode": result.mode,
        "timings_ms": {k: round(v, 2) for k, v in result.timings_ms.items()},
        "warnings": result.warnings,
        "items": [
            {
                "rank": rank,
                "paper_id": it.paper.id,
                "citekey": it.paper.citekey,
                "title": it.paper.title,
                "year": it.paper.year,
                "doi": it.paper.doi,
                "score": round(float(it.score), 6),
                "scores": {k: round(float(v), 6) for k, v in it.scores.items()},
                "ranks": it.ranks,
                "intent": it.intent,
                "intent_confidence": it.intent_confidence,
                "intent_probs": it.intent_probs,
                "intent_uncertain": it.intent_uncertain,
                "intent_evidence": it.intent_evidence,
                **({"bibtex": paper_to_bibtex(it.paper)} if bibtex else {}),
            }
            for rank, it in enumerate(result.items, start=1)
        ],
    }
