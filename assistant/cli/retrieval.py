"""CLI: ``assistant index`` and ``assistant recommend``."""

from __future__ import annotations

import json
import sys

import click

from assistant.cli.options import db_option, quality_option
from assistant.cli.progress import command_progress
from assistant.service import INDEX_KINDS, EmptyQueryError


def _service(ctx: click.Context, db: str | None, quality: str | None = None, **settings):
    """The application service over the command's library (which must exist)."""
    from assistant.cli import resolve_db_path, resolve_quality
    from assistant.service import Service, ServiceSettings, require_library

    path = require_library(resolve_db_path(ctx, db))
    return Service(ServiceSettings(db_path=path, quality=resolve_quality(ctx, quality), **settings))


@click.command("index")
@db_option()
@click.option(
    "--encoder",
    "encoder_name",
    default=None,
    help="Encoder model name or folder (default: minilm).",
)
@click.option(
    "--kind",
    type=click.Choice(INDEX_KINDS),
    default="auto",
    show_default=True,
    help="FAISS index: auto = exact flat inner product below 500k papers, HNSW up to 5M, "
    "IVF-PQ above (see `assistant bench scale` for their recall and latency).",
)
@click.option(
    "--max-length",
    type=int,
    default=None,
    help="Tokens embedded per paper (default: the index's, else 256).",
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
@click.option(
    "--batch-size",
    type=int,
    default=None,
    help="Texts per encoder call (default: 32 on CPU, 256 on CUDA).",
)
@click.option(
    "--rebuild", is_flag=True, help="Discard the existing index and embed everything again."
)
@quality_option()
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
    quality,
    as_json,
    quiet,
):
    """Embed new/changed papers and update the FAISS + BM25 indexes (resumable).

    The dense index built is the quality tier's: ``--quality best`` builds the mpnet one beside
    the fast (MiniLM) one, which stays; ``auto`` builds the best one only where CUDA runs."""
    service = _service(ctx, db, quality, encoder=encoder_name, max_length=max_length)
    try:
        tier = service.tier().wanted
        report = service.build_index(
            command_progress(quiet or as_json),
            tier=tier,
            kind=kind,
            batch_size=batch_size,
            rebuild=rebuild,
            reuse_from=reuse_from,
            embed_budget_s=budget_s,
            reload=False,
        )
    except KeyboardInterrupt:
        click.echo(
            "\ninterrupted: embedded chunks are kept; run `assistant index` again to resume",
            err=True,
        )
        sys.exit(130)
    finally:
        service.close()
    if as_json:
        click.echo(json.dumps({**report.as_dict(), "tier": tier}, indent=2))
        return
    if report.rebuilt_reason:
        click.echo(f"rebuilt: {report.rebuilt_reason}")
    for warning in report.warnings:
        click.echo(f"warning: {warning}", err=True)
    click.echo(
        f"{report.total} papers indexed ({tier} tier, {report.kind}): {report.added} added, {report.updated} updated, "
        f"{report.removed} removed, {report.unchanged} unchanged"
        + (f", {report.resumed} resumed" if report.resumed else "")
        + f" in {report.seconds:.1f}s"
        + (f" ({report.embed_rate:.1f} papers/s)" if report.embed_rate else "")
    )


