"""Kill suite: ``kill -9`` library operations mid-run and check that nothing is half done.

Each trial builds a small library from the test fixtures (about 25 papers, a collection, three
auto-exports: BibTeX of all, RIS of all, CSL-JSON of the collection), runs one CLI operation in a
child process and kills it, either at a named write point (``ASSISTANT_KILL_AT``: inside a
multi-record operation, right after the commit, after an export file is written) or after a
random delay. Then the library is opened again (the recovery an ordinary next command does) and
checked:

- partial operations: ``remove`` of 5 keys trashed 0 or 5; ``merge`` of 3 papers merged all or
  none; ``citekeys --regenerate`` changed every key or none; ``auto-export`` registered a file
  only if it was written; concurrent edits each wholly applied or not at all;
- exports out of step: a registered file whose text is not the library's export of it.

Usage: ``python tools/kill_suite.py [--trials 200] [--seed 1]``; prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "library"
OPS = ("remove", "merge", "citekeys", "auto-export", "concurrent-edits")
POINTS = ("library.store", "library.commit", "library.committed", "autoexport.written", None)


def _build(tmp: Path) -> dict:
    from assistant.library.importers import import_paths
    from assistant.library.manager import LibraryManager
    from assistant.library.store import Library

    lib = Library(tmp / "lib.sqlite")
    import_paths(lib, [FIX / "good.bib", FIX / "acm_duplicates.bib", FIX / "curation.bib"])
    mgr = LibraryManager(lib)
    keys = sorted(p.citekey for p in lib.iter_papers())
    col = mgr.create_collection("Draft")
    mgr.add_to_collection(col, [lib.get_by_citekey(k).id for k in keys[::2]])
    mgr.add_auto_export(tmp / "all.bib", fmt="bibtex")
    mgr.add_auto_export(tmp / "all.ris", fmt="ris")
    mgr.add_auto_export(tmp / "draft.json", collection_id=col, fmt="csl-json")
    weird = sorted(p.citekey for p in lib.search("WEIRD Concept-Based") if p.year == 1978)
    state = {"keys": keys, "remove": keys[3:8], "merge": weird[:3]}
    lib.close()
    return state


def _cli(db: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "assistant.cli", "library", *args, "--db", str(db)]


def _commands(op: str, tmp: Path, state: dict) -> list[list[str]]:
    db = tmp / "lib.sqlite"
    if op == "remove":
        return [_cli(db, "remove", *state["remove"])]
    if op == "merge":
        return [_cli(db, "duplicates", "--keep", state["merge"][0], *state["merge"][1:])]
    if op == "citekeys":
        return [_cli(db, "citekeys", "--pattern", "[Auth][year]x", "--regenerate")]
    if op == "auto-export":
        return [_cli(db, "auto-export", str(tmp / "new.bib"))]
    return [
        _cli(db, "edit", state["keys"][0], "--set", "note=first", "--set", "volume=7"),
        _cli(db, "edit", state["keys"][1], "--set", "note=second", "--set", "volume=8"),
    ]


def _check(op: str, tmp: Path, state: dict) -> tuple[list[str], list[str]]:
    """``(partial operations, exports out of step)`` after recovery."""
    from assistant.library.autoexport import export_text
    from assistant.library.manager import LibraryManager

    mgr = LibraryManager.open(tmp / "lib.sqlite")  # recovery: catches auto-exports up
    lib = mgr.lib
    partial = []
    try:
        if op == "remove":
            n = sum(
                lib.get_by_citekey(k, include_trashed=True).deleted_at is not None
                for k in state["remove"]
            )
            if n not in (0, len(state["remove"])):
                partial.append(f"remove: {n} of {len(state['remove'])} trashed")
        elif op == "merge":
            ids = {lib.get_by_citekey(k).id for k in state["merge"]}
            if len(ids) not in (1, len(state["merge"])):
                partial.append(f"merge: {len(ids)} papers left of {len(state['merge'])}")
        elif op == "citekeys":
            now = sorted(p.citekey for p in lib.iter_papers())
            moved = sum(k not in now for k in state["keys"])
            if moved and any(not k.endswith(("x", "xa", "xb", "xc")) for k in now):
                partial.append(f"citekeys: {moved} changed, some not")
        elif op == "auto-export":
            registered = [e.path for e in mgr.auto_exports() if e.path.endswith("new.bib")]
            if registered and not (tmp / "new.bib").exists():
                partial.append("auto-export: registered but never written")
        else:
            for key, note, vol in (
                (state["keys"][0], "first", "7"),
                (state["keys"][1], "second", "8"),
            ):
                extra = lib.get_by_citekey(key).extra
                if (extra.get("note") == note) != (extra.get("volume") == vol):
                    partial.append(f"edit of {key}: half applied")
        stale = [
            e.path
            for e in mgr.auto_exports()
            if not Path(e.path).exists()
            or Path(e.path).read_text(encoding="utf-8")
            != export_text(lib, e.collection_id, e.format)
        ]
    finally:
        mgr.close()
    return partial, stale


def _trial(rng: random.Random, op: str, tmp: Path) -> dict:
    state = _build(tmp)
    point = rng.choice(POINTS)
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1")
    if point:
        env["ASSISTANT_KILL_AT"] = f"{point}:{rng.randint(1, 2)}"
    procs = [
        subprocess.Popen(c, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for c in _commands(op, tmp, state)
    ]
    delay = None
    if point is None:  # a random moment: anywhere from start-up to the end of the operation
        delay = rng.uniform(0.3, 1.8)
        time.sleep(delay)
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
    codes = [p.wait(timeout=120) for p in procs]
    errors = [p.stderr.read().decode(errors="replace") for p in procs]
    partial, stale = _check(op, tmp, state)
    return {
        "op": op,
        "kill_at": env.get("ASSISTANT_KILL_AT") or f"after {delay:.2f}s",
        "killed": any(c == -signal.SIGKILL for c in codes),
        "partial": partial,
        "stale": stale,
        "tracebacks": sum("Traceback" in e for e in errors),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    sys.path.insert(0, str(ROOT))
    results = []
    t0 = time.perf_counter()
    for i in range(args.trials):
        with tempfile.TemporaryDirectory(prefix="kill-suite-") as tmp:
            results.append(_trial(rng, OPS[i % len(OPS)], Path(tmp)))
    summary = {
        "trials": len(results),
        "killed": sum(r["killed"] for r in results),
        "by_op": {op: sum(r["op"] == op for r in results) for op in OPS},
        "killed_by_op": {op: sum(r["op"] == op and r["killed"] for r in results) for op in OPS},
        "partial_operations": sum(bool(r["partial"]) for r in results),
        "exports_out_of_step_after_recovery": sum(bool(r["stale"]) for r in results),
        "tracebacks": sum(r["tracebacks"] for r in results),
        "failures": [r for r in results if r["partial"] or r["stale"]][:10],
        "elapsed_s": round(time.perf_counter() - t0, 1),
    }
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
