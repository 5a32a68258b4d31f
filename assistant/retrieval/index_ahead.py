"""Embedding another encoder's papers ahead of its index build, outside the index folder's lock.

Building a second dense index (``encoders/<name>/``, e.g. the ``best`` quality tier's mpnet) is
almost all embedding: an hour and more for a large library on a CPU. :func:`embed_ahead` does
that part holding only the side index's own lock (``encoders/<name>/.lock``), saving each chunk
to its ``dense/pending`` cache, so the index folder's lock -- which every ``assistant index``,
the app's and the language server's index updates take -- stays free; :func:`build_index`
(which takes the side lock, then the folder's) then finds every vector there and only writes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import numpy as np

from assistant.progress import Progress
from assistant.retrieval import index_files
from assistant.retrieval.embcache import EmbeddingCache, text_hash
from assistant.retrieval.index import index_lock
from assistant.retrieval.index_files import IndexDamagedError
from assistant.retrieval.index_layout import IndexPaths, IndexReport, dirty_ids
from assistant.retrieval.index_steps import embed_chunks

log = logging.getLogger(__name__)


def embed_ahead(
    library,
    encoder,
    paths: IndexPaths,
    progress: Progress | None = None,
    *,
    chunk_size: int = 512,
    batch_size: int = 32,
    cancelled: Callable[[], bool] | None = None,
) -> int:
    """Embed the papers of ``library`` whose text has no vector yet in the side dense index at
    ``paths`` (nor in its pending chunks) into those chunks; returns how many were embedded.
    Resumable like :func:`build_index` (``cancelled()`` raises ``Cancelled`` between batches)."""
    if not paths.encoder_key:
        raise ValueError("embed_ahead is for another encoder's index (encoders/<name>/)")
    fingerprint = str(encoder.fingerprint)
    with index_lock(paths.dense_root, cancelled=cancelled, progress=progress):
        texts: dict[bytes, str] = {}
        for paper in library.iter_papers():
            text = paper.encoder_text()
            texts[text_hash(text)] = text
        known = _stored_hashes(paths, fingerprint) | _pending_hashes(paths, fingerprint)
        todo = {h: t for h, t in texts.items() if h not in known}
        if not todo:
            return 0
        pending = EmbeddingCache(paths.pending, fingerprint).open_for_writing()
        report = IndexReport(fingerprint=fingerprint)
        embed_chunks(
            encoder, todo, pending, {}, chunk_size, batch_size, progress, report, cancelled
        )
        return len(todo)


def _stored_hashes(paths: IndexPaths, fingerprint: str) -> set[bytes]:
    """Text hashes with a trusted vector in the committed dense index (same encoder)."""
    if paths.read_meta().get("fingerprint") != fingerprint:
        return set()  # none, or another encoder's: build_index re-embeds them all
    try:
        hashes = index_files.load_npy(paths.dense / "hashes.npy").tolist()
        dirty = dirty_ids(paths)
        if not dirty:
            return set(hashes)
        ids = index_files.load_npy(paths.dense / "ids.npy").tolist()
    except (IndexDamagedError, ValueError):
        return set()
    return {h for h, pid in zip(hashes, ids) if int(pid) not in dirty}


def _pending_hashes(paths: IndexPaths, fingerprint: str) -> set[bytes]:
    """Text hashes already saved in the pending chunks of this encoder (vectors left unread)."""
    cache = EmbeddingCache(paths.pending, fingerprint)
    if not cache.valid():
        return set()
    out: set[bytes] = set()
    for chunk in sorted(paths.pending.glob("chunk-*.npz")):
        if ".tmp" in chunk.name or not chunk.is_file() or chunk.is_symlink():
            continue
        try:
            with np.load(chunk, allow_pickle=False) as z:
                out.update(z["hashes"].tolist())
        except Exception as exc:  # embedded again
            log.warning("skipping unreadable embedding chunk %s (%s)", chunk, exc)
    return out
