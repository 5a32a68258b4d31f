"""The dense (FAISS) + BM25 index next to a library DB: incremental, resumable, model-aware.

Layout of ``<db>.index/``::

    meta.json                     fingerprint/name/dim of the encoder, FAISS kind, counts
    dense/ids.npy hashes.npy vectors.npy versions.npy faiss.index
    dense/dirty.json              papers whose rows a killed run was patching (index_update)
    dense/pending/chunk-*.npz     embedded chunks of an interrupted run (an EmbeddingCache)
    encoders/<name>/meta.json dense/   another encoder's dense index beside the default one (the
                                  ``best`` quality tier's mpnet): same files, same BM25
    bm25/                         bm25s files + ids.npy + years.npy + bm25.json (versions
                                  digest) + tf.npy doclen.npy (term counts, for updates)

Only papers whose ``encoder_text()`` has no vector yet are embedded (new or changed texts);
deleted papers are dropped; a different encoder fingerprint discards the vectors and rebuilds them.
When few papers changed, only those are read (``index_update``); else one pass reads them all.
This module runs a job (locks, the index kind, the full pass); the steps both passes share live
in ``index_steps``.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import numpy as np
from filelock import Timeout

from assistant import filewrite
from assistant.config import index_dir_for
from assistant.errors import AssistantError
from assistant.progress import Progress, ProgressEvent, check_cancelled
from assistant.retrieval import index_files
from assistant.retrieval.bm25 import BM25Index, BM25Params
from assistant.retrieval.embcache import text_hash
from assistant.retrieval.index_files import IndexDamagedError
from assistant.retrieval.index_layout import (
    IVF_MIN,
    PQ_MIN,
    IndexPaths,
    IndexReport,
    load_dense,
    remove_leftovers,
    versions_digest,
)
from assistant.retrieval.index_steps import (
    FORMAT_VERSION,
    IndexJob,
    bm25_matches,
    embed_missing,
    gather_vectors,
    write_bm25,
    write_dense,
    write_meta,
)
from assistant.retrieval.index_update import update_changed

log = logging.getLogger(__name__)

#: ``kind="auto"``: below this many papers the exact flat inner-product index (400 candidates
#: from 300k vectors in 46 ms on 2 cores, where HNSW reached recall@100 0.89 and took 146 s to
#: rebuild after one edit; ``assistant bench scale``, assistant/models/BENCHMARKS.md) ...
FLAT_LIMIT = 500_000
#: ... then HNSW (recall@100 >= 0.95 against exact search, ~1.7 KB a vector in memory) up to
#: this many, and IVF-PQ (48 bytes a vector) above it, where HNSW would not fit a laptop's memory.
HNSW_LIMIT = 5_000_000
INDEX_LOCK_WAIT_S = 600.0  # a second index job waits this long for the first one
KINDS = ("auto", "flat", "ivf", "hnsw", "ivfpq")
#: Tokens embedded per paper. 256 (MiniLM's limit) keeps most ACM abstracts whole: on ACM-CR dev
#: the dense run alone gains at paragraph level (R@10 0.308 -> 0.337 plain, 0.335 -> 0.401
#: enhanced) and the fused run ties 128 under cross-validation; indexing takes twice as long as
#: at 128 (assistant/models/BENCHMARKS.md, "Document length").
DEFAULT_MAX_LENGTH = 256


class IndexBusyError(AssistantError):
    """Another process is indexing the same library (its lock file is held)."""


@contextlib.contextmanager
def index_lock(
    root: Path,
    wait_s: float | None = None,
    cancelled: Callable[[], bool] | None = None,
    progress: Progress | None = None,
) -> Iterator[None]:
    """Hold ``<index>/.lock`` (:func:`assistant.filewrite.file_lock`, released by the OS when the
    process dies, even by ``kill -9``) for one indexing job. A second job (the CLI while the
    editor's server indexes) waits up to ``wait_s`` (default ``INDEX_LOCK_WAIT_S``) for it -- the
    work left is then usually nothing -- and fails with :class:`IndexBusyError` after that;
    ``cancelled()`` ends the wait (``Cancelled``)."""
    root.mkdir(parents=True, exist_ok=True)
    lock_path = root / ".lock"
    try:  # never follows a link, refuses a FIFO
        lock = filewrite.file_lock(lock_path)
    except filewrite.WriteRefused as exc:
        raise IndexDamagedError(lock_path, exc.reason) from exc
    wait_s = INDEX_LOCK_WAIT_S if wait_s is None else wait_s
    deadline, told = time.monotonic() + wait_s, False
    while True:
        try:
            lock.acquire(timeout=min(0.2, max(0.0, deadline - time.monotonic())))
            break
        except Timeout:
            if time.monotonic() >= deadline:
                raise IndexBusyError(
                    "another index job is running on this library; wait for it to finish",
                    file=root,
                ) from None
        except OSError as exc:
            raise IndexDamagedError(lock_path, exc.strerror or str(exc)) from exc
        check_cancelled(cancelled, "cancelled while waiting for another index job")
        if progress is not None and not told:
            told = True
            progress(ProgressEvent(0, None, "index", "Waiting for another index job…"))
    try:
        yield
    finally:
        lock.release()


def resolve_kind(kind: str, n: int) -> str:
    if kind not in KINDS:
        raise ValueError(f"unknown index kind {kind!r}; expected one of {', '.join(KINDS)}")
    if kind != "auto":
        return kind
    return "flat" if n < FLAT_LIMIT else "hnsw" if n < HNSW_LIMIT else "ivfpq"


def build_index(
    library,
    encoder,
    progress: Progress | None = None,
    *,
    index_dir: IndexPaths | Path | str | None = None,
    kind: str = "auto",
    chunk_size: int = 512,
    batch_size: int = 32,
    bm25_params: BM25Params | None = None,
    rebuild: bool = False,
    reuse_from: Iterable[Path | str] = (),
    cancelled: Callable[[], bool] | None = None,
    embed_budget_s: float | None = None,
) -> IndexReport:
    """Bring the index of ``library`` up to date with ``encoder`` (incremental and resumable).

    A paper is embedded only when no vector exists for its exact ``encoder_text()`` under the
    same encoder fingerprint (in this index, in an interrupted run's chunks, or in the
    ``reuse_from`` embedding caches / index folders). ``cancelled()`` is checked between
    chunks: it raises :class:`~assistant.errors.Cancelled` and the next run resumes from the saved chunks.
    With ``embed_budget_s``, embedding stops after that many seconds and a *partial* dense index
    (the papers embedded so far; BM25 covers all) is written: ``meta["missing"]`` says how many
    papers still lack a vector, and the next run continues.
    """
    paths = IndexPaths.of(index_dir) if index_dir else IndexPaths(index_dir_for(library.path))
    with contextlib.ExitStack() as locks:
        if paths.encoder_key:  # another encoder's index: its own lock first (index_ahead)
            locks.enter_context(index_lock(paths.dense_root, cancelled=cancelled))
        locks.enter_context(index_lock(paths.root, cancelled=cancelled, progress=progress))
        return _build_index(
            library,
            encoder,
            paths,
            progress,
            kind=kind,
            chunk_size=chunk_size,
            batch_size=batch_size,
            bm25_params=bm25_params,
            rebuild=rebuild,
            reuse_from=reuse_from,
            cancelled=cancelled,
            embed_budget_s=embed_budget_s,
        )


def _build_index(
    library,
    encoder,
    paths: IndexPaths,
    progress: Progress | None,
    *,
    kind: str,
    chunk_size: int,
    batch_size: int,
    bm25_params: BM25Params | None,
    rebuild: bool,
    reuse_from: Iterable[Path | str],
    cancelled: Callable[[], bool] | None,
    embed_budget_s: float | None,
) -> IndexReport:
    start = time.perf_counter()
    _prepare_folder(paths, rebuild)
    report = IndexReport(fingerprint=str(encoder.fingerprint))
    job = IndexJob(
        library, encoder, paths, progress, kind, chunk_size, batch_size,
        bm25_params or BM25Params(), tuple(reuse_from), cancelled, embed_budget_s, report,
    )  # fmt: skip
    job.meta = paths.read_meta()
    job.versions = {int(k): str(v) for k, v in library.paper_versions().items()}
    report.total = len(job.versions)
    report.rebuilt_reason = _rebuild_reason(job.meta, report.fingerprint, rebuild)
    if report.rebuilt_reason:
        log.info("rebuilding the dense index: %s", report.rebuilt_reason)
        shutil.rmtree(paths.dense, ignore_errors=True)
        paths.dense.mkdir(parents=True)
    job.stored = load_dense(paths)
    report.kind = _pick_kind(job.kind_requested, len(job.versions))
    job.digest = versions_digest(job.versions)
    bm25_meta = _read_bm25_meta(paths)
    if _is_current(job, bm25_meta):
        report.unchanged = len(job.versions)  # nothing changed
    elif not update_changed(job, bm25_meta):
        _full_pass(job, bm25_fresh=bm25_matches(bm25_meta, job.digest, job.bm25_params))
    report.seconds = time.perf_counter() - start
    return report


def _prepare_folder(paths: IndexPaths, rebuild: bool) -> None:
    if rebuild:  # whatever is there (damaged, foreign, a FIFO, a folder): removed unread
        for path in (paths.meta, paths.dense, paths.bm25):  # another encoder's dense index stays
            filewrite.remove(path)
        for name in ("bm25.tmp", "bm25.old", "authors.npz"):
            filewrite.remove(paths.root / name)
    else:
        index_files.check_folder(paths.root)
    paths.dense.mkdir(parents=True, exist_ok=True)
    if paths.encoder_key:
        index_files.check_folder(paths.dense_root)
    remove_leftovers(paths)


def _rebuild_reason(meta: dict, fingerprint: str, rebuild: bool) -> str | None:
    if rebuild:
        return "rebuild requested"
    if meta and meta.get("fingerprint") != fingerprint:
        return f"encoder changed ({meta.get('fingerprint')} -> {fingerprint})"
    if meta and meta.get("format") != FORMAT_VERSION:
        return "index format changed"
    return None


def _pick_kind(requested: str, n: int) -> str:
    kind = resolve_kind(requested, n)
    if (kind == "ivf" and n < IVF_MIN) or (kind == "ivfpq" and n < PQ_MIN):
        return "flat"  # too few vectors to train the IVF quantizer / PQ codebooks
    return kind


def _read_bm25_meta(paths: IndexPaths) -> dict:
    try:
        return index_files.load_json(paths.bm25 / "bm25.json")
    except IndexDamagedError:  # missing or cut short by a kill: rebuilt
        return {}


def _is_current(job: IndexJob, bm25_meta: dict) -> bool:
    meta = job.meta
    return bool(
        not job.report.rebuilt_reason
        and bm25_matches(bm25_meta, job.digest, job.bm25_params)
        and meta.get("kind") == job.report.kind
        and not meta.get("missing")
        # meta.json is written last: a run killed before it left meta of an older state
        and meta.get("versions") == job.digest
        and job.stored_versions == job.versions
        and (job.paths.dense / "faiss.index").exists()
    )


def _full_pass(job: IndexJob, bm25_fresh: bool) -> None:
    """Read every paper: embed what has no vector, rewrite the dense index (and BM25 unless it
    is already current)."""
    report = job.report
    texts: dict[int, str] = {}
    hashes: dict[int, bytes] = {}
    lexical: list[tuple[int, str, int]] = []
    for paper in job.library.iter_papers():
        pid = int(paper.id)
        texts[pid] = paper.encoder_text()
        hashes[pid] = text_hash(texts[pid])
        lexical.append((pid, paper.lexical_text(), int(paper.year) if paper.year else -1))
    report.removed = sum(1 for pid in job.stored if pid not in hashes)
    cache = gather_vectors(job, set(hashes.values()), resumed_report=True)
    todo = {h: texts[pid] for pid, h in hashes.items() if h not in cache}
    embed_missing(job, todo, cache)
    ids = np.asarray(sorted(pid for pid, h in hashes.items() if h in cache), dtype=np.int64)
    report.missing = len(hashes) - len(ids)
    covered = ids.tolist()
    report.added = sum(1 for pid in covered if pid not in job.stored)
    report.updated = sum(
        1 for pid in covered if pid in job.stored and job.stored[pid][0] != hashes[pid]
    )
    report.unchanged = len(covered) - report.added - report.updated
    if report.missing:
        report.warnings.append(
            f"{report.missing} of {len(hashes)} papers have no vector yet (embedding budget "
            "reached): dense search covers the others; run `assistant index` again to finish"
        )
    dim = int(getattr(job.encoder, "dim", 0) or (len(next(iter(cache.values()))) if cache else 0))
    vecs = (
        np.stack([cache[hashes[int(i)]] for i in ids]).astype(np.float32)
        if len(ids)
        else np.empty((0, dim), np.float32)
    )
    write_dense(job, ids, np.asarray([hashes[int(i)] for i in ids], dtype="S16"), vecs)
    if not report.missing:
        shutil.rmtree(job.paths.pending, ignore_errors=True)
    if not bm25_fresh:
        _build_bm25(lexical, job)
        report.bm25_rebuilt = True
    write_meta(job, dim, len(ids))


def _build_bm25(lexical: list[tuple[int, str, int]], job: IndexJob) -> None:
    ids = [pid for pid, _, _ in lexical]
    if job.progress:
        job.progress(
            ProgressEvent(0, len(ids), "bm25", f"Building the BM25 index ({len(ids)} papers)")
        )
    bm25 = BM25Index.build(ids, [text for _, text, _ in lexical], job.bm25_params) if ids else None
    write_bm25(job, bm25, np.asarray([year for _, _, year in lexical], dtype=np.int32))
    if job.progress:
        job.progress(
            ProgressEvent(len(ids), len(ids), "bm25", f"BM25 index over {len(ids)} papers done")
        )


def load_index_encoder(
    index_dir: IndexPaths | Path | str | None = None,
    name: str | None = None,
    max_length: int | None = None,
    **kwargs,
):
    """The encoder an index was built with (same name and max length), or the default one.

    Query-time and incremental indexing must use the same settings, else the fingerprint
    differs and ``build_index`` re-embeds everything.
    """
    from assistant.inference.encoder import load_encoder
    from assistant.inference.registry import ModelNotFoundError

    meta = IndexPaths.of(index_dir).read_meta() if index_dir else {}
    same_model = name is None or name == meta.get("encoder")
    length = max_length or (meta.get("max_length") if same_model else None) or DEFAULT_MAX_LENGTH
    try:
        return load_encoder(name or meta.get("encoder") or None, max_length=length, **kwargs)
    except ModelNotFoundError:
        # a model kept outside the models dir (e.g. `train encoder --out DIR`): the recorded folder
        folder = meta.get("encoder_path") if same_model else None
        if not folder or not Path(folder).is_dir():
            raise
        return load_encoder(Path(folder), max_length=length, **kwargs)


def index_status(index_dir: IndexPaths | Path | str) -> dict:
    """What ``meta.json`` says about an index (empty dict when there is none)."""
    return IndexPaths.of(index_dir).read_meta()
