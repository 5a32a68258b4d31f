"""Issue 23, hangs and crashes (items 4-9). Whatever could hang runs in a subprocess with a
timeout (a hang fails the test instead of blocking the suite); no test asserts a speed."""

from __future__ import annotations

import os
import resource
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from assistant.library.importers import import_paths
from assistant.library.models import Paper
from assistant.library.schema import LibraryOpenError
from assistant.library.store import Library

REPO = Path(__file__).resolve().parent.parent
BIB = "@article{smith20, title={Dense retrieval}, author={Smith, J}, year={2020}}\n"


def run_py(code: str, timeout: float = 60, env: dict | None = None, mem_gb: float = 3.0):
    """Run ``code`` in a fresh interpreter (repo on the path) under a memory cap; a hang past
    ``timeout`` raises ``subprocess.TimeoutExpired`` (the test fails, the suite goes on)."""

    def limit() -> None:
        cap = int(mem_gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=limit,
    )


# -- 4. exponential Markdown citation regex -------------------------------------------------------


def test_issue23_4_unclosed_pandoc_citation_with_40_keys_returns():
    res = run_py(
        """
        from assistant.documents.markers import find_markers
        from assistant.documents.textops import citation_spans
        text = "As shown [" + "; ".join(f"@a{i % 3}" for i in range(60)) + " and more text"
        assert find_markers(text, kinds=("pandoc", "numeric", "author-year")) == []
        assert citation_spans(text) == []
        closed = "[" + "; ".join(f"@k{i}" for i in range(45)) + "]"
        [m] = find_markers(closed, kinds=("pandoc",))
        assert len(m.labels) == 45, m.labels
        names = "(" + ", ".join(["Smith"] * 3000)
        assert find_markers(names) == []
        print("ok")
        """,
        timeout=60,
    )
    assert res.returncode == 0 and "ok" in res.stdout, res.stderr


# -- 5. PDF time cap / quadratic de-hyphenation --------------------------------------------------


def test_issue23_5_dehyphenator_join_of_20000_lines_is_linear_and_same_result():
    res = run_py(
        """
        from assistant.documents.text import Dehyphenator
        d = Dehyphenator({"evaluation"})
        assert d.join(["the evalua-", "tion of state-", "of-the-art", "  ", "x/", "y"]) == \\
            "the evaluation of state-of-the-art x/y"
        lines = [f"line {i} of a long para- " if i % 2 else "graph that goes on" for i in range(20000)]
        out = d.join(lines)
        assert out.count("paragraph") == 9999 and out.count("para-") == 1
        print("ok")
        """,
        timeout=60,
    )
    assert res.returncode == 0 and "ok" in res.stdout, res.stderr


def test_issue23_5_pdf_time_limit_is_enforced_on_a_20000_line_page(tmp_path):
    import pymupdf

    pdf = tmp_path / "long.pdf"
    doc = pymupdf.open()
    page = doc.new_page(width=600, height=14000)
    text = "\n".join(f"Line {i} of a very long single page with hyphen- " for i in range(20000))
    page.insert_text((10, 10), text, fontsize=0.6, lineheight=1.1)
    doc.save(pdf)
    doc.close()
    res = run_py(
        f"""
        import time
        from assistant.documents.pdf import parse_pdf
        t = time.monotonic()
        doc = parse_pdf({str(pdf)!r}, time_limit_s=0.5)
        print("elapsed", round(time.monotonic() - t, 1), "partial", doc.partial, doc.warnings)
        """,
        timeout=90,  # before the fix: > 180 s (quadratic row merging and de-hyphenation)
    )
    assert res.returncode == 0, res.stderr
    assert "partial True" in res.stdout and "time limit" in res.stdout, res.stdout


def test_issue23_5_dehyphenator_deadline_raises_time_limit():
    import time

    from assistant.documents.text import Dehyphenator, TimeLimitReached

    with pytest.raises(TimeLimitReached):
        Dehyphenator(set(), deadline=time.monotonic() - 1).join(["a", "b"])


# -- 6. special files ------------------------------------------------------------------------------


def test_issue23_6_fifo_bib_and_dev_zero_symlink_are_refused(tmp_path):
    os.mkfifo(tmp_path / "pipe.bib")
    (tmp_path / "zero.bib").symlink_to("/dev/zero")
    (tmp_path / "zero.ris").symlink_to("/dev/zero")
    (tmp_path / "ok.bib").write_text(BIB)
    res = run_py(
        f"""
        from assistant.library.store import Library
        from assistant.library.importers import import_paths
        lib = Library({str(tmp_path / "lib.sqlite")!r})
        folder = import_paths(lib, [{str(tmp_path)!r}])
        files = import_paths(lib, [{str(tmp_path / "pipe.bib")!r}, {str(tmp_path / "zero.bib")!r}])
        for i in folder.issues + files.issues:
            print("ISSUE", i)
        print("papers", lib.conn.execute("select count(*) from papers").fetchone()[0])
        """,
        timeout=60,
        mem_gb=2,
    )
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert out.count("named pipe (FIFO)") == 2 and out.count("a device") >= 3, out
    assert "papers 1" in out


