"""Take the README screenshot from the running app on the bundled sample.

    xvfb-run -s "-screen 0 1600x1000x24" python -m assistant.gui.screenshot docs/screenshot.png

Opens the app exactly like ``assistant-gui --sample``, waits for the library and models,
selects a sentence of the draft, recommends, expands the best card and saves the window.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", type=Path)
    parser.add_argument(
        "--sentence", default="Click models such as the dynamic Bayesian network model"
    )
    parser.add_argument("--width", type=int, default=1500)
    parser.add_argument("--height", type=int, default=900)
    parser.add_argument("--timeout", type=int, default=900, help="seconds to wait for the set-up")
    args = parser.parse_args(argv)

    from PySide6.QtCore import QTimer

    from assistant.gui.app import _parser, create_application, open_window

    app = create_application(sys.argv[:1])
    window = open_window(_parser().parse_args(["--sample"]))
    window.resize(args.width, args.height)
    state = {"code": 1}

    def fail(message: str) -> None:
        print(f"error: {message}", file=sys.stderr)
        app.exit(1)

    def ready(_status) -> None:
        editor = window.documents.current_editor()
        text = editor.toPlainText()
        import re

        match = re.search(r"\s+".join(map(re.escape, args.sentence.split())), text)
        if match is None:
            return fail(f"sentence not found in the draft: {args.sentence!r}")
        start = match.start()
        from assistant.service import textops

        s, e = textops.sentence_bounds(text, start)
        editor.select_range(s, e)
        editor.centerCursor()
        window.recommender.recommend()

    def shoot(result) -> None:
        print("timings (ms):", {k: round(v) for k, v in (result.timings_ms or {}).items()})

        def finish() -> None:
            if not window.results_panel.is_complete():
                QTimer.singleShot(100, finish)
                return
            if window.results_panel.cards:
                window.results_panel.cards[0].expand_button.setChecked(True)
            QTimer.singleShot(800, save)

        finish()

    def save() -> None:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        ok = window.grab().save(str(args.output))
        print(
            f"saved {args.output} ({window.width()}x{window.height()})"
            if ok
            else "error: save failed"
        )
        state["code"] = 0 if ok else 1
        app.exit(state["code"])

    window.engine_ready.connect(ready)
    window.recommendations_ready.connect(shoot)
    window.error_shown.connect(lambda m: fail(m))
    QTimer.singleShot(args.timeout * 1000, lambda: fail("timed out"))
    window.quiet_close = True
    app.exec()
    return state["code"]


if __name__ == "__main__":
    sys.exit(main())
