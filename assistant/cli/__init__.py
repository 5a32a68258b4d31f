"""Command-line entry point: ``assistant <group> <command> ...``.

Each layer owns its commands in its own module; this file only wires them up
lazily so that ``assistant --help`` stays fast and a layer's heavy imports
(torch, onnxruntime, fitz) load only when its command runs.
"""

from __future__ import annotations

import importlib
import logging

import click

from assistant import __version__
from assistant.cli.options import QUALITY_HELP, QualityChoice
from assistant.errors import AssistantError, Cancelled
from assistant.logs import configure_logging


class LazyGroup(click.Group):
    """A click group whose sub-commands are imported on first use (the product's one plugin
    loader: ``importlib.import_module`` on the ``module:attribute`` names listed below).

    ``lazy_subcommands`` maps a command name to ``"module.path:attribute"``.
    """

    def __init__(self, *args, lazy_subcommands: dict[str, str] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.lazy_subcommands = dict(lazy_subcommands or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy_subcommands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy_subcommands:
            return self._load(cmd_name)
        return super().get_command(ctx, cmd_name)

    def _load(self, cmd_name: str) -> click.Command | None:
        module_name, attr = self.lazy_subcommands[cmd_name].split(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise  # a real missing dependency: let it surface
            click.echo(
                f"warning: command '{cmd_name}' is not available ({module_name} missing)", err=True
            )
            return None
        command = getattr(module, attr)
        if not isinstance(command, click.Command):
            raise TypeError(f"{module_name}:{attr} is not a click command")
        return command


class RootGroup(LazyGroup):
    """The top-level group: any :class:`~assistant.errors.AssistantError` (a library that cannot
    be opened, a missing model or index, a bad file...) or a file the command cannot read or write
    ends with ``Error: <file>: <why>`` (exit 1) instead of a traceback (``-v`` logs it); a
    cancelled job ends with ``Cancelled`` (exit 130)."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except Cancelled as exc:  # before its root: a stopped job is not an error
            self._log_traceback(ctx)
            click.echo(f"Cancelled{': ' + str(exc) if str(exc) else ''}", err=True)
            ctx.exit(130)
        except AssistantError as exc:
            self._log_traceback(ctx)
            raise click.ClickException(str(exc)) from None
        except OSError as exc:
            if isinstance(exc, BrokenPipeError):
                raise  # click handles a closed pipe (`... | head`) itself
            self._log_traceback(ctx)
            where = f"{exc.filename}: " if exc.filename else ""
            raise click.ClickException(f"{where}{exc.strerror or exc}") from None
        except Exception as exc:  # the library's database locked / read-only / full
            from assistant.service import database_error

            error = database_error(exc, (ctx.obj or {}).get("db_path") or "library")
            if error is None:
                raise
            self._log_traceback(ctx)
            raise click.ClickException(str(error)) from None

    @staticmethod
    def _log_traceback(ctx: click.Context) -> None:
        logging.getLogger("assistant.cli").debug("traceback", exc_info=True)


#: commands whose model calls are bulk work: tokenisation may use every core
BULK_COMMANDS = {"index", "train", "eval", "bench"}


@click.group(
    cls=RootGroup,
    lazy_subcommands={
        "library": "assistant.cli.library:library",
        "models": "assistant.cli.models:models",
        "index": "assistant.cli.retrieval:index",
        "recommend": "assistant.cli.retrieval:recommend",
        "intent": "assistant.cli.intent:intent",
        "manuscript": "assistant.cli.manuscript:manuscript",
        "lsp": "assistant.cli.lsp:lsp",
        "eval": "assistant.cli:eval_group",
        "bench": "assistant.cli:bench_group",
        "train": "assistant.cli:train_group",
    },
)
@click.option(
    "--db",
    "db_path",
    type=click.Path(dir_okay=False),
    envvar="ASSISTANT_DB",
    default=None,
    help="Library database file (default: $ASSISTANT_DB or the user data dir).",
)
@click.option(
    "--quality",
    type=QualityChoice(),
    envvar="ASSISTANT_QUALITY",
    default=None,
    help=QUALITY_HELP.replace("the global --quality, ", ""),
)
@click.option("-v", "--verbose", is_flag=True, help="Log debug messages to stderr.")
@click.version_option(__version__, prog_name="assistant")
@click.pass_context
def main(ctx: click.Context, db_path: str | None, quality: str | None, verbose: bool) -> None:
    """Cite-Assist: recommend citations from your own library, offline."""
    configure_logging(verbose, logging.INFO)
    ctx.ensure_object(dict)
    ctx.obj["db_path"] = db_path
    ctx.obj["quality"] = quality
    if ctx.invoked_subcommand in BULK_COMMANDS:  # the GUI and `lsp` tokenise on one thread
        from assistant.service.models import allow_parallel_tokenization

        allow_parallel_tokenization()


@click.group(
    "eval",
    cls=LazyGroup,
    lazy_subcommands={
        "acm-cr": "assistant.cli.evaluate:eval_acm_cr",
        "pdf": "assistant.cli.evaluate:eval_pdf",
        "scicite": "assistant.cli.evaluate:eval_scicite",
    },
)
def eval_group() -> None:
    """Evaluate retrieval, PDF parsing and intent classification."""


@click.group(
    "bench",
    cls=LazyGroup,
    lazy_subcommands={
        "encode": "assistant.cli.bench:bench_encode",
        "query": "assistant.cli.bench:bench_query",
        "scale": "assistant.cli.bench:bench_scale",
    },
)
def bench_group() -> None:
    """Benchmarks that print figures as JSON."""


@click.group(
    "train",
    cls=LazyGroup,
    lazy_subcommands={
        "reranker": "assistant.cli.train:train_reranker",
        "encoder": "assistant.cli.train:train_encoder",
        "intent": "assistant.cli.train:train_intent",
        "paper-intent": "assistant.cli.train:train_paper_intent",
    },
)
def train_group() -> None:
    """Train models offline from local data (reranker, encoder, intent)."""


def resolve_db_path(ctx: click.Context, db_path: str | None = None):
    """The DB path for a command: its own ``--db``, else the global one, else the default."""
    from pathlib import Path

    from assistant.config import default_db_path

    if db_path:
        return Path(db_path)
    root = ctx.find_root()
    global_db = (root.obj or {}).get("db_path") if root.obj else None
    return Path(global_db) if global_db else default_db_path()


def resolve_quality(ctx: click.Context, quality: str | None = None) -> str:
    """The quality tier for a command: its own ``--quality``, else the global one (or
    ``$ASSISTANT_QUALITY``), else the app's saved Settings, else ``auto``."""
    from assistant.config import quality_setting

    root = ctx.find_root()
    return quality_setting(quality or ((root.obj or {}).get("quality") if root.obj else None))


if __name__ == "__main__":  # pragma: no cover
    main()
