"""The steps of an index job, shared by the full pass (``index``) and the incremental one
(``index_update``).

An index job (:class:`IndexJob`) is one run of ``build_index``: its inputs (library, encoder,
folder, kind, chunk and batch sizes, BM25 parameters, reuse folders, cancel and budget) and what
it has read so far (``meta.json``, the library's paper versions and their digest, the dense
index's stored hashes and versions). Its steps: find the vectors that already exist
(:func:`gather_vectors`), embed the texts that have none (:func:`embed_missing`, chunk by chunk
through :func:`embed_chunks`, each chunk saved for a resume), then write the dense index
(:func:`write_dense`, :func:`write_versions`), the BM25 index (:func:`write_bm25`) and, last,
``meta.json`` (:func:`write_meta`); :func:`bm25_matches` says whether the stored BM25 index is
still current.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from assistant import faults, filewrite
from assistant.progress import Progress, ProgressEvent, check_cancelled
from assistant.retrieval import index_files
from assistant.retrieval.bm25 import BM25Index, BM25Params
from assistant.retrieval.embcache import EmbeddingCache
from assistant.retrieval.index_layout import (
    DIRTY,
    VERSIONS,
    IndexPaths,
    IndexReport,
    atomic_save_npy,
    atomic_write,
    make_faiss,
    stored_vectors,
)

log = logging.getLogger("assistant.retrieval.index")  # its messages read as the indexer's

#: ``meta.json``'s ``format``: another value makes ``build_index`` rebuild the dense index.
FORMAT_VERSION = 1


@dataclass
class IndexJob:
    """One indexing run: its inputs and what it has read so far."""

    library: Any
    encoder: Any
    paths: IndexPaths
    progress: Progress | None
    kind: str  # as asked ("auto" or a kind)
    chunk_size: int
    batch_size: int
    bm25_params: BM25Params
    reuse_from: tuple
    cancelled: Callable[[], bool] | None
    embed_budget_s: float | None
    report: IndexReport
    meta: dict = field(default_factory=dict)
    versions: dict[int, str] = field(default_factory=dict)  # the library's papers now
    digest: str = ""
    stored: dict[int, tuple[bytes, str]] = field(default_factory=dict)  # the dense index's
    _stored_versions: dict[int, str] | None = None

    @property
    def stored_versions(self) -> dict[int, str]:
        if self._stored_versions is None:
            self._stored_versions = {i: v for i, (_, v) in self.stored.items()}
        return self._stored_versions

    @property
    def kind_requested(self) -> str:
        return self.kind if self.kind != "auto" else self.meta.get("kind_requested", "auto")


def bm25_matches(bm25_meta: dict, digest: str, params: BM25Params) -> bool:
    """The stored BM25 index covers the papers of ``digest`` with these parameters."""
    return bm25_meta.get("versions") == digest and (bm25_meta.get("k1"), bm25_meta.get("b")) == (
        params.k1,
        params.b,
    )


def gather_vectors(job: IndexJob, wanted: set[bytes], resumed_report: bool = False) -> dict:
    """Stored vectors for the text hashes ``wanted``: this index's, an interrupted run's chunks,
    the ``reuse_from`` caches and index folders."""
    paths, fingerprint = job.paths, job.report.fingerprint
    enc_dim = int(getattr(job.encoder, "dim", 0) or 0) or None
    cache = stored_vectors(paths, wanted, enc_dim)
    resumed = EmbeddingCache(paths.pending, fingerprint).load(wanted)
    if resumed_report:
        job.report.resumed = len(set(resumed) - set(cache))
    cache.update(resumed)
    for other in job.reuse_from:
        other = Path(other)
        folder = other / "dense" / "pending" if (other / "meta.json").exists() else other
        for h, v in EmbeddingCache(folder, fingerprint).load(wanted - set(cache)).items():
            cache[h] = v
        if (other / "meta.json").exists() and IndexPaths(other).read_meta().get(
            "fingerprint"
        ) == fingerprint:
            cache.update(stored_vectors(IndexPaths(other), wanted - set(cache), enc_dim))
    return cache


def embed_missing(job: IndexJob, todo: dict[bytes, str], cache: dict) -> None:
    """Embed ``todo`` (text hash -> text) into ``cache``, chunk by chunk (kept for a resume)."""
    if not todo or (job.embed_budget_s is not None and job.embed_budget_s <= 0):
        return
    pending = EmbeddingCache(job.paths.pending, job.report.fingerprint)
    pending.open_for_writing()
    embed_chunks(
        job.encoder,
        todo,
        pending,
        cache,
        job.chunk_size,
        job.batch_size,
        job.progress,
        job.report,
        job.cancelled,
        job.embed_budget_s,
    )


def write_dense(job: IndexJob, ids: np.ndarray, hashes: np.ndarray, vecs: np.ndarray) -> None:
    """Rewrite the dense index: vectors, their hashes, ids, versions, and FAISS from them."""
    paths, progress = job.paths, job.progress
    if progress:
        progress(
            ProgressEvent(0, len(ids), "faiss", f"Writing the vector index ({len(ids)} vectors)")
        )
    atomic_save_npy(paths.dense / "vectors.npy", vecs)
    faults.point("index.vectors")
    atomic_save_npy(paths.dense / "hashes.npy", hashes)
    atomic_save_npy(paths.dense / "ids.npy", ids)
    write_versions(job, ids)
    index = make_faiss(vecs, ids, job.report.kind)
    filewrite.save_with(paths.dense / "faiss.index", lambda tmp: faiss.write_index(index, tmp))


def write_versions(job: IndexJob, ids: np.ndarray) -> None:
    get = job.versions.get
    atomic_save_npy(job.paths.dense / VERSIONS, np.asarray([get(i, "") for i in ids.tolist()], str))
    filewrite.remove(job.paths.dense / "versions.json")  # an older index's


def write_meta(job: IndexJob, dim: int, count: int) -> None:
    """``meta.json``, written last: the index is complete (and no vector row is half-patched)."""
    faults.point("index.meta")
    encoder = job.encoder
    atomic_write(
        job.paths.meta,
        json.dumps(
            {
                "format": FORMAT_VERSION,
                "fingerprint": job.report.fingerprint,
                "encoder": getattr(encoder, "name", ""),
                "encoder_path": str(getattr(getattr(encoder, "manifest", None), "path", "") or ""),
                "max_length": getattr(encoder, "max_length", None),
                "dim": dim,
                "count": count,
                "max_id": int(max(job.versions, default=0)),
                "kind": job.report.kind,
                "missing": job.report.missing,
                "versions": job.digest,
                "kind_requested": job.kind_requested,
                "updated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            },
            indent=1,
        ),
    )
    filewrite.remove(job.paths.dense / DIRTY)


def embed_chunks(
    encoder,
    todo: dict[bytes, str],
    pending: EmbeddingCache,
    cache: dict,
    chunk_size: int,
    batch_size: int,
    progress,
    report: IndexReport,
    cancelled=None,
    budget_s: float | None = None,
) -> None:
    """Embed ``todo`` (text hash -> text) into ``cache`` in chunks of ``chunk_size``, shortest
    texts first, each chunk saved to ``pending`` before the next; stops after ``budget_s``
    seconds, raises ``Cancelled`` when ``cancelled()`` turns true (between batches)."""
    order = sorted(todo, key=lambda h: (len(todo[h]), h))  # length-sorted: little padding
    t0, done = time.perf_counter(), 0
    for start in range(0, len(order), chunk_size):
        if budget_s is not None and time.perf_counter() - t0 > budget_s:
            log.info(
                "embedding budget of %.0fs reached after %d of %d papers",
                budget_s,
                done,
                len(order),
            )
            return
        stopped = f"indexing cancelled after {done} of {len(order)} papers (resumable)"
        check_cancelled(cancelled, stopped)
        chunk = order[start : start + chunk_size]

        def between_batches(_event, stopped=stopped) -> None:  # Cancel acts within one batch
            check_cancelled(cancelled, stopped)

        vecs = np.asarray(
            encoder.encode(
                [todo[h] for h in chunk],
                batch_size=batch_size,
                progress=between_batches if cancelled is not None else None,
            ),
            dtype=np.float32,
        )
        pending.add(chunk, vecs)  # persisted before going on: an interrupted run resumes here
        cache.update(zip(chunk, vecs))
        done += len(chunk)
        elapsed = time.perf_counter() - t0
        rate = done / elapsed if elapsed > 0 else 0.0
        report.embed_rate = rate
        if progress:
            eta = f", about {(len(order) - done) / rate:.0f} s left" if rate else ""
            progress(
                ProgressEvent(
                    done,
                    len(order),
                    "embed",
                    f"Embedding papers {done}/{len(order)} ({rate:.1f}/s{eta})",
                )
            )


def write_bm25(job: IndexJob, bm25: BM25Index | None, years: np.ndarray) -> None:
    """Put ``bm25`` (None: no papers) with the papers' years in place of the stored BM25."""
    paths, params = job.paths, job.bm25_params
    tmp = paths.root / "bm25.tmp"
    filewrite.remove(tmp)
    tmp.mkdir()  # a new folder of ours (mkdir never follows a link): its files are ours too
    if bm25 is not None:
        bm25.save(tmp)
    else:
        np.save(tmp / "ids.npy", np.empty(0, np.int64))
    np.save(tmp / "years.npy", years)
    meta_path = tmp / "bm25.json"
    meta = (
        index_files.load_json(meta_path)
        if meta_path.exists()
        else {"k1": params.k1, "b": params.b, "stem": params.stem}
    )
    meta["versions"] = job.digest
    filewrite.write_text(meta_path, json.dumps(meta, indent=1))
    faults.point("index.bm25")
    filewrite.replace_dir(tmp, paths.bm25)  # a kill leaves the old bm25 or the new one
