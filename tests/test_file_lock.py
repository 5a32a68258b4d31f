"""The one cross-process lock (``filewrite.file_lock``, filelock): exclusive between holders,
refuses a planted link or FIFO, and never opens the file it guards (issue 33)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading

import pytest
from filelock import Timeout

from assistant import filewrite
from assistant.retrieval.index import IndexBusyError, index_lock
from assistant.retrieval.index_files import IndexDamagedError


def test_a_second_holder_waits_and_gets_the_lock_once_it_is_free(tmp_path):
    lock_path = tmp_path / "x.lock"
    with filewrite.file_lock(lock_path):
        with pytest.raises(Timeout):
            filewrite.file_lock(lock_path, timeout=0.2).acquire()
        # another process sees it held too (flock / LockFileEx, not a per-process flag)
        probe = (
            "import sys; from filelock import FileLock, Timeout\n"
            "try:\n    FileLock(sys.argv[1], timeout=0.2).acquire()\nexcept Timeout:\n"
            "    sys.exit(3)\n"
        )
        held = subprocess.run([sys.executable, "-c", probe, str(lock_path)], timeout=60)
        assert held.returncode == 3
    with filewrite.file_lock(lock_path, timeout=0.2):
        pass
    assert lock_path.is_file()  # stays in place: waiters share its inode


def test_a_link_or_a_fifo_at_the_lock_name_is_refused_and_left_alone(tmp_path):
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    link = tmp_path / "link.lock"
    link.symlink_to(target)
    with pytest.raises(filewrite.WriteRefused, match="symbolic link"):
        filewrite.file_lock(link)
    with (
        pytest.raises(filewrite.WriteRefused, match="symbolic link"),
        filewrite.locked(tmp_path / "link"),
    ):
        pass
    assert target.read_text() == "keep me"
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / ".lock")
        with pytest.raises(IndexDamagedError), index_lock(tmp_path):
            pass


def test_the_index_lock_is_a_file_beside_the_database_never_the_database(tmp_path):
    """Closing any descriptor of an open SQLite file drops SQLite's own POSIX locks: the index
    lock never opens it, so a transaction in progress keeps its lock."""
    db = tmp_path / "lib.sqlite"
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("CREATE TABLE t (x)")
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO t VALUES (1)")
    with index_lock(tmp_path / "lib.sqlite.index"):
        pass
    other = sqlite3.connect(db, timeout=0.1)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        other.execute("BEGIN IMMEDIATE")  # the writer's lock survived the index lock's release
    conn.execute("COMMIT")
    other.close()
    conn.close()
    assert (tmp_path / "lib.sqlite.index" / ".lock").is_file()


def test_the_index_lock_wait_ends_busy_or_cancelled(tmp_path, monkeypatch):
    from assistant.errors import Cancelled

    seen = []
    with index_lock(tmp_path):
        with pytest.raises(IndexBusyError, match="another index job"):
            with index_lock(tmp_path, wait_s=0.3, progress=seen.append):
                pass
        assert [e.message for e in seen] == ["Waiting for another index job…"]
        flag = threading.Event()
        threading.Timer(0.3, flag.set).start()
        with pytest.raises(Cancelled, match="waiting for another index job"):
            with index_lock(tmp_path, wait_s=60, cancelled=flag.is_set):
                pass
