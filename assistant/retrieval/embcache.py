"""Embeddings keyed by a hash of the embedded text, stored as append-only ``chunk-*.npz`` files.

Used for resuming an interrupted ``assistant index`` (the ``pending`` folder) and for reusing
the vectors of another index built with the same encoder (``--reuse-from``): a paper is only
embedded when no vector exists for its exact text under the same encoder fingerprint.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from assistant import faults, filewrite

log = logging.getLogger(__name__)
_CHUNK = re.compile(r"chunk-(\d+)\.npz")


def text_hash(text: str) -> bytes:
    """16 hex characters of SHA-1 of the text (as bytes, numpy ``S16``-friendly)."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16].encode()


class EmbeddingCache:
    """A folder of ``chunk-*.npz`` (``hashes``, ``vectors``) written by one encoder fingerprint."""

    def __init__(self, directory: Path | str, fingerprint: str):
        self.dir = Path(directory)
        self.fingerprint = fingerprint
        self._next = 0

    @property
    def marker(self) -> Path:
        return self.dir / "fingerprint.txt"

    def valid(self) -> bool:
        from assistant.retrieval.index_files import IndexDamagedError, is_regular

        try:  # lstat first: a FIFO or a link in the folder is never opened
            return is_regular(self.marker) and self.marker.read_text().strip() == self.fingerprint
        except (IndexDamagedError, OSError, UnicodeDecodeError):
            return False

    def open_for_writing(self) -> EmbeddingCache:
        """Create the folder (discarding chunks of another fingerprint)."""
        if self.dir.exists() and not self.valid():
            for f in self.dir.glob("chunk-*.npz"):
                f.unlink()
        self.dir.mkdir(parents=True, exist_ok=True)
        filewrite.write_text(self.marker, self.fingerprint)
        for leftover in self.dir.glob("chunk-*.tmp.npz"):  # a run killed before its rename
            leftover.unlink(missing_ok=True)
        numbers = [
            int(m.group(1)) for f in self.dir.glob("chunk-*.npz") if (m := _CHUNK.fullmatch(f.name))
        ]
        self._next = max(numbers) + 1 if numbers else 0
        return self

    def add(self, hashes: Iterable[bytes], vectors: np.ndarray) -> None:
        """Append one chunk atomically (an interruption never leaves a half-written chunk)."""
        hashes = np.asarray(list(hashes), dtype="S16")
        vectors = np.asarray(vectors, dtype=np.float32)
        target = self.dir / f"chunk-{self._next:06d}.npz"

        def save(tmp: str) -> None:  # tmp ends in .npz: np.savez adds no suffix
            np.savez(tmp, hashes=hashes, vectors=vectors)
            faults.point("index.chunk")

        filewrite.save_with(target, save)
        self._next += 1

    def load(self, wanted: set[bytes] | None = None) -> dict[bytes, np.ndarray]:
        """``{hash: vector}`` of every readable chunk (only ``wanted`` hashes when given)."""
        out: dict[bytes, np.ndarray] = {}
        if not self.valid():
            return out
        for f in sorted(self.dir.glob("chunk-*.npz")):
            if ".tmp" in f.name or not f.is_file() or f.is_symlink():
                continue  # is_file() is a stat, no open: a FIFO is skipped, never read
            try:
                with np.load(f, allow_pickle=False) as z:
                    hashes, vectors = z["hashes"], z["vectors"]
            except Exception as exc:
                log.warning("skipping unreadable embedding chunk %s (%s)", f, exc)
                continue
            for h, v in zip(hashes.tolist(), vectors):
                if wanted is None or h in wanted:
                    out[h] = v
        return out
