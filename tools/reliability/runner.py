"""Run the bad-input corpus through the real CLI code paths, each input in its own process.

Every case is run by a forked child (the product's modules are imported once, before forking)
that calls the ``assistant`` CLI exactly as a user would (``library import PATH`` or
``manuscript PATH --no-recommend``) with the network blocked and logged; the parent kills a
child after ``timeout`` seconds (a hang). Afterwards the library must still hold its committed
papers and the case's good records, and pass SQLite's integrity check.

Counted: crashes (a traceback, a non-``AssistantError`` failure, death by a signal), hangs,
good records lost (committed or expected-good titles missing after the import) and network
calls (any attempt to resolve a name or open an internet socket). The attack classes
(:mod:`tools.reliability.attacks`: received libraries and manuscript folders, links and special
files at every write target) also count files written outside the case's targets and code
executions.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import sqlite3
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tools.reliability import attacks
from tools.reliability.corpus import Case, generate

COMMITTED = ["Committed paper one", "Committed paper two", "Committed paper three"]
CRASH_EXIT = 70


@dataclass
class Outcome:
    name: str
    category: str
    kind: str
    status: str  # ok | error (one clear line) | crash | hang
    exit_code: int | None
    seconds: float
    lost: list[str] = field(default_factory=list)
    network: int = 0
    message: str = ""
    outside: list[str] = field(default_factory=list)  # files written outside the targets
    executed: int = 0  # code executions (PWNED markers after running the start-up files)


def install_network_guard(log_path: str) -> None:
    """Make every name lookup and internet socket fail (and log it) in this process."""
    import socket

    def record(what: str) -> None:
        with open(log_path, "a") as fh:
            fh.write(what + "\n")
            fh.write("".join(traceback.format_stack(limit=8)) + "\n")

    def blocked_lookup(*args, **kwargs):
        record(f"name lookup {args[:2]!r}")
        raise OSError("network access blocked by the reliability suite")

    real_init = socket.socket.__init__

    def guarded_init(self, family=-1, type=-1, proto=-1, fileno=None):
        if fileno is None and family in (socket.AF_INET, socket.AF_INET6, -1):
            record(f"socket {family!r}")
            raise OSError("network access blocked by the reliability suite")
        real_init(self, family, type, proto, fileno)

    socket.getaddrinfo = blocked_lookup
    socket.gethostbyname = blocked_lookup
    socket.gethostbyname_ex = blocked_lookup
    socket.create_connection = blocked_lookup
    socket.socket.__init__ = guarded_init


def _child(case: Case, db: str, out_dir: str) -> None:
    """Runs in the forked child: the CLI on one input, stdout/stderr to files."""
    out = os.open(os.path.join(out_dir, "stdout"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    err = os.open(os.path.join(out_dir, "stderr"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(out, 1)
    os.dup2(err, 2)
    os.environ.update(case.env)
    try:  # a runaway read (/dev/zero) ends as a MemoryError (a crash), never swamps the machine
        import resource

        cap = int(float(os.environ.get("RELIABILITY_MEM_GB", "4")) * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    except (ImportError, ValueError, OSError):
        pass
    install_network_guard(os.path.join(out_dir, "network"))
    from assistant.cli import main

    if case.kind == "import":
        args = ["--db", db, "library", "import", "--workers", "1", "-q", str(case.path)]
    else:
        args = ["--db", db, "manuscript", str(case.path), "--no-recommend", "--time-limit", "10"]
    code = 0
    try:
        main.main(args, prog_name="assistant", standalone_mode=True)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # what escapes the CLI's error handling is a crash
        traceback.print_exc()
        code = CRASH_EXIT
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _attack_child(case: attacks.AttackCase, world: attacks.World, out_dir: str) -> None:
    """Runs in the forked child: one entry point on an attacker's files."""
    out = os.open(os.path.join(out_dir, "stdout"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    err = os.open(os.path.join(out_dir, "stderr"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(out, 1)
    os.dup2(err, 2)
    os.environ.update(attacks.env_for(world))
    install_network_guard(os.path.join(out_dir, "network"))
    from assistant.cli import main
    from assistant.errors import AssistantError

    code = 0
    try:
        if callable(case.action):
            case.action(world)
        else:
            main.main(attacks.fill(case.action, world), prog_name="assistant")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except AssistantError as exc:  # a clean refusal, as the GUI/LSP would show it
        print(f"Error: {exc}", file=sys.stderr)
        code = 1
    except BaseException:
        traceback.print_exc()
        code = CRASH_EXIT
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _run_forked(target, args: tuple, timeout: float) -> tuple[int | None, bool, float]:
    """Run ``target(*args)`` in a forked child: ``(exit code, hung, seconds)``; a child still
    alive after ``timeout`` is killed and counts as hung."""
    proc = multiprocessing.get_context("fork").Process(target=target, args=args)
    start = time.monotonic()
    proc.start()
    proc.join(timeout)
    hung = proc.is_alive()
    if hung:
        proc.kill()
        proc.join()
    return proc.exitcode, hung, time.monotonic() - start


def _status(hung: bool, code: int | None, err: str) -> str:
    """hang, crash (killed, the crash exit or a traceback), ok or error."""
    if hung:
        return "hang"
    if code is None or code < 0 or code == CRASH_EXIT or "Traceback (most recent call" in err:
        return "crash"
    return "ok" if code == 0 else "error"


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def run_attack(case: attacks.AttackCase, work: Path, timeout: float) -> Outcome:
    folder = Path(tempfile.mkdtemp(prefix="attack-", dir=work))
    world = attacks.make_world(folder)
    case.setup(world)
    run_dir = folder / "_run"
    run_dir.mkdir()
    before = attacks.fingerprint(folder)
    code, hung, seconds = _run_forked(_attack_child, (case, world, str(run_dir)), timeout)
    outside = attacks.written_outside(world, before, attacks.fingerprint(folder))
    executed = attacks.code_executed(world)
    err = (run_dir / "stderr").read_text(errors="replace")
    network = _read(run_dir / "network")
    status = _status(hung, code, err)
    lost: list[str] = []
    if world.db.exists():
        titles, check = _titles(world.db)
        lost = [t for t in case.good if t not in titles]
        if check != "ok":
            lost.append(f"integrity_check: {check}")
    message = err.strip().splitlines()[-1] if err.strip() else ""
    shutil.rmtree(folder, ignore_errors=True)
    return Outcome(
        case.name,
        case.category,
        "attack",
        status,
        code,
        round(seconds, 2),
        lost,
        network.count("\n\n"),
        message[:300],
        outside,
        executed,
    )


def _titles(db: Path) -> tuple[set[str], str]:
    conn = sqlite3.connect(db)
    try:
        titles = {r[0] for r in conn.execute("SELECT title FROM papers")}
        check = conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()
    return titles, check


def _template(folder: Path) -> Path:
    from assistant.library.models import Paper
    from assistant.library.store import Library

    db = folder / "template.sqlite"
    lib = Library(db)
    for title in COMMITTED:
        lib.add_paper(Paper(title=title, authors=["Doe, Jane"], year=2019))
    lib.close()
    return db


def run_case(case: Case, template: Path, work: Path, timeout: float) -> Outcome:
    folder = Path(tempfile.mkdtemp(prefix="case-", dir=work))
    db = folder / "lib.sqlite"
    shutil.copy(template, db)
    code, hung, seconds = _run_forked(_child, (case, str(db), str(folder)), timeout)
    err = _read(folder / "stderr")
    network = _read(folder / "network")
    status = _status(hung, code, err)
    titles, check = _titles(db) if db.exists() else (set(), "missing")
    lost = [t for t in COMMITTED + case.good if t not in titles]
    if check != "ok":
        lost.append(f"integrity_check: {check}")
    message = err.strip().splitlines()[-1] if err.strip() else ""
    shutil.rmtree(folder, ignore_errors=True)
    return Outcome(
        case.name,
        case.category,
        case.kind,
        status,
        code,
        round(seconds, 2),
        lost,
        network.count("\n\n"),
        message[:300],
    )


def run(
    timeout: float = 30.0, only: str | None = None, work: Path | None = None, details: bool = False
) -> dict:
    """Generate the corpus, run every case, return the JSON-ready summary."""
    # the product's modules are loaded once here; every child starts from this state
    import assistant.cli
    import assistant.cli.library
    import assistant.cli.manuscript  # noqa: F401

    own = work is None
    work = Path(tempfile.mkdtemp(prefix="reliability-")) if own else work
    try:
        cases = generate(work / "corpus")
        if only:
            cases = [c for c in cases if only in c.name or only == c.category]
        template = _template(work)
        outcomes = [run_case(c, template, work, timeout) for c in cases]
        for attack in attacks.generate():
            if not only or only in attack.name or only == attack.category:
                outcomes.append(run_attack(attack, work, timeout))
    finally:
        if own:
            shutil.rmtree(work, ignore_errors=True)
    summary = summarise(outcomes)
    if details:
        summary["cases"] = [asdict(o) for o in outcomes]
    return summary


def summarise(outcomes: list[Outcome]) -> dict:
    by_category: dict[str, dict[str, int]] = {}
    for o in outcomes:
        row = by_category.setdefault(o.category, {"inputs": 0, "ok": 0, "error": 0})
        row["inputs"] += 1
        row[o.status] = row.get(o.status, 0) + 1
    bad = [
        o
        for o in outcomes
        if o.status in ("crash", "hang") or o.lost or o.network or o.outside or o.executed
    ]
    return {
        "inputs": len(outcomes),
        "crashes": sum(o.status == "crash" for o in outcomes),
        "hangs": sum(o.status == "hang" for o in outcomes),
        "records_lost": sum(len(o.lost) for o in outcomes),
        "network_calls": sum(o.network for o in outcomes),
        "files_written_outside_targets": sum(len(o.outside) for o in outcomes),
        "code_executions": sum(o.executed for o in outcomes),
        "clean_errors": sum(o.status == "error" for o in outcomes),
        "ok": sum(o.status == "ok" for o in outcomes),
        "slowest_s": max((o.seconds for o in outcomes), default=0.0),
        "by_category": by_category,
        "failures": [asdict(o) for o in bad],
    }


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m tools.reliability",
        description="Run the bad-input corpus through import and manuscript; print a JSON table.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    run_p = sub.add_parser("run", help="run the corpus")
    run_p.add_argument("--json", action="store_true", help="print the JSON summary only")
    run_p.add_argument("--timeout", type=float, default=30.0, help="seconds per input (hang)")
    run_p.add_argument("--only", help="run the cases whose name contains this (or a category)")
    run_p.add_argument("--details", action="store_true", help="include every case's outcome")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    summary = run(args.timeout, args.only, details=args.details)
    print(json.dumps(summary, indent=1, ensure_ascii=False))
    failed = summary["crashes"] or summary["hangs"] or summary["records_lost"]
    failed = failed or summary["files_written_outside_targets"] or summary["code_executions"]
    return 1 if failed or summary["network_calls"] else 0
