"""The terminal shows our messages, not third-party debug chatter (bm25s sets its own logger to DEBUG)."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
from assistant.logs import configure_logging
configure_logging(verbose=sys.argv[1] == "1")
import bm25s
retriever = bm25s.BM25()
retriever.index(bm25s.tokenize(["click models for web search", "unbiased learning to rank"],
                               show_progress=False), show_progress=False)
"""


def _stderr(verbose: bool) -> str:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, "1" if verbose else "0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_bm25_debug_lines_stay_out_of_the_terminal_unless_verbose():
    assert "Building index" not in _stderr(verbose=False)
    assert "DEBUG bm25s: Building index" in _stderr(verbose=True)
