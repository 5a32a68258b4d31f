"""The files of an index folder (see :mod:`assistant.retrieval.index`): their paths, the run
report, reading the stored dense part (ids, text hashes, versions, vectors), and FAISS indexes
built from vectors."""

from __future__ import annotations

import hashlib
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path

import faiss
import numpy as np

from assistant import filewrite
from assistant.retrieval import index_files
from assistant.retrieval.index_files import IndexDamagedError

log = logging.getLogger("assistant.retrieval.index")  # its warnings read as the indexer's

#: Paper ids whose vector rows a killed run may have left half-patched (``index_update``).
DIRTY = "dirty.json"
#: Each stored paper's version (``Library.paper_versions``), in the order of ``ids.npy``.
VERSIONS = "versions.npy"
#: IVF needs enough vectors to train its coarse quantizer (IVF-PQ also its codebooks).
IVF_MIN = 1000
PQ_MIN = 10_000


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


def atomic_save_npy(path: Path, array: np.ndarray) -> None:
    filewrite.save_with(path, lambda tmp: np.save(tmp, array, allow_pickle=False))


def atomic_write(path: Path, text: str) -> None:
    filewrite.write_text(path, text)


def hnsw_ef_search(n: int) -> int:
    """HNSW's search list for ``n`` vectors: the shortest measured to keep recall@100 >= 0.95
    (BENCHMARKS.md, "A library at scale"); 3200 above 400k (0.985 at 300k; 1M unmeasured)."""
    return 800 if n < 150_000 else 1600 if n < 400_000 else 3200


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
        # 100k 0.87 / 0.952 at 400 / 800; 300k 0.897 / 0.958 / 0.985 at 800 / 1600 / 3200
        # (36 / 58 ms p50 at load 6). The list grows with the library.
        base.hnsw.efSearch = hnsw_ef_search(n)
        index = faiss.IndexIDMap2(base)
    else:
        index = faiss.IndexIDMap2(faiss.IndexFlatIP(dim))
    if n:
        index.add_with_ids(vectors, ids)
    return index


#: Dense indexes of further encoders, side by side: ``<index>/encoders/<name>/`` (meta.json and
#: dense/ of their own); the BM25 index of the folder is shared by all of them.
ENCODERS = "encoders"


class IndexPaths:
    """The files of one dense index and the shared BM25 index of an index folder: the root's
    own ``meta.json`` + ``dense/`` (``encoder_key`` None: the default, fast tier), or those of
    ``encoders/<encoder_key>/`` (another encoder's, e.g. the ``best`` tier's mpnet)."""

    def __init__(self, root: Path, encoder_key: str | None = None):
        self.root = Path(root)
        self.encoder_key = encoder_key or None
        self.dense_root = self.root / ENCODERS / encoder_key if encoder_key else self.root
        self.meta = self.dense_root / "meta.json"
        self.dense = self.dense_root / "dense"
        self.pending = self.dense / "pending"
        self.bm25 = self.root / "bm25"

    @classmethod
    def of(cls, index_dir: IndexPaths | Path | str) -> IndexPaths:
        """``index_dir`` as paths (an :class:`IndexPaths` is kept: it names its encoder)."""
        return index_dir if isinstance(index_dir, IndexPaths) else cls(Path(index_dir))

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


def remove_leftovers(paths: IndexPaths) -> None:
    """Temporary files of a run killed mid-write (under the index lock: no other job owns them)."""
    folders = tuple(dict.fromkeys((paths.root, paths.dense_root, paths.dense, paths.pending)))
    for pattern in ("*.tmp", "*.tmp.npy", "*.tmp.npz"):
        for folder in folders:
            for f in folder.glob(pattern) if folder.is_dir() else ():
                if f.is_file():
                    f.unlink(missing_ok=True)
    for name in ("bm25.tmp", "bm25.old"):
        filewrite.remove(paths.root / name)
    # the writer's own temporaries (``.<name>.<hex>.tmp`` / ``.old``) of a killed run
    for folder in folders:
        for f in folder.glob(".*.tmp") if folder.is_dir() else ():
            filewrite.remove(f)
        for f in folder.glob(".*.old") if folder.is_dir() else ():
            filewrite.remove(f)


