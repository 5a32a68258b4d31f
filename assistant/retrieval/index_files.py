"""Reading the files of an index folder safely: a damaged or foreign file (garbage, truncated,
wrong sizes, a FIFO, a device, a link, a folder where a file should be) is one clear line,
``the index is damaged (FILE: reason): run `assistant index --rebuild```, never a traceback and
never a hang (``lstat`` before anything is opened)."""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from assistant.errors import AssistantError
from assistant.filewrite import kind_of

REBUILD_HINT = "run `assistant index --rebuild`"
#: The folders an index holds (anything else that is not a regular file is foreign).
FOLDERS = {"dense", "bm25", "pending", "bm25.tmp", "bm25.old", "encoders"}
#: ``encoders/<name>/``: another encoder's dense index (any plain folder name)
ENCODERS = "encoders"


class IndexDamagedError(AssistantError, RuntimeError):
    """A file of the index cannot be used; the message says which and how to repair it."""

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        self.path = str(path)
        super().__init__(f"the index is damaged ({path}: {reason}): {REBUILD_HINT}")


def is_regular(path: str | os.PathLike[str]) -> bool:
    """True for a regular file, False when nothing is there; a link, a folder, a FIFO, a device
    or a socket raises :class:`IndexDamagedError` (nothing is opened)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise IndexDamagedError(path, exc.strerror or str(exc)) from exc
    if not stat.S_ISREG(st.st_mode):
        raise IndexDamagedError(path, f"{kind_of(st.st_mode)}, not a file the index writes")
    return True


def check_folder(folder: str | os.PathLike[str], top: bool = True) -> bool:
    """Every entry of ``folder`` is a regular file or one of the index's own sub-folders (which
    are checked too); False when the folder does not exist. At the top of an index (``top``:
    the index folder and each ``encoders/<name>/``) a folder the index does not own -- say an
    old version's evaluation runs -- is left alone: nothing is ever read from it, and calling
    it damage would send the user to a rebuild that keeps it."""
    folder = Path(folder)
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        raise IndexDamagedError(folder, f"{kind_of(st.st_mode)} where a folder should be")
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name.startswith("."):  # the lock, our own temporaries: never read
                continue
            is_dir = entry.is_dir(follow_symlinks=False)
            if is_dir and folder.name == ENCODERS:
                check_folder(entry.path, top=True)  # another encoder's index: its own top
            elif is_dir and entry.name in FOLDERS:
                check_folder(entry.path, top=False)
            elif is_dir and top:
                continue
            else:
                is_regular(entry.path)
    return True


@contextlib.contextmanager
def reading(path: str | os.PathLike[str]) -> Iterator[None]:
    """Turn any failure of a third-party reader of ``path`` into :class:`IndexDamagedError`."""
    try:
        yield
    except (AssistantError, KeyboardInterrupt, MemoryError):
        raise
    except Exception as exc:
        raise IndexDamagedError(path, _reason(exc)) from exc


def _reason(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    if len(text) > 160 or "\n" in str(exc).strip():
        text = text[:160].rstrip() + "…"
    return f"unreadable ({type(exc).__name__}: {text})" if text else type(exc).__name__


def load_npy(path: str | os.PathLike[str], mmap: bool = False) -> np.ndarray:
    """A ``.npy`` array (never a pickle); raises :class:`IndexDamagedError`."""
    if not is_regular(path):
        raise IndexDamagedError(path, "missing")
    with reading(path):
        return np.load(path, allow_pickle=False, mmap_mode="r" if mmap else None)


def load_json(path: str | os.PathLike[str]) -> dict:
    """A JSON object; raises :class:`IndexDamagedError` (missing, not an object, garbage)."""
    from assistant.textfile import read_file

    if not is_regular(path):
        raise IndexDamagedError(path, "missing")
    with reading(path):
        data = json.loads(read_file(path, limit=256 << 20))
    if not isinstance(data, dict):
        raise IndexDamagedError(path, "not a JSON object")
    return data


def expect(condition: bool, path: str | os.PathLike[str], reason: str) -> None:
    if not condition:
        raise IndexDamagedError(path, reason)
