"""Model folders: manifests, name resolution, integrity checks and listing.

A model name resolves to a folder: a path to a folder, else ``config.models_dir()/name``,
else ``config.SHIPPED_MODELS_DIR/name``. Buildable names (``minilm``, ``mpnet``) are
built on first use when missing (see ``assistant.inference.build``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from assistant import config
from assistant.errors import AssistantError
from assistant.inference import verified
from assistant.inference.export import MANIFEST, TOKENIZER_FILE, sha256_file
from assistant.inference.runtime import FP32_FILE, INT8_FILE, ModelLoadError
from assistant.progress import Progress

DEFAULT_ENCODER = "minilm"


class ModelNotFoundError(AssistantError, LookupError):
    """No model folder for a name; the message lists where we looked and how to build one."""


class ModelCorruptedError(ModelLoadError):
    """A model file does not match its manifest checksum (offers a rebuild)."""

    def __init__(self, message: str, model_dir: Path, rebuildable: bool) -> None:
        super().__init__(message)
        self.model_dir = model_dir
        self.rebuildable = rebuildable


@dataclass
class ModelManifest:
    """``manifest.json`` of a model folder (see docs/ARCHITECTURE.md)."""

    name: str
    kind: str
    dim: int
    max_length: int
    files: dict[str, str]
    path: Path
    pooling: str | None = None
    labels: list[str] | None = None
    inputs: list[str] = field(
        default_factory=lambda: ["input_ids", "attention_mask", "token_type_ids"]
    )
    pad_token_id: int = 0
    source: str = ""
    created: str = ""
    raw: dict = field(default_factory=dict)

    @classmethod
    def load(cls, model_dir: Path | str) -> ModelManifest:
        model_dir = Path(model_dir)
        path = model_dir / MANIFEST
        if not path.is_file():
            raise ModelLoadError(f"{model_dir} is not a model folder: {MANIFEST} is missing")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ModelLoadError(f"{path}: unreadable manifest ({exc})") from exc
        missing = [k for k in ("kind", "max_length") if k not in data]
        if missing:
            raise ModelLoadError(f"{path}: missing field(s) {', '.join(missing)}")
        return cls(
            name=str(data.get("name") or model_dir.name),
            kind=str(data["kind"]),
            dim=int(data.get("dim") or 0),
            max_length=int(data["max_length"]),
            files=dict(data.get("files") or {}),
            path=model_dir,
            pooling=data.get("pooling"),
            labels=data.get("labels"),
            inputs=list(data.get("inputs") or ["input_ids", "attention_mask", "token_type_ids"]),
            pad_token_id=int(data.get("pad_token_id") or 0),
            source=str(data.get("source") or ""),
            created=str(data.get("created") or ""),
            raw=data,
        )

    def file_for(self, precision: str) -> Path:
        return self.path / (INT8_FILE if precision == "int8" else FP32_FILE)

    def has(self, precision: str) -> bool:
        return self.file_for(precision).is_file()


_VERIFIED: dict[tuple[str, int, int], str] = {}


def verify_file(manifest: ModelManifest, precision: str) -> Path:
    """Check a model file against its manifest sha256 (cached per size/mtime)."""
    from assistant.inference.build import BUILDERS

    path = manifest.file_for(precision)
    rebuildable = manifest.path.name in BUILDERS
    hint = (
        f"rebuild it with `assistant models build {manifest.path.name} --force`"
        if rebuildable
        else "re-import or re-export it"
    )
    if not path.is_file():
        raise ModelCorruptedError(f"{path} is missing; {hint}", manifest.path, rebuildable)
    expected = manifest.files.get(precision)
    if not expected:
        return path
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if _VERIFIED.get(key) != expected:
        if not verified.known(path, "file", expected):  # hashed by an earlier process
            actual = sha256_file(path)
            if actual != expected:
                raise ModelCorruptedError(
                    f"{path} is corrupted (sha256 {actual[:12]}... != manifest {expected[:12]}...); {hint}",
                    manifest.path,
                    rebuildable,
                )
            verified.remember(path, "file", expected)
        _VERIFIED[key] = expected
    return path


def search_dirs() -> list[Path]:
    return [config.models_dir(), config.SHIPPED_MODELS_DIR]


def find_model_dir(name_or_path: str | os.PathLike) -> Path | None:
    """The folder for a name or path, or None (no building)."""
    candidate = Path(name_or_path).expanduser()
    if candidate.is_dir() and (candidate / MANIFEST).is_file():
        return candidate
    name = str(name_or_path)
    if os.sep in name or "/" in name:
        return None
    for root in search_dirs():
        folder = root / name
        if (folder / MANIFEST).is_file():
            return folder
    return None


def resolve_model_dir(
    name_or_path: str | os.PathLike | None = None,
    build_missing: bool = True,
    progress: Progress | None = None,
) -> Path:
    """Resolve a model name/path to its folder, building buildable models when missing."""
    from assistant.inference.build import BUILDERS, build_model

    name = str(name_or_path) if name_or_path else DEFAULT_ENCODER
    found = find_model_dir(name)
    if found is not None:
        return found
    if build_missing and name in BUILDERS:
        return build_model(name, progress=progress)
    where = ", ".join(str(d) for d in search_dirs())
    hint = (
        f"run `assistant models build {name}`"
        if name in BUILDERS
        else "build one with `assistant models build`, or import a Hugging Face folder with "
        "`assistant models import DIR --name NAME`"
    )
    raise ModelNotFoundError(
        f"model {name!r} not found (looked for a folder with {MANIFEST} in {where}); {hint}"
    )


def tokenizer_path(manifest: ModelManifest) -> Path:
    """The folder's ``tokenizer.json``, or the shared copy its manifest names (``"tokenizer"``,
    relative to the folder: the shipped reranker and intent models share one)."""
    return (manifest.path / str(manifest.raw.get("tokenizer") or TOKENIZER_FILE)).resolve()


def load_tokenizer(manifest: ModelManifest, max_length: int | None = None):
    """The model's fast tokenizer, truncating to ``max_length`` (no padding: batches pad)."""
    from tokenizers import Tokenizer

    path = tokenizer_path(manifest)
    if not path.is_file():
        raise ModelLoadError(f"{path} is missing (named by {manifest.path / MANIFEST})")
    tok = Tokenizer.from_file(str(path))
    tok.no_padding()
    tok.enable_truncation(max_length=int(max_length or manifest.max_length))
    return tok


def list_models() -> list[ModelManifest]:
    """Every model folder in the user's models dir and the shipped models dir."""
    seen: set[str] = set()
    out: list[ModelManifest] = []
    for root in search_dirs():
        if not root.is_dir():
            continue
        for folder in sorted(root.iterdir()):
            if (
                folder.name.startswith(".")
                or folder.name in seen
                or not (folder / MANIFEST).is_file()
            ):
                continue
            try:
                out.append(ModelManifest.load(folder))
                seen.add(folder.name)
            except ModelLoadError:
                continue
    return out
