"""``assistant intent``: classify the citation intent of sentences, or label a library's citations."""

from __future__ import annotations

import json
import sys

import click


@click.command("intent")
@click.argument("sentences", nargs=-1)
@click.option(
    "--file",
    "in_file",
    type=click.File("rb"),
    default=None,
    help="Classify one context per line of this file ('-' for stdin).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON (one object per input).")
@click.option(
    "--model", default=None, help="Model folder or name (default: the shipped intent-minilm)."
)
@click.option(
    "--label-library",
    is_flag=True,
    help="Classify the extracted citation contexts of the library (--db) instead.",
)
@click.option("--force", is_flag=True, help="With --label-library: relabel every citation.")
@click.option(
    "--db", "db_path", type=click.Path(dir_okay=False), default=None, help="Library database file."
)
@click.pass_context
def intent(
    ctx: click.Context,
    sentences: tuple[str, ...],
    in_file,
    as_json: bool,
    model: str | None,
    label_library: bool,
    force: bool,
    db_path: str | None,
) -> None:
    """Citation intent (background / method / result) of each SENTENCE, with probabilities."""
    from assistant.service.intent import intent_classifier

    try:
        clf = intent_classifier(model)
    except FileNotFoundError as exc:
        raise click.ClickException(str(exc)) from exc
    if label_library:
        _label_library(ctx, clf, force, db_path, as_json)
        return
    texts = list(sentences)
    if in_file is not None:
        from assistant.textfile import BinaryFileError, decode_text

        try:
            content, fmt = decode_text(in_file.read())
        except BinaryFileError as exc:
            raise click.BadParameter(
                f"{in_file.name}: {exc}; expected one context per line", param_hint="--file"
            ) from None
        if not fmt.is_utf:
            click.echo(f"warning: {in_file.name} is not UTF-8; read as {fmt.encoding}", err=True)
        texts += [line for line in content.split("\n") if line.strip()]
    if not texts:
        raise click.UsageError("give a SENTENCE, --file FILE or --label-library")
    for i, text in enumerate(texts, 1):
        if not text.strip():
            click.echo(
                f"warning: input {i} is empty: it gets the model's class prior, not a prediction",
                err=True,
            )
    preds = clf.classify(texts)
    if as_json:
        out = [{"text": t, **p.to_dict(), "model": clf.version} for t, p in zip(texts, preds)]
        click.echo(
            json.dumps(out[0] if len(out) == 1 and sentences else out, ensure_ascii=False, indent=2)
        )
        return
    for text, pred in zip(texts, preds):
        probs = "  ".join(f"{k} {v:.2f}" for k, v in pred.probs.items())
        short = text if len(text) <= 70 else text[:67] + "..."
        click.echo(f"{pred.label:<10} {pred.confidence:.2f}  [{probs}]  {short}")


def _label_library(
    ctx: click.Context, clf, force: bool, db_path: str | None, as_json: bool
) -> None:
    from dataclasses import asdict

    from assistant.cli import resolve_db_path
    from assistant.cli.progress import ProgressRenderer
    from assistant.service.intent import label_library_citations

    path = resolve_db_path(ctx, db_path)
    if not path.exists():
        raise click.ClickException(f"library {path} does not exist")
    with ProgressRenderer(quiet=as_json) as progress:
        report = label_library_citations(path, force=force, classifier=clf, progress=progress)
    if as_json:
        click.echo(json.dumps(asdict(report), indent=2))
    else:
        click.echo(
            f"labelled {report.labelled} citation(s) with {report.model}"
            + (" (all relabelled)" if report.relabelled_all else "")
            + (f"; {report.skipped_empty} without context" if report.skipped_empty else ""),
            file=sys.stdout,
        )
