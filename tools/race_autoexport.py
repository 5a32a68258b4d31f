"""Two CLI processes editing one library that has an auto-export: is the exported file in step?

Each round starts two ``assistant library edit`` processes at once (each changes a different
paper); when both have finished, the auto-exported file must equal a fresh export of the library.
Prints JSON: rounds, rounds out of step, seconds.

    python tools/race_autoexport.py --rounds 20
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _edit(db: Path, key: str, value: str, env: dict) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "assistant.cli",
            "--db",
            str(db),
            "library",
            "edit",
            key,
            "--set",
            f"note={value}",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def run(rounds: int, papers: int = 200) -> dict:
    from assistant.library.autoexport import add_auto_export, export_text
    from assistant.library.models import Paper
    from assistant.library.store import Library

    work = Path(tempfile.mkdtemp(prefix="race-autoexport-"))
    env = dict(os.environ, ASSISTANT_HOME=str(work / "home"), HF_HUB_OFFLINE="1")
    os.environ["ASSISTANT_HOME"] = env["ASSISTANT_HOME"]
    db, out = work / "lib.sqlite", work / "sync.bib"
    lib = Library(db)
    with lib.transaction():
        for i in range(papers):  # enough papers that rendering the export takes a while
            lib.add_paper(Paper(title=f"Paper {i}", authors=["Doe, J."], year=2000 + i % 20))
    keys = [p.citekey for p in lib.iter_papers()][:2]
    add_auto_export(lib, out)
    lib.close()
    bad, errors, start = [], [], time.perf_counter()
    for r in range(rounds):
        procs = [_edit(db, keys[0], f"a{r}", env), _edit(db, keys[1], f"b{r}", env)]
        for proc in procs:
            _, err = proc.communicate(timeout=120)
            if proc.returncode:
                errors.append(err.strip().splitlines()[-1] if err.strip() else "failed")
        lib = Library(db)
        expected = export_text(lib, None, "bibtex")
        lib.close()
        if out.read_text(encoding="utf-8") != expected:
            bad.append(r)
    return {
        "rounds": rounds,
        "out_of_step": len(bad),
        "out_of_step_rounds": bad,
        "edit_errors": errors[:5],
        "papers": papers,
        "seconds": round(time.perf_counter() - start, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--papers", type=int, default=200)
    args = parser.parse_args()
    result = run(args.rounds, args.papers)
    print(json.dumps(result, indent=1))
    return 1 if result["out_of_step"] else 0


if __name__ == "__main__":
    sys.exit(main())
