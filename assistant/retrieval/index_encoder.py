"""The index's encoder, loaded only when a paper must be embedded.

``assistant index`` loaded the encoder (ONNX session, tokenizer, the model file's checksum:
~0.3 CPU-s) before looking at the library, also when nothing had changed or only fields that
are not embedded (authors, venue, a trashed paper). :func:`deferred_index_encoder` stands in for
it when the index was built with exactly the encoder the settings name (same fingerprint, read
from the model's manifest): ``build_index`` reads its fingerprint, name and length, and the first
``encode`` (or any other attribute) loads the real one, which must have that fingerprint.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from assistant.errors import AssistantError
from assistant.retrieval.index import DEFAULT_MAX_LENGTH, IndexPaths


class EncoderChangedError(AssistantError, RuntimeError):
    """The loaded encoder is not the one its manifest promised (the model changed meanwhile)."""


class DeferredEncoder:
    """Fingerprint, name, length and dimension of the planned encoder; the rest loads it."""

    def __init__(self, plan, load: Callable[[], object]) -> None:
        self.fingerprint = plan.fingerprint
        self.name = plan.name
        self.max_length = plan.max_length
        self.dim = plan.dim
        self.manifest = plan.manifest
        self._load = load
        self._real = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._real is not None

    def real(self):
        with self._lock:
            if self._real is None:
                encoder = self._load()
                if str(encoder.fingerprint) != self.fingerprint:
                    raise EncoderChangedError(
                        f"the encoder changed while indexing ({self.fingerprint} -> "
                        f"{encoder.fingerprint}): run `assistant index` again"
                    )
                self._real = encoder
            return self._real

    def __getattr__(self, name: str):  # encode, info, ...: the real encoder's
        return getattr(self.real(), name)


def deferred_index_encoder(
    index_dir: IndexPaths | Path | str,
    name: str | None,
    max_length: int | None,
    load: Callable[[], object],
    device: str = "auto",
) -> DeferredEncoder | None:
    """A :class:`DeferredEncoder` for the encoder ``load_index_encoder(index_dir, name,
    max_length, device=device)`` would load, when the index in ``index_dir`` was built with it;
    None otherwise (no index, another encoder or length, a model not built, CUDA, an unreadable
    manifest): then the caller loads the encoder as before."""
    from assistant.inference.encoder import plan_encoder

    meta = IndexPaths.of(index_dir).read_meta()
    if not meta.get("fingerprint"):
        return None
    same_model = name is None or name == meta.get("encoder")
    length = max_length or (meta.get("max_length") if same_model else None) or DEFAULT_MAX_LENGTH
    try:
        plan = plan_encoder(name or meta.get("encoder") or None, device, max_length=length)
    except Exception:  # anything the real load would report properly
        return None
    if plan is None or plan.fingerprint != meta["fingerprint"]:
        return None
    return DeferredEncoder(plan, load)
