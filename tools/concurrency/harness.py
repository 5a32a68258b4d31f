"""Rounds of real programs on one library, random interleavings and ``kill -9`` (issue 31).

Each round starts 3-6 programs at random moments on the same library file: CLI ``library
import`` (a new .bib of 3 probe papers), ``library edit``, ``library search``, ``index``, the
language server (``assistant lsp`` over stdio, one ``\\cite{`` completion), and writes through
the long-lived programs: a service process standing in for the window (its job connection plus
a panel-like second connection) and, in some rounds, the real window offscreen. The library
keeps an auto-export file in sync. With probability ``kill_rate`` one running program is killed
with SIGKILL at a random moment. After each round:

- ``PRAGMA integrity_check`` is ``ok``;
- no record lost (every write that reported success is there exactly once), none duplicated,
  an import killed half-way is all or nothing, no record appears that nobody wrote;
- every long-lived program that was not killed still works without a restart: it sees the
  others' writes (its count equals the file's, the window's table too), holds no deleted
  ``-wal``/``-shm``, and can write; the auto-export file then holds every paper.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from tools.concurrency.checks import RoundChecks
from tools.concurrency.client import Agent

ROOT = Path(__file__).resolve().parents[2]
SEED_KEYS_PREFIX = "wa"  # the sample library has wang2016learningc, wang2018position, ...


def _env(home: Path, models: Path) -> dict:
    return dict(
        os.environ,
        PYTHONPATH=str(ROOT),
        HF_HUB_OFFLINE="1",
        QT_QPA_PLATFORM="offscreen",
        ASSISTANT_HOME=str(home),
        ASSISTANT_DB=str(home / "library.sqlite"),
        ASSISTANT_MODELS=str(models),
    )


@dataclass
class Action:
    """One program run in a round; ``titles``: the probe papers it writes."""

    kind: str
    titles: list[str] = field(default_factory=list)
    proc: subprocess.Popen | None = None
    agent: Agent | None = None
    ok: bool | None = None
    killed: bool = False
    error: str = ""
    done: threading.Event = field(default_factory=threading.Event)


@dataclass
class Tally:
    rounds: int = 0
    interleavings: int = 0  # rounds with two or more programs running at once
    programs: int = 0
    kills: int = 0
    kills_by_kind: dict = field(default_factory=dict)
    window_rounds: int = 0
    integrity_failures: int = 0
    lost: int = 0
    duplicated: int = 0
    phantom: int = 0
    partial_imports: int = 0
    needed_restart: int = 0
    program_failures: int = 0
    failures: list = field(default_factory=list)

    def fail(self, round_no: int, what: str) -> None:
        if os.environ.get("CONCURRENCY_VERBOSE"):
            print(f"FAIL round {round_no}: {what}", file=sys.stderr, flush=True)
        if len(self.failures) < 30:
            self.failures.append(f"round {round_no}: {what}")


class Suite(RoundChecks):
    def __init__(self, work: Path, models: Path, seed: int, kill_rate: float, gui_every: int):
        self.work, self.models = work, models
        self.home = work / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        self.db = self.home / "library.sqlite"
        self.export = work / "auto-export.bib"
        self.env = _env(self.home, models)
        self.rng = random.Random(seed)
        self.kill_rate, self.gui_every = kill_rate, gui_every
        self.tally = Tally()
        self.expected: dict[str, str] = {}  # probe title -> "yes" | "maybe" (killed/failed)
        self.groups: list[list[str]] = []  # titles written in one transaction
        self.reported: set[str] = set()  # titles already counted as a failure
        self.count_reported = False
        self.seed_count = 0
        self.service: Agent | None = None
        self.window: Agent | None = None
        self.window_until = -1
        self.seq = 0

    # --- set-up -------------------------------------------------------------------------------
    def cli(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "assistant.cli", "--db", str(self.db), *args],
            env=self.env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def setup(self) -> None:
        from assistant.config import RESOURCES_DIR

        steps = [
            ("library", "import", str(RESOURCES_DIR / "sample" / "library.bib")),
            ("library", "auto-export", str(self.export)),
            ("models", "build"),
            ("index", "-q"),
        ]
        for args in steps:
            res = self.cli(*args, timeout=900)
            if res.returncode != 0:
                raise SystemExit(f"set-up failed: {' '.join(args)}: {res.stderr[-2000:]}")
        self.seed_count = self._db_count()
        self.seed_keys = [
            r[0] for r in self._query("SELECT citekey FROM papers WHERE deleted_at IS NULL")
        ]
        (self.work / "draft.tex").write_text(
            "\\documentclass{article}\\begin{document}\nClicks \\cite{wa}.\n\\end{document}\n"
        )

    def _query(self, sql: str, args=()) -> list[tuple]:
        conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=30)
        try:
            return conn.execute(sql, args).fetchall()
        finally:
            conn.close()

    def _db_count(self) -> int:
        return self._query("SELECT count(*) FROM papers WHERE deleted_at IS NULL")[0][0]

    def _log(self, name: str) -> Path:
        return self.work / "logs" / name

    # --- actions ------------------------------------------------------------------------------
    def _probe(self, round_no: int, tag: str) -> str:
        self.seq += 1
        return f"Concurrency probe r{round_no} {tag} n{self.seq} zq{self.seq}x"

    def _bib(self, titles: list[str]) -> Path:
        path = self.work / "bibs" / f"probe{titles[0].rsplit('zq', 1)[-1]}.bib"
        entries = []
        for i, title in enumerate(titles):
            n = title.rsplit("n", 1)[-1].split()[0]
            entries.append(
                f"@article{{probe{n}x{i},\n  title = {{{title}}},\n  author = {{Probe, Writer{i}}},\n"
                f"  year = {{2021}},\n  journal = {{Concurrency Probes}},\n"
                f"  doi = {{10.5555/probe.{n}.{i}}},\n}}\n"
            )
        path.write_text("\n".join(entries), encoding="utf-8")
        return path

    def plan(self, round_no: int) -> list[Action]:
        kinds = ["import", "import", "edit", "search", "lsp", "service-add", "service-add"]
        if self.rng.random() < 0.12:
            kinds.append("index")
        if self.window is not None and self.window.alive:
            kinds += ["window-add", "window-add"]
        n = self.rng.randint(3, 6)
        actions = [Action(self.rng.choice(kinds)) for _ in range(n)]
        for a in actions:
            if a.kind == "import":
                a.titles = [self._probe(round_no, f"import{i}") for i in range(3)]
            elif a.kind in ("service-add", "window-add"):
                a.titles = [self._probe(round_no, a.kind)]
        return actions

    def _run(self, action: Action, delay: float) -> None:
        time.sleep(delay)
        try:
            getattr(self, "_do_" + action.kind.replace("-", "_"))(action)
        except Exception as exc:
            action.ok, action.error = False, f"{type(exc).__name__}: {exc}"
        finally:
            action.done.set()

    def _popen(self, action: Action, args: list[str], **kw) -> subprocess.CompletedProcess:
        action.proc = subprocess.Popen(
            [sys.executable, "-m", "assistant.cli", "--db", str(self.db), *args],
            env=self.env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        out, err = action.proc.communicate(timeout=240)
        action.killed = action.killed or action.proc.returncode == -signal.SIGKILL
        action.ok = action.proc.returncode == 0
        if not action.ok:
            action.error = f"exit {action.proc.returncode}: {err.strip()[-400:]}"
        return subprocess.CompletedProcess(args, action.proc.returncode, out, err)

    def _do_import(self, action: Action) -> None:
        bib = self._bib(action.titles)
        self._popen(action, ["library", "import", str(bib)])

    def _do_edit(self, action: Action) -> None:
        key = self.rng.choice(self.seed_keys)
        self._popen(action, ["library", "edit", key, "--set", f"keywords=probe{self.seq}"])

    def _do_search(self, action: Action) -> None:
        res = self._popen(action, ["library", "search", "click"])
        if action.ok and "click" not in res.stdout.lower():
            action.ok, action.error = False, "search found nothing for 'click'"

    def _do_index(self, action: Action) -> None:
        self._popen(action, ["index", "-q"])

    def _do_lsp(self, action: Action) -> None:
        from assistant.lsp.client import StdioClient

        t0 = time.monotonic()
        # the models load in the background of 1 server in 4 (CPU): completion answers with the
        # library keys either way
        models = [] if self.rng.random() < 0.25 else ["--no-recommend"]
        client = StdioClient(
            [sys.executable, "-m", "assistant.cli", "--db", str(self.db), "lsp", *models],
            env=self.env,
            handlers={"window/workDoneProgress/create": lambda p: None},
            stderr_path=self._log(f"lsp{self.seq}.log"),
        )
        action.proc = client.proc
        try:
            client.initialize(self.work)
            draft = self.work / "draft.tex"
            text = draft.read_text()
            uri = client.open(draft, "latex", text)
            line = text.splitlines().index("Clicks \\cite{wa}.")
            result = client.request(
                "textDocument/completion",
                {"textDocument": {"uri": uri}, "position": {"line": line, "character": 15}},
                timeout=120,
            )
            items = result["items"] if isinstance(result, dict) else (result or [])
            labels = [i.get("label", "") for i in items]
            action.ok = any(label.startswith(SEED_KEYS_PREFIX) for label in labels)
            if not action.ok:
                said = [
                    n["params"].get("message", "")
                    for n in client.notifications
                    if n.get("method") in ("window/showMessage", "citeAssist/status")
                ]
                action.error = (
                    f"completion without library keys after {time.monotonic() - t0:.1f} s: "
                    f"{labels[:5]}; server said {said[-4:]}"
                )
            client.close(timeout=30)
        except Exception as exc:
            action.ok, action.error = False, f"{type(exc).__name__}: {exc}"
            if client.proc.poll() is None:
                client.proc.kill()
            client.proc.wait()
        finally:
            action.killed = action.killed or client.proc.returncode == -signal.SIGKILL

    def _do_service_add(self, action: Action) -> None:
        self._agent_add(action, self.service)

    def _do_window_add(self, action: Action) -> None:
        self._agent_add(action, self.window)

    def _agent_add(self, action: Action, agent: Agent | None) -> None:
        action.agent = agent
        if agent is None or not agent.alive:
            action.ok, action.error, action.killed = False, "agent not running", True
            return
        title = action.titles[0]
        doi = "10.5555/agent." + title.rsplit("zq", 1)[-1]  # unique per probe: never merged
        answer = agent.request({"op": "add", "title": title, "doi": doi})
        action.ok = bool(answer.get("ok"))
        action.killed = action.killed or bool(answer.get("dead"))
        if not action.ok:
            action.error = answer.get("error", "?") + answer.get("trace", "")[-600:]

    # --- one round ----------------------------------------------------------------------------
    def _ensure_agents(self, round_no: int) -> None:
        if self.service is None or not self.service.alive:
            if self.service is not None:
                self.service.stop()
            self.service = Agent("service", self.db, self.env, self._log("service.log"))
        if self.window is not None and (not self.window.alive or round_no > self.window_until):
            self.window.stop()
            self.window = None
        if self.window is None and self.gui_every and round_no % self.gui_every == 0:
            self.window = Agent("gui", self.db, self.env, self._log("window.log"))
            self.window_until = round_no + 2
        if self.window is not None:
            self.tally.window_rounds += 1

    def round(self, round_no: int) -> None:
        self._ensure_agents(round_no)
        actions = self.plan(round_no)
        threads = []
        for a in actions:
            t = threading.Thread(target=self._run, args=(a, self.rng.uniform(0, 0.6)), daemon=True)
            t.start()
            threads.append(t)
        if self.rng.random() < self.kill_rate:
            self._kill_one(actions, round_no)
        for t in threads:
            t.join(timeout=400)
        self.tally.rounds += 1
        self.tally.programs += len(actions)
        if len(actions) >= 2:
            self.tally.interleavings += 1
        self.check(round_no, actions)

    def _kill_one(self, actions: list[Action], round_no: int) -> None:
        time.sleep(self.rng.uniform(0.2, 2.5))
        running = [a for a in actions if a.proc is not None and a.proc.poll() is None]
        targets: list[tuple[str, object]] = [(a.kind, a) for a in running]
        if self.service is not None and self.service.alive and self.rng.random() < 0.25:
            targets.append(("service", self.service))
        if self.window is not None and self.window.alive and self.rng.random() < 0.25:
            targets.append(("window", self.window))
        if not targets:
            return
        kind, target = self.rng.choice(targets)
        try:
            if isinstance(target, Agent):
                target.kill()
                for a in actions:
                    if a.agent is target or (a.kind == f"{kind}-add"):
                        a.killed = True
            else:
                os.kill(target.proc.pid, signal.SIGKILL)
                target.killed = True
        except ProcessLookupError:
            return
        self.tally.kills += 1
        self.tally.kills_by_kind[kind] = self.tally.kills_by_kind.get(kind, 0) + 1

    def close(self) -> None:
        for agent in (self.service, self.window):
            if agent is not None:
                agent.stop()


def run(rounds: int, work: Path, models: Path, seed: int, kill_rate: float, gui_every: int) -> dict:
    (work / "logs").mkdir(parents=True, exist_ok=True)
    (work / "bibs").mkdir(parents=True, exist_ok=True)
    suite = Suite(work, models, seed, kill_rate, gui_every)
    t0 = time.monotonic()
    suite.setup()
    setup_s = time.monotonic() - t0
    try:
        for r in range(1, rounds + 1):
            suite.round(r)
            if os.environ.get("CONCURRENCY_VERBOSE"):
                print(
                    f"round {r}: kills {suite.tally.kills}, failures {len(suite.tally.failures)}",
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        suite.close()
    t = suite.tally
    failures = (
        t.integrity_failures
        + t.lost
        + t.duplicated
        + t.phantom
        + t.partial_imports
        + t.needed_restart
        + t.program_failures
    )
    return {
        "benchmark": "concurrency",
        "rounds": t.rounds,
        "interleavings": t.interleavings,
        "programs_run": t.programs,
        "kills": t.kills,
        "kills_by_kind": t.kills_by_kind,
        "rounds_with_window": t.window_rounds,
        "integrity_failures": t.integrity_failures,
        "lost": t.lost,
        "duplicated": t.duplicated,
        "phantom": t.phantom,
        "partial_imports": t.partial_imports,
        "programs_needing_restart": t.needed_restart,
        "program_failures": t.program_failures,
        "failures": failures,
        "failure_examples": t.failures,
        "library_papers": suite._db_count(),
        "setup_s": round(setup_s, 1),
        "seconds": round(time.monotonic() - t0, 1),
        "seed": seed,
        "kill_rate": kill_rate,
    }
