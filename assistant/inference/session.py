"""What every ONNX model wrapper shares: file choice, tokenisation, length-sorted batching."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from assistant.inference.fp16 import fp16_file
from assistant.inference.registry import (
    ModelManifest,
    load_tokenizer,
    resolve_model_dir,
    verify_file,
)
from assistant.inference.runtime import (
    FP16_FILE,
    ModelLoadError,
    RuntimeInfo,
    create_session,
    resolve_device,
)
from assistant.inference.shared_weights import external_initializers
from assistant.progress import Progress, ProgressEvent

log = logging.getLogger(__name__)

ProgressFn = Progress  # batches encoded: ProgressEvent(done, total, "encode")
PRECISIONS = ("auto", "fp32", "int8", "fp16")


def choose_file(manifest: ModelManifest, device: str, precision: str) -> tuple[str, str, list[str]]:
    """(path, device, notes): int8 on CPU, fp16 on CUDA by default; fall back with a note.

    int8 never runs on CUDA (onnxruntime's CUDA provider runs it at CPU speed): there the
    fp16 file is used, made from the fp32 file or, for int8-only models, the dequantized int8.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}: expected one of {PRECISIONS}")
    used, notes = resolve_device(device)
    if precision == "auto":
        precision = "fp16" if used == "cuda" else ("int8" if manifest.has("int8") else "fp32")
    if used == "cuda" and precision == "int8":
        notes.append("int8 is not run on CUDA (no faster than the CPU there); using fp16")
        precision = "fp16"
    if precision == "int8" and not manifest.has("int8"):
        notes.append(f"{manifest.name} has no int8 file; using fp32")
        precision = "fp32"
    if precision == "fp16" and used != "cuda":
        notes.append("fp16 needs CUDA; using fp32 on CPU")
        precision = "fp32"
    if precision == "fp32" and not manifest.has("fp32") and manifest.has("int8"):
        if used == "cuda":
            notes.append(f"{manifest.name} ships only an int8 file; using fp16 made from it")
            precision = "fp16"
        else:
            notes.append(f"{manifest.name} ships only an int8 file; using int8")
            precision = "int8"
    if precision == "fp16":
        try:
            path, note = fp16_file(manifest)
        except ModelLoadError as exc:
            if manifest.has("fp32"):
                notes.append(f"fp16 conversion failed ({exc}); running fp32 on CUDA")
                return str(verify_file(manifest, "fp32")), "cuda", notes
            notes.append(f"fp16 conversion failed ({exc}); running int8 on the CPU")
            return str(verify_file(manifest, "int8")), "cpu", notes
        if note:
            notes.append(note)
        return str(path), "cuda", notes
    path = verify_file(manifest, precision)
    return str(path), ("cuda" if used == "cuda" else "cpu"), notes


