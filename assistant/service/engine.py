"""The application service: one library, its encoder, index and recommender (no Qt, no click).

The CLI and the GUI call only this class (and the helpers re-exported by
:mod:`assistant.service`); the GUI adds Qt threads and widgets, the CLI adds click.

Thread-safety contract
----------------------
Methods fall in two groups.

* **Reads** -- :meth:`Service.recommend`, :meth:`Service.default_config`, :meth:`Service.status`,
  :meth:`Service.paper_bibtex`, :meth:`Service.cited_ids` -- use the *committed snapshot*: a
  :class:`~assistant.retrieval.pipeline.Recommender` over its own SQLite connection and the index
  as it was last committed (BM25 and FAISS are loaded into memory). They never take the job lock,
  so **recommending never waits for a long job**. Concurrent ``recommend`` calls are serialised by
  the recommender's own lock.
* **Jobs** -- :meth:`Service.prepare`, :meth:`Service.build_index`, :meth:`Service.import_files`,
  :meth:`Service.adapt_encoder`, :meth:`Service.train_reranker` -- run one at a time (the job lock),
  on any thread, with the job connection (:attr:`Service.library`). The index builder replaces its
  files with ``os.replace``; when a job has committed, it opens a new snapshot on its own thread
  and swaps it in with one assignment. A ``recommend`` already running finishes on the old
  snapshot; the next one sees the new index. Retired snapshots are closed by garbage collection
  (an in-flight call may still hold one).

The encoder (ONNX session + Rust tokenizer, both re-entrant) is shared by jobs and snapshots.
Long calls report :class:`~assistant.progress.ProgressEvent` to a ``progress`` callable and poll a
``cancelled()`` check; a stopped job raises :class:`~assistant.errors.Cancelled` and commits
nothing more than its layer promises (an import rolls back; indexing keeps embedded chunks).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from assistant.config import default_db_path
from assistant.errors import AssistantError, Cancelled
from assistant.inference.encoder import Encoder
from assistant.library.models import ImportIssue, ImportReport, Paper
from assistant.library.store import Library
from assistant.progress import CancelCheck, Progress, ProgressEvent, never_cancelled, no_progress
from assistant.retrieval.index import IndexReport, build_index, load_index_encoder
from assistant.retrieval.pipeline import (
    PipelineConfig,
    RecommendationResult,
    Recommender,
    RequestOptions,
    pipeline_config,
)
from assistant.retrieval.query import Query, as_query
from assistant.retrieval.searcher import EmptyLibraryError
from assistant.service.exclusions import cited_key_ids, excluded_ids
from assistant.service.fallback import keyword_fallback
from assistant.service.quality import (
    BEST,
    BEST_ENCODER,
    FAST,
    TierChoice,
    TierMixin,
    build_best_reranker,
    check_quality,
    tier_paths,
)
from assistant.service.tier_build import JobLock, TierBuilder

log = logging.getLogger(__name__)

#: The progress stage reported once an import has committed (the papers are readable now).
IMPORTED_STAGE = "imported"


def import_summary(report: ImportReport) -> str:
    """One line: what an import did."""
    return (
        f"Imported: {report.added} added, {report.merged} merged, "
        f"{report.unchanged} unchanged, {report.skipped} skipped."
    )


@dataclass
class ServiceSettings:
    """What the service needs from the user's settings."""

    db_path: Path | None = None
    encoder: str | None = None  # None = the index's encoder, else the default (minilm)
    max_length: int | None = None  # tokens embedded per paper (None = the index's, else 256)
    device: str = "auto"  # auto | cpu | cuda
    reranker: str | None = "auto"  # see retrieval.reranker_setting
    ranker: str | None = "auto"  # learned ranker: see retrieval.ranker.resolve_ranker
    use_intent: bool = True
    #: the user's own names ("Last, First"; Settings): the manuscript's authors when it names none
    authors: tuple[str, ...] = ()
    #: papers per embedding batch when indexing (None: the indexer's default); Cancel takes
    #: effect between batches, so the GUI uses small ones
    index_batch_size: int | None = None
    #: quality tier: auto | fast | best (see :mod:`assistant.service.quality`)
    quality: str = "auto"
    #: build the wanted tier's index on a thread of its own (the GUI, the language server); the
    #: CLI's one-shot commands leave it off (`assistant index --quality best` builds it)
    background: bool = False


