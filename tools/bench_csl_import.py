"""Time a CSL-JSON import of N items (linear: each item's line is counted on from the previous).

Usage: ``python tools/bench_csl_import.py SOURCE.sqlite --items 100000``: the items are the
source library's papers as CSL-JSON (repeated with new ids, titles and DOIs to reach N), written
to a temporary file and imported into a new library with ``assistant library import``. Prints
one JSON object (parse-only time too, and the per-item rate for extrapolating to 1M).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("source")
    ap.add_argument("--items", type=int, default=100_000)
    args = ap.parse_args()
    from assistant.library.formats import paper_to_csl
    from assistant.library.importers.csljson import parse_csljson_file
    from assistant.library.store import Library

    with Library(args.source) as lib:
        base = [
            paper_to_csl(p) for _, p in zip(range(args.items), lib.iter_papers(with_record=False))
        ]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "items.json"
        with path.open("w", encoding="utf-8") as out:
            out.write("[\n")
            for n in range(args.items):
                item = dict(base[n % len(base)])
                round_ = n // len(base)
                if round_:
                    item["id"] = f"{item.get('id')}-{round_}"
                    item["title"] = f"{item.get('title')} (copy {round_})"
                    item.pop("DOI", None)
                out.write(
                    json.dumps(item, ensure_ascii=False) + (",\n" if n + 1 < args.items else "\n")
                )
            out.write("]\n")
        size = path.stat().st_size
        t0 = time.process_time()
        parsed = parse_csljson_file(path)
        parse_cpu = time.process_time() - t0
        db = Path(tmp) / "lib.sqlite"
        cmd = [
            sys.executable,
            "-m",
            "assistant.cli",
            "library",
            "import",
            "-q",
            "--json",
            str(path),
            "--db",
            str(db),
        ]
        cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime
        report = json.loads(done.stdout) if done.returncode == 0 else {"stderr": done.stderr[-500:]}
        print(
            json.dumps(
                {
                    "items": args.items,
                    "file_mb": round(size / 1e6, 1),
                    "parse_cpu_s": round(parse_cpu, 1),
                    "parsed_records": len(parsed.records),
                    "import_wall_s": round(wall, 1),
                    "import_cpu_s": round(cpu, 1),
                    "added": report.get("added"),
                    "cpu_s_per_1m_items_extrapolated": round(cpu * 1_000_000 / args.items, 0),
                }
            )
        )


if __name__ == "__main__":
    main()