def versions_digest(versions: dict[int, str]) -> str:
    """SHA-1 of the ``id:version`` lines in id order (one update: 112k papers in ~50 ms)."""
    text = "".join([f"{pid}:{versions[pid]}\n" for pid in sorted(versions)])
    return hashlib.sha1(text.encode()).hexdigest()


def load_dense(paths: IndexPaths) -> dict[int, tuple[bytes, str]]:
    """``{paper id: (text hash, version)}`` of the stored dense index (empty if unreadable);
    a paper whose row a killed run may have half-patched reads as (b"", ""): done again."""
    if not index_files.is_regular(paths.dense / "ids.npy"):
        return {}
    try:
        ids = index_files.load_npy(paths.dense / "ids.npy")
        hashes = index_files.load_npy(paths.dense / "hashes.npy")
        if len(ids) != len(hashes):
            raise ValueError("ids/hashes length mismatch")
        ids_list = ids.tolist()
        stored = dict(zip(ids_list, zip(hashes.tolist(), _stored_version_list(paths, ids_list))))
        for pid in dirty_ids(paths) & stored.keys():
            stored[pid] = (b"", "")
        return stored
    except (IndexDamagedError, ValueError, TypeError) as exc:
        log.warning("dense index in %s unreadable (%s); re-embedding", paths.dense, exc)
        return {}


def _stored_version_list(paths: IndexPaths, ids: list[int]) -> list[str]:
    """The version of each of ``ids``: ``versions.npy`` (aligned with ``ids.npy``), or the
    ``versions.json`` object of an index written before it."""
    if index_files.is_regular(paths.dense / VERSIONS):
        versions = index_files.load_npy(paths.dense / VERSIONS)
        if versions.shape != (len(ids),) or versions.dtype.kind != "U":
            raise ValueError("versions do not match the ids")
        return versions.tolist()
    get = index_files.load_json(paths.dense / "versions.json").get
    return [get(k, "") for k in map(str, ids)]


def dirty_ids(paths: IndexPaths) -> set[int]:
    """Papers whose vector rows were being patched in place when a run stopped (``DIRTY``)."""
    path = paths.dense / DIRTY
    try:
        return {int(i) for i in index_files.load_json(path).get("ids", [])}
    except IndexDamagedError:
        if index_files.is_regular(path):  # unreadable: no stored row can be trusted
            raise ValueError(f"{path} is damaged") from None
        return set()


def stored_vectors(
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
    try:
        dirty = dirty_ids(paths)
        ids = index_files.load_npy(paths.dense / "ids.npy") if dirty else None
    except (IndexDamagedError, ValueError):
        return {}
    if ids is not None and len(ids) != len(hashes):
        return {}
    return {
        h: np.array(vectors[row])
        for row, h in enumerate(hashes.tolist())
        if h in wanted and (ids is None or int(ids[row]) not in dirty)
    }


def dense_state(paths: IndexPaths, digest: str, papers: int = 0) -> tuple[bool, str]:
    """``(current, why not)`` of the dense index at ``paths`` for a library of ``papers`` papers
    whose versions digest is ``digest`` (:func:`versions_digest`), from its files alone (no
    model is loaded; an interrupted run's saved chunks count as built)."""
    meta = paths.read_meta()
    if not meta:
        embedded = pending_count(paths)
        if not embedded:
            return False, "not built"
        return False, f"{100 * min(embedded, papers) // max(1, papers)}% built" if papers else (
            f"{embedded} papers embedded so far"
        )
    if meta.get("missing"):
        count, missing = int(meta.get("count", 0)), int(meta["missing"])
        return False, f"{100 * count // max(1, count + missing)}% built"
    if meta.get("versions") != digest:
        return False, "behind the library (papers added or changed since it was built)"
    try:
        if not index_files.is_regular(paths.dense / "faiss.index"):
            return False, "unfinished (no vector index file)"
    except IndexDamagedError:
        return False, "damaged"
    return True, "current"


def pending_count(paths: IndexPaths) -> int:
    """Vectors an interrupted run has saved in ``dense/pending`` (only their hashes are read)."""
    total = 0
    for chunk in sorted(paths.pending.glob("chunk-*.npz")) if paths.pending.is_dir() else ():
        if ".tmp" in chunk.name or not chunk.is_file() or chunk.is_symlink():
            continue
        try:
            with np.load(chunk, allow_pickle=False) as z:
                total += len(z["hashes"])
        except Exception:  # an unreadable chunk is embedded again
            continue
    return total