class OnnxTextModel:
    """An ONNX transformer plus its tokenizer; subclasses add the output semantics."""

    kind = ""

    def __init__(
        self,
        name_or_path: str | os.PathLike | None = None,
        device: str = "auto",
        precision: str = "auto",
        threads: int | None = None,
        max_length: int | None = None,
        progress: Progress | None = None,
    ) -> None:
        self.manifest = ModelManifest.load(resolve_model_dir(name_or_path, progress=progress))
        if self.kind and self.manifest.kind != self.kind:
            raise ValueError(
                f"{self.manifest.path} is a {self.manifest.kind} model, not a {self.kind}"
            )
        self.max_length = int(min(max_length or self.manifest.max_length, self.manifest.max_length))
        path, used, notes = choose_file(self.manifest, device, precision)
        # the fp16 file (made here) holds its own fp16 copy of any borrowed table
        external = None if path.endswith(FP16_FILE) else external_initializers(self.manifest.raw)
        self.session, info = create_session(path, used, threads, external=external)
        info.notes = notes + info.notes
        self.info: RuntimeInfo = info
        self.input_names = [i.name for i in self.session.get_inputs()]
        self.tokenizer = load_tokenizer(self.manifest, self.max_length)
        self.pad_id = self.manifest.pad_token_id

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def default_batch_size(self) -> int:
        """Rows per ``session.run``: large on CUDA (the GPU idles on small batches), 32 on CPU."""
        return CUDA_BATCH if self.info.device == "cuda" else CPU_BATCH

    def _tokenize(self, items: Sequence) -> list:
        with tokenizer_parallelism(len(items)):
            return self.tokenizer.encode_batch(list(items))

    def _feed(self, encodings: list) -> dict[str, np.ndarray]:
        width = max(1, max(len(e.ids) for e in encodings))
        if self.info.device == "cuda":  # few distinct shapes: the CUDA provider plans per shape
            width = -(-width // CUDA_PAD) * CUDA_PAD
        n = len(encodings)
        ids = np.full((n, width), self.pad_id, dtype=np.int64)
        mask = np.zeros((n, width), dtype=np.int64)
        types = np.zeros((n, width), dtype=np.int64)
        for row, enc in enumerate(encodings):
            k = len(enc.ids)
            ids[row, :k] = enc.ids
            mask[row, :k] = 1
            types[row, :k] = enc.type_ids
        arrays = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        return {name: arrays[name] for name in self.input_names}

    def _prepare(self, items: Sequence, batch_size: int) -> list[tuple[np.ndarray, dict]]:
        """Tokenise ``items`` and cut them into length-sorted padded feeds (row indices kept)."""
        encodings = self._tokenize(items)
        return [(idx, self._feed(batch)) for idx, batch in self._batches(encodings, batch_size)]

    def _run(
        self, items: Sequence, batch_size: int | None, progress: ProgressFn | None
    ) -> np.ndarray:
        """Run all items longest-first in padded batches; rows come back in input order.

        On CPU all items are tokenised, sorted by length and batched at once (the int8 scores
        depend on the batch, so this order is kept exactly). On CUDA the items go in windows of
        ``WINDOW_BATCHES`` batches and a thread tokenises and pads the next window while the
        GPU runs the current one.
        """
        size = max(1, int(batch_size or self.default_batch_size))
        total = len(items)
        step = total if self.info.device != "cuda" else size * WINDOW_BATCHES
        starts = list(range(0, total, max(1, step)))
        out: np.ndarray | None = None
        done = 0
        pool = ThreadPoolExecutor(1, "tokenize") if len(starts) > 1 else None
        try:
            ahead = None
            for k, start in enumerate(starts):
                window = items[start : start + step]
                feeds = ahead.result() if ahead is not None else self._prepare(window, size)
                if pool is not None and k + 1 < len(starts):
                    nxt = items[starts[k + 1] : starts[k + 1] + step]
                    ahead = pool.submit(self._prepare, nxt, size)
                for idx, feed in feeds:
                    result = self.session.run(None, feed)[0]
                    if out is None:
                        out = np.empty((total, *result.shape[1:]), dtype=np.float32)
                    out[start + idx] = result
                    done += len(idx)
                    if progress is not None:
                        progress(ProgressEvent(done, total, "encode", f"encoded {done}/{total}"))
        finally:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
        if out is None:
            width = self.session.get_outputs()[0].shape[1]
            out = np.zeros((0, width if isinstance(width, int) else 0), dtype=np.float32)
        return out

    @staticmethod
    def _batches(encodings: list, batch_size: int) -> Iterator[tuple[np.ndarray, list]]:
        order = np.argsort([-len(e.ids) for e in encodings], kind="stable")
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            yield idx, [encodings[i] for i in idx]


#: rows per batch by device (``batch_size=None``); CUDA pads widths to a multiple of CUDA_PAD
CPU_BATCH, CUDA_BATCH, CUDA_PAD = 32, 256, 16
#: CUDA: batches per tokenisation window (the next window is prepared in a thread)
WINDOW_BATCHES = 8
#: inputs from which bulk work tokenises on all cores (when allowed, see below)
PARALLEL_MIN_ITEMS = 256
_PARALLEL_ALLOWED = False


def allow_parallel_tokenization(allowed: bool = True) -> None:
    """Let bulk calls (index, training, evaluation, benchmarks) tokenise on all cores.

    Off by default: the GUI and the language server tokenise on one thread and keep the other
    cores for the user; the CLI turns it on for its bulk commands.
    ``TOKENIZERS_PARALLELISM`` (set to false at import) is switched on per bulk call only.
    """
    global _PARALLEL_ALLOWED
    _PARALLEL_ALLOWED = bool(allowed)


@contextlib.contextmanager
def tokenizer_parallelism(n_items: int) -> Iterator[None]:
    """``tokenizers`` reads ``TOKENIZERS_PARALLELISM`` at each call: on for big allowed batches."""
    if not _PARALLEL_ALLOWED or n_items < PARALLEL_MIN_ITEMS:
        yield
        return
    with _ENV_LOCK:
        previous = os.environ.get(_ENV)
        os.environ[_ENV] = "true"
        try:
            yield
        finally:
            if previous is None:
                os.environ.pop(_ENV, None)
            else:
                os.environ[_ENV] = previous


_ENV = "TOKENIZERS_PARALLELISM"
_ENV_LOCK = threading.Lock()


def clean_texts(texts: Sequence[str] | str) -> list[str]:
    """Accept one string or a sequence; None becomes an empty string."""
    if isinstance(texts, str):
        return [texts]
    return ["" if t is None else str(t) for t in texts]
