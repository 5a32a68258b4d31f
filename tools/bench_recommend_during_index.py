"""Recommend latency on the bundled sample while an index job runs (prints JSON).

    python tools/bench_recommend_during_index.py [--home DIR] [--queries 30]

Imports and indexes resources/sample/library.bib into DIR (a temporary folder by default), measures
recommend latency idle, then again while a full re-index (``rebuild=True``) runs in another thread
through the same :class:`assistant.service.Service` (the GUI's situation: "Rebuild index" or
"Adapt" running while the user asks for citations).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "resources" / "sample"


def _sentences() -> list[str]:
    from assistant.service import strip_citation_markers

    text = (SAMPLE / "draft.tex").read_text(encoding="utf-8")
    body = text[text.index("\\section") :]
    out = []
    for line in body.split(". "):
        line = strip_citation_markers(" ".join(line.split()))
        if len(line) > 60 and "\\" not in line:
            out.append(line)
    return out


def _timed(service, queries: list[str]) -> list[float]:
    times = []
    for q in queries:
        t = time.perf_counter()
        result = service.recommend(q)
        times.append((time.perf_counter() - t) * 1000)
        assert result.items
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, default=None)
    parser.add_argument("--queries", type=int, default=30)
    args = parser.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="bench-svc-"))
    os.environ.setdefault("ASSISTANT_HOME", str(home))
    from assistant.service import Service, ServiceSettings

    service = Service(ServiceSettings(db_path=home / "library.sqlite"))
    if service.library.count() == 0:
        service.import_files([SAMPLE / "library.bib"], index=False)
    service.prepare()
    queries = (_sentences() * 10)[: args.queries]
    idle = _timed(service, queries)
    job_done = threading.Event()
    job_seconds = []

    def job() -> None:
        t = time.perf_counter()
        service.build_index(rebuild=True)
        job_seconds.append(time.perf_counter() - t)
        job_done.set()

    worker = threading.Thread(target=job)
    worker.start()
    during: list[float] = []
    while not job_done.is_set() and len(during) < 10 * args.queries:
        during += _timed(service, queries[:5])
    worker.join()
    service.close()
    print(
        json.dumps(
            {
                "papers": 176,
                "idle_ms": {"median": round(statistics.median(idle), 1), "n": len(idle)},
                "during_index_ms": {
                    "median": round(statistics.median(during), 1) if during else None,
                    "max": round(max(during), 1) if during else None,
                    "n": len(during),
                },
                "index_job_s": round(job_seconds[0], 1) if job_seconds else None,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
