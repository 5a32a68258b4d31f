"""Issue 31: two programs on one library never hurt each other.

The repro: a process holding a connection (the GUI, the language server) must keep its
``-wal``/``-shm`` and see other processes' writes after it opened (and closed) a second
connection to the same file and another process ran a command.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from assistant.library.models import Paper
from assistant.service.engine import open_library

REPO = Path(__file__).resolve().parent.parent
GOOD_BIB = Path(__file__).parent / "fixtures" / "library" / "good.bib"


def _cli(db: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "ASSISTANT_DB": str(db)}
    return subprocess.run(
        [sys.executable, "-m", "assistant.cli", "--db", str(db), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _deleted_fds(path: Path) -> list[str]:
    """This process's descriptors of the library's files that were unlinked under it."""
    out = []
    fd_dir = Path("/proc/self/fd")
    for fd in fd_dir.iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith(str(path)) and target.endswith("(deleted)"):
            out.append(target)
    return out


@pytest.fixture
def db(tmp_path) -> Path:
    path = tmp_path / "library.sqlite"
    with open_library(path) as lib, lib.transaction():
        lib.add_paper(Paper(title="A first paper on ranking", year=2019, authors=["Ann Author"]))
    return path


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc (Linux)")
def test_second_open_in_process_then_cli_keeps_wal_and_visibility(db):
    first = open_library(db)
    try:
        before = first.count()
        open_library(db).close()  # a second connection in the same process (LSP quick reader)
        res = _cli(db, "library", "import", str(GOOD_BIB))
        assert res.returncode == 0, res.stderr
        res = _cli(db, "library", "search", "ranking")
        assert res.returncode == 0, res.stderr
        # the first connection's files are still the ones on disk
        assert Path(f"{db}-wal").exists() and Path(f"{db}-shm").exists()
        assert _deleted_fds(db) == []
        # it sees the CLI's import and can still write
        mid = first.count()
        assert mid > before
        with first.transaction():
            first.add_paper(Paper(title="Written after the CLI", year=2020, authors=["B. Writer"]))
        assert first.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        first.close()
    with open_library(db) as lib:  # nothing written by either program was lost
        assert lib.count() == mid + 1


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc (Linux)")
def test_long_lived_connection_and_cli_search(db):
    """The GUI's situation: its connections (job, reader, library panel) open for the whole
    session, the CLI searching and importing meanwhile."""
    gui = open_library(db)
    panel = open_library(db)
    try:
        for _ in range(3):
            res = _cli(db, "library", "search", "ranking")
            assert res.returncode == 0, res.stderr
            assert "first paper on ranking" in res.stdout.lower()
        assert _deleted_fds(db) == []
        res = _cli(db, "library", "import", str(GOOD_BIB))
        assert res.returncode == 0, res.stderr
        n = gui.count()
        with gui.transaction():  # the failing import of the issue ("cannot commit")
            gui.add_paper(Paper(title="Imported in the GUI", year=2021, authors=["C. Gui"]))
        assert gui.count() == n + 1 == panel.count()
        assert _deleted_fds(db) == []
    finally:
        panel.close()
        gui.close()


def test_header_check_still_refuses_other_files(tmp_path):
    """Reading the header through SQLite keeps the clear refusal of a non-SQLite file."""
    from assistant.library.schema import LibraryOpenError

    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    held = open_library(tmp_path / "lib.sqlite")  # a connection open in the process meanwhile
    try:
        with pytest.raises(LibraryOpenError, match="notes.txt is not a Cite-Assist library"):
            open_library(notes)
    finally:
        held.close()
    assert notes.read_text() == "my notes\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("notes")) == ["notes.txt"]


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc (Linux)")
def test_refusing_to_overwrite_an_open_library_never_opens_it(db):
    """An export pointed at the open library is refused without an open()/close() of the file."""
    from assistant.textfile import FileRefused, write_atomic

    lib = open_library(db)
    try:
        with pytest.raises(FileRefused, match="SQLite database"):
            write_atomic(db, b"@article{x, title={y}}\n")
        res = _cli(db, "library", "search", "ranking")
        assert res.returncode == 0, res.stderr
        assert _deleted_fds(db) == [] and Path(f"{db}-wal").exists()
    finally:
        lib.close()
