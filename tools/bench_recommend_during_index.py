"""Recommend latency on the bundled sample while an index job runs (issue 18; target <= 300 ms).

    python tools/bench_recommend_during_index.py [--queries 30] [--home DIR]

Sets up the sample library (import + index) in ``--home`` (a temporary ASSISTANT_HOME by
default), then starts a full index rebuild on a background thread -- the same Service the GUI
uses, its job lock held as in the GUI's engine thread -- and meanwhile times ``Service.recommend``
on the draft's sentences from the main thread, as the GUI's recommend thread does. Prints one
JSON object: median/p90/max latency during the job, the same without a job, and how many
queries really overlapped the job.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--home", type=Path, default=None)
    args = parser.parse_args(argv)
    home = args.home or Path(tempfile.mkdtemp(prefix="bench-rec-"))
    os.environ["ASSISTANT_HOME"] = str(home)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from assistant.config import RESOURCES_DIR
    from assistant.gui.sample import demo_sentences, setup_sample
    from assistant.retrieval.query import Query
    from assistant.service import Service, ServiceSettings

    engine = Service(ServiceSettings(db_path=home / "library.sqlite"))
    setup_sample(engine)
    draft = (RESOURCES_DIR / "sample" / "draft.tex").read_text(encoding="utf-8")
    sentences = [d.text for d in demo_sentences(draft, n=12)] or ["click models position bias"]

    def timed(n: int) -> list[float]:
        out = []
        for i in range(n):
            t = time.perf_counter()
            engine.recommend(Query(text=sentences[i % len(sentences)], mode="local"))
            out.append((time.perf_counter() - t) * 1000)
        return out

    idle = timed(max(5, args.queries // 3))
    running = threading.Event()
    done = threading.Event()

    def job() -> None:
        with engine._job_lock:  # what the GUI's engine thread holds during Rebuild index
            running.set()
            engine.build_index(rebuild=True)
        done.set()

    thread = threading.Thread(target=job, daemon=True)
    thread.start()
    running.wait()
    during, overlapped = [], 0
    for i in range(args.queries):
        t = time.perf_counter()
        engine.recommend(Query(text=sentences[i % len(sentences)], mode="local"))
        during.append((time.perf_counter() - t) * 1000)
        overlapped += not done.is_set()
    thread.join()
    result = {
        "benchmark": "recommend latency while an index rebuild runs (sample library)",
        "papers": engine.library.count(),
        "queries": len(during),
        "overlapping_the_job": overlapped,
        "during_job_ms": {
            "median": round(statistics.median(during), 1),
            "p90": round(sorted(during)[int(0.9 * (len(during) - 1))], 1),
            "max": round(max(during), 1),
        },
        "idle_ms": {"median": round(statistics.median(idle), 1)},
        "target_median_ms": 300,
        "cpu_count": os.cpu_count(),
    }
    print(json.dumps(result))
    engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
