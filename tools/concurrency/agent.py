"""A long-lived program on the library for the concurrency suite: the service (the GUI's engine,
with the job connection and a panel-like second connection) or the real window offscreen.

Reads one JSON command a line on stdin, answers one JSON line on stdout:
``{"op": "add", "title", "doi", "year"}`` (one paper, one transaction, auto-export after it),
``{"op": "count"}`` (live papers as this program sees them now, and for the window the rows its
table shows after noticing others' changes), ``{"op": "search", "q"}``, ``{"op": "ping"}``.

    python -m tools.concurrency.agent --db LIB --mode service|gui
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import traceback
from pathlib import Path


def _paper(cmd: dict):
    from assistant.library.models import Paper

    return Paper(
        title=cmd["title"],
        doi=cmd.get("doi"),
        year=cmd.get("year", 2020),
        authors=[cmd.get("author", "Probe, Agent")],
        entry_type="article",
        venue="Concurrency Probes",
    )


def _deleted_library_fds(db: Path) -> list[str]:
    """Descriptors of this process on library files unlinked under it (issue 31's symptom)."""
    out = []
    try:
        for fd in Path("/proc/self/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith(str(db)) and target.endswith("(deleted)"):
                out.append(target)
    except OSError:
        pass
    return out


class Handler:
    """The commands, run against ``writer`` (job connection) and ``reader`` (a second one)."""

    def __init__(self, db: Path, writer, reader, window=None) -> None:
        self.db, self.writer, self.reader, self.window = db, writer, reader, window

    def __call__(self, cmd: dict) -> dict:
        op = cmd.get("op")
        if op == "ping":
            return {"ok": True}
        if op == "add":
            lib = self.writer()
            with lib.transaction():
                lib.add_paper(_paper(cmd))
            return {"ok": True, "export_errors": list(lib.auto_export_errors)}
        if op == "count":
            out = {
                "ok": True,
                "count": self.reader().count(),
                "writer_count": self.writer().count(),
                "deleted_fds": _deleted_library_fds(self.db),
            }
            if self.window is not None:
                self.window.library_watch.poll()
                out["rows"] = self.window.library_panel.model.rowCount()
            return out
        if op == "search":
            return {"ok": True, "hits": len(self.reader().search(cmd["q"]))}
        return {"ok": False, "error": f"unknown op {op!r}"}


def _answer(handler: Handler, line: str) -> str:
    try:
        result = handler(json.loads(line))
    except Exception as exc:
        result = {
            "ok": False,
            "error": f"{type(exc).__name__}: {exc}",
            "trace": traceback.format_exc(),
        }
    return json.dumps(result)


def run_service(db: Path) -> int:
    from assistant.service import Service, ServiceSettings, open_library

    service = Service(ServiceSettings(db_path=db))
    panel = open_library(db)  # a second long-lived connection, as the window's library panel
    handler = Handler(db, lambda: service.library, lambda: panel)
    print(json.dumps({"ready": True, "pid": os.getpid()}), flush=True)
    for line in sys.stdin:
        if line.strip():
            print(_answer(handler, line), flush=True)
    panel.close()
    service.close()
    return 0


def run_gui(db: Path) -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QObject, Signal
    from PySide6.QtWidgets import QApplication

    from assistant.gui.main_window import MainWindow
    from assistant.gui.settings import AppSettings

    app = QApplication.instance() or QApplication([])
    window = MainWindow(AppSettings(library_path=str(db), first_run_done=True))
    window.quiet_close = True
    window.jobs.start(prepare=False)
    window.show()
    handler = Handler(
        db, lambda: window.engine.library, lambda: window.library_panel.library, window
    )

    class Bridge(QObject):
        line = Signal(str)

    bridge = Bridge()

    def on_line(line: str) -> None:  # on the UI thread, like a user's action
        if not line:
            app.quit()
            return
        print(_answer(handler, line), flush=True)

    bridge.line.connect(on_line)

    def read_stdin() -> None:
        for line in sys.stdin:
            if line.strip():
                bridge.line.emit(line)
        bridge.line.emit("")

    threading.Thread(target=read_stdin, daemon=True).start()
    print(json.dumps({"ready": True, "pid": os.getpid()}), flush=True)
    app.exec()
    window.engine.close()
    window.library_panel.close_library()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, type=Path)
    parser.add_argument("--mode", choices=("service", "gui"), default="service")
    args = parser.parse_args(argv)
    return run_gui(args.db) if args.mode == "gui" else run_service(args.db)


if __name__ == "__main__":
    sys.exit(main())