def test_issue23_6_size_cap_names_the_file_and_the_limit(tmp_path, monkeypatch):
    big = tmp_path / "big.bib"
    big.write_text(BIB * 200)
    monkeypatch.setenv("ASSISTANT_MAX_FILE_MB", "0.001")
    lib = Library(tmp_path / "lib.sqlite")
    report = import_paths(lib, [big])
    [issue] = report.issues
    assert "file too large" in issue.reason and "ASSISTANT_MAX_FILE_MB" in issue.reason
    assert issue.file == str(big)


def test_issue23_6_fifo_draft_is_refused(tmp_path):
    os.mkfifo(tmp_path / "draft.tex")
    res = run_py(
        f"""
        from pathlib import Path
        from assistant.documents.draft import parse_draft
        from assistant.documents.model import DocumentError
        try:
            parse_draft(Path({str(tmp_path / "draft.tex")!r}))
        except DocumentError as exc:
            print("ERR", exc)
        """,
        timeout=30,
    )
    assert "ERR" in res.stdout and "named pipe" in res.stdout, res.stdout + res.stderr


# -- 7. index: leftover temp chunk, kill before meta.json, lock ----------------------------------


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    from retrieval_helpers import load_test_encoder

    return load_test_encoder(tmp_path_factory)


def _library(path: Path, n: int) -> Library:
    lib = Library(path)
    for i in range(n):
        lib.add_paper(Paper(title=f"Paper number {i} on retrieval", abstract=f"About topic {i}."))
    return lib


def test_issue23_7_leftover_tmp_chunk_does_not_break_index(tmp_path, encoder):
    from assistant.retrieval.index import IndexPaths, build_index

    lib = _library(tmp_path / "lib.sqlite", 3)
    paths = IndexPaths(tmp_path / "lib.sqlite.index")
    paths.pending.mkdir(parents=True)
    (paths.pending / "fingerprint.txt").write_text(str(encoder.fingerprint))
    np.savez(paths.pending / "chunk-000000.tmp.npz", hashes=np.zeros(1, "S16"))
    report = build_index(lib, encoder, index_dir=paths.root)
    assert report.added == 3 and not list(paths.pending.glob("*.tmp.npz"))


def test_issue23_7_run_killed_before_meta_json_is_not_unchanged(tmp_path, encoder):
    from assistant.retrieval.index import build_index, index_status

    db = tmp_path / "lib.sqlite"
    lib = _library(db, 2)
    build_index(lib, encoder, index_dir=tmp_path / "idx")
    lib.add_paper(Paper(title="A late paper on ranking", abstract="Added after indexing."))
    res = run_py(
        f"""
        from assistant.library.store import Library
        from assistant.retrieval.index import build_index, load_index_encoder
        lib = Library({str(db)!r})
        build_index(lib, load_index_encoder(None, max_length=128, threads=1), index_dir={str(tmp_path / "idx")!r})
        """,
        env={"ASSISTANT_KILL_AT": "index.meta"},
        timeout=300,
        mem_gb=6,
    )
    assert res.returncode == -9, res.stderr
    assert index_status(tmp_path / "idx")["count"] == 2  # meta.json of the older state
    report = build_index(lib, encoder, index_dir=tmp_path / "idx")
    assert report.unchanged != 3 or report.seconds >= 0
    assert index_status(tmp_path / "idx")["count"] == 3


def test_issue23_7_second_index_job_says_another_is_running(tmp_path, encoder, monkeypatch):
    import threading

    from assistant.retrieval import index as index_mod
    from assistant.retrieval.index import IndexBusyError, build_index, index_lock

    lib = _library(tmp_path / "lib.sqlite", 1)
    monkeypatch.setattr(index_mod, "INDEX_LOCK_WAIT_S", 0.3)
    with index_lock(tmp_path / "idx"), pytest.raises(IndexBusyError, match="another index job"):
        build_index(lib, encoder, index_dir=tmp_path / "idx")
    assert build_index(lib, encoder, index_dir=tmp_path / "idx").added == 1  # lock released
    # issue 31: within the wait, a second job waits for the first and then runs
    monkeypatch.setattr(index_mod, "INDEX_LOCK_WAIT_S", 60)
    held, release = threading.Event(), threading.Event()

    def first_job():
        with index_lock(tmp_path / "idx"):
            held.set()
            release.wait(10)

    thread = threading.Thread(target=first_job)
    thread.start()
    held.wait(10)
    threading.Timer(1.0, release.set).start()
    assert build_index(lib, encoder, index_dir=tmp_path / "idx").unchanged == 1
    thread.join()


