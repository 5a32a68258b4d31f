"""``assistant lsp``: run the language server on stdin/stdout (click wiring only)."""

from __future__ import annotations

import logging
import os
import sys

import click

from assistant.cli.options import db_option, quality_option


@click.command("lsp")
@db_option(
    "Library database file (default: the global --db, $ASSISTANT_DB or the user data dir).",
    "db_path",
)
@click.option(
    "--stdio",
    is_flag=True,
    help="Speak LSP over stdin/stdout: accepted because editors pass it; stdio is the default "
    "and only transport, so the server runs the same without it.",
)
@click.option(
    "--no-recommend",
    is_flag=True,
    help="Library keys, hover, diagnostics and go-to-definition only; no models are loaded.",
)
@click.option(
    "--cache",
    "cache_size",
    type=click.IntRange(0),
    default=64,
    show_default=True,
    help="Recommendation lists kept per sentence (0: recompute every time, for benchmarks).",
)
@quality_option()
@click.option(
    "--log-file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Also write the server's log to this file.",
)
@click.pass_context
def lsp(
    ctx: click.Context,
    db_path,
    stdio: bool,
    no_recommend: bool,
    cache_size: int,
    quality: str | None,
    log_file,
) -> None:
    """Language server for LaTeX and Markdown: citation completion, hover, diagnostics,
    go to definition and code actions in any LSP editor (see docs/EDITORS.md).

    It speaks LSP over stdin/stdout (``--stdio``, which editors pass, is that default). The
    editor's ``initializationOptions`` may set ``{"quality": "auto|fast|best"}``, which wins
    over ``--quality``."""
    from assistant.cli import resolve_db_path

    if log_file:
        handler = logging.FileHandler(log_file, encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logging.getLogger().addHandler(handler)
    logging.getLogger("pygls").setLevel(logging.WARNING)

    # stdout carries the protocol: keep a private copy of it, point fd 1 (and sys.stdout) at
    # stderr so that a stray print or a C library's message cannot corrupt a message.
    sys.stdout.flush()
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr

    from assistant.lsp.server import create_server

    root = ctx.find_root().obj or {}
    server = create_server(
        resolve_db_path(ctx, db_path),
        recommend=not no_recommend,
        cache_size=cache_size,
        quality=quality or root.get("quality"),  # else $ASSISTANT_QUALITY, Settings, auto
    )
    try:
        server.start_io(sys.stdin.buffer, protocol_out)
    finally:
        server.stop()
        code = 0 if server.shutdown_requested else 1
        try:
            protocol_out.flush()
        except (OSError, ValueError):  # closed by the exit notification
            pass
        logging.shutdown()
        # the stdin reader thread may still block in read(): leave without joining it
        os._exit(code)