@click.command("recommend")
@click.argument("text", required=False, default="")
@db_option()
@click.option(
    "--mode",
    type=click.Choice(["auto", "local", "paragraph", "global"]),
    default="auto",
    show_default=True,
)
@click.option("--title", default=None, help="The manuscript's title (enhances the query).")
@click.option("--abstract", default=None, help="The manuscript's abstract (enhances the query).")
@click.option(
    "--author",
    "authors",
    multiple=True,
    help="An author of the manuscript ('Last, First'; repeat): a bibliographic signal of the ranker.",
)
@click.option("--year", type=int, default=None, help="The manuscript's year (recency signal).")
@click.option(
    "--context",
    default=None,
    help="The sentences around TEXT (a local query's supporting context, as the editor sends).",
)
@click.option(
    "--manuscript",
    "manuscript_file",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="The manuscript TEXT is taken from (LaTeX, Markdown, text or PDF): the query is the "
    "editor's for that passage (its paragraph as context; the manuscript's title, abstract and "
    "authors; what it cites and the manuscript itself left out).",
)
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
    "--ranker",
    default="auto",
    show_default=True,
    help="Learned ranker folder; 'auto' = the shipped one, 'off' = the fused order.",
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
@click.option(
    "--collection",
    default=None,
    help="Recommend only papers of this library collection (name, path or id).",
)
@quality_option()
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def recommend(
    ctx,
    text,
    db,
    mode,
    title,
    abstract,
    authors,
    year,
    context,
    manuscript_file,
    k,
    candidates,
    reranker,
    ranker,
    fusion,
    no_dense,
    no_bm25,
    no_intent,
    max_year,
    need,
    bibtex,
    collection,
    quality,
    as_json,
):
    """Recommend papers from the library for TEXT (a citation context, paragraph, or nothing + --title/--abstract)."""
    from assistant.service import RequestOptions, parse_intent_preference, query_for_text

    if k <= 0:
        raise click.BadParameter("must be positive", param_hint="-k")
    try:
        preference = parse_intent_preference(need)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--need") from None
    if preference and no_intent:
        raise click.UsageError("--need ranks by intent: it cannot be combined with --no-intent")
    doc = span = None
    if manuscript_file:
        from assistant.service import find_passage, read_manuscript

        doc = read_manuscript(manuscript_file)
        span = find_passage(doc, text)
        if span is None:
            raise click.UsageError(f"TEXT does not occur in {manuscript_file}")
    else:
        try:
            query = query_for_text(text, mode, title, abstract, authors, year, context)
        except EmptyQueryError as exc:
            raise click.UsageError(str(exc)) from exc
    service = _service(ctx, db, quality, reranker=reranker, ranker=ranker, use_intent=not no_intent)
    try:
        if doc is not None:
            query = _manuscript_query(
                service, doc, span, mode, title, abstract, authors, year, context
            )
        overrides = {"fusion": fusion} if fusion else {}
        setup = service.default_config(  # the set-up: the settings and these stage options
            candidates=max(candidates, k), use_dense=not no_dense, use_bm25=not no_bm25, **overrides
        )
        collection_ids = ()
        if collection:
            from assistant.service.library import find_collection

            collection_ids = (find_collection(service.reader(), collection).id,)
        request = RequestOptions(
            k=k, max_year=max_year, intent_preference=preference, collection_ids=collection_ids
        )
        result = service.recommend(query, setup, request=request)
        quality = _quality_view(service)
    finally:
        service.close()
    for w in result.warnings:
        click.echo(f"warning: {w}", err=True)
    if as_json:
        data = {**result_to_dict(result, bibtex=bibtex), "quality": quality}
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        _echo_result(result, preference, bibtex)


def _quality_view(service) -> dict:
    """The quality tier that answered (JSON), with a note on stderr when the wanted tier's
    index is still to be built."""
    tier, encoder = service.tier(), service.recommender.encoder
    if tier.building:
        click.echo(f"note: {tier.reason}: run `assistant index --quality {tier.wanted}`", err=True)
    return {
        "asked": tier.quality,
        "tier": tier.active,
        "reason": tier.reason,
        "encoder": getattr(encoder, "name", None),
        "dim": getattr(encoder, "dim", None),
    }


def _echo_result(result, preference: str | None, bibtex: bool) -> None:
    """The ranked list as text lines (then the BibTeX entries with ``--bibtex``)."""
    need_note = f", ranked for a {preference} citation" if preference else ""
    click.echo(f"mode: {result.mode}{need_note}   ({result.timings_ms.get('total', 0):.0f} ms)")
    from assistant.service import chip_texts, sentence_label

    label = sentence_label(result.items)  # the GUI's rule: no per-paper chip that says nothing
    if label:
        click.echo(label)
    for rank, (item, chip) in enumerate(zip(result.items, chip_texts(result.items)), start=1):
        p = item.paper
        authors = p.first_author_lastname + (" et al." if len(p.authors) > 1 else "")
        intent = f"  [{chip}]" if chip else ""
        click.echo(
            f"{rank:>3}. {p.citekey or p.id}  {p.title} ({authors}, {p.year or 'n.d.'})  score {item.score:.3f}{intent}"
        )
    if bibtex and result.items:
        from assistant.service import paper_bibtex as paper_to_bibtex

        click.echo("")
        click.echo("\n".join(paper_to_bibtex(item.paper) for item in result.items), nl=False)


def _manuscript_query(service, doc, span, mode, title, abstract, authors, year, context):
    """``recommend --manuscript``: the service's query for the passage, with the options given
    on the command line taking precedence over what the manuscript says."""
    from dataclasses import replace

    from assistant.service import query_in_manuscript

    query, _spec = query_in_manuscript(service.reader(), doc, *span, mode=mode)
    given = {
        "title": title,
        "abstract": abstract,
        "authors": tuple(authors) or None,
        "year": year,
        "context": context,
    }
    return replace(query, **{k: v for k, v in given.items() if v is not None})


def result_to_dict(result, bibtex: bool = False) -> dict:
    """JSON-friendly view of a RecommendationResult (with each paper's BibTeX entry when ``bibtex``)."""
    from assistant.service import chip_texts, sentence_label

    if bibtex:
        from assistant.service import paper_bibtex as paper_to_bibtex
    chips = chip_texts(result.items)
    return {
        "query": result.query.display_text(),
        "mode": result.mode,
        "sentence_intent": sentence_label(result.items) or None,
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
                "intent_chip": chip,
                **({"bibtex": paper_to_bibtex(it.paper)} if bibtex else {}),
            }
            for rank, (it, chip) in enumerate(zip(result.items, chips), start=1)
        ],
    }
