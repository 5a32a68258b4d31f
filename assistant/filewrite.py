"""The one writer of every file the program writes (exports, auto-exports, ``.bib`` and its
``.bak``, index files, models, settings).

Rules, whatever the caller:

- **never through a link**: a symbolic link at the target (or at a backup name) is refused, and
  so is a FIFO, a device, a socket or a folder (``os.lstat`` before anything is opened);
- **atomic**: the bytes go to a new temporary file in the target's folder (``O_CREAT | O_EXCL |
  O_NOFOLLOW``: a planted file or link of that name is never followed), fsync, ``os.replace``,
  fsync of the folder; a failure or a kill leaves the old file as it was;
- **never the library's own files**: given the open library's path, its database, ``-wal``,
  ``-shm``, ``-journal`` and everything in its ``.index`` folder are refused.

Cross-process locks are one mechanism, :func:`file_lock` (``filelock``: ``flock`` on POSIX,
``LockFileEx`` on Windows; released by the OS when the holder dies, even by ``kill -9``), always
on a lock file of its own beside what it guards: a database file is never opened or closed by a
lock (closing any descriptor of it would drop SQLite's own POSIX locks).

Errors are :class:`WriteRefused` (what the program will not write) or ``OSError`` (what fails);
both name the path in one line.
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
import tempfile
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from glob import escape as glob_escape
from pathlib import Path

from filelock import FileLock

from assistant import faults
from assistant.errors import FileRefused

_SQLITE_MAGIC = b"SQLite format 3\x00"
#: The files SQLite keeps next to a database (a write onto one of them corrupts the library).
LIBRARY_SUFFIXES = ("", "-wal", "-shm", "-journal")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


class WriteRefused(FileRefused):
    """A path the program will not write (a link, a special file, the library's own files, a
    read-only file); the message names the file and says why."""


def _real(path: Path) -> Path:
    """``path`` with its folder resolved (the last component itself is not followed)."""
    return Path(os.path.realpath(path.parent)) / path.name


def library_files(library_path: str | os.PathLike[str]) -> tuple[list[Path], Path]:
    """The database files of a library (db, -wal, -shm, -journal) and its index folder."""
    db = _real(Path(library_path))
    return [db.with_name(db.name + s) for s in LIBRARY_SUFFIXES], db.with_name(db.name + ".index")


def library_file_reason(
    path: str | os.PathLike[str], library_path: str | os.PathLike[str] | None
) -> str | None:
    """Why ``path`` is one of the library's own files (None when it is not)."""
    if not library_path:
        return None
    target = _real(Path(path))
    files, index = library_files(library_path)
    for own in files:
        if target == own or _same_file(target, own):
            return (
                "is the open library"
                if own == files[0]
                else f"is the library's SQLite {own.name.rsplit('-', 1)[-1]} file"
            ) + "; write the output to another file"
    if target == index or index in target.parents:
        return "is inside the library's index folder; write the output to another file"
    return None


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_target(
    path: str | os.PathLike[str],
    library: str | os.PathLike[str] | None = None,
    *,
    allow_readonly: bool = False,
) -> os.stat_result | None:
    """The ``lstat`` of the regular file at ``path`` (None when there is none), or
    :class:`WriteRefused` for a link, a special file, a folder, the library's own files, a
    read-only file or an SQLite database."""
    path = Path(path)
    reason = library_file_reason(path, library)
    if reason:
        raise WriteRefused(reason, file=path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise WriteRefused(f"cannot write: {exc.strerror or exc}", file=path) from exc
    if stat.S_ISLNK(st.st_mode):
        raise WriteRefused(
            "is a symbolic link; Cite-Assist never writes through a link (remove it or choose "
            "the file it points to)",
            file=path,
        )
    if not stat.S_ISREG(st.st_mode):
        raise WriteRefused(f"{kind_of(st.st_mode)}; only a regular file is replaced", file=path)
    if not allow_readonly and not st.st_mode & 0o222:
        raise WriteRefused("read-only file; it was not replaced", file=path)
    # an open WAL database has its -wal/-shm beside it: refused without opening it (closing any
    # fd of the file would drop this process's SQLite locks on it, issue 31)
    live_db = any(os.path.lexists(f"{path}{s}") for s in ("-wal", "-shm"))
    if live_db or (st.st_size >= len(_SQLITE_MAGIC) and _head(path) == _SQLITE_MAGIC):
        raise WriteRefused(
            "is an SQLite database (a library?); it was not replaced, choose another file",
            file=path,
        )
    return st


def _head(path: Path) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW | _CLOEXEC)
    except OSError:
        return b""
    try:
        return os.read(fd, len(_SQLITE_MAGIC)) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    finally:
        os.close(fd)


