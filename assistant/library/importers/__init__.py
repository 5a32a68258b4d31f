"""Batch import of bibliography files into a ``Library`` (BibTeX, RIS, CSL-JSON, Zotero, PDF, folders).

``import_paths`` is the one entry point used by the CLI and the GUI. Files are parsed
(optionally in worker processes, in order, so results are deterministic) and stored by the
calling process inside one transaction: an import is applied entirely or not at all.
"""

from __future__ import annotations

import concurrent.futures
import logging
import multiprocessing
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from assistant import faults
from assistant.library.importers.bibtex import parse_bibtex_file
from assistant.library.importers.common import ImportFileError, ParsedFile
from assistant.library.importers.csljson import parse_csljson_file
from assistant.library.importers.ris import parse_ris_file
from assistant.library.importers.zotero import parse_zotero_file
from assistant.library.models import ImportIssue, ImportReport
from assistant.progress import Progress, ProgressEvent, check_cancelled
from assistant.textfile import FileRefused, human_size, max_file_bytes, read_file

log = logging.getLogger(__name__)

#: extension -> format name
EXTENSIONS = {
    ".bib": "bibtex",
    ".bibtex": "bibtex",
    ".ris": "ris",
    ".json": "csljson",
    ".csl.json": "csljson",
    ".csljson": "csljson",
    ".sqlite": "zotero",
    ".pdf": "pdf",
}
#: format -> "module:function" taking a path and returning ParsedFile
PARSERS: dict[str, Callable[[Path], ParsedFile]] = {
    "bibtex": parse_bibtex_file,
    "ris": parse_ris_file,
    "csljson": parse_csljson_file,
    "zotero": parse_zotero_file,
}
PROGRESS_EVERY = 2000  # records between progress callbacks inside a file


#: the message of the ``Cancelled`` an import raises (inside its transaction: all rolled back)
ROLLED_BACK = "import cancelled: nothing was imported"


