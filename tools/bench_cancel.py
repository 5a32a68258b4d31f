"""Cancel latency of the GUI's background jobs, and Recommend beside a running Adapt (issue 34).

    python tools/bench_cancel.py [--home DIR] [--adapt-seconds 40] [--skip-adapt]

Uses the Service the GUI uses, each job on a thread of its own at the GUI's job priority
(``gui.workers.lower_thread_priority``) with the GUI's cancel flag, on the bundled sample plus
three real ACM-DL proceedings (../shared; the sample alone without it). Measures, from the moment
Cancel is pressed to the moment the job's thread has returned:

* index: a full rebuild, cancelled two seconds into embedding;
* import: the two largest ACM-DL files (one transaction), cancelled 2 s in;
* adapt: "Adapt to my library", cancelled ``--adapt-seconds`` in, and the Recommend latency
  (median over the draft's sentences) while it runs, against the same queries when idle.

Prints one JSON object (targets: cancel <= 2 s; Recommend beside Adapt <= 1.5x idle).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

ACM_FILES = (
    "acm-dl/ictir/ictir-2019.bib",
    "acm-dl/chiir/chiir-2019.bib",
    "acm-dl/wsdm/wsdm-2019.bib",
)
#: the import cancelled mid-way: the two largest ACM-DL files (3.4 + 3.2 MB)
BIG_FILES = ("acm-dl/journals/jasist.bib", "acm-dl/journals/jmlr.bib")


def acm_files(out: Path) -> list[Path]:
    archive = (
        Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "acm-cr" / "acm-dl.tar.xz"
    )
    if not archive.exists():
        return []
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if m.name in ACM_FILES + BIG_FILES]
        tar.extractall(out, members=members, filter="data")
    return [out / n for n in ACM_FILES + BIG_FILES if (out / n).exists()]


class Job:
    """A job on its own low-priority thread with a cancel flag (as gui.workers runs it)."""

    def __init__(self, fn) -> None:
        from assistant.gui.workers import CancelToken, lower_thread_priority

        self.token, self.events, self.error = CancelToken(), [], None
        self.started = time.perf_counter()

        def run() -> None:
            lower_thread_priority()
            try:
                fn(self.progress, self.token)
            except BaseException as exc:  # Cancelled is the expected end
                self.error = type(exc).__name__
            self.ended = time.perf_counter()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def progress(self, event) -> None:
        """As the GUI's job runner: record, and raise ``Cancelled`` once Cancel was pressed."""
        from assistant.errors import Cancelled

        self.events.append((time.perf_counter(), event.stage, event.message))
        if self.token():
            raise Cancelled()

    def wait_stage(self, stages: tuple[str, ...], timeout: float) -> bool:
        end = time.perf_counter() + timeout
        while time.perf_counter() < end and self.thread.is_alive():
            if any(stage in stages for _t, stage, _m in self.events):
                return True
            time.sleep(0.05)
        return False

    def cancel(self) -> dict:
        pressed = time.perf_counter()
        self.token.cancel()
        self.thread.join(600)
        return {
            "cancel_latency_s": round(self.ended - pressed, 3),
            "ran_s": round(pressed - self.started, 2),
            "ended_with": self.error or "finished",
            "last_progress": self.events[-1][2] if self.events else "",
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, default=None)
    parser.add_argument("--adapt-seconds", type=float, default=40.0)
    parser.add_argument("--skip-adapt", action="store_true")
    parser.add_argument("--import-only", action="store_true")
    args = parser.parse_args(argv)
    home = args.home or Path(tempfile.mkdtemp(prefix="bench-cancel-"))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from assistant.config import RESOURCES_DIR
    from assistant.gui.sample import demo_sentences, setup_sample
    from assistant.retrieval.query import Query
    from assistant.service import Service, ServiceSettings

    files = acm_files(home / "acm")
    from assistant.gui.main_window import INDEX_BATCH

    out: dict = {"acm_files": len(files)}

    big = [f for f in files if f.relative_to(home / "acm").as_posix() in BIG_FILES]
    small = [f for f in files if f not in big]
    # import of two large files into a library of their own, cancelled 2 s in (rolled back)
    if big:
        other = Service(ServiceSettings(db_path=home / "import.sqlite"))
        job = Job(lambda p, c: other.import_files(big, p, c, index=False))
        time.sleep(2.0)
        out["import"] = job.cancel()
        out["import"]["papers_after"] = other.library.count()
        other.close()
    if args.import_only:
        json.dump(out, sys.stdout, indent=1)
        print()
        return 0
    engine = Service(ServiceSettings(db_path=home / "library.sqlite", index_batch_size=INDEX_BATCH))
    setup_sample(engine)
    out["papers_sample"] = engine.library.count()
    if small:
        engine.import_files(small, index=False)  # a library worth indexing
    out["papers"] = engine.library.count()

    # index: a full rebuild, cancelled 2 s into embedding
    job = Job(lambda p, c: engine.build_index(p, c, rebuild=True))
    job.wait_stage(("embed", "encode", "index"), 120)
    time.sleep(2.0)
    out["index"] = job.cancel()
    engine.build_index()  # back to a complete index

    draft = (RESOURCES_DIR / "sample" / "draft.tex").read_text(encoding="utf-8")
    sentences = [d.text for d in demo_sentences(draft, n=8)] or ["click models position bias"]

    def timed(stop: threading.Event | None, n: int) -> list[float]:
        times = []
        for i in range(n):
            if stop is not None and stop.is_set():
                break
            t = time.perf_counter()
            engine.recommend(Query(text=sentences[i % len(sentences)], mode="local"))
            times.append((time.perf_counter() - t) * 1000)
        return times

    timed(None, 2)  # warm
    idle = timed(None, 2 * len(sentences))
    out["recommend_idle_ms"] = round(statistics.median(idle), 1)
    if not args.skip_adapt:
        from assistant.training.encoder import EncoderOptions

        opts = EncoderOptions(
            name="bench-adapted",
            max_minutes=5.0,
            work_dir=str(home / "train"),
            out_dir=str(home / "m"),
        )
        job = Job(lambda p, c: engine.adapt_encoder(p, c, opts))
        job.wait_stage(("training",), 120)
        deadline = time.perf_counter() + args.adapt_seconds
        beside: list[float] = []
        while time.perf_counter() < deadline and job.thread.is_alive():
            beside += timed(None, 1)
        out["adapt"] = job.cancel()
        out["recommend_beside_adapt_ms"] = round(statistics.median(beside), 1) if beside else None
        out["recommend_beside_adapt_n"] = len(beside)
        if beside:
            out["beside_over_idle"] = round(statistics.median(beside) / statistics.median(idle), 2)
    engine.close()
    json.dump(out, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
