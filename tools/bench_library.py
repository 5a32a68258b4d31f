"""Benchmark the library view on a large library; prints JSON.

    QT_QPA_PLATFORM=offscreen python tools/bench_library.py /work/data/library/acm.sqlite \
        [--v1 /work/data/library/acm-v1.sqlite]

Measures, on real widgets rendered offscreen: open to first paint (library open + model query +
the table painted), sort by year (SQL + repaint), search as you type (each keystroke of a few
queries: SQL + fetch + repaint), scrolling (jump to random rows: fetch + repaint), and in the
library layer the duplicates finder and, with ``--v1``, the v1 -> v2 migration of a copy.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

QUERIES = ("neural ranking model", "koll weird", "query expansion", "10.1145/3331184")


def _stats(values: list[float]) -> dict:
    values = sorted(values)
    return {
        "median_ms": round(statistics.median(values), 1),
        "p95_ms": round(values[min(len(values) - 1, int(0.95 * len(values)))], 1),
        "max_ms": round(values[-1], 1),
        "n": len(values),
    }


def _paint(app, panel) -> None:
    app.processEvents()
    panel.table.viewport().grab()  # renders the visible rows (fetching their block if needed)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db", type=Path)
    parser.add_argument(
        "--v1", type=Path, default=None, help="a schema-v1 library to migrate (copied)"
    )
    parser.add_argument("--no-duplicates", action="store_true")
    args = parser.parse_args(argv)

    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(sys.argv[:1])
    from assistant.gui.library_panel import LibraryPanel

    out: dict = {"db": str(args.db)}
    start = time.perf_counter()
    panel = LibraryPanel()
    panel.resize(1200, 800)
    panel.show()
    panel.set_library_path(args.db)
    _paint(app, panel)
    out["open_to_first_paint_s"] = round(time.perf_counter() - start, 3)
    out["papers"] = panel.model.rowCount()
    out["first_query_ms"] = round(panel.model.last_query_ms, 1)

    year = panel.model.columns.index("year")
    title = panel.model.columns.index("title")
    cold, flips = [], []
    for _ in range(3):
        t = time.perf_counter()
        panel.table.sortByColumn(title, Qt.SortOrder.AscendingOrder)
        _paint(app, panel)
        out["sort_by_title_ms"] = round((time.perf_counter() - t) * 1000, 1)
        t = time.perf_counter()  # a new column: one SQL query over the whole library
        panel.table.sortByColumn(year, Qt.SortOrder.AscendingOrder)
        _paint(app, panel)
        cold.append((time.perf_counter() - t) * 1000)
        for order in (Qt.SortOrder.DescendingOrder, Qt.SortOrder.AscendingOrder):
            t = time.perf_counter()  # the same column the other way: the order reversed
            panel.table.sortByColumn(year, order)
            _paint(app, panel)
            flips.append((time.perf_counter() - t) * 1000)
    out["sort_by_year"] = _stats(cold)
    out["sort_by_year_flip_direction"] = _stats(flips)
    panel.table.sortByColumn(year, Qt.SortOrder.DescendingOrder)

    keystrokes, sql = [], []
    per_query = {}
    for query in QUERIES:
        times = []
        for n in range(1, len(query) + 1):
            t = time.perf_counter()
            panel.search_edit.blockSignals(True)
            panel.search_edit.setText(query[:n])
            panel.search_edit.blockSignals(False)
            panel.browser.apply_search()  # what the debounce timer calls
            _paint(app, panel)
            times.append((time.perf_counter() - t) * 1000)
            sql.append(panel.model.last_query_ms)
        keystrokes += times
        per_query[query] = {"hits": panel.model.rowCount(), **_stats(times)}
    out["search_as_you_type"] = {**_stats(keystrokes), "sql": _stats(sql), "queries": per_query}
    panel.search_edit.setText("")
    panel.browser.apply_search()

    rng = random.Random(0)
    frames = []
    bar = panel.table.verticalScrollBar()
    for _ in range(60):
        t = time.perf_counter()
        bar.setValue(rng.randrange(bar.maximum() + 1))
        _paint(app, panel)
        frames.append((time.perf_counter() - t) * 1000)
    out["scroll_jump_frame"] = _stats(frames)
    small = []
    for _ in range(60):
        t = time.perf_counter()
        bar.setValue(min(bar.maximum(), bar.value() + 3))
        _paint(app, panel)
        small.append((time.perf_counter() - t) * 1000)
    out["scroll_step_frame"] = _stats(small)

    if not args.no_duplicates:
        t = time.perf_counter()
        groups = panel.manager.duplicates()
        out["duplicates"] = {
            "groups": len(groups),
            "papers": sum(len(g.ids) for g in groups),
            "seconds": round(time.perf_counter() - t, 2),
        }
    panel.close_library()

    if args.v1:
        from assistant.library.store import Library

        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / "v1.sqlite"
            shutil.copy(args.v1, copy)
            t = time.perf_counter()
            with Library(copy) as lib:
                out["migrate_v1_to_v2"] = {
                    "seconds": round(time.perf_counter() - t, 2),
                    "papers": lib.count(),
                    "schema_version": lib.schema_version,
                }
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
