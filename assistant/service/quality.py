"""The quality tier (``quality: auto | fast | best``): which encoder's dense index recommends.

* ``fast``: today's models -- the MiniLM encoder (or the user's own/adapted one) and the shipped
  int8 MiniLM cross-encoder; its dense index is the index folder's own ``dense/``.
* ``best``: ``all-mpnet-base-v2`` (:data:`BEST_ENCODER`, built offline from the split PyPI
  packages; fp16 on CUDA, int8 on the CPU as :mod:`assistant.inference` chooses) for the dense
  index, kept beside the fast one in ``encoders/mpnet/`` (the BM25 index is shared). The
  reranker and the learned ranker are the tier's own where shipped (``reranker-mpnet``,
  ``ranker-best``), else the fast tier's (:func:`best_rerankers_note`).
* ``auto``: ``best`` when CUDA really runs here and the library's mpnet index is current,
  else ``fast``.

Recommendations always come from a tier whose index is current: while the wanted tier's index
is being built (:class:`TierBuilder`, on a thread of its own, yielding to every other job),
the other tier recommends, and the status says why (``quality auto → fast: no CUDA``,
``quality best → fast until the mpnet index is built (40% built)``). Switching tiers never
removes the other tier's index.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from assistant.config import index_dir_for
from assistant.errors import AssistantError
from assistant.retrieval.index import IndexReport, build_index
from assistant.retrieval.index_ahead import embed_ahead
from assistant.retrieval.index_layout import IndexPaths, dense_state, versions_digest
from assistant.service.tier_build import TierBuilder

if TYPE_CHECKING:
    from assistant.inference.encoder import Encoder

log = logging.getLogger(__name__)

QUALITIES = ("auto", "fast", "best")
FAST, BEST = "fast", "best"
#: the ``best`` tier's encoder (a buildable model name, see ``inference.build.BUILDERS``)
BEST_ENCODER = "mpnet"


def best_rerankers_note() -> str:
    """What the best tier ranks and reranks with, said wherever the tier is shown."""
    from assistant.retrieval.ranker import resolve_ranker
    from assistant.retrieval.reranker_setting import resolve_reranker

    ranker = resolve_ranker("auto", BEST)
    model = resolve_reranker("auto", BEST).model
    fast_model = resolve_reranker("auto", FAST).model
    if not ranker:
        parts = ["no ranker"]
    elif ranker == resolve_ranker("auto", FAST):
        parts = ["ranker: the fast tier's (fitted on MiniLM scores)"]
    else:
        parts = [f"ranker: {Path(ranker).name}"]
    if not model:
        parts.append("no reranker")
    else:
        own = "" if model != fast_model else f" ({_best_reranker_absent()})"
        parts.append(f"reranker: {Path(model).name}{own}")
    return "; ".join(parts)


def _best_recipe_on() -> bool | None:
    """Whether the shipped recipe of the best tier's cross-encoder (a delta to build) says it
    is on by default; None when none is shipped."""
    from assistant.inference.build import RERANKER_MPNET, shipped_recipe

    found = shipped_recipe(RERANKER_MPNET)
    if found is None:
        return None
    return bool((found[1].get("manifest") or {}).get("enabled_by_default", True))


def best_reranker_missing() -> bool:
    """Whether the best tier's cross-encoder is shipped, on by default, and not built yet."""
    from assistant.inference.build import RERANKER_MPNET
    from assistant.inference.registry import find_model_dir

    return bool(_best_recipe_on()) and find_model_dir(RERANKER_MPNET) is None


def _best_reranker_absent() -> str:
    """Why the best tier reranks with the fast tier's cross-encoder."""
    on = _best_recipe_on()
    if on is None:
        return "no mpnet cross-encoder is shipped"
    if not on:
        return "the mpnet cross-encoder is off by default: --reranker reranker-mpnet"
    return "the mpnet cross-encoder is not built yet"


def build_best_reranker(progress=None) -> str:
    """Build the best tier's cross-encoder when it is shipped and not built (minutes, once;
    needs torch like the mpnet encoder). Returns "" or why it was not built: the best tier then
    reranks with the fast tier's cross-encoder, so a failure never stops the tier."""
    from assistant.inference.build import RERANKER_MPNET, build_model

    if not best_reranker_missing():
        return ""
    try:
        build_model(RERANKER_MPNET, progress=progress)
    except (AssistantError, OSError, ImportError, RuntimeError) as exc:
        log.warning("the %s cross-encoder was not built: %s", RERANKER_MPNET, exc)
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return ""


#: papers per saved chunk of a background build (its progress and how soon it yields)
BACKGROUND_CHUNK = 128


class QualityError(AssistantError, ValueError):
    """An unknown quality setting."""


def _aside(text: str) -> str:
    """``text`` to stand inside the status line's parentheses: its own parenthetical remarks
    become comma clauses (``no CUDA (onnxruntime-gpu is not installed, the CPU build … is)``,
    never nested parentheses, which also keeps the build's share replaceable)."""
    return text.replace(" (", ", ").replace("(", "").replace(")", "")


