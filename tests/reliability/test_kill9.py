"""kill -9 at the write points of import, index, export and .bib appends: nothing committed is
lost, no output is left half-written, and the next run succeeds.

Each run is a real subprocess killed by ``SIGKILL`` at a named point (``ASSISTANT_KILL_AT``,
see :mod:`assistant.faults`), i.e. at a known moment between two steps of a durable write.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from assistant.library.models import Paper
from assistant.library.store import Library

REPO = Path(__file__).resolve().parents[2]
COMMITTED = ["Committed paper one", "Committed paper two", "Committed paper three"]


def run_killed(code: str, point: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), "ASSISTANT_KILL_AT": point},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def committed_library(path: Path) -> Library:
    lib = Library(path)
    for title in COMMITTED:
        lib.add_paper(Paper(title=title, authors=["Doe, Jane"], year=2019))
    return lib


def titles(db: Path) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return sorted(r[0] for r in conn.execute("SELECT title FROM papers"))
    finally:
        conn.close()


def big_bib(path: Path, n: int = 400) -> Path:
    path.write_text(
        "".join(
            f"@article{{p{i}, title={{Imported paper {i}}}, author={{Roe, R}}, year={{2021}}}}\n"
            for i in range(n)
        )
    )
    return path


@pytest.mark.parametrize("point", ["import.record:200", "import.record:400", "library.commit"])
def test_kill9_during_import_keeps_the_committed_library(tmp_path, point):
    db = tmp_path / "lib.sqlite"
    committed_library(db).close()
    bib = big_bib(tmp_path / "refs.bib")
    res = run_killed(
        f"""
        from assistant.cli import main
        main(["--db", {str(db)!r}, "library", "import", "-q", {str(bib)!r}])
        """,
        point,
    )
    assert res.returncode == -9, res.stderr
    assert titles(db) == sorted(COMMITTED)  # the whole import rolled back, nothing else lost
    lib = Library(db)
    from assistant.library.importers import import_paths

    report = import_paths(lib, [bib])
    assert report.added == 400 and lib.count() == 403


@pytest.mark.parametrize("nth", [1, 2])
def test_kill9_during_export_leaves_the_old_output(tmp_path, nth):
    db = tmp_path / "lib.sqlite"
    committed_library(db).close()
    out = tmp_path / "out.bib"
    out.write_text("% the previous export\n")
    code = f"""
        from assistant.cli import main
        main(["--db", {str(db)!r}, "library", "export", "-o", {str(out)!r}], standalone_mode=False)
        main(["--db", {str(db)!r}, "library", "export", "-o", {str(out)!r}], standalone_mode=False)
        """
    res = run_killed(code, f"write.replace:{nth}")
    assert res.returncode == -9, res.stderr
    text = out.read_text()
    if nth == 1:
        assert text == "% the previous export\n"
    else:  # killed while writing the second time: the first export is there, whole
        assert text.count("@") == 3 and text.endswith("}\n\n")
    assert titles(db) == sorted(COMMITTED)


@pytest.mark.parametrize("nth", [1, 2])
def test_kill9_during_bib_append_leaves_file_and_backup_whole(tmp_path, nth):
    bib = tmp_path / "refs.bib"
    old = "@article{old, title={Old entry}}\n"
    bib.write_text(old)
    res = run_killed(
        f"""
        from assistant.library.bibfile import append_entry
        append_entry({str(bib)!r}, "@article{{new, title={{New entry}}}}\\n", backup=True)
        """,
        f"write.replace:{nth}",
    )
    assert res.returncode == -9, res.stderr
    assert bib.read_text() == old  # the main write never happened or was not yet renamed
    backup = tmp_path / "refs.bib.bak"
    assert not backup.exists() if nth == 1 else backup.read_text() == old


@pytest.fixture(scope="module")
def models_env(tmp_path_factory):
    from retrieval_helpers import load_test_encoder

    load_test_encoder(tmp_path_factory)  # builds the session's encoder once (isolated_home
    # then points ASSISTANT_MODELS at it for each test and its subprocesses)


@pytest.mark.parametrize(
    "point", ["index.chunk:2", "index.vectors", "index.bm25", "index.meta", "library.commit"]
)
def test_kill9_during_index_then_index_and_search_work(tmp_path, point, models_env):
    from assistant.retrieval.index import build_index, index_status, load_index_encoder
    from assistant.retrieval.searcher import Searcher

    db = tmp_path / "lib.sqlite"
    lib = committed_library(db)
    for i in range(40):
        lib.add_paper(Paper(title=f"Indexed paper {i} about topic {i % 7}", abstract=f"Text {i}."))
    if point == "library.commit":  # kill an import while an index exists: index stays usable
        build_index(lib, load_index_encoder(None, max_length=128, threads=1))
        big_bib(tmp_path / "refs.bib", 50)
        code = f"""
            from assistant.cli import main
            main(["--db", {str(db)!r}, "library", "import", "-q", {str(tmp_path / "refs.bib")!r}])
            """
    else:
        code = f"""
            from assistant.library.store import Library
            from assistant.retrieval.index import build_index, load_index_encoder
            lib = Library({str(db)!r})
            build_index(lib, load_index_encoder(None, max_length=128, threads=1), chunk_size=8)
            """
    res = run_killed(code, point)
    assert res.returncode == -9, res.stderr
    assert lib.count() == 43
    report = build_index(lib, load_index_encoder(None, max_length=128, threads=1))
    assert index_status(tmp_path / "lib.sqlite.index")["count"] == 43 and not report.missing
    pending = tmp_path / "lib.sqlite.index" / "dense" / "pending"
    assert not list(pending.glob("*.tmp.npz")) if pending.exists() else True
    searcher = Searcher.open(lib)
    ids, _ = searcher.dense_search_vector(searcher.embed("topic 3")[None, :], 5, None)
    assert len(ids) == 5 and set(ids.tolist()) <= set(range(1, 44))
    assert searcher.bm25.ids.size == 43
