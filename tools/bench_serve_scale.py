"""A fresh process serving a library kept by ``assistant bench scale --keep``: its RSS and query
times, as JSON (``evaluation.scale_bench.measure_serving``; the bench's own RSS includes what
import and indexing left in its process).

    python tools/bench_serve_scale.py DIR/library.sqlite [--queries 40]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from assistant.evaluation.scale_bench import measure_serving


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db", type=Path)
    parser.add_argument("--queries", type=int, default=40)
    args = parser.parse_args()
    print(json.dumps(measure_serving(args.db, args.queries), indent=1))


if __name__ == "__main__":
    main()
