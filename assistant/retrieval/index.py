"""The dense (FAISS) + BM25 index next to a library DB: incremental, resumable, model-aware.

Layout of ``<db>.index/``::

    meta.json                     fingerprint/name/dim of the encoder, FAISS kind, counts
    dense/ids.npy hashes.npy vectors.npy versions.json faiss.index
    dense/pending/chunk-*.npz     embedded chunks of an interrupted run (an EmbeddingCache)
    bm25/                         bm25s files + ids.npy + bm25.json (+ versions.sha1)

Only papers whose ``encoder_text()`` has no vector yet are embedded (new or changed texts);
deleted papers are dropped; a different encoder fingerprint discards the vectors and rebuilds them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import faiss
import numpy as np
from filelock import Timeout

from assistant import faults, filewrite
from assistant.config import index_dir_for
from assistant.errors import AssistantError
from assistant.progress import Progress, ProgressEvent, check_cancelled
from assistant.retrieval import index_files
from assistant.retrieval.bm25 import BM25Index, BM25Params
from assistant.retrieval.embcache import EmbeddingCache, text_hash
from assistant.retrieval.index_files import IndexDamagedError

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
#: ``kind="auto"``: below this many papers the exact flat inner-product index (400 candidates
#: from 300k vectors in 46 ms on 2 cores, where HNSW reached recall@100 0.89 and took 146 s to
#: rebuild after one edit; ``assistant bench scale``, assistant/models/BENCHMARKS.md) ...
FLAT_LIMIT = 500_000
#: ... then HNSW (recall@100 >= 0.95 against exact search, ~1.7 KB a vector in memory) up to
#: this many, and IVF-PQ (48 bytes a vector) above it, where HNSW would not fit a laptop's memory.
HNSW_LIMIT = 5_000_000
INDEX_LOCK_WAIT_S = 600.0  # a second index job waits this long for the first one
#: IVF needs enough vectors to train its coarse quantizer (IVF-PQ also its codebooks).
IVF_MIN = 1000
PQ_MIN = 10_000
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


@dataclass
class IndexReport:
    total: int = 0
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    resumed: int = 0
    missing: int = 0  # papers without a vector (embedding budget reached)
    rebuilt_reason: str | None = None
    bm25_rebuilt: bool = False
    kind: str = "flat"
    fingerprint: str = ""
    seconds: float = 0.0
    embed_rate: float = 0.0
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def _atomic_save_npy(path: Path, array: np.ndarray) -> None:
    filewrite.save_with(path, lambda tmp: np.save(tmp, array, allow_pickle=False))


def _atomic_write(path: Path, text: str) -> None:
    filewrite.write_text(path, text)


def resolve_kind(kind: str, n: int) -> str:
    if kind not in KINDS:
        raise ValueError(f"unknown index kind {kind!r}; expected one of {', '.join(KINDS)}")
    if kind != "auto":
        return kind
    return "flat" if n < FLAT_LIMIT else "hnsw" if n < HNSW_LIMIT else "ivfpq"


def make_faiss(vectors: np.ndarray, ids: np.ndarray, kind: str) -> faiss.Index:
    """An inner-product FAISS index over ``vectors`` with the paper ids as labels."""
    n, dim = vectors.shape if vectors.ndim == 2 else (0, 0)
    if kind == "ivf" and n >= IVF_MIN:
        nlist = int(min(4 * np.sqrt(n), n // 39))
        quantizer = faiss.IndexFlatIP(dim)
        index = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_INNER_PRODUCT)
        index.train(vectors)
        index.nprobe = max(8, nlist // 16)
        index.add_with_ids(vectors, ids)
        return index
    if kind == "ivfpq" and n >= PQ_MIN:
        nlist = int(min(4 * np.sqrt(n), n // 39))
        sub = next(m for m in (48, 32, 24, 16, 12, 8, 4, 2, 1) if dim % m == 0)
        quantizer = faiss.IndexFlatIP(dim)
        index = faiss.IndexIVFPQ(quantizer, dim, nlist, sub, 8, faiss.METRIC_INNER_PRODUCT)
        index.train(
            vectors[np.random.default_rng(0).permutation(n)[: max(256 * nlist // 4, 40_000)]]
        )
        index.nprobe = max(16, nlist // 8)
        index.add_with_ids(vectors, ids)
        return index
    if kind == "hnsw":
        base = faiss.IndexHNSWFlat(dim, 32, faiss.METRIC_INNER_PRODUCT)
        base.hnsw.efConstruction = 80
        # the prefilter asks for 400 candidates (PipelineConfig.depth); recall@100 against exact
        # search on synthetic ACM papers (`assistant bench scale`, BENCHMARKS.md): 30k 0.84 /
        # 0.98 / 1.0 at efSearch 128 / 400 / 800; 60k 0.95 / 0.97 / 1.0 at 400 / 800 / 1200;
        # 100k 0.87 at 400. The list grows with the library: 800 (~9 ms a query at 60k).
        base.hnsw.efSearch = 800
        index = faiss.IndexIDMap2(base)
    else:
        index = faiss.IndexIDMap2(faiss.IndexFlatIP(dim))
    if n:
        index.add_with_ids(vectors, ids)
    return index


class IndexPaths:
    def __init__(self, root: Path):
        self.root = Path(root)
        self.meta = self.root / "meta.json"
        self.dense = self.root / "dense"
        self.pending = self.dense / "pending"
        self.bm25 = self.root / "bm25"

    def read_meta(self, strict: bool = False) -> dict:
        """``meta.json`` ({} when there is none); a damaged one raises
        :class:`IndexDamagedError` when ``strict``, else reads as {} (the index is rebuilt)."""
        try:
            if not index_files.is_regular(self.meta):
                return {}
            return index_files.load_json(self.meta)
        except IndexDamagedError:
            if strict:
                raise
            log.debug("%s is damaged; the index will be rebuilt", self.meta)
            return {}


def _remove_leftovers(paths: IndexPaths) -> None:
    """Temporary files of a run killed mid-write (under the index lock: no other job owns them)."""
    for pattern in ("*.tmp", "*.tmp.npy", "*.tmp.npz"):
        for folder in (paths.root, paths.dense, paths.pending):
            for f in folder.glob(pattern) if folder.is_dir() else ():
                if f.is_file():
                    f.unlink(missing_ok=True)
    for name in ("bm25.tmp", "bm25.old"):
        filewrite.remove(paths.root / name)
    # the writer's own temporaries (``.<name>.<hex>.tmp`` / ``.old``) of a killed run
    for folder in (paths.root, paths.dense, paths.pending):
        for f in folder.glob(".*.tmp") if folder.is_dir() else ():
            filewrite.remove(f)
        for f in folder.glob(".*.old") if folder.is_dir() else ():
            filewrite.remove(f)


def _versions_digest(versions: dict[int, str]) -> str:
    h = hashlib.sha1()
    for pid in sorted(versions):
        h.update(f"{pid}:{versions[pid]}\n".encode())
    return h.hexdigest()


def _load_dense(paths: IndexPaths) -> dict[int, tuple[bytes, str]]:
    """``{paper id: (text hash, version)}`` of the stored dense index (empty if unreadable)."""
    if not index_files.is_regular(paths.dense / "ids.npy"):
        return {}
    try:
        ids = index_files.load_npy(paths.dense / "ids.npy")
        hashes = index_files.load_npy(paths.dense / "hashes.npy")
        versions = index_files.load_json(paths.dense / "versions.json")
        if len(ids) != len(hashes):
            raise ValueError("ids/hashes length mismatch")
        return {
            int(i): (h, versions.get(str(int(i)), ""))
            for i, h in zip(ids.tolist(), hashes.tolist())
        }
    except (IndexDamagedError, ValueError, TypeError) as exc:
        log.warning("dense index in %s unreadable (%s); re-embedding", paths.dense, exc)
        return {}


def _stored_vectors(
    paths: IndexPaths, wanted: set[bytes], dim: int | None = None
) -> dict[bytes, np.ndarray]:
    try:
        hashes = index_files.load_npy(paths.dense / "hashes.npy")
        vectors = index_files.load_npy(paths.dense / "vectors.npy", mmap=True)
    except IndexDamagedError:
        return {}
    if vectors.ndim != 2 or (dim and vectors.shape[1] != dim) or vectors.dtype.kind != "f":
        log.warning("vectors of the wrong shape in %s; ignoring them", paths.dense)
        return {}
    if len(vectors) != len(hashes):  # a write cut short between the two files: re-embed
        log.warning("vectors/hashes mismatch in %s; ignoring the stored vectors", paths.dense)
        return {}
    return {h: np.array(vectors[row]) for row, h in enumerate(hashes.tolist()) if h in wanted}


def build_index(
    library,
    encoder,
    progress: Progress | None = None,
    *,
    index_dir: Path | str | None = None,
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
    paths = IndexPaths(Path(index_dir) if index_dir else index_dir_for(library.path))
    with index_lock(paths.root, cancelled=cancelled, progress=progress):
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
    if rebuild:  # whatever is there (damaged, foreign, a FIFO, a folder): removed unread
        for name in ("meta.json", "dense", "bm25", "bm25.tmp", "bm25.old"):
            filewrite.remove(paths.root / name)
    else:
        index_files.check_folder(paths.root)
    paths.dense.mkdir(parents=True, exist_ok=True)
    _remove_leftovers(paths)
    fingerprint = str(encoder.fingerprint)
    meta = paths.read_meta()
    report = IndexReport(fingerprint=fingerprint)
    bm25_params = bm25_params or BM25Params()
    versions = {int(k): str(v) for k, v in library.paper_versions().items()}
    report.total = len(versions)
    if rebuild:
        report.rebuilt_reason = "rebuild requested"
    elif meta and meta.get("fingerprint") != fingerprint:
        report.rebuilt_reason = f"encoder changed ({meta.get('fingerprint')} -> {fingerprint})"
    elif meta and meta.get("format") != FORMAT_VERSION:
        report.rebuilt_reason = "index format changed"
    if report.rebuilt_reason:
        log.info("rebuilding the dense index: %s", report.rebuilt_reason)
        shutil.rmtree(paths.dense, ignore_errors=True)
        paths.dense.mkdir(parents=True)
    stored = _load_dense(paths)
    report.kind = resolve_kind(
        kind if kind != "auto" else meta.get("kind_requested", "auto"), len(versions)
    )
    if (report.kind == "ivf" and len(versions) < IVF_MIN) or (
        report.kind == "ivfpq" and len(versions) < PQ_MIN
    ):
        report.kind = "flat"  # too few vectors to train the IVF quantizer / PQ codebooks
    digest = _versions_digest(versions)
    try:
        bm25_meta = index_files.load_json(paths.bm25 / "bm25.json")
    except IndexDamagedError:  # missing or cut short by a kill: rebuilt below
        bm25_meta = {}
    bm25_fresh = bm25_meta.get("versions") == digest and (
        bm25_meta.get("k1"),
        bm25_meta.get("b"),
    ) == (bm25_params.k1, bm25_params.b)
    if (
        not report.rebuilt_reason
        and bm25_fresh
        and meta.get("kind") == report.kind
        and not meta.get("missing")
        # meta.json is written last: a run killed before it left meta of an older state
        and meta.get("versions") == digest
        and {i: v for i, (_, v) in stored.items()} == versions
        and (paths.dense / "faiss.index").exists()
    ):
        report.unchanged = len(versions)
        report.seconds = time.perf_counter() - start
        return report  # nothing changed

    # one pass over the library: texts to embed, and the BM25 corpus
    texts: dict[int, str] = {}
    hashes: dict[int, bytes] = {}
    lexical: list[tuple[int, str, int]] = []
    for paper in library.iter_papers():
        pid = int(paper.id)
        texts[pid] = paper.encoder_text()
        hashes[pid] = text_hash(texts[pid])
        lexical.append((pid, paper.lexical_text(), int(paper.year) if paper.year else -1))
    report.removed = sum(1 for pid in stored if pid not in hashes)

    wanted = set(hashes.values())
    enc_dim = int(getattr(encoder, "dim", 0) or 0) or None
    cache = _stored_vectors(paths, wanted, enc_dim)
    pending = EmbeddingCache(paths.pending, fingerprint)
    resumed = pending.load(wanted)
    report.resumed = len(set(resumed) - set(cache))
    cache.update(resumed)
    for other in reuse_from:
        other = Path(other)
        folder = other / "dense" / "pending" if (other / "meta.json").exists() else other
        for h, v in EmbeddingCache(folder, fingerprint).load(wanted - set(cache)).items():
            cache[h] = v
        if (other / "meta.json").exists() and IndexPaths(other).read_meta().get(
            "fingerprint"
        ) == fingerprint:
            cache.update(_stored_vectors(IndexPaths(other), wanted - set(cache), enc_dim))
    todo = {h: texts[pid] for pid, h in hashes.items() if h not in cache}
    if todo and (embed_budget_s is None or embed_budget_s > 0):
        pending.open_for_writing()
        _embed(
            encoder,
            todo,
            pending,
            cache,
            chunk_size,
            batch_size,
            progress,
            report,
            cancelled,
            embed_budget_s,
        )

    ids = np.asarray(sorted(pid for pid, h in hashes.items() if h in cache), dtype=np.int64)
    report.missing = len(hashes) - len(ids)
    covered = ids.tolist()
    report.added = sum(1 for pid in covered if pid not in stored)
    report.updated = sum(1 for pid in covered if pid in stored and stored[pid][0] != hashes[pid])
    report.unchanged = len(covered) - report.added - report.updated
    if report.missing:
        report.warnings.append(
            f"{report.missing} of {len(hashes)} papers have no vector yet (embedding budget "
            "reached): dense search covers the others; run `assistant index` again to finish"
        )
    dim = int(getattr(encoder, "dim", 0) or (len(next(iter(cache.values()))) if cache else 0))
    vecs = (
        np.stack([cache[hashes[int(i)]] for i in ids]).astype(np.float32)
        if len(ids)
        else np.empty((0, dim), np.float32)
    )
    if progress:
        progress(
            ProgressEvent(0, len(ids), "faiss", f"Writing the vector index ({len(ids)} vectors)")
        )
    _atomic_save_npy(paths.dense / "vectors.npy", vecs)
    faults.point("index.vectors")
    _atomic_save_npy(
        paths.dense / "hashes.npy", np.asarray([hashes[int(i)] for i in ids], dtype="S16")
    )
    _atomic_save_npy(paths.dense / "ids.npy", ids)
    _atomic_write(
        paths.dense / "versions.json",
        json.dumps({str(int(i)): versions.get(int(i), "") for i in ids}),
    )
    index = make_faiss(vecs, ids, report.kind)
    filewrite.save_with(paths.dense / "faiss.index", lambda tmp: faiss.write_index(index, tmp))
    if not report.missing:
        shutil.rmtree(paths.pending, ignore_errors=True)

    if not bm25_fresh:
        _build_bm25(lexical, paths, bm25_params, digest, progress)
        report.bm25_rebuilt = True
    faults.point("index.meta")
    _atomic_write(
        paths.meta,
        json.dumps(
            {
                "format": FORMAT_VERSION,
                "fingerprint": fingerprint,
                "encoder": getattr(encoder, "name", ""),
                "encoder_path": str(getattr(getattr(encoder, "manifest", None), "path", "") or ""),
                "max_length": getattr(encoder, "max_length", None),
                "dim": dim,
                "count": len(ids),
                "max_id": int(max(hashes, default=0)),
                "kind": report.kind,
                "missing": report.missing,
                "versions": digest,
                "kind_requested": kind if kind != "auto" else meta.get("kind_requested", "auto"),
                "updated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            },
            indent=1,
        ),
    )
    report.seconds = time.perf_counter() - start
    return report


def _embed(
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


def _build_bm25(
    lexical: list[tuple[int, str, int]],
    paths: IndexPaths,
    params: BM25Params,
    digest: str,
    progress,
) -> None:
    ids = [pid for pid, _, _ in lexical]
    texts = [text for _, text, _ in lexical]
    years = [year for _, _, year in lexical]
    if progress:
        progress(ProgressEvent(0, len(ids), "bm25", f"Building the BM25 index ({len(ids)} papers)"))
    tmp = paths.root / "bm25.tmp"
    filewrite.remove(tmp)
    tmp.mkdir()  # a new folder of ours (mkdir never follows a link): its files are ours too
    if ids:
        BM25Index.build(ids, texts, params).save(tmp)
    else:
        np.save(tmp / "ids.npy", np.empty(0, np.int64))
    np.save(tmp / "years.npy", np.asarray(years, dtype=np.int32))
    meta_path = tmp / "bm25.json"
    meta = (
        index_files.load_json(meta_path)
        if meta_path.exists()
        else {"k1": params.k1, "b": params.b, "stem": params.stem}
    )
    meta["versions"] = digest
    filewrite.write_text(meta_path, json.dumps(meta, indent=1))
    faults.point("index.bm25")
    filewrite.replace_dir(tmp, paths.bm25)  # a kill leaves the old bm25 or the new one
    if progress:
        progress(
            ProgressEvent(len(ids), len(ids), "bm25", f"BM25 index over {len(ids)} papers done")
        )


def load_index_encoder(
    index_dir: Path | str | None = None,
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

    meta = IndexPaths(Path(index_dir)).read_meta() if index_dir else {}
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


def index_status(index_dir: Path | str) -> dict:
    """What ``meta.json`` says about an index (empty dict when there is none)."""
    return IndexPaths(Path(index_dir)).read_meta()
