"""The GUI's non-Qt engine: one library, its encoder, index and recommender.

Used from the GUI's background thread and by the headless ``--sample --demo``
path (so it never imports Qt). All heavy calls accept ``progress(done, total,
message)`` and ``cancelled()`` callables.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from assistant.config import default_db_path

log = logging.getLogger(__name__)

Progress = Callable[..., None]
CancelFn = Callable[[], bool]


_STAGE_LABELS = {
    "embed": "Embedding papers",
    "bm25": "Building the BM25 index",
    "faiss": "Building the vector index",
}


class EmptyLibraryError(RuntimeError):
    """Nothing to recommend from yet."""


class EngineCancelled(Exception):
    """A job was cancelled between two steps."""


def _noop(*_a, **_k) -> None:
    return None


def _never() -> bool:
    return False


@dataclass
class EngineSettings:
    """What the engine needs from the user's settings."""

    db_path: Path | None = None
    encoder: str | None = None  # None = default (minilm)
    device: str = "auto"  # auto | cpu | cuda
    reranker: str | None = "auto"  # "auto" = shipped default if present, None/"" = off
    use_intent: bool = True


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

    def describe(self) -> str:
        dev = f"{self.device.upper()} {self.precision}".strip() if self.device else "not loaded"
        return (
            f"{self.papers} papers · {self.embedded} embedded · {self.model or 'no model'} · {dev}"
        )


class Engine:
    """Holds the library connection, encoder and recommender for one library file."""

    def __init__(self, settings: EngineSettings | None = None) -> None:
        self.settings = settings or EngineSettings()
        self.db_path = Path(self.settings.db_path or default_db_path())
        self._library = None
        self._encoder = None
        self._recommender = None
        self._embedded = 0
        self._index_ready = False
        self._lock = threading.RLock()

    # --- resources ---------------------------------------------------------------------------
    @property
    def library(self):
        if self._library is None:
            from assistant.library.store import Library

            self._library = Library(self.db_path)
        return self._library

    def close(self) -> None:
        if self._library is not None:
            self._library.close()
            self._library = None
        self._recommender = None

    def load_encoder(self, progress: Progress = _noop):
        if self._encoder is None:
            from assistant.config import index_dir_for
            from assistant.retrieval.index import load_index_encoder

            progress(0, 0, "Loading the encoder (built on first use, this can take a minute)…")
            # The encoder the library's index was built with (same model and max length), so an
            # index built by the CLI is reused instead of being re-embedded.
            self._encoder = load_index_encoder(
                index_dir_for(self.db_path),
                self.settings.encoder or None,
                device=self.settings.device,
                progress=lambda message: progress(0, 0, str(message)),
            )
        return self._encoder

    # --- jobs ---------------------------------------------------------------------------------
    def prepare(self, progress: Progress = _noop, cancelled: CancelFn = _never) -> IndexStatus:
        """Load the encoder, (incrementally) build the index and create the recommender."""
        with self._lock:
            self.load_encoder(progress)
            if cancelled():
                return self.status()
            self.build_index(progress, cancelled)
            if cancelled() or self.library.count() == 0:
                return self.status()  # an empty library has nothing to recommend from yet
            progress(0, 0, "Loading the recommender…")
            self._recommender = self._make_recommender()
            self._warm_up()
            return self.status()

    def _warm_up(self) -> None:
        """One tiny query so the lazily loaded stages (reranker, intent model) load now, not on the
        user's first request."""
        try:
            config = replace(self._recommender.config, k=1)
            self._recommender.recommend("citation recommendation warm-up query", config=config)
        except Exception as exc:
            log.warning("warm-up query failed: %s", exc)

    def build_index(self, progress: Progress = _noop, cancelled: CancelFn = _never) -> Any:
        from assistant.retrieval.index import build_index

        encoder = self.load_encoder(progress)
        if self.library.count() == 0:
            self._index_ready = False
            return None

        progress(0, 0, "Indexing the library…")
        report = _progress_adapter(progress, cancelled, "indexing", "Indexing…")
        result = _call_with_optional(
            build_index, self.library, encoder, progress=report, cancelled=cancelled
        )
        self._index_ready = True
        self._recommender = None  # picks up the new index
        self._embedded = _embedded_count(result, self.library)
        return result

    def adapt_encoder(self, progress: Progress = _noop, cancelled: CancelFn = _never, options=None):
        """Library → Adapt to my library: fine-tune the bi-encoder on this library (citation graph
        + pseudo-queries), export it, re-index with it and switch the engine to it.

        ``options`` is a ``training.encoder.EncoderOptions`` (default: 15-minute cap, the
        engine's device). Cancelling keeps the current encoder and index. Returns
        ``(TrainReport, IndexStatus)``.
        """
        from assistant.training.encoder import EncoderOptions, adapt_encoder

        opts = options or EncoderOptions(max_minutes=15.0)
        device = (self.settings.device or "auto") if opts.device == "auto" else opts.device
        opts = replace(opts, device=device, reindex=True)  # the caller's options stay as they were

        report = _progress_adapter(progress, cancelled, "adaptation", "Adapting the encoder…")
        with self._lock:
            if self.library.count() == 0:
                raise EmptyLibraryError(f"the library {self.db_path} is empty: import papers first")
            result = adapt_encoder(self.library, opts, progress=report, cancelled=cancelled)
            if result.stopped_reason == "cancelled":
                raise EngineCancelled("adaptation cancelled")
            self.settings.encoder = opts.name
            self._encoder = None  # the re-built index names the adapted encoder: reload both
            self._recommender = None
        return result, self.prepare(progress, cancelled)

    def _make_recommender(self):
        from assistant.retrieval.pipeline import PipelineConfig, Recommender

        config = PipelineConfig()
        reranker = self.settings.reranker
        if reranker == "auto":
            from assistant.retrieval.pipeline import shipped_reranker

            shipped = shipped_reranker()
            if shipped is not None:
                config.reranker = shipped[0]
                if shipped[1] is not None:
                    config.rerank_weight = shipped[1]
        else:
            config.reranker = reranker or None
        if hasattr(config, "use_intent"):
            config.use_intent = self.settings.use_intent
        return Recommender(self.library, config=config, encoder=self.load_encoder())

    @property
    def recommender(self):
        if self._recommender is None:
            self.prepare()
        if self._recommender is None:
            raise EmptyLibraryError(
                f"the library {self.db_path} is empty: import papers first "
                "(Library → Import files…)"
            )
        return self._recommender

    def recommend(self, query, config=None, cancelled: CancelFn = _never):
        """Run the pipeline (prepares the engine first if needed)."""
        with self._lock:
            return self.recommender.recommend(query, config=config, cancelled=cancelled)

    def default_config(self):
        from assistant.retrieval.pipeline import PipelineConfig

        base = self.recommender.config if self._recommender is not None else PipelineConfig()
        return replace(base)

    def import_files(
        self, paths: list[Path], progress: Progress = _noop, cancelled: CancelFn = _never
    ):
        """Import BibTeX/RIS/CSL-JSON/PDF files or folders, then update the index."""
        with self._lock:
            result = import_into(self.library, paths, progress, cancelled)
            if not cancelled() and self.library.count():
                self.build_index(progress, cancelled)
                self._recommender = self._make_recommender()
            return result

    def status(self) -> IndexStatus:
        status = IndexStatus(
            papers=self.library.count(),
            embedded=self._embedded,
            ready=self._recommender is not None,
        )
        if self._encoder is not None:
            info = getattr(self._encoder, "info", None)
            status.model = getattr(self._encoder, "name", "") or ""
            status.device = getattr(info, "device", "") or ""
            status.precision = getattr(info, "precision", "") or ""
        return status