@dataclass
class IndexStatus:
    """What the library panel shows."""

    papers: int = 0
    embedded: int = 0
    model: str = ""
    device: str = ""
    precision: str = ""
    ready: bool = False
    notes: list[str] = field(default_factory=list)
    reranker: str = ""  # the active cross-encoder ("" = none)
    quality: str = ""  # the tier in use and why (TierChoice.reason)

    def describe(self) -> str:
        dev = f"{self.device.upper()} {self.precision}".strip() if self.device else "not loaded"
        models = self.model or "no model"
        if self.reranker:
            models += f" + {self.reranker}"
        tier = f" · {self.quality}" if self.quality else ""
        return f"{self.papers} papers · {self.embedded} embedded · {models} · {dev}{tier}"


@dataclass
class _Snapshot:
    """A committed index and the connection that reads it (never touched by a job)."""

    library: Library
    recommender: Recommender
    tier: str = FAST


def paper_bibtex(paper: Paper) -> str:
    """The BibTeX entry of one library paper, with its stable citekey."""
    from assistant.library.export import paper_to_bibtex  # the BibTeX writer: not at start-up

    return paper_to_bibtex(paper)


def open_library(path: Path | str) -> Library:
    """A connection to a library file (created when missing); raises ``LibraryOpenError``."""
    return Library(Path(path))


def import_paths(*args, **kwargs) -> ImportReport:
    """``library.importers.import_paths``, imported on first use (the importers and their
    parsers are not loaded by every command)."""
    from assistant.library.importers import import_paths as run

    return run(*args, **kwargs)


def label_new_citations(library: Library, report: ImportReport) -> None:
    """Label the intents of the citation edges an import added (only unlabelled rows); without
    the intent model they stay unlabelled and the report says so."""
    from assistant.retrieval.intent_stage import classify_library_citations

    try:
        classify_library_citations(library)
    except Exception as exc:  # model not trained/shipped: the edges stay unlabelled
        report.issues.append(ImportIssue("", 0, f"citation intents not labelled: {exc}", "warning"))