# -- 8. SQLite conditions --------------------------------------------------------------------------


def test_issue23_8_locked_library_is_a_clear_error(tmp_path, monkeypatch):
    from click.testing import CliRunner

    import assistant.library.store as store
    from assistant.cli import main

    monkeypatch.setattr(store, "BUSY_TIMEOUT_S", 0.3)
    db = tmp_path / "lib.sqlite"
    lib = Library(db)
    (tmp_path / "a.bib").write_text(BIB)
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(LibraryOpenError, match="in use by another"):
            with lib.transaction():
                pass
        res = CliRunner().invoke(
            main, ["--db", str(db), "library", "import", str(tmp_path / "a.bib")]
        )
        assert res.exit_code == 1 and "in use by another" in res.stderr, res.output
        assert "Traceback" not in res.output
    finally:
        other.execute("ROLLBACK")
        other.close()


def test_issue23_8_concurrent_creation_of_one_library(tmp_path):
    code = "import sys; from assistant.library.store import Library; Library(sys.argv[1])"
    for round_ in range(4):
        db = tmp_path / f"new{round_}.sqlite"
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", code, str(db)],
                cwd=REPO,
                env={**os.environ, "PYTHONPATH": str(REPO)},
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(6)
        ]
        errors = [p.communicate(timeout=120)[1] for p in procs]
        assert all(p.returncode == 0 for p in procs), "\n".join(errors)
        assert Library(db).schema_version >= 1


def test_issue23_8_disk_full_names_the_condition_and_keeps_committed_data(tmp_path):
    db = tmp_path / "lib.sqlite"
    lib = Library(db)
    lib.add_paper(Paper(title="Committed before", authors=["A, B"]))
    pages = lib.conn.execute("PRAGMA page_count").fetchone()[0]
    lib.conn.execute(f"PRAGMA max_page_count = {pages + 2}")  # the file cannot grow: full
    big = tmp_path / "big.bib"
    big.write_text(
        "".join(
            f"@article{{k{i}, title={{Paper {i} {'x' * 300}}}, abstract={{{'y' * 2000}}}}}\n"
            for i in range(300)
        )
    )
    with pytest.raises(LibraryOpenError, match="full") as info:
        import_paths(lib, [big])
    assert "no transaction is active" not in str(info.value)
    lib.close()
    assert [t for (t,) in sqlite3.connect(db).execute("SELECT title FROM papers")] == [
        "Committed before"
    ]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes read-only files and folders")
def test_issue23_8_read_only_library_is_a_clear_error(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    Library(folder / "lib.sqlite").close()
    for f in folder.iterdir():
        f.chmod(0o444)
    folder.chmod(0o555)
    try:
        with pytest.raises(LibraryOpenError, match="read-only"):
            lib = Library(folder / "lib.sqlite")
            lib.add_paper(Paper(title="x"))
    finally:
        folder.chmod(0o755)


# -- 9. parse_draft text vs path --------------------------------------------------------------------


@pytest.mark.parametrize("length", [300, 5000])
def test_issue23_9_parse_draft_one_line_text_is_never_a_path(length, tmp_path, monkeypatch):
    from assistant.documents.draft import parse_draft

    sentence = "Dense retrieval improves recall [1]. "
    text = (sentence * (length // len(sentence) + 1))[:length]
    doc = parse_draft(text)
    assert any(s.markers for s in doc.sentences())
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("File content that must not be read.\n")
    doc = parse_draft("notes.txt")
    assert "must not" not in " ".join(s.text for s in doc.sentences())


def test_issue23_8_read_only_sqlite_error_is_named(tmp_path):
    from assistant.library.schema import sqlite_error

    db = tmp_path / "lib.sqlite"
    Library(db).close()
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)  # what a read-only file gives
    try:
        with pytest.raises(sqlite3.OperationalError) as info:
            conn.execute("INSERT INTO meta VALUES ('k', 'v')")
    finally:
        conn.close()
    error = sqlite_error(info.value, db)
    assert isinstance(error, LibraryOpenError) and "read-only" in str(error)
    assert str(error).startswith(str(db))