def _progress_adapter(progress: Progress, cancelled: CancelFn, what: str, default: str):
    """A callback for the index builder / trainers: maps ``IndexProgress`` objects or
    ``(done, total, message)`` to ``progress`` and raises ``EngineCancelled`` when asked to stop."""

    def report(*args, **kwargs):
        if cancelled():
            raise EngineCancelled(f"{what} cancelled")
        if args and hasattr(args[0], "stage"):  # IndexProgress
            p = args[0]
            label = _STAGE_LABELS.get(p.stage, p.stage)
            eta = f", about {p.eta_s:.0f} s left" if getattr(p, "eta_s", None) else ""
            progress(p.done, p.total, f"{label} {p.done}/{p.total}{eta}")
            return
        done, total = ((*args, 0, 0))[:2]
        progress(done, total, kwargs.get("message") or (args[2] if len(args) > 2 else default))

    return report


def _call_with_optional(fn, *args, **kwargs):
    """Call ``fn`` passing only the keyword arguments it accepts."""
    import inspect

    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return fn(*args, **kwargs)
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return fn(*args, **kwargs)
    return fn(*args, **{k: v for k, v in kwargs.items() if k in params})


def _embedded_count(result, library) -> int:
    for name in ("embedded", "total", "n_vectors", "count", "vectors"):
        value = getattr(result, name, None)
        if isinstance(value, int):
            return value
    if isinstance(result, dict):
        for name in ("embedded", "total", "vectors"):
            if isinstance(result.get(name), int):
                return result[name]
    return library.count()


def import_into(
    library, paths: list[Path], progress: Progress = _noop, cancelled: CancelFn = _never
):
    """Import files/folders into ``library`` with the library layer's importer."""
    from assistant.library.importers import import_paths

    def report(p) -> None:
        if hasattr(p, "files_done"):
            name = Path(p.current_file).name if p.current_file else ""
            progress(
                p.bytes_done,
                p.bytes_total or 1,
                f"Importing {name} ({p.files_done}/{p.files_total} files, {p.records} records)",
            )
        else:
            progress(0, 0, "Importing…")

    # workers=1: no forked processes from inside the GUI's threads
    return _call_with_optional(
        import_paths,
        library,
        [Path(p) for p in paths],
        progress=report,
        cancelled=cancelled,
        workers=1,
    )


def paper_bibtex(library, paper) -> str:
    """The BibTeX entry of one library paper, with its stable citekey (library export layer)."""
    from assistant.library import export

    for name in ("paper_to_bibtex", "to_bibtex", "entry_for"):
        fn = getattr(export, name, None)
        if callable(fn):
            return fn(paper)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "one.bib"
        export.export_bibtex(library, out, citekeys=[paper.citekey])
        return out.read_text(encoding="utf-8")


def preload_modules() -> None:
    """Import the engine's heavy modules (numpy, scipy, onnxruntime, faiss, bm25s) up front.

    Called before the window appears: C-extension initialisation holds the GIL, so doing it
    later on the engine thread would freeze the UI for a moment.
    """
    import importlib

    for name in (
        "assistant.library.store",
        "assistant.inference.encoder",
        "assistant.retrieval.index",
        "assistant.retrieval.pipeline",
        "assistant.library.importers",
        "assistant.library.export",
    ):
        try:
            importlib.import_module(name)
        except ImportError:  # reported properly when the engine needs it
            pass
