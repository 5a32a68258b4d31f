"""Re-indexing only the papers that changed (``build_index``'s fast path).

Papers are read, tokenised and embedded only when their version changed (new, edited) and
dropped when deleted; the result equals a full pass over the library:

- BM25: :meth:`BM25Index.updated` rescores the stored term counts plus the changed texts
  (every score depends on the corpus size and the mean length, so the matrix is recomputed,
  vectorised, from the counts: no paper is read or tokenised again);
- vectors: an edit replaces its rows in place in ``vectors.npy`` and, for the flat index, in
  ``faiss.index`` (its byte layout checked first); a paper added or removed rewrites both from
  the stored vectors (flat), or updates the FAISS index by id (``remove_ids`` / ``add_with_ids``
  where the kind allows it; HNSW is rebuilt from the stored vectors).

Before a row is patched in place, ``dense/dirty.json`` names its paper: a run killed while
patching leaves that file, and the next run treats those papers as never embedded (their stored
rows are not trusted); ``meta.json``, written last, removes it.
"""

from __future__ import annotations

import json
import os
import shutil
import stat

import faiss
import numpy as np

from assistant import filewrite
from assistant.retrieval import index_files
from assistant.retrieval.bm25 import BM25Index
from assistant.retrieval.embcache import text_hash
from assistant.retrieval.index_files import IndexDamagedError
from assistant.retrieval.index_layout import DIRTY, make_faiss, versions_digest
from assistant.retrieval.index_steps import (
    IndexJob,
    bm25_matches,
    embed_missing,
    gather_vectors,
    write_bm25,
    write_dense,
    write_meta,
    write_versions,
)

#: Above this share of the library changed, a full pass is as cheap (and repacks BM25's words).
MAX_CHANGED_SHARE = 0.5


def update_changed(job: IndexJob, bm25_meta: dict) -> bool:
    """Bring the index up to date from the changed papers alone; False (nothing written) when
    only a full pass can: a new encoder or kind, a partial or unreadable index, a BM25 index
    without term counts, or most of the library changed."""
    report, stored, versions = job.report, job.stored, job.versions
    known = job.stored_versions
    changed = sorted(pid for pid, v in versions.items() if known.get(pid) != v)
    removed = sorted(set(stored) - set(versions))
    if not _updatable(job, bm25_meta) or len(changed) + len(removed) > MAX_CHANGED_SHARE * max(
        len(versions), 1
    ):
        return False
    bm25 = _load_bm25(job)
    papers = job.library.get_many(changed)
    if bm25 is None or len(papers) != len(changed):  # a paper deleted meanwhile: read them all
        return False
    hashes = {int(p.id): text_hash(p.encoder_text()) for p in papers}
    texts = {hashes[int(p.id)]: p.encoder_text() for p in papers}
    fresh = {pid: h for pid, h in hashes.items() if stored.get(pid, (None,))[0] != h}
    cache = gather_vectors(job, set(fresh.values()))
    embed_missing(job, {h: texts[h] for h in fresh.values() if h not in cache}, cache)
    if any(h not in cache for h in fresh.values()):  # embedding budget reached
        return False
    report.added = sum(1 for pid in changed if pid not in stored)
    report.updated = len(fresh) - report.added
    report.removed = len(removed)
    report.unchanged = len(versions) - report.added - report.updated
    _update_dense(job, {pid: cache[h] for pid, h in fresh.items()}, hashes, removed)
    shutil.rmtree(job.paths.pending, ignore_errors=True)  # its vectors are in the index now
    _update_bm25(job, bm25, papers, removed)
    write_meta(job, int(job.meta.get("dim") or 0), len(versions))
    return True


def _updatable(job: IndexJob, bm25_meta: dict) -> bool:
    meta, stored = job.meta, job.stored
    return bool(
        not job.report.rebuilt_reason
        and meta
        and stored
        and not meta.get("missing")
        and meta.get("kind") == job.report.kind
        and meta.get("count") == len(stored)
        and meta.get("dim")
        and bm25_matches(
            bm25_meta,
            versions_digest(job.stored_versions),
            job.bm25_params,
        )
        and index_files.is_regular(job.paths.dense / "faiss.index")
        and _vectors_fit(job)
    )