def detect_format(path: Path) -> str | None:
    """Format of a file from its extension, else by sniffing its first bytes."""
    name = path.name.lower()
    for ext, fmt in sorted(EXTENSIONS.items(), key=lambda kv: -len(kv[0])):
        if name.endswith(ext):
            return fmt
    try:
        head = read_file(path, head=4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    except FileRefused:
        return None
    if head.startswith(b"%PDF"):
        return "pdf"
    if head.startswith(b"SQLite format 3"):
        return "zotero"
    if head.startswith(b"@") or b"\n@" in head:
        return "bibtex"
    if head[:2] == b"TY" and b"  - " in head[:8]:
        return "ris"
    if head.startswith((b"[", b"{")):
        return "csljson"
    return None


def expand_paths(paths: Iterable[str | Path], issues: list[ImportIssue]) -> list[tuple[Path, str]]:
    """Files to import with their format; folders are walked recursively (sorted, known types only).

    Only regular files are taken: a FIFO, a device, a socket or a symlink to one is reported and
    never opened (it could block or never end); so are unreadable subfolders and PDFs over the
    size cap."""
    out: list[tuple[Path, str]] = []
    for raw in paths:
        path = Path(raw).expanduser()
        try:
            st = os.stat(path)
        except OSError as exc:
            issues.append(ImportIssue(str(path), 0, _stat_reason(exc)))
            continue
        if stat.S_ISDIR(st.st_mode):

            def unreadable(exc: OSError, path: Path = path) -> None:
                issues.append(
                    ImportIssue(
                        str(exc.filename or path),
                        0,
                        f"folder not read: {exc.strerror or exc}; its files were not imported",
                    )
                )

            for root, dirs, files in os.walk(path, onerror=unreadable):
                dirs.sort()
                for name in sorted(files):
                    child = Path(root) / name
                    if not _known_ext(name) or not _regular(child, issues):
                        continue
                    fmt = detect_format(child)
                    if fmt == "zotero" and name != "zotero.sqlite":
                        continue  # other SQLite files in a folder are not Zotero libraries
                    if fmt == "csljson" and not _looks_like_csl(child):
                        continue  # package.json, settings...: only JSON arrays are CSL-JSON
                    if fmt:
                        out.append((child, fmt))
        elif _regular(path, issues, st):
            fmt = detect_format(path)
            if fmt is None:
                issues.append(
                    ImportIssue(
                        str(path),
                        0,
                        "unknown file format (expected .bib, .ris, CSL-JSON "
                        ".json, zotero.sqlite or .pdf)",
                    )
                )
            else:
                out.append((path, fmt))
    return out


def _stat_reason(exc: OSError) -> str:
    import errno

    if exc.errno == errno.ELOOP:
        return "symbolic link loop (the link points back to itself)"
    if exc.errno == errno.ENOENT:
        return "no such file or directory"
    return f"cannot read: {exc.strerror or exc}"


def _regular(path: Path, issues: list[ImportIssue], st: os.stat_result | None = None) -> bool:
    """True for a regular file within the size cap (PDFs); else the reason is reported."""
    try:
        st = st or os.stat(path)
    except OSError as exc:
        issues.append(ImportIssue(str(path), 0, _stat_reason(exc)))
        return False
    if not stat.S_ISREG(st.st_mode):
        kind = "a named pipe (FIFO)" if stat.S_ISFIFO(st.st_mode) else "not a regular file"
        if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
            kind = "a device"
        issues.append(ImportIssue(str(path), 0, f"{kind}; only regular files are imported"))
        return False
    if path.name.lower().endswith(".pdf") and st.st_size > max_file_bytes():
        issues.append(
            ImportIssue(
                str(path),
                0,
                f"file too large ({human_size(st.st_size)}; the limit is "
                f"{human_size(max_file_bytes())}, set ASSISTANT_MAX_FILE_MB to raise it)",
            )
        )
        return False
    return True


def _looks_like_csl(path: Path) -> bool:
    try:
        head = read_file(path, head=512).lstrip(b"\xef\xbb\xbf \t\r\n")
    except FileRefused:
        return True  # let the parser report the read error
    return head.startswith(b"[")


def _known_ext(name: str) -> bool:
    name = name.lower()
    return any(name.endswith(ext) for ext in EXTENSIONS)


def parse_file(job: tuple[str, str]) -> ParsedFile:
    """Parse one file with the parser of its format (runs in worker processes too)."""
    path, fmt = job
    try:
        return PARSERS[fmt](Path(path))
    except ImportFileError as exc:
        result = ParsedFile(path)
        result.issues.append(ImportIssue(path, 0, str(exc)))
        result.skip("unreadable file")
        return result
    except Exception as exc:  # a parser bug must not abort the other files
        log.exception("parser failed on %s", path)
        result = ParsedFile(path)
        result.issues.append(
            ImportIssue(path, 0, f"could not parse file: {type(exc).__name__}: {exc}")
        )
        result.skip("unreadable file")
        return result


def _parsed(
    jobs: list[tuple[str, str]], workers: int, cancelled: Callable[[], bool] | None = None
) -> Iterator[ParsedFile]:
    if workers <= 1 or len(jobs) < 4:
        if cancelled is None:
            for job in jobs:
                yield parse_file(job)
            return
        # a large file parses for seconds: parse beside, so Cancel is seen within 0.1 s (the
        # abandoned parse finishes on its own thread and is dropped)
        pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="parse")
        try:
            for job in jobs:
                future = pool.submit(parse_file, job)
                while True:
                    try:
                        parsed = future.result(timeout=0.1)
                        break
                    except concurrent.futures.TimeoutError:
                        check_cancelled(cancelled, ROLLED_BACK)
                yield parsed
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        return
    # fork is fast and works for any __main__; with other threads running (Qt, torch) fork
    # can deadlock, so spawn is used then (the GUI's __main__ is a real file, as spawn needs).
    single_threaded = threading.active_count() == 1
    method = (
        "fork" if single_threaded and "fork" in multiprocessing.get_all_start_methods() else "spawn"
    )
    ctx = multiprocessing.get_context(method)
    with ctx.Pool(workers) as pool:
        yield from pool.imap(parse_file, jobs, chunksize=1)


def _import_pdf(library, path: Path, report: ImportReport) -> None:
    try:  # imported here: PyMuPDF takes ~2 s to import and may be missing
        from assistant.library.importers.pdf import import_pdf
    except ImportError as exc:  # PyMuPDF missing from a minimal install
        report.issues.append(ImportIssue(str(path), 0, f"PDF import is not available ({exc})"))
        report.skip("pdf import unavailable")
        return
    try:
        sub = import_pdf(library, path)
    except Exception as exc:  # DocumentError (unreadable/encrypted PDF) or a parser failure
        reason = getattr(exc, "reason", None) or f"{type(exc).__name__}: {exc}"
        report.issues.append(ImportIssue(str(path), 0, f"PDF import failed: {reason}"))
        report.skip("pdf import failed")
        return
    if isinstance(sub, ImportReport):
        report.merge_from(sub)
        report.files -= sub.files
        return
    # the documents layer's own report: created / paper_id / warnings
    report.citations_added += getattr(sub, "citations_added", 0)
    if getattr(sub, "created", False):
        report.added += 1
    else:
        report.merged += 1
    for warning in getattr(sub, "warnings", None) or []:
        report.issues.append(ImportIssue(str(path), 0, str(warning), "warning"))


