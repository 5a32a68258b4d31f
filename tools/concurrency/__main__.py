"""Concurrency suite: real programs on one library, kill -9, checks after each round.

    python -m tools.concurrency run --rounds 200 --json

Prints the figures as JSON; exits 1 when any round failed (see ``harness`` for the checks).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from tools.concurrency.harness import run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.concurrency")
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("run", help="run the rounds and print the figures")
    p.add_argument("--rounds", type=int, default=40)
    p.add_argument("--seed", type=int, default=31)
    p.add_argument("--kill-rate", type=float, default=0.4, help="chance of a kill -9 per round")
    p.add_argument(
        "--gui-every", type=int, default=10, help="a real window every N rounds (0: none)"
    )
    p.add_argument("--work", type=Path, default=None, help="work folder (default: a temp one)")
    p.add_argument(
        "--models",
        type=Path,
        default=Path(
            os.environ.get("ASSISTANT_MODELS")
            or Path(tempfile.gettempdir()) / "cite-assist-conc-models"
        ),
        help="built models (the encoder is built there once)",
    )
    p.add_argument("--keep", action="store_true", help="keep the work folder")
    p.add_argument("--json", action="store_true", help="print only the JSON figures")
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="cite-assist-conc-"))
    args.models.mkdir(parents=True, exist_ok=True)
    try:
        report = run(args.rounds, work, args.models, args.seed, args.kill_rate, args.gui_every)
    finally:
        if not args.keep and args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report, indent=None if args.json else 2))
    return 1 if report["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
