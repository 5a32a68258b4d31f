"""Options shared by several command groups."""

from __future__ import annotations

import click

DB_HELP = "Library DB (default: global --db)."
#: the quality tiers (``assistant.service.quality.QUALITIES``; kept here so that `--help` loads
#: no model code, tests/test_quality.py checks they agree)
QUALITIES = ("auto", "fast", "best")
QUALITY_HELP = (
    "Quality tier: fast = MiniLM encoder; best = all-mpnet-base-v2 dense index and its own "
    "ranker (reranker stays the MiniLM cross-encoder); auto = best when CUDA runs and the "
    "mpnet index is current, else fast (default: the global --quality, $ASSISTANT_QUALITY, "
    "the app's Settings, auto)."
)


class QualityChoice(click.Choice):
    """:data:`QUALITIES`; a wrong ``$ASSISTANT_QUALITY`` is named as such (click blamed
    ``--quality``, which the user never typed: the language server then exits at start)."""

    def __init__(self) -> None:
        super().__init__(QUALITIES, case_sensitive=False)  # as the service: "Best" is best

    def convert(self, value, param, ctx):
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter as exc:
            from click.core import ParameterSource

            from_env = param is not None and param.envvar and ctx is not None
            if from_env and ctx.get_parameter_source(param.name) is ParameterSource.ENVIRONMENT:
                exc.param_hint = f"${param.envvar}"
            raise


def db_option(help: str = DB_HELP, name: str = "db"):
    """``--db FILE``: this command's library (else the global ``assistant --db``/``$ASSISTANT_DB``;
    see :func:`assistant.cli.resolve_db_path`)."""
    return click.option("--db", name, type=click.Path(dir_okay=False), default=None, help=help)


def quality_option():
    """``--quality auto|fast|best`` for this command (else the global one; see
    :func:`assistant.cli.resolve_quality`)."""
    return click.option("--quality", type=QualityChoice(), default=None, help=QUALITY_HELP)