def _vectors_fit(job: IndexJob) -> bool:
    """``vectors.npy`` holds one float32 row of the index's width per stored paper."""
    try:
        vectors = index_files.load_npy(job.paths.dense / "vectors.npy", mmap=True)
    except IndexDamagedError:
        return False
    return vectors.dtype == np.float32 and vectors.shape == (len(job.stored), job.meta["dim"])


def _load_bm25(job: IndexJob) -> BM25Index | None:
    try:
        bm25 = BM25Index.load(job.paths.bm25, mmap=True, counts=True)  # scores are recomputed
    except (IndexDamagedError, FileNotFoundError, ValueError):
        return None
    if bm25.counts is None or not np.array_equal(bm25.ids, np.fromiter(sorted(job.stored), int)):
        return None
    years = job.paths.bm25 / "years.npy"
    try:
        if index_files.load_npy(years, mmap=True).shape != bm25.ids.shape:
            return None  # a damaged years file: the full pass writes it again
    except IndexDamagedError:
        return None
    return bm25


def _update_bm25(job: IndexJob, bm25: BM25Index, papers: list, removed: list[int]) -> None:
    old_years = index_files.load_npy(job.paths.bm25 / "years.npy")  # checked by _load_bm25
    new_ids = [int(p.id) for p in papers]
    updated = bm25.updated(removed, new_ids, [p.lexical_text() for p in papers])
    # each kept paper's stored year, then the re-read papers' (both id lists ascending)
    years = np.full(len(updated.ids), -1, dtype=np.int32)
    at = np.searchsorted(updated.ids, bm25.ids)
    kept = at < len(updated.ids)
    kept[kept] = updated.ids[at[kept]] == bm25.ids[kept]
    years[at[kept]] = old_years[kept]
    for p in papers:
        years[int(np.searchsorted(updated.ids, int(p.id)))] = int(p.year) if p.year else -1
    write_bm25(job, updated, years)


def _update_dense(
    job: IndexJob, vectors: dict[int, np.ndarray], hashes: dict[int, bytes], removed: list[int]
) -> None:
    """New rows for ``vectors`` (paper id -> vector), ``hashes`` for every changed paper,
    ``removed`` papers dropped."""
    dense = job.paths.dense
    ids = index_files.load_npy(dense / "ids.npy")
    stored_hashes = index_files.load_npy(dense / "hashes.npy")
    added = sorted(set(hashes) - set(job.stored))
    if not added and not removed and _own_file(dense / "vectors.npy"):  # rows stay in place
        rows = np.searchsorted(ids, np.fromiter(hashes, np.int64))
        stored_hashes[rows] = [hashes[int(ids[r])] for r in rows]
        if vectors:
            _patch_rows(job, ids, vectors)
        filewrite.save_with(
            dense / "hashes.npy", lambda tmp: np.save(tmp, stored_hashes, allow_pickle=False)
        )
        write_versions(job, ids)
        return
    old = index_files.load_npy(dense / "vectors.npy", mmap=True)
    new_ids = np.union1d(np.setdiff1d(ids, np.asarray(removed, np.int64)), added)
    kept = np.isin(ids, new_ids)
    vecs = np.empty((len(new_ids), old.shape[1]), np.float32)
    vecs[np.searchsorted(new_ids, ids[kept])] = old[kept]
    new_hashes = np.empty(len(new_ids), "S16")
    new_hashes[np.searchsorted(new_ids, ids[kept])] = stored_hashes[kept]
    for pid, h in hashes.items():
        row = int(np.searchsorted(new_ids, pid))
        new_hashes[row] = h
        if pid in vectors:
            vecs[row] = vectors[pid]
    del old
    if job.report.kind == "flat":  # FAISS from the vectors: a copy, as fast as an update
        write_dense(job, new_ids, new_hashes, vecs)
        return
    _write_arrays(job, new_ids, new_hashes, vecs)
    pids = np.fromiter(sorted(vectors), np.int64)
    block = np.stack([vectors[int(p)] for p in pids]) if len(pids) else vecs[:0]
    gone = np.asarray(sorted(set(removed) | set(vectors)), np.int64)
    _update_faiss(job, gone, pids, block, lambda: (new_ids, vecs))


