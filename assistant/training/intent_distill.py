"""Distillation of a large intent teacher (mpnet) into the shipped small student (MiniLM).

``training.intent.dump_teacher_logits`` runs a trained teacher checkpoint once over the
student's training texts and stores ``{texts, logits}`` in an ``.npz`` (keys: ``text_key``);
``load_teacher_logits`` reads them back aligned with the texts, and the student's trainer
(``assistant train intent --teacher-logits FILE``) then mixes the hard-label loss with
``soft_target_loss`` (Hinton et al.: KL between temperature-softened distributions, times T²).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from assistant.errors import AssistantError

__all__ = ["load_teacher_logits", "soft_target_loss", "text_key"]


def soft_target_loss(student_logits, teacher_logits, temperature: float):
    """Per-example KL(teacher_T || student_T) * T² (a torch tensor of shape (batch,))."""
    import torch.nn.functional as F

    t = float(temperature)
    log_p = F.log_softmax(student_logits / t, dim=-1)
    q = F.softmax(teacher_logits.to(student_logits.dtype) / t, dim=-1)
    return (q * (q.clamp_min(1e-12).log() - log_p)).sum(-1) * (t * t)


def text_key(text: str) -> str:
    """The key of a training text in a teacher-logits file."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def load_teacher_logits(path: Path, texts: list[str]) -> np.ndarray:
    """Teacher logits aligned with ``texts`` (each must be in the file)."""
    path = Path(path)
    if not path.is_file():
        raise AssistantError(f"--teacher-logits: {path} not found")
    with np.load(path, allow_pickle=False) as data:
        index = {str(k): i for i, k in enumerate(data["keys"])}
        logits = data["logits"]
    missing = [t for t in texts if text_key(t) not in index]
    if missing:
        raise AssistantError(
            f"{path}: no teacher logits for {len(missing)} of {len(texts)} training texts "
            f"(e.g. {missing[0][:80]!r}); dump them with the same --aux setting"
        )
    return np.stack([logits[index[text_key(t)]] for t in texts]).astype(np.float32)
