"""Options shared by several command groups."""

from __future__ import annotations

import click

DB_HELP = "Library DB (default: global --db)."


def db_option(help: str = DB_HELP, name: str = "db"):
    """``--db FILE``: this command's library (else the global ``assistant --db``/``$ASSISTANT_DB``;
    see :func:`assistant.cli.resolve_db_path`)."""
    return click.option("--db", name, type=click.Path(dir_okay=False), default=None, help=help)
