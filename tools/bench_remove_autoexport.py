"""Time ``library remove`` of N keys with three auto-exports (BibTeX, RIS, CSL-JSON) registered.

Usage: ``python tools/bench_remove_autoexport.py LIBRARY.sqlite [--keys 50]``; works on a copy
of the library (the original is left as it is) and prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("library")
    ap.add_argument("--keys", type=int, default=50)
    args = ap.parse_args()
    from assistant.library.manager import LibraryManager

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "lib.sqlite"
        shutil.copy(args.library, db)
        mgr = LibraryManager.open(db)
        papers = mgr.lib.count()
        t0 = time.perf_counter()
        for name, fmt in (("a.bib", "bibtex"), ("b.ris", "ris"), ("c.json", "csl-json")):
            mgr.add_auto_export(Path(tmp) / name, fmt=fmt)
        register_s = time.perf_counter() - t0
        keys = [p.citekey for _, p in zip(range(args.keys), mgr.lib.iter_papers())]
        mgr.close()
        cmd = [sys.executable, "-m", "assistant.cli", "library", "remove", *keys, "--db", str(db)]
        t0 = time.perf_counter()
        cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(cmd, capture_output=True, text=True)
        remove_s = time.perf_counter() - t0
        cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        remove_cpu = cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime
        mgr = LibraryManager.open(db)
        from assistant.library.autoexport import export_text, out_of_step

        in_step = not out_of_step(mgr.lib) and all(
            Path(e.path).read_text() == export_text(mgr.lib, e.collection_id, e.format)
            for e in mgr.auto_exports()
        )
        print(
            json.dumps(
                {
                    "papers": papers,
                    "keys_removed": args.keys,
                    "exit_code": done.returncode,
                    "register_3_exports_s": round(register_s, 2),
                    "remove_wall_s": round(remove_s, 2),
                    "remove_cpu_s": round(remove_cpu, 2),
                    "exports_in_step": in_step,
                    "trashed": len(mgr.trashed()),
                }
            )
        )


if __name__ == "__main__":
    main()