def check_quality(value: str | None) -> str:
    """``value`` as one of :data:`QUALITIES` (None/"" = auto); raises :class:`QualityError`."""
    quality = (value or "auto").strip().lower()
    if quality not in QUALITIES:
        raise QualityError(f"unknown quality {value!r}: expected one of {', '.join(QUALITIES)}")
    return quality


@dataclass(frozen=True)
class TierChoice:
    """The tier asked for, the one recommending now, the one wanted, and why."""

    quality: str  # as set: auto | fast | best
    active: str  # fast | best: whose index recommends now
    wanted: str  # fast | best: whose index should be built (== active when nothing is to do)
    reason: str  # one line: "quality auto → fast: no CUDA (...)"

    @property
    def encoder(self) -> str | None:
        """The active tier's encoder name (None: the fast tier's, the index's or minilm)."""
        return BEST_ENCODER if self.active == BEST else None

    @property
    def building(self) -> bool:
        """Whether the wanted tier's index is still to be built (the active one serves)."""
        return self.wanted != self.active


def tier_paths(db_path: Path | str, tier: str) -> IndexPaths:
    """The dense index of ``tier`` (the fast tier's is the folder's own, the best tier's is
    ``encoders/mpnet``; both share the BM25 index)."""
    return IndexPaths(index_dir_for(db_path), BEST_ENCODER if tier == BEST else None)


def cuda_state(device: str) -> tuple[bool, str]:
    """``(usable, why not)``: the device choice of :mod:`assistant.inference` (``$ASSISTANT_DEVICE``
    and the installed onnxruntime's providers), and the first problem it reports."""
    from assistant.inference.runtime import cuda_problems, resolve_device

    if (device or "auto").lower() == "cpu":
        return False, "the device is set to cpu"
    try:
        used, _notes = resolve_device(device)
    except ValueError as exc:
        return False, str(exc)
    if used == "cuda":
        return True, ""
    problems = cuda_problems()  # "what is missing: how to fix it" -- the status says what
    return False, problems[0].split(": ")[0] if problems else "no CUDAExecutionProvider"


def best_index_state(db_path: Path | str, device: str) -> tuple[bool, str]:
    """``(current, detail)`` of the library's mpnet index, read from its files (no model loaded):
    current means it covers every paper as it is now, embedded with the precision this device
    runs (an index embedded by int8 on the CPU is re-embedded by fp16 on CUDA)."""
    from assistant.library.store import Library

    paths = tier_paths(db_path, BEST)
    if not paths.meta.exists() and not paths.pending.exists():
        return False, "not built"
    library = Library(db_path)  # its own connection: any thread may ask
    try:
        versions = {int(k): str(v) for k, v in library.paper_versions().items()}
    finally:
        library.close()
    current, detail = dense_state(paths, versions_digest(versions), len(versions))
    if not current:
        return False, detail
    expected = expected_fingerprint(device)
    if expected is None:
        return False, f"the {BEST_ENCODER} model is not built"
    if not str(paths.read_meta().get("fingerprint", "")).startswith(expected):
        return False, "embedded by another build or precision of the model than this device's"
    return True, detail


def expected_fingerprint(device: str) -> str | None:
    """The start of the fingerprint the mpnet encoder will have on this device (as
    ``Encoder.fingerprint``: name, precision, the weights' digest), None when it is not built."""
    from assistant.inference.registry import ModelManifest, find_model_dir
    from assistant.inference.runtime import ModelLoadError

    folder = find_model_dir(BEST_ENCODER)
    try:
        manifest = ModelManifest.load(folder) if folder is not None else None
    except ModelLoadError:
        return None
    if manifest is None:
        return None
    precision = "fp16" if cuda_state(device)[0] else "int8" if manifest.has("int8") else "fp32"
    digest = manifest.files.get("int8" if precision == "int8" else "fp32") or ""
    return f"{BEST_ENCODER}:{precision}:{digest[:16]}:"


def choose_tier(quality: str, device: str, db_path: Path | str, failure: str = "") -> TierChoice:
    """The tier for ``quality`` on this device and library (``failure``: why the last build of
    the best index failed, e.g. a missing weight: then the fast tier stays)."""
    quality = check_quality(quality)
    if quality == FAST:
        return TierChoice(quality, FAST, FAST, "quality fast")
    if quality == "auto":
        cuda, why = cuda_state(device)
        if not cuda:
            return TierChoice(quality, FAST, FAST, f"quality auto → fast: no CUDA ({_aside(why)})")
    current, detail = best_index_state(db_path, device)
    if current:
        why = ": CUDA and a current mpnet index" if quality == "auto" else ""
        models = _aside(f"encoder: {BEST_ENCODER}; {best_rerankers_note()}")
        reason = f"quality {quality} → best{why} ({models})"
        return TierChoice(quality, BEST, BEST, reason)
    if failure:
        return TierChoice(quality, FAST, FAST, f"quality {quality} → fast: {failure}")
    return TierChoice(
        quality,
        FAST,
        BEST,
        f"quality {quality} → fast until the {BEST_ENCODER} index is built ({_aside(detail)})",
    )


