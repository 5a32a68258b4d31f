"""Checksums verified by an earlier process, remembered across starts.

Every model file is checked against its manifest's sha256 before it is loaded, and the
word-embedding table the slim models borrow against its own: a cold ``assistant recommend``
hashed ~100 MB (0.08-0.15 CPU-s) on every start. A file hashed to the expected digest is
recorded in ``<data dir>/verified.json`` with its size, mtime, inode and ctime; while all four
are the same (any write to the file moves its ctime) a later process trusts it without hashing
it again. The record is only a cache: missing, unreadable or stale, the file is hashed as before.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path

from assistant import config, filewrite

log = logging.getLogger(__name__)

FILE = "verified.json"
_LOCK = threading.Lock()


def _stamp(path: Path) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]


def _entry(path: Path, what: str) -> str:
    return f"{os.path.realpath(path)}#{what}"


def _read(record: Path) -> dict:
    try:
        data = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def known(path: Path, what: str, digest: str) -> bool:
    """Whether ``what`` of ``path`` (the file, a tensor of it) was hashed to ``digest`` before
    and the file has not changed since."""
    stamp = _stamp(path)
    if stamp is None:
        return False
    return _read(config.data_dir() / FILE).get(_entry(path, what)) == [*stamp, digest]


def remember(path: Path, what: str, digest: str) -> None:
    """Record that ``what`` of ``path`` hashed to ``digest`` (best effort)."""
    stamp = _stamp(path)
    if stamp is None:
        return
    with _LOCK:
        try:
            record = config.data_dir() / FILE
            data = _read(record)
            data[_entry(path, what)] = [*stamp, digest]
            filewrite.write_text(record, json.dumps(data, indent=0))
        except (OSError, filewrite.WriteRefused) as exc:
            log.debug("checksum of %s not remembered: %s", path, exc)