def _store(
    library, parsed: ParsedFile, report: ImportReport, state: dict, tick: Callable[[str], None]
) -> None:
    """Add one parsed file's records to the library (inside the import transaction)."""
    shown = displayable(parsed.path)
    if shown != parsed.path:  # a non-UTF-8 file name: stored and shown with U+FFFD
        for issue in parsed.issues:
            issue.file = displayable(issue.file)
        for record in parsed.records:
            record.paper.source_file = displayable(record.paper.source_file or "")
    if not parsed.records and not parsed.issues and not parsed.skipped:
        parsed.issues.append(
            ImportIssue(shown, 0, "no entries found (is it a BibTeX, RIS or CSL-JSON file?)")
        )
        parsed.skip("no entries")
    report.issues.extend(parsed.issues)
    for reason, n in parsed.skipped.items():
        report.skipped += n
        report.skipped_by_reason[reason] = report.skipped_by_reason.get(reason, 0) + n
    for i, record in enumerate(parsed.records, 1):
        try:
            outcome = library.add_paper(record.paper, record_format=record.fmt, line=record.line)
        except (
            ValueError,
            TypeError,
            sqlite3.IntegrityError,
        ) as exc:  # one odd record: report, go on
            report.issues.append(
                ImportIssue(parsed.path, record.line or 0, f"record not stored: {exc}")
            )
            report.skip("not stored")
        else:
            setattr(report, outcome.status, getattr(report, outcome.status) + 1)
        faults.point("import.record")
        state["records"] += 1
        if i % PROGRESS_EVERY == 0:
            tick(parsed.path)


def displayable(text: str) -> str:
    """``text`` with the undecodable bytes of a non-UTF-8 file name as U+FFFD (SQLite and the
    terminal take only valid UTF-8)."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _progress_event(
    state: dict[str, int], files_total: int, bytes_total: int, start: float, current: str
) -> ProgressEvent:
    """The import's progress (bytes read of all files) with files, records, rate and ETA."""
    elapsed = time.perf_counter() - start
    done = state["bytes"]
    rate = state["records"] / elapsed if elapsed > 0 else 0.0
    eta = ""
    if done > 0 and elapsed > 0:
        left = max(0.0, elapsed * (bytes_total - done) / done)
        eta = f", ETA {int(left // 60)}:{int(left % 60):02d}"
    name = Path(current).name if current else ""
    return ProgressEvent(
        done,
        bytes_total,
        "import",
        f"Importing {name} ({state['files']}/{files_total} files, {state['records']} records, "
        f"{rate:,.0f} rec/s{eta})",
    )


def import_paths(
    library,
    paths: Iterable[str | Path],
    progress: Progress | None = None,
    cancelled: Callable[[], bool] | None = None,
    workers: int | None = None,
) -> ImportReport:
    """Import files/folders into ``library`` in one transaction; returns counts and issues.

    ``progress`` is called after each file and every ``PROGRESS_EVERY`` records; when
    ``cancelled()`` turns true the whole import is rolled back and ``Cancelled`` raised.
    """
    start, cpu0 = time.perf_counter(), _cpu_time()
    report = ImportReport()
    files = expand_paths(paths, report.issues)
    report.skipped += len(report.issues)
    sizes = {str(p): _size(p) for p, _ in files}
    total_bytes = sum(sizes.values()) or 1
    pdfs = [p for p, fmt in files if fmt == "pdf"]
    jobs = [(str(p), fmt) for p, fmt in files if fmt != "pdf"]
    if workers is None:
        workers = min(2, os.cpu_count() or 1) if len(jobs) >= 8 else 1
    state = {"records": 0, "bytes": 0, "files": 0}

    def tick(current: str) -> None:
        check_cancelled(cancelled, ROLLED_BACK)
        if progress:
            progress(_progress_event(state, len(files), total_bytes, start, current))

    with library.transaction():  # Cancelled (or any failure) rolls everything back
        tick("")
        with library.bulk_fts():  # FTS rows of new papers are written in bulk at the end
            for parsed in _parsed(jobs, workers, cancelled):
                _store(library, parsed, report, state, tick)
                state["files"] += 1
                state["bytes"] += sizes.get(parsed.path, 0)
                report.files += 1
                tick(parsed.path)
        for path in pdfs:  # after the FTS flush: PDF reference linking searches the library
            _import_pdf(library, path, report)
            state["files"] += 1
            state["bytes"] += sizes.get(str(path), 0)
            report.files += 1
            tick(str(path))
    report.elapsed_s = time.perf_counter() - start
    report.cpu_s = _cpu_time() - cpu0
    return report


def _cpu_time() -> float:
    """CPU seconds of this process plus its finished worker processes."""
    try:
        import resource

        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        return time.process_time() + children.ru_utime + children.ru_stime
    except ImportError:  # Windows
        return time.process_time()


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


__all__ = ["ROLLED_BACK", "detect_format", "expand_paths", "import_paths"]