def measured_tier(quality: str, device: str, db_path: Path | str) -> tuple[TierChoice, IndexPaths]:
    """The tier an evaluation or benchmark measures for ``quality``, and its index: as
    :func:`choose_tier`, except that ``best`` asked for but not current is an error (a figure
    labelled best must never come from the fast index)."""
    choice = choose_tier(quality, device, db_path)
    if choice.quality == BEST and choice.active != BEST:
        raise QualityError(
            f"quality best cannot be measured: {choice.reason.split(': ', 1)[-1]}; "
            f"run `assistant index --quality best` first"
        )
    return choice, tier_paths(db_path, choice.active)


class TierMixin:
    """The tier methods of :class:`~assistant.service.engine.Service` (its settings, job lock,
    encoders and snapshot)."""

    def tier(self, refresh: bool = False) -> TierChoice:
        """The tier recommending now, the one wanted, and why (chosen on first use, again after
        a job or a background build has committed an index)."""
        choice = self._tier
        if choice is None or refresh:
            s = self.settings
            choice = choose_tier(s.quality, s.device, self.db_path, self._tier_failure)
            self._tier = choice = self._with_progress(choice)
        return choice

    def _with_progress(self, choice: TierChoice) -> TierChoice:
        """``choice`` whose reason ends with the running build's share (``40% built``; a build
        that has not saved its first chunk yet is ``starting``, not ``not built``)."""
        builder = self._builder
        if not (choice.building and builder is not None):
            return choice
        head, _sep, detail = choice.reason.rpartition(" (")
        if builder.fraction is None and not (builder.running and detail == "not built)"):
            return choice
        return replace(choice, reason=f"{head} ({builder.describe()})")

    def on_change(self, listener) -> None:
        """Call ``listener()`` (from any thread) when the tier or its background build changes."""
        self._listeners.append(listener)

    def _changed(self, refresh: bool = True) -> None:
        """Tell the listeners; ``refresh``: choose the tier again (else only the build's share
        in its reason changes: nothing is read from the disk, every chunk of a long build)."""
        if refresh or self._tier is None:
            self.tier(refresh=True)
        else:
            self._tier = self._with_progress(self._tier)
        for listener in list(self._listeners):
            try:
                listener()
            except Exception as exc:  # a face's callback must not stop the build
                log.debug("tier listener failed: %s", exc)

    def start_background(self) -> bool:
        """Build the wanted tier's index on a thread of its own when the settings allow it and
        it is not current (recommending goes on from the active tier); True if one runs."""
        choice = self.tier(refresh=True)
        if not (self.settings.background and choice.building) or self.library.count() == 0:
            return False
        if self._builder is not None and self._builder.running:
            return True
        wanted = choice.wanted
        self._builder = TierBuilder(
            self._job_lock,
            load=lambda: self._load_wanted(wanted),
            build=lambda encoder, progress, cancelled: self._build_tier(
                wanted, encoder, progress, cancelled
            ),
            done=self._tier_built,
            failed=self._tier_failed,
            changed=lambda: self._changed(refresh=False),
            papers=self.library.count(),
        ).start()
        self._changed(refresh=False)  # the status says "starting" at once, not "not built"
        return True

    def _load_wanted(self, tier: str) -> Encoder:
        """The wanted tier's encoder; under ``auto`` it must really run on CUDA (a provider
        that is listed but fails to start would embed a large library on the CPU for hours)."""
        encoder = self.load_encoder(tier=tier)
        if self.settings.quality == "auto" and encoder.info.device != "cuda":
            with self._encoder_lock:
                self._encoders.pop(tier, None)
            notes = "; ".join(encoder.info.notes) or "it ran on the CPU"
            raise QualityError(f"CUDA did not start for the {encoder.name} encoder ({notes})")
        return encoder

    def _build_tier(self, tier: str, encoder: Encoder, progress, cancelled) -> IndexReport:
        """The embedding first, outside the index folder's lock (other programs' index jobs
        go on meanwhile), then the index written from the saved chunks."""
        paths = tier_paths(self.db_path, tier)
        batch = self.settings.index_batch_size or 32
        if paths.encoder_key:
            embed_ahead(
                self.library,
                encoder,
                paths,
                progress,
                chunk_size=BACKGROUND_CHUNK,
                batch_size=batch,
                cancelled=cancelled,
            )
        report = build_index(
            self.library,
            encoder,
            progress,
            index_dir=paths,
            chunk_size=BACKGROUND_CHUNK,
            batch_size=batch,
            cancelled=cancelled,
        )
        if tier == BEST:
            build_best_reranker(progress)
        return report

    def _tier_built(self) -> None:
        """A background build finished (job lock held): switch recommending to that tier."""
        if self.tier(refresh=True).active == BEST:
            self._commit()
        self._changed()

    def _tier_failed(self, message: str) -> None:
        self._tier_failure = message.splitlines()[0] if message else "unavailable"
        self._changed()
