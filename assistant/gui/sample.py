"""The bundled sample: import ``assistant/resources/sample/library.bib``, build models + index, demo queries.

No Qt here: ``assistant-gui --sample --demo`` (CI, ``make run`` without a display) runs
this module only and prints recommendations for a few sentences of the sample draft.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from assistant.config import RESOURCES_DIR
from assistant.service import (
    AssistantError,
    Cancelled,
    IndexStatus,
    ProgressEvent,
    RequestOptions,
    Service,
    ServiceSettings,
    analyse_manuscript,
    query_for_text,
    textops,
)
from assistant.service import Progress as ProgressFn
from assistant.textfile import write_atomic

SAMPLE_DIR = RESOURCES_DIR / "sample"
SAMPLE_BIB = SAMPLE_DIR / "library.bib"
SAMPLE_DRAFT = SAMPLE_DIR / "draft.tex"


class SampleMissingError(AssistantError, FileNotFoundError):
    """The bundled sample files are not in the checkout."""


@dataclass
class SampleSetup:
    """What :func:`setup_sample` did."""

    imported: bool
    added: int
    status: IndexStatus
    seconds: float


def check_sample_files() -> None:
    for path in (SAMPLE_BIB, SAMPLE_DRAFT):
        if not path.is_file():
            raise SampleMissingError(f"sample file missing: {path} (the checkout is incomplete)")


def _marker(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + ".sample.json")


def _digest(path: Path) -> str:
    return hashlib.sha1(path.read_bytes()).hexdigest()


def sample_imported(db_path: Path) -> bool:
    """True when this library already holds the current sample (marker next to the DB)."""
    marker = _marker(db_path)
    if not marker.is_file() or not db_path.exists():
        return False
    try:
        return json.loads(marker.read_text()).get("sha1") == _digest(SAMPLE_BIB)
    except (OSError, ValueError):
        return False


def setup_sample(
    engine: Service,
    progress: ProgressFn | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> SampleSetup:
    """Import the sample library if not yet, then build models + index (incremental)."""
    check_sample_files()
    progress = progress or (lambda event: None)
    cancelled = cancelled or (lambda: False)
    start = time.perf_counter()
    imported, added = False, 0
    if not sample_imported(engine.db_path):
        progress(
            ProgressEvent(0, None, "import", f"Importing the sample library {SAMPLE_BIB.name}…")
        )
        try:
            report = engine.import_files([SAMPLE_BIB], progress, cancelled, index=False)
        except Cancelled:
            return SampleSetup(False, 0, engine.status(), time.perf_counter() - start)
        imported, added = True, report.added
        write_atomic(  # through assistant.filewrite: never through a link
            _marker(engine.db_path),
            json.dumps({"sha1": _digest(SAMPLE_BIB), "bib": str(SAMPLE_BIB)}).encode("utf-8"),
        )
    status = engine.prepare(progress, cancelled)
    return SampleSetup(imported, added, status, time.perf_counter() - start)


def sample_draft_copy(folder: Path) -> Path:
    """A writable copy of the sample draft in ``folder/sample/`` (the bundled file stays pristine)."""
    check_sample_files()
    target = Path(folder) / "sample" / SAMPLE_DRAFT.name
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, SAMPLE_DRAFT.read_bytes())
    return target


@dataclass
class DemoSentence:
    text: str
    cited: list[str]


def demo_sentences(draft_text: str, n: int = 4) -> list[DemoSentence]:
    """``n`` sentences of the draft that cite or read as needing a citation, in document order.

    Sentences with ``\\cite`` keep their keys (the draft's own answer key, starred in the demo);
    the others are the ones the citation-worthiness scorer flags as missing a citation.
    """
    analysis = analyse_manuscript(None, draft_text, fmt="latex")
    doc = analysis.document
    missing = {(m.start, m.end) for m in analysis.missing}
    citing, flagged = [], []
    for sent in doc.sentences():
        keys = [k for s in textops.citation_spans(sent.text, textops.LATEX) for k in s.keys]
        item = DemoSentence(" ".join(sent.text.split()), keys)
        if keys:
            citing.append((sent.start or 0, item))
        elif (sent.start, sent.end) in missing:
            flagged.append((sent.start or 0, item))
    chosen = citing[: max(1, n // 2)]
    rest = n - len(chosen)
    if flagged and rest > 0:
        step = max(1, len(flagged) // rest)
        chosen += flagged[::step][:rest]
    if len(chosen) < n:
        chosen += [c for c in citing if c not in chosen][: n - len(chosen)]
    return [item for _, item in sorted(chosen, key=lambda c: c[0])]


def run_demo(
    n_sentences: int = 4,
    k: int = 5,
    db_path: Path | None = None,
    out: TextIO | None = None,
    quiet: bool = False,
) -> int:
    """Set the sample up and print the top-``k`` recommendations for a few draft sentences."""
    out = out or sys.stdout
    err = sys.stderr
    engine = Service(ServiceSettings(db_path=db_path))
    last = [0.0]

    def progress(event: ProgressEvent) -> None:
        now = time.perf_counter()
        if not quiet and event.message and now - last[0] > 2.0:
            last[0] = now
            print(f"  … {event.message}", file=err, flush=True)

    try:
        setup = setup_sample(engine, progress)
    except SampleMissingError as exc:
        print(f"error: {exc}", file=err)
        return 2
    status = setup.status
    print(
        f"Library {engine.db_path}: {status.describe()} (set-up {setup.seconds:.1f} s"
        + (f", imported {setup.added} papers" if setup.imported else "")
        + ")",
        file=out,
    )
    draft = SAMPLE_DRAFT.read_text(encoding="utf-8")
    title, abstract = textops.manuscript_meta(draft, textops.LATEX)
    hits = total = 0
    for i, sentence in enumerate(demo_sentences(draft, n_sentences), start=1):
        query = query_for_text(sentence.text, "local", title, abstract)
        request = RequestOptions(k=k, exclude_cited=False)  # the draft's own citations count
        result = engine.recommend(query, request=request)
        timings = result.timings_ms or {}
        ms = timings.get("total", sum(timings.values()))
        print(f"\n[{i}] {textops_strip(sentence.text)}", file=out)
        cites = (
            ", ".join(sentence.cited)
            if sentence.cited
            else "nothing yet (flagged as needing a citation)"
        )
        print(f"    draft cites: {cites}   ({result.mode}, {ms:.0f} ms)", file=out)
        for rank, rec in enumerate(result.items, start=1):
            p = rec.paper
            intent = (
                f"{rec.intent} {rec.intent_confidence:.2f}"
                if rec.intent and rec.intent_confidence is not None
                else (rec.intent or "-")
            )
            mark = "*" if p.citekey in sentence.cited else " "
            title_text = p.title if len(p.title) <= 70 else p.title[:67] + "..."
            print(
                f"  {mark}{rank:2d}. {p.citekey:<24} {p.year or '----'}  {rec.score:7.3f}  {intent:<16} {title_text}",
                file=out,
            )
        total += len(sentence.cited)
        hits += sum(1 for rec in result.items if rec.paper.citekey in sentence.cited)
    print(
        f"\n* = cited there in the draft: {hits}/{total} of the draft's citations in the top {k}",
        file=out,
    )
    engine.close()
    return 0


def textops_strip(text: str) -> str:
    from assistant.service import strip_citation_markers

    cleaned = strip_citation_markers(text)
    return cleaned if len(cleaned) <= 150 else cleaned[:147] + "..."


def start_sample(window) -> None:
    """Open the sample draft in ``window`` and import + index the sample library in the
    background (``assistant-gui --sample`` and the first-run guide; through the window's own
    methods, so this module still imports no Qt)."""
    window.jobs.start(prepare=False)
    try:
        draft = sample_draft_copy(window.engine.db_path.parent)
    except OSError as exc:
        window.show_error("Sample files missing", str(exc))
        return
    editor = window.documents.open_file(draft)
    if editor is not None and editor.state.bib_path is None:
        window.citations.set_bib_path(editor.state, draft.with_suffix(".bib"))

    def done(setup) -> None:
        window.jobs.engine_prepared(setup.status)

    window.jobs.run_engine_job(
        lambda p, c: setup_sample(window.engine, p, c),
        "Setting up the sample library…",
        on_done=done,
    )
