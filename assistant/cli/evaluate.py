"""`assistant eval`: ACM-CR recommendation, PDF parsing and SciCite intent evaluations (click only; the
evaluations live in assistant/evaluation/)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from assistant.cli.options import db_option, quality_option
from assistant.cli.progress import command_progress
from assistant.evaluation.acm_cr import LEVELS, VARIANTS, evaluate_acm_cr, format_table
from assistant.evaluation.pdf_eval import evaluate_paper, open_library, summarize
from assistant.evaluation.scicite_eval import evaluate


def default_run_dir(db_path: Path) -> Path:
    """Where ``eval acm-cr`` writes its TREC runs without ``--runs``: beside the library, never
    inside its index folder (the index refuses files it did not write: issue #29)."""
    return db_path.with_name(db_path.name + ".eval-runs")


@click.command("acm-cr")
@click.argument("papers_dir", type=click.Path(exists=True, file_okay=False))
@db_option()
@click.option(
    "--level",
    type=click.Choice(["paragraph", "sentence", "both"]),
    default="both",
    show_default=True,
)
@click.option(
    "--variant",
    type=click.Choice(["plain", "enhanced", "product", "both", "all"]),
    default="both",
    show_default=True,
    help="plain = passage only (the published protocol); enhanced = + title/abstract/neighbours; "
    "product = enhanced + the citing paper's authors/year from its PDF; both = plain + enhanced.",
)
@click.option(
    "--ranker",
    default="off",
    show_default=True,
    help="Learned ranker: auto (the shipped one), off, or a folder: adds the ranked stage.",
)
@click.option(
    "--reranker",
    default=None,
    help="Cross-encoder: auto (the shipped one when enabled, with its tuned weight and head), "
    "off, or a folder/name: adds the reranked stage (on the ranked order when --ranker is on).",
)
@click.option("--fusion", type=click.Choice(["weighted", "rrf"]), default=None)
@click.option(
    "--dense-weight",
    type=click.FloatRange(0, 1),
    default=None,
    help="Weight of the dense run in the fusion (default: the pipeline's tuned value).",
)
@click.option(
    "--depth",
    type=click.IntRange(100),
    default=None,
    help="Candidates taken from each side before fusion (default: the pipeline's).",
)
@click.option(
    "--rerank-weight",
    type=click.FloatRange(0, 1),
    default=None,
    help="With --reranker: final = w * z(rerank) + (1 - w) * z(score before reranking) "
    "(default: the model manifest's, else 1: rerank only).",
)
@click.option(
    "--rerank-top",
    type=click.IntRange(1),
    default=None,
    help="With --reranker: rerank only this head of the order (default: the model "
    "manifest's, else every candidate).",
)
@click.option(
    "--blacklist",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="DOIs excluded from candidates (default: blacklist.txt next to PAPERS_DIR).",
)
@click.option(
    "--runs",
    "run_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Write TREC run files and qrels here (default: <db>.eval-runs/ beside the library).",
)
@click.option("--limit", type=int, default=None, help="Only the first N queries (quick checks).")
@click.option(
    "--covered-only",
    is_flag=True,
    help="Only candidates that already have a vector (partial index).",
)
@quality_option()
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def eval_acm_cr(
    ctx,
    papers_dir,
    db,
    level,
    variant,
    ranker,
    reranker,
    fusion,
    dense_weight,
    depth,
    rerank_weight,
    rerank_top,
    blacklist,
    run_dir,
    limit,
    covered_only,
    quality,
    as_json,
):
    """Evaluate recommendation on ACM-CR citing papers (PAPERS_DIR/<venue>/<id>.xml|.dois).

    The quality tier's dense index is measured (``--quality best`` needs a current mpnet index:
    `assistant index --quality best`); ``--ranker auto`` is that tier's shipped ranker."""
    from assistant.cli import resolve_db_path, resolve_quality
    from assistant.library.store import Library
    from assistant.retrieval.pipeline import Recommender, pipeline_config
    from assistant.retrieval.searcher import RetrievalError
    from assistant.service.quality import QualityError, measured_tier

    path = resolve_db_path(ctx, db)
    if not path.exists():
        raise click.ClickException(f"library not found: {path}")
    try:
        tier, index = measured_tier(resolve_quality(ctx, quality), "auto", path)
    except QualityError as exc:
        raise click.ClickException(str(exc)) from exc
    levels = LEVELS if level == "both" else (level,)
    variants = {"both": VARIANTS[:2], "all": VARIANTS}.get(variant, (variant,))
    overrides = {
        "fusion": fusion,
        "dense_weight": dense_weight,
        "depth": depth,
        "rerank_weight": rerank_weight,
        "rerank_top": rerank_top,
    }
    config = pipeline_config(
        reranker=reranker,
        ranker=ranker,
        use_intent=False,
        tier=tier.active,
        **{k: v for k, v in overrides.items() if v is not None},
    )
    library = Library(path)
    try:
        result = evaluate_acm_cr(
            papers_dir,
            library,
            config,
            levels,
            variants=variants,
            recommender=Recommender(library, config, index_dir=index),
            blacklist=blacklist,
            run_dir=run_dir or default_run_dir(path),
            limit=limit,
            covered_only=covered_only,
            progress=command_progress(quiet=as_json),
        )
    except (RetrievalError, ValueError, FileNotFoundError) as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        library.close()
    result["quality"] = {"asked": tier.quality, "tier": tier.active, "reason": tier.reason}
    for line in result["warnings"]:
        click.secho(f"WARNING: {line}", fg="red", bold=True, err=True)
    if as_json:
        click.echo(json.dumps(result, indent=2))
    else:
        click.echo(format_table(result))


@click.command("pdf")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@db_option("Library for reference linking (without one, linking is not measured).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--per-paper", is_flag=True, help="Include per-paper figures and errors.")
def eval_pdf(directory: str, db: str | None, as_json: bool, per_paper: bool) -> None:
    """Evaluate PDF parsing on ACM-CR-style DIR (<venue>/<id>.pdf + .xml + .dois)."""
    pdfs = sorted(p for p in Path(directory).rglob("*.pdf") if p.with_suffix(".xml").exists())
    if not pdfs:
        raise click.ClickException(f"no <id>.pdf with a sibling <id>.xml under {directory}")
    library = open_library(db)
    rows = []
    for pdf in pdfs:
        rows.append(evaluate_paper(pdf, library))
        if not as_json:
            r = rows[-1]
            click.echo(
                f"{r['paper']}: title={'ok' if r['title_exact'] else 'MISS'} abs_f1={r['abstract_f1']} "
                f"refs={r['refs_parsed']}/{r['refs_gold']} cites={r['citing_found']}/{r['citing_total']} "
                f"{r['seconds']}s",
                err=True,
            )
    result = {"summary": summarize(rows)}
    if per_paper:
        result["papers"] = rows
    if library is not None:
        library.close()
    click.echo(
        json.dumps(result, indent=2, ensure_ascii=False)
        if as_json
        else "\n".join(f"{k}: {v}" for k, v in result["summary"].items())
    )


@click.command("scicite")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--model", default=None, help="Model folder or name (default: the shipped intent model)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the full report as JSON.")
def eval_scicite(file: str, model: str | None, as_json: bool) -> None:
    """Accuracy, macro-F1, per-class P/R/F1 and confusion matrix on a SciCite JSONL file."""
    report = evaluate(Path(file), model)
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    click.echo(
        f"{report['n']} examples  accuracy {report['accuracy']:.4f}  macro-F1 {report['macro_f1']:.4f}  "
        f"ECE {report['ece']:.4f}  ({report['contexts_per_s']} contexts/s)"
    )
    for lab, m in report["per_class"].items():
        click.echo(
            f"  {lab:<11} P {m['precision']:.3f}  R {m['recall']:.3f}  F1 {m['f1']:.3f}  n={m['support']}"
        )
    cm = report["confusion_matrix"]
    click.echo("  confusion (rows = gold, cols = predicted): " + " ".join(cm["labels"]))
    for lab, row in zip(cm["labels"], cm["rows_true_cols_pred"]):
        click.echo(f"  {lab:<11} " + " ".join(f"{v:>6}" for v in row))
