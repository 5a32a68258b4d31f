"""The ``assistant library`` click group and what its commands share: the ``--db`` option and
opening the library. Its commands are defined in :mod:`assistant.cli.library` (import, stats,
search, export, remove) and :mod:`assistant.cli.library_manage` (edit, trash, duplicates, ...),
which both register on this group; neither imports the other's module."""

from __future__ import annotations

import click

from assistant.cli import resolve_db_path
from assistant.cli.options import db_option as _db_option

db_option = _db_option("Library database file (overrides the global --db / $ASSISTANT_DB).")


def open_db(ctx: click.Context, db: str | None):
    """The library of this command (its ``--db``, else the global one)."""
    from assistant.service import open_library

    return open_library(resolve_db_path(ctx, db))


class _LibraryGroup(click.Group):
    """Turns the odd inputs no command can use into one line instead of a traceback."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except UnicodeEncodeError as exc:
            bad = exc.object[max(0, exc.start - 20) : exc.end + 20]
            shown = bad.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            raise click.ClickException(
                f"an argument or path is not valid UTF-8 (near {shown!r}); rename it or pass it "
                "in UTF-8"
            ) from None


@click.group("library", cls=_LibraryGroup)
def library() -> None:
    """Manage the paper library (import, search, export)."""
