"""Re-index after editing one record, on a copy of an indexed library (JSON).

Copies ``--db`` (and its ``.index`` folder) into ``--work`` (the original is only read), then
``--rounds`` times: edit one record's abstract, run the indexer, time it:

- ``cli``: ``python -m assistant index --db COPY --json`` in a child process (wall, CPU-s of the
  child: start-up, imports, encoder, the update), for an index built with a real encoder;
- ``in_process``: ``build_index`` in this process (wall, CPU-s), with the index's encoder, or
  ``--synthetic`` for a library built by ``assistant bench scale --keep`` (vectors made without
  the encoder: a real encoder would re-embed everything).

    python tools/bench_reindex.py --db /work/data/acm.sqlite --work /tmp/reindex [--rounds 5]
    python tools/bench_reindex.py --db /tmp/scale/library.sqlite --work /tmp/r --synthetic

Target (issue 32): under 1 second above ~10k papers.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from assistant.config import index_dir_for  # noqa: E402
from assistant.library.editing import edit_paper  # noqa: E402
from assistant.library.store import Library  # noqa: E402


def copy_library(db: Path, work: Path) -> Path:
    work.mkdir(parents=True, exist_ok=True)
    target = work / db.name
    for suffix in ("", "-wal", "-shm"):
        src = db.with_name(db.name + suffix)
        if src.exists():
            shutil.copy2(src, target.with_name(target.name + suffix))
    shutil.rmtree(index_dir_for(target), ignore_errors=True)
    shutil.copytree(index_dir_for(db), index_dir_for(target))
    return target


def edit_one(db: Path, round_no: int) -> int:
    with Library(db) as lib:
        ids = sorted(lib.paper_versions())
        paper = lib.get(ids[(len(ids) // 2 + 7919 * round_no) % len(ids)])
        edit_paper(lib, paper.id, {"abstract": (paper.abstract or "") + f" Revised {round_no}."})
        return int(paper.id)


def run_cli(db: Path) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "assistant", "index", "--db", str(db), "--json", "-q"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    report = json.loads(proc.stdout)
    return {"wall_s": wall, "cpu_s": cpu, "build_index_s": report["seconds"], "report": report}


def run_in_process(db: Path, encoder) -> dict:
    from assistant.retrieval.index import build_index

    with Library(db) as lib:
        t, cpu = time.perf_counter(), time.process_time()
        report = build_index(lib, encoder)
        wall, cpu = time.perf_counter() - t, time.process_time() - cpu
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "build_index_s": report.seconds,
        "report": report.as_dict(),
    }


def summary(runs: list[dict], key: str) -> dict:
    values = [r[key] for r in runs]
    return {
        "median": round(statistics.median(values), 3),
        "max": round(max(values), 3),
        "all": [round(v, 3) for v in values],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--work", type=Path, required=True, help="Folder for the copy.")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--synthetic", action="store_true", help="In-process, synthetic vectors.")
    ap.add_argument("--no-cli", action="store_true", help="Only the in-process figure.")
    args = ap.parse_args()
    db = copy_library(args.db, args.work)
    with Library(db) as lib:
        n = lib.count()
    if args.synthetic:
        from assistant.evaluation.synthetic import SyntheticEncoder

        encoder = SyntheticEncoder()
    else:
        from assistant.retrieval.index import load_index_encoder

        encoder = load_index_encoder(index_dir_for(db))
    # an index written before term counts were stored (or by another program version) has its
    # BM25 rebuilt once by the first update: done here, untimed, and reported on its own
    edit_one(db, 10_000)
    first = run_in_process(db, encoder)
    modes = ["in_process"] + ([] if args.synthetic or args.no_cli else ["cli"])
    runs: dict[str, list[dict]] = {m: [] for m in modes}
    for r in range(args.rounds):
        for mode in modes:
            edit_one(db, r * len(modes) + modes.index(mode))
            run = run_in_process(db, encoder) if mode == "in_process" else run_cli(db)
            report = run["report"]
            if (report["updated"], report["added"], report["removed"]) != (1, 0, 0):
                raise SystemExit(f"unexpected index report: {report}")
            runs[mode].append(run)
    out = {
        "papers": n,
        "rounds": args.rounds,
        "encoder": str(encoder.fingerprint),
        "load_avg": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
        "first_run": {
            "wall_s": round(first["wall_s"], 2),
            "cpu_s": round(first["cpu_s"], 2),
            "bm25_rebuilt": first["report"]["bm25_rebuilt"],
        },
    }
    for mode, rs in runs.items():
        out[mode] = {k: summary(rs, k) for k in ("wall_s", "cpu_s", "build_index_s")}
        out[mode]["bm25_rebuilt"] = any(r["report"]["bm25_rebuilt"] for r in rs)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
