"""``assistant-gui``: the desktop app (and its headless ``--sample --demo`` for CI).

Qt is imported only when a window is opened, so ``--demo`` works without a display
or Qt platform libraries.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from assistant.config import RESOURCES_DIR
from assistant.logs import configure_logging

STYLE_PATH = RESOURCES_DIR / "styles" / "app.qss"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="assistant-gui", description="Cite-Assist desktop app.")
    p.add_argument("files", nargs="*", help="manuscripts (.tex/.md/.txt) or PDFs to open")
    p.add_argument(
        "--sample",
        action="store_true",
        help="import the bundled sample library (once), build models + index, open the sample draft",
    )
    p.add_argument(
        "--demo",
        action="store_true",
        help="headless: print recommendations for a few sentences of the sample draft (no window)",
    )
    p.add_argument("--db", help="library database file (default: $ASSISTANT_DB or the data dir)")
    p.add_argument("--sentences", type=int, default=4, help="--demo: how many draft sentences")
    p.add_argument("-k", type=int, default=5, help="--demo: recommendations per sentence")
    p.add_argument("-v", "--verbose", action="store_true")
    return p


def has_display() -> bool:
    """Whether Qt can open a window (a display, Wayland, or an explicit QT_QPA_PLATFORM)."""
    if sys.platform != "linux":
        return True
    return bool(
        os.environ.get("DISPLAY")
        or os.environ.get("WAYLAND_DISPLAY")
        or os.environ.get("QT_QPA_PLATFORM")
    )


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    configure_logging(args.verbose, logging.WARNING)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    db_path = Path(args.db).expanduser() if args.db else None
    if args.demo or (args.sample and not has_display()):
        if not args.demo:
            print(
                "No display found: printing the sample recommendations instead (--demo).",
                file=sys.stderr,
            )
        from assistant.gui.sample import run_demo

        return run_demo(n_sentences=args.sentences, k=args.k, db_path=db_path)
    if not has_display():
        print(
            "error: no display found (set DISPLAY, run under xvfb-run, or use --sample --demo)",
            file=sys.stderr,
        )
        return 2
    import importlib.util

    if importlib.util.find_spec("PySide6") is None:
        print(
            "error: the desktop app needs PySide6: pip install 'cite-assist[gui]' "
            "(or use the CLI: assistant --help)",
            file=sys.stderr,
        )
        return 2
    return run_app(args, db_path)


def create_application(argv: list[str] | None = None):
    """The QApplication with the app's name, icon and style sheet."""
    from PySide6.QtGui import QIcon
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(argv or [sys.argv[0]])
    app.setApplicationName("Cite-Assist")
    app.setOrganizationName("cite-assist")
    app.setDesktopFileName("cite-assist")
    icon = RESOURCES_DIR / "icons" / "cite-assist.svg"
    if icon.exists():
        app.setWindowIcon(QIcon(str(icon)))
    if STYLE_PATH.exists():
        app.setStyleSheet(STYLE_PATH.read_text(encoding="utf-8"))
    return app


def open_window(args=None, db_path: Path | None = None):
    """Create, show and start the main window (sample set-up and files from ``args``)."""
    from dataclasses import replace

    # importing the service loads numpy, onnxruntime, faiss and bm25s now: C-extension set-up
    # holds the GIL, so doing it later on a job thread would freeze the UI for a moment
    from assistant.gui.main_window import MainWindow
    from assistant.gui.settings import load_settings

    settings = load_settings()
    if db_path is not None:
        settings = replace(settings, library_path=str(db_path))
    window = MainWindow(settings)
    window.show()
    sample = bool(args and args.sample)
    if sample:
        from assistant.gui.sample import start_sample

        start_sample(window)
    else:
        window.jobs.start()
        if not settings.first_run_done:
            from assistant.gui.first_run import maybe_show_first_run

            window.delayed(300, lambda: maybe_show_first_run(window))
    for name in args.files if args else []:
        path = Path(name)
        if path.suffix.lower() == ".pdf":
            window.documents.import_pdf(path)
        else:
            window.documents.open_file(path)
    return window


def run_app(args, db_path: Path | None) -> int:
    app = create_application(sys.argv[:1])
    window = open_window(args, db_path)
    code = app.exec()
    del window
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