def _own_file(path) -> bool:
    """A regular file with no other name: patching it in place changes no hard-linked copy
    (a backup made with ``cp -al`` or ``rsync --link-dest``)."""
    st = os.lstat(path)
    return stat.S_ISREG(st.st_mode) and st.st_nlink == 1


def _patch_rows(job: IndexJob, ids: np.ndarray, vectors: dict[int, np.ndarray]) -> None:
    """Replace the rows of ``vectors`` in ``vectors.npy`` and the FAISS index in place."""
    dense = job.paths.dense
    pids = np.fromiter(sorted(vectors), np.int64)
    rows = np.searchsorted(ids, pids)
    block = np.stack([vectors[int(p)] for p in pids]).astype(np.float32)
    filewrite.write_text(dense / DIRTY, json.dumps({"ids": pids.tolist()}))
    stored = np.load(dense / "vectors.npy", mmap_mode="r+", allow_pickle=False)
    stored[rows] = block
    stored.flush()
    del stored
    if job.report.kind == "flat" and _patch_flat_faiss(dense / "faiss.index", ids, rows, block):
        return
    _update_faiss(
        job, pids, pids, block, lambda: (ids, index_files.load_npy(dense / "vectors.npy"))
    )


def _patch_flat_faiss(path, ids: np.ndarray, rows: np.ndarray, block: np.ndarray) -> bool:
    """Write ``block`` over ``rows`` of a flat ``IndexIDMap2`` file, whose layout ends with
    the vector count, the vectors, the id count and the ids: checked (sizes, ids) before any
    byte is written; False (nothing written) when the file is laid out otherwise."""
    n, dim = len(ids), block.shape[1]
    fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        ids_at = st.st_size - 8 * n
        codes_at = ids_at - 8 - 4 * n * dim
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or codes_at < 8:
            return False
        sizes = [int(np.frombuffer(os.pread(fd, 8, at - 8), "<u8")[0]) for at in (codes_at, ids_at)]
        stored_ids = np.frombuffer(os.pread(fd, 8 * n, ids_at), "<i8")
        if sizes != [n * dim, n] or not np.array_equal(stored_ids, ids):
            return False
        for row, vec in zip(rows.tolist(), block):
            os.pwrite(fd, np.ascontiguousarray(vec, "<f4").tobytes(), codes_at + 4 * dim * row)
        os.fsync(fd)
        return True
    finally:
        os.close(fd)


def _write_arrays(job: IndexJob, ids: np.ndarray, hashes: np.ndarray, vecs: np.ndarray) -> None:
    dense = job.paths.dense
    for name, array in (("vectors.npy", vecs), ("hashes.npy", hashes), ("ids.npy", ids)):
        filewrite.save_with(dense / name, lambda tmp, a=array: np.save(tmp, a, allow_pickle=False))
    write_versions(job, ids)


def _update_faiss(
    job: IndexJob, gone: np.ndarray, pids: np.ndarray, block: np.ndarray, stored
) -> None:
    """Remove ``gone`` from the FAISS index and add ``block`` as ``pids``; an index that cannot
    remove (HNSW) is rebuilt from ``stored()`` (ids, vectors) instead."""
    path = job.paths.dense / "faiss.index"
    with index_files.reading(path):
        index = faiss.read_index(str(path))
    try:
        if len(gone):
            index.remove_ids(gone)
        if len(pids):
            index.add_with_ids(block, pids)
    except RuntimeError:  # HNSW: no removal
        ids, vecs = stored()
        index = make_faiss(np.ascontiguousarray(vecs, np.float32), ids, job.report.kind)
    filewrite.save_with(path, lambda tmp: faiss.write_index(index, tmp))
