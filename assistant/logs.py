"""Logging set-up shared by the CLI and the GUI: our messages at the chosen level, third-party chatter muted."""

from __future__ import annotations

import logging
import sys

# Libraries that log for their own developers. bm25s even sets its logger to DEBUG when it is
# imported, so muting is done by a filter on our handler, whatever the import order.
THIRD_PARTY_LOGGERS: frozenset[str] = frozenset(
    {"bm25s", "pylatexenc", "onnxruntime", "faiss", "urllib3", "filelock", "fitz"}
)


class _MuteThirdParty(logging.Filter):
    """Drop third-party records below WARNING."""

    def filter(self, record: logging.LogRecord) -> bool:
        return (
            record.levelno >= logging.WARNING
            or record.name.split(".", 1)[0] not in THIRD_PARTY_LOGGERS
        )


def configure_logging(verbose: bool = False, level: int = logging.INFO) -> None:
    """Log ``level`` and above to stderr; ``verbose`` shows everything, third-party debug lines included."""
    shown = logging.DEBUG if verbose else level
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.setLevel(shown)
    if not verbose:
        handler.addFilter(_MuteThirdParty())
    logging.basicConfig(level=shown, handlers=[handler])
