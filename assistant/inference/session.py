"""What every ONNX model wrapper shares: file choice, tokenisation, length-sorted batching."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence

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

    def _tokenize(self, items: Sequence) -> list:
        return self.tokenizer.encode_batch(list(items))

    def _feed(self, encodings: list) -> dict[str, np.ndarray]:
        width = max(1, max(len(e.ids) for e in encodings))
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

    def _run(self, items: Sequence, batch_size: int, progress: ProgressFn | None) -> np.ndarray:
        """Run all items longest-first in padded batches; rows come back in input order."""
        encodings = self._tokenize(items)
        total = len(encodings)
        out: np.ndarray | None = None
        done = 0
        for idx, batch in self._batches(encodings, max(1, int(batch_size))):
            result = self.session.run(None, self._feed(batch))[0]
            if out is None:
                out = np.empty((total, *result.shape[1:]), dtype=np.float32)
            out[idx] = result
            done += len(idx)
            if progress is not None:
                progress(ProgressEvent(done, total, "encode", f"encoded {done}/{total}"))
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


def clean_texts(texts: Sequence[str] | str) -> list[str]:
    """Accept one string or a sequence; None becomes an empty string."""
    if isinstance(texts, str):
        return [texts]
    return ["" if t is None else str(t) for t in texts]