class Service(TierMixin):
    """The one application service for one library file (see the module docstring)."""

    def __init__(self, settings: ServiceSettings | None = None) -> None:
        self.settings = settings or ServiceSettings()
        self.db_path = Path(self.settings.db_path or default_db_path())
        self.settings.quality = check_quality(self.settings.quality)
        self._library: Library | None = None
        self._encoders: dict[str, Encoder] = {}  # per tier (fast, best)
        self._snapshot: _Snapshot | None = None
        self._embedded = 0
        self._job_lock = JobLock()  # one job at a time (a background tier build yields it)
        self._tier: TierChoice | None = None
        self._builder: TierBuilder | None = None
        self._tier_failure = ""  # why the best tier could not be built (a missing weight)
        self._listeners: list = []  # called (from any thread) when the tier or its build changes
        # short locks that only guard lazy opening (never held while a job runs):
        self._library_lock = threading.Lock()  # the job connection
        self._encoder_lock = threading.Lock()  # the encoder (its first build can take a minute)
        self._snapshot_lock = threading.Lock()  # the first snapshot

    # --- resources ---------------------------------------------------------------------------
    @property
    def library(self) -> Library:
        """The job connection (imports and indexing write through it)."""
        with self._library_lock:
            if self._library is None:
                self._library = Library(self.db_path)
            return self._library

    def close(self) -> None:
        if self._builder is not None:
            self._builder.stop()
        if self._library is not None:
            self._library.close()
            self._library = None
        snapshot, self._snapshot = self._snapshot, None
        if snapshot is not None:
            snapshot.library.close()

    @property
    def _encoder(self) -> Encoder | None:
        """The active tier's encoder once loaded."""
        return self._encoders.get(self.tier().active)

    def load_encoder(self, progress: Progress = no_progress, tier: str | None = None) -> Encoder:
        """The encoder of ``tier`` (default: the active one) as its index was built (same model
        and max length), so an index built by the CLI is reused instead of being re-embedded."""
        tier = tier or self.tier().active
        with self._encoder_lock:
            if tier not in self._encoders:
                name = BEST_ENCODER if tier == BEST else self.settings.encoder or None
                progress(ProgressEvent(0, None, "encoder", f"Loading the encoder ({tier} tier)…"))
                self._encoders[tier] = load_index_encoder(
                    tier_paths(self.db_path, tier),
                    name,
                    self.settings.max_length,
                    device=self.settings.device,
                    progress=progress,
                )
            return self._encoders[tier]

    def default_config(self, tier: str | None = None, **overrides) -> PipelineConfig:
        """The pipeline configuration of these settings (ranker and reranker resolved for
        ``tier``, default: the active one), with ``overrides``."""
        return pipeline_config(
            reranker=self.settings.reranker,
            ranker=self.settings.ranker,
            use_intent=self.settings.use_intent,
            tier=tier or self.tier().active,
            **overrides,
        )

    # --- reads (never wait for a job) --------------------------------------------------------
    def _current(self) -> _Snapshot:
        snapshot = self._snapshot
        if snapshot is not None:
            return snapshot
        with self._snapshot_lock:
            if self._snapshot is None:
                self._snapshot = self._open_snapshot()
            return self._snapshot

    def _open_snapshot(self, tier: str | None = None) -> _Snapshot:
        """A new reader over the committed index of ``tier`` (default: the active one; raises
        ``EmptyLibraryError``/``IndexMissingError``)."""
        tier = tier or self.tier().active
        encoder = self.load_encoder(tier=tier)
        reader = Library(self.db_path)
        try:
            recommender = Recommender(
                reader,
                config=self.default_config(tier),
                encoder=encoder,
                index_dir=tier_paths(self.db_path, tier),
                exclusions=excluded_ids,
            )
        except BaseException:
            reader.close()
            raise
        self._embedded = int(recommender.searcher.meta.get("count", 0))
        return _Snapshot(reader, recommender, tier)

    def recommend(
        self,
        query: Query | str,
        config: PipelineConfig | None = None,
        cancelled: CancelCheck | None = None,
        *,
        request: RequestOptions | None = None,
        fallback: bool = False,
    ) -> RecommendationResult:
        """Run the pipeline on the last committed index (never builds one, never waits for a job).

        ``config`` is the set-up (default :meth:`default_config`), ``request`` what this one
        query asks for (k, filters, Hide cited; applied over ``config``). The manuscript itself
        and (``exclude_cited``) what it cites are left out (``service.exclusions``). A query
        naming no authors gets the user's own names from the settings. With ``fallback``, a
        library without any index yet gets keyword (BM25) matches with a notice instead of
        ``IndexMissingError``."""
        query = as_query(query)
        if not query.authors and self.settings.authors:
            query = replace(query, authors=tuple(self.settings.authors))
        if fallback and self._snapshot is None and not self.has_index():
            config = config or self.default_config()
            return keyword_fallback(
                self.db_path, query, request.apply(config) if request else config
            )
        snapshot = self._current()
        if request is not None:  # the set-up of the tier that answers (its own ranker)
            config = request.apply(config or self.default_config(snapshot.tier))
        return snapshot.recommender.recommend(query, config=config, cancelled=cancelled)

    def has_index(self) -> bool:
        """Whether an index has been committed next to the library (it may lag the library)."""
        return any(
            bool(paths.read_meta()) and (paths.bm25 / "bm25.json").exists()
            for paths in (tier_paths(self.db_path, FAST), tier_paths(self.db_path, BEST))
        )

    def serving_tier(self) -> str:
        """The quality tier whose index the open snapshot reads ("" before one is open)."""
        snapshot = self._snapshot
        return snapshot.tier if snapshot is not None else ""

    @property
    def ready(self) -> bool:
        """Whether a committed index is open for recommending."""
        return self._snapshot is not None

    @property
    def recommender(self) -> Recommender:
        """The recommender over the last committed index (opened on first use)."""
        return self._current().recommender

    def reader(self) -> Library:
        """A connection for reads that must not wait for a job (the snapshot's when one is open)."""
        snapshot = self._snapshot
        return snapshot.library if snapshot is not None else self.library

    def paper_bibtex(self, paper: Paper) -> str:
        """The BibTeX entry of one library paper, with its stable citekey."""
        return paper_bibtex(paper)

    def cited_ids(self, keys: Sequence[str], library: Library | None = None) -> tuple[int, ...]:
        """Library ids of the citekeys a manuscript already cites (unknown keys are skipped), read
        through ``library`` (e.g. the UI thread's own connection) or :meth:`reader`."""
        return cited_key_ids(library or self.reader(), keys)

    def index_stale(self) -> bool:
        """Papers were added or removed since the index in use was built."""
        return self._snapshot is not None and self.library.count() != self._embedded

    def import_outcome(self, papers_before: int) -> str:
        """After a cancelled import: what actually happened, in one sentence."""
        after = self.library.count()
        if after == papers_before:
            return "Import cancelled: rolled back, the library is unchanged"
        stale = " — the index is stale" if self.index_stale() else ""
        return (
            f"Import committed ({after - papers_before:+d} papers, {after} in all) "
            f"before Cancel; indexing was cancelled{stale}"
        )

    def status(self) -> IndexStatus:
        status = IndexStatus(
            papers=self.reader().count(), embedded=self._embedded, ready=self.ready
        )
        snapshot = self._snapshot
        encoder = snapshot.recommender.encoder if snapshot is not None else self._encoder
        if encoder is not None:
            status.model = encoder.name
            status.device = encoder.info.device
            status.precision = encoder.info.precision
        reranker = self.default_config().reranker
        status.reranker = Path(reranker).name if reranker else ""
        status.quality = self.tier().reason
        if snapshot is not None and snapshot.tier != self.tier().active:  # a switch is pending
            status.quality += f"; recommending from the {snapshot.tier} tier's index meanwhile"
        return status

    # --- jobs (one at a time, on any thread) --------------------------------------------------
    def _commit(self) -> None:
        """Swap in a reader over the index a job has just committed."""
        if self.library.count() == 0:
            return
        snapshot = self._open_snapshot()
        try:  # load the lazy stages (reranker, intent model) now, not on the user's first request
            snapshot.recommender.recommend(
                "citation recommendation warm-up query",
                config=replace(snapshot.recommender.config, k=1),
            )
        except Exception as exc:  # the first real request reports it properly
            log.warning("warm-up query failed: %s", exc)
        self._snapshot = snapshot

    def prepare(
        self, progress: Progress = no_progress, cancelled: CancelCheck = never_cancelled
    ) -> IndexStatus:
        """Load the encoder, bring the active tier's index up to date and open the recommender
        on it; then (``settings.background``) build the wanted tier's index in the background."""
        with self._job_lock:
            self.tier(refresh=True)
            self.load_encoder(progress)
            if self.library.count() == 0:
                return self.status()  # an empty library has nothing to recommend from yet
            self.build_index(progress, cancelled)
            self.start_background()
            return self.status()

    def build_index(
        self,
        progress: Progress = no_progress,
        cancelled: CancelCheck = never_cancelled,
        *,
        reload: bool = True,
        tier: str | None = None,
        **options,
    ) -> IndexReport:
        """Embed new/changed papers and update the index of ``tier`` (default: the one in use;
        ``options``: ``retrieval.index.build_index``'s keywords), then (``reload``) switch
        recommending to the active tier. Raises ``EmptyLibraryError`` on an empty library."""
        with self._job_lock:
            library = self.library
            if library.count() == 0:
                raise EmptyLibraryError(
                    f"the library {self.db_path} is empty: nothing to index (import papers first)"
                )
            snapshot = self._snapshot
            tier = tier or (snapshot.tier if snapshot is not None else self.tier().active)
            encoder = self._encoders.get(tier) or self._index_encoder(progress, tier)
            progress(ProgressEvent(0, None, "index", f"Indexing the library ({tier} tier)…"))
            if self.settings.index_batch_size:
                options.setdefault("batch_size", self.settings.index_batch_size)
            options.setdefault("index_dir", tier_paths(self.db_path, tier))
            report = build_index(library, encoder, progress, cancelled=cancelled, **options)
            if tier == BEST:
                build_best_reranker(progress)
            self._embedded = report.total - report.missing
            self.tier(refresh=True)
            if reload:
                progress(ProgressEvent(0, None, "index", "Loading the recommender…"))
                self._commit()
            return report

    def _index_encoder(self, progress: Progress, tier: str):
        """The encoder for an index job on ``tier``: loaded by the job only if a paper must be
        embedded, when the index was built with the encoder of these settings (else loaded now)."""
        from assistant.retrieval.index_encoder import deferred_index_encoder

        deferred = deferred_index_encoder(
            tier_paths(self.db_path, tier),
            BEST_ENCODER if tier == BEST else self.settings.encoder or None,
            self.settings.max_length,
            lambda: self.load_encoder(progress, tier=tier),
            device=self.settings.device,
        )
        return deferred if deferred is not None else self.load_encoder(progress, tier=tier)

    def import_files(
        self,
        paths: Sequence[Path | str],
        progress: Progress = no_progress,
        cancelled: CancelCheck = never_cancelled,
        *,
        workers: int | None = 1,
        index: bool = True,
    ) -> ImportReport:
        """Import BibTeX/RIS/CSL-JSON/PDF files or folders (one transaction), then, with ``index``,
        update the index. A cancelled import rolls back and raises ``Cancelled``; a cancelled
        indexing after a committed import raises ``Cancelled`` too (the import stays)."""
        with self._job_lock:
            report = import_paths(
                self.library,
                [Path(p) for p in paths],
                progress=progress,
                cancelled=cancelled,
                workers=workers,
            )
            if report.citations_added:
                label_new_citations(self.library, report)
            progress(
                ProgressEvent(self.library.count(), None, IMPORTED_STAGE, import_summary(report))
            )
            if index and self.library.count():
                try:
                    self.build_index(progress, cancelled)
                except Cancelled as exc:
                    raise Cancelled(
                        f"the import was committed ({report.added} added, {report.merged} merged) "
                        "but indexing stopped: recommendations use the previous index until the "
                        "library is re-indexed"
                    ) from exc
            return report

    def adapt_encoder(
        self,
        progress: Progress = no_progress,
        cancelled: CancelCheck = never_cancelled,
        options=None,
    ):
        """Library → Adapt to my library: fine-tune the bi-encoder on this library (citation graph
        + pseudo-queries), export it, re-index with it and switch to it.

        ``options`` is a ``training.encoder.EncoderOptions`` (default: 15-minute cap, the
        service's device). Cancelling keeps the current encoder and index. Returns
        ``(TrainReport, IndexStatus)``.
        """
        from assistant.training.encoder import EncoderOptions, adapt_encoder

        opts = options or EncoderOptions(max_minutes=15.0)
        device = (self.settings.device or "auto") if opts.device == "auto" else opts.device
        opts = replace(opts, device=device, reindex=True)  # the caller's options stay as they were

        def work():
            with self._job_lock:
                if self.library.count() == 0:
                    raise EmptyLibraryError(
                        f"the library {self.db_path} is empty: import papers first"
                    )
                try:
                    result = adapt_encoder(
                        self.library, opts, progress=progress, cancelled=cancelled
                    )
                except Cancelled as exc:
                    raise Cancelled(
                        "adaptation cancelled: the current encoder stays in use"
                    ) from exc
                self.settings.encoder = opts.name
                with self._encoder_lock:  # the re-built index names the adapted encoder
                    self._encoders.pop(FAST, None)
                return result, self.prepare(progress, cancelled)

        # a CPU training step takes seconds: the caller gets Cancelled at once, the step in
        # progress ends on its own thread (holding the job lock until then) and saves nothing
        return run_beside(
            work, cancelled, "adaptation cancelled: the current encoder stays in use", "adapt"
        )

    def train_reranker(
        self, options, progress: Progress = no_progress, cancelled: CancelCheck | None = None
    ):
        """Train a cross-encoder on this library (``training.reranker.RerankerOptions``)."""
        from assistant.training.reranker import train_reranker

        with self._job_lock:
            return train_reranker(self.library, options, progress=progress, cancelled=cancelled)

    def train_encoder(
        self, options, progress: Progress = no_progress, cancelled: CancelCheck | None = None
    ):
        """Fine-tune the bi-encoder on this library with ``options`` as given
        (``training.encoder.EncoderOptions``); :meth:`adapt_encoder` also re-indexes and switches."""
        from assistant.training.encoder import adapt_encoder

        with self._job_lock:
            return adapt_encoder(self.library, options, progress=progress, cancelled=cancelled)


def run_beside(fn, cancelled: CancelCheck, message: str, name: str = "job"):
    """``fn()`` on a thread of its own; returns its result, re-raises its error, or raises
    ``Cancelled(message)`` within 0.1 s of ``cancelled()`` turning true (``fn`` then ends on its
    thread: it must poll the same flag)."""
    box: dict = {}

    def run() -> None:
        try:
            box["result"] = fn()
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    while thread.is_alive():
        thread.join(0.1)
        if thread.is_alive() and cancelled():
            raise Cancelled(message)
    if "error" in box:
        raise box["error"]
    return box["result"]


def require_library(path: Path | str) -> Path:
    """``path`` when a library file exists there, else an error saying how to create one."""
    path = Path(path)
    if not path.exists():
        raise LibraryMissingError(
            "library not found (import papers with `assistant library import`)", file=path
        )
    return path


class LibraryMissingError(AssistantError):
    """The library file does not exist yet."""