def write_bytes(
    path: str | os.PathLike[str],
    data: bytes,
    *,
    library: str | os.PathLike[str] | None = None,
    protect: Iterable[str | os.PathLike[str]] = (),
    mode: int | None = None,
) -> None:
    """Replace (or create) the regular file ``path`` with ``data`` atomically (see module doc).

    ``library``: the open library's path (its own files are refused); ``protect``: other files
    that must not be replaced. The target keeps its permissions; a new file gets ``mode`` (default
    0666 less the umask)."""
    path = Path(path)
    st = check_target(path, library)
    for other in protect:
        if st is not None and _same_file(path, Path(other)):
            raise WriteRefused("is the open library; write the output to another file", file=path)
    _remove_stale_temps(path)
    tmp, fd = _new_temp(path, 0o600 if st is not None else (0o666 if mode is None else mode))
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if st is not None:
            os.chmod(tmp, stat.S_IMODE(st.st_mode))
        faults.point("write.replace")
        check_target(path, library)  # a link planted while we wrote is still refused
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8", **kw) -> None:
    """:func:`write_bytes` of ``text`` encoded with ``encoding``."""
    write_bytes(path, text.encode(encoding), **kw)


def _new_temp(path: Path, mode: int) -> tuple[Path, int]:
    """A new, empty temporary file next to ``path`` (never an existing name, never a link),
    open for writing."""
    while True:
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, mode)
        except FileExistsError:
            continue
        except OSError as exc:  # no such folder, permission denied...: named as the target
            raise WriteRefused(exc.strerror or str(exc), file=path) from exc
        return tmp, fd


def save_with(path: str | os.PathLike[str], writer, **kw) -> None:
    """Write ``path`` with a third-party saver that takes a file name (``np.save``,
    ``faiss.write_index``, ``onnx.save``): ``writer(tmp_name)`` writes a fresh temporary file in
    a new private folder, which then replaces ``path`` under the rules of :func:`write_bytes`."""
    path = Path(path)
    check_target(path, kw.get("library"))
    folder = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        tmp = folder / path.name
        writer(str(tmp))
        st = os.lstat(tmp)
        if not stat.S_ISREG(st.st_mode):
            raise WriteRefused(f"{kind_of(st.st_mode)}; the saver wrote no file", file=path)
        with open(tmp, "r+b") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        check_target(path, kw.get("library"))
        os.replace(tmp, path)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    fsync_dir(path.parent)


def replace_dir(new: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Put the folder ``new`` (a fresh one the program made) in place of the folder ``target``:
    a link or a file at ``target`` is refused; the old folder is removed afterwards."""
    new, target = Path(new), Path(target)
    old = None
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        st = None
    if st is not None:
        if not stat.S_ISDIR(st.st_mode):
            raise WriteRefused(f"{kind_of(st.st_mode)}; expected a folder", file=target)
        old = target.with_name(f".{target.name}.{secrets.token_hex(6)}.old")
        os.replace(target, old)
    os.replace(new, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    fsync_dir(target.parent)


def remove(path: str | os.PathLike[str]) -> None:
    """Remove whatever is at ``path`` without following a link (a folder with its content)."""
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def file_lock(lock_path: str | os.PathLike[str], timeout: float = -1) -> FileLock:
    """The product's one cross-process lock: an exclusive ``filelock.FileLock`` on the lock file
    ``lock_path`` (its own file, never the file it guards; ``timeout`` < 0 waits for ever).

    A link, FIFO, device or folder at ``lock_path`` is refused (:class:`WriteRefused`) before
    anything is opened; the lock file stays in place on release (waiters share its inode)."""
    lock_path = Path(lock_path)
    try:
        st = os.lstat(lock_path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise WriteRefused(f"cannot lock: {exc.strerror or exc}", file=lock_path) from exc
    else:
        if not stat.S_ISREG(st.st_mode):
            raise WriteRefused(
                f"{kind_of(st.st_mode)}, not a lock file; cannot lock", file=lock_path
            )
    return FileLock(str(lock_path), timeout=timeout, mode=0o600)


@contextmanager
def locked(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold the exclusive lock on ``<path>.lock`` (:func:`file_lock`) while
    reading-modifying-writing ``path`` across processes."""
    lock = file_lock(Path(path).with_name(Path(path).name + ".lock"))
    try:
        lock.acquire()
    except OSError as exc:
        raise WriteRefused(f"cannot lock: {exc.strerror or exc}", file=lock.lock_file) from exc
    try:
        yield
    finally:
        lock.release()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _remove_stale_temps(path: Path, age_s: float = 3600.0) -> None:
    """Temporary files of an earlier write killed before its rename (our own
    ``.<name>.<hex>.tmp`` names only, and only old ones: a concurrent writer's is young)."""
    try:
        for tmp in path.parent.glob(f".{glob_escape(path.name)}.*.tmp"):
            try:
                st = os.lstat(tmp)
                if stat.S_ISREG(st.st_mode) and time.time() - st.st_mtime > age_s:
                    tmp.unlink()
            except OSError:
                continue
    except OSError:
        pass


def fsync_dir(folder: str | os.PathLike[str]) -> None:
    """Make a rename in ``folder`` durable (ignored where folders cannot be synced)."""
    try:
        fd = os.open(folder, os.O_RDONLY | _CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
