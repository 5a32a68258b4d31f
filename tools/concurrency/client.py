"""The harness's side of a long-lived program (``tools.concurrency.agent``): start it, send
JSON commands, read the answers with a timeout, kill it."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class Agent:
    """A long-lived program answering JSON commands (tools.concurrency.agent)."""

    def __init__(self, mode: str, db: Path, env: dict, log: Path) -> None:
        self.mode, self.db = mode, db
        self._log = open(log, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tools.concurrency.agent", "--db", str(db), "--mode", mode],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=env,
            cwd=ROOT,
            text=True,
            bufsize=1,
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()
        ready = self._next(120)
        if not ready or not json.loads(ready).get("ready"):
            raise RuntimeError(f"{mode} agent did not start (see {log})")

    def _read(self) -> None:
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _next(self, timeout: float) -> str | None:
        try:
            return self._lines.get(timeout=timeout)
        except queue.Empty:
            return None

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def request(self, cmd: dict, timeout: float = 90.0) -> dict:
        with self._lock:
            if not self.alive:
                return {"ok": False, "error": "not running", "dead": True}
            try:
                self.proc.stdin.write(json.dumps(cmd) + "\n")
                self.proc.stdin.flush()
            except OSError as exc:
                return {"ok": False, "error": str(exc), "dead": True}
            line = self._next(timeout)
        if line is None:
            return {"ok": False, "error": "no answer", "dead": not self.alive}
        return json.loads(line)

    def kill(self) -> None:
        if self.alive:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.alive:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.kill()
        self._log.close()
