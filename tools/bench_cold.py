"""Cold command start-up on an indexed library (JSON): ``assistant recommend`` and ``assistant
index`` after one edited record, each run in a fresh process, as a user types them.

For every round: the child's wall time, its CPU-seconds (user + system, all its threads) and the
1-minute load average before it started (wall is inflated on a shared machine; CPU-s is the
comparable figure). ``--tree`` runs the commands from another checkout (e.g. a ``git worktree``
of an older commit) with the same library, so before/after come from one script:

    python tools/bench_cold.py --db /tmp/acm/acm.sqlite --rounds 5
    python tools/bench_cold.py --db /tmp/acm/acm.sqlite --tree /tmp/before --rounds 5

``--db`` must be a copy: the reindex rounds edit one paper's abstract each (``--no-reindex``
leaves the library alone). Issue 32's targets: recommend <= 2 s, re-index of one record < 1 s.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUERY = "learning to rank from implicit click feedback"


def run_child(args: list[str], tree: Path) -> dict:
    """One ``python -m assistant ARGS`` from ``tree``: wall, CPU-s, load before, its JSON."""
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "assistant", *args],
        cwd=tree,  # that checkout's code (cwd wins over an editable install)
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "load": load, "out": proc.stdout}


def edit_one(db: Path, round_no: int) -> int:
    """Append a word to one paper's abstract (a different paper each round)."""
    sys.path.insert(0, str(ROOT))
    from assistant.library.editing import edit_paper
    from assistant.library.store import Library

    with Library(db) as lib:
        ids = sorted(lib.paper_versions())
        paper = lib.get(ids[(len(ids) // 3 + 7919 * round_no) % len(ids)])
        edit_paper(lib, paper.id, {"abstract": (paper.abstract or "") + f" Cold {round_no}."})
        return int(paper.id)


def summary(runs: list[dict]) -> dict:
    out = {}
    for key in ("wall_s", "cpu_s", "load"):
        values = [r[key] for r in runs]
        out[key] = {
            "median": round(statistics.median(values), 3),
            "min": round(min(values), 3),
            "max": round(max(values), 3),
            "all": [round(v, 3) for v in values],
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, required=True, help="An indexed library (a copy).")
    ap.add_argument("--tree", type=Path, default=ROOT, help="Checkout to run the commands from.")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--query", default=QUERY)
    ap.add_argument("--no-reindex", action="store_true", help="Only recommend (no edits).")
    args = ap.parse_args()
    db, tree = args.db.resolve(), args.tree.resolve()
    out: dict = {
        "db": str(db),
        "tree": str(tree),
        "cpus": os.cpu_count(),
        "bytecode_cached": not sys.flags.dont_write_bytecode,
    }
    recommend = ["--db", str(db), "recommend", args.query, "--json"]
    run_child(recommend, tree)  # untimed: page cache, bytecode, any cache the tree keeps
    rec = [run_child(recommend, tree) for _ in range(args.rounds)]
    top = json.loads(rec[-1]["out"])
    out["recommend"] = summary(rec)
    out["recommend"]["top3"] = [item.get("citekey") for item in top.get("items", [])[:3]]
    out["import_cli_cpu_s"] = summary(
        [run_child(["--help"], tree) for _ in range(min(3, args.rounds))]
    )["cpu_s"]
    if not args.no_reindex:
        edit_one(db, 0)  # an index written by an older version may update its files once
        run_child(["--db", str(db), "index", "--json", "-q"], tree)
        runs = []
        for r in range(1, args.rounds + 1):
            edit_one(db, r)
            run = run_child(["--db", str(db), "index", "--json", "-q"], tree)
            report = json.loads(run["out"])
            if (report["updated"], report["added"], report["removed"]) != (1, 0, 0):
                raise SystemExit(f"unexpected index report: {report}")
            runs.append(run)
        out["reindex_one"] = summary(runs)
        out["index_nothing_changed"] = summary(
            [run_child(["--db", str(db), "index", "--json", "-q"], tree) for _ in range(2)]
        )
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
