"""Distillation of a large intent teacher (mpnet) into the shipped small student (MiniLM).

``dump_teacher_logits`` runs a trained teacher checkpoint once over the student's training
texts and stores ``{texts, logits}`` in an ``.npz``; the student's trainer
(``assistant train intent --teacher-logits FILE``) then mixes the hard-label loss with
``soft_target_loss`` (Hinton et al.: KL between temperature-softened distributions, times T²).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from assistant.errors import AssistantError
from assistant.progress import Progress, ProgressEvent, no_progress

__all__ = ["dump_teacher_logits", "load_teacher_logits", "soft_target_loss"]


def soft_target_loss(student_logits, teacher_logits, temperature: float):
    """Per-example KL(teacher_T || student_T) * T² (a torch tensor of shape (batch,))."""
    import torch.nn.functional as F

    t = float(temperature)
    log_p = F.log_softmax(student_logits / t, dim=-1)
    q = F.softmax(teacher_logits.to(student_logits.dtype) / t, dim=-1)
    return (q * (q.clamp_min(1e-12).log() - log_p)).sum(-1) * (t * t)


def _key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def load_teacher_logits(path: Path, texts: list[str]) -> np.ndarray:
    """Teacher logits aligned with ``texts`` (each must be in the file)."""
    path = Path(path)
    if not path.is_file():
        raise AssistantError(f"--teacher-logits: {path} not found")
    with np.load(path, allow_pickle=False) as data:
        index = {str(k): i for i, k in enumerate(data["keys"])}
        logits = data["logits"]
    missing = [t for t in texts if _key(t) not in index]
    if missing:
        raise AssistantError(
            f"{path}: no teacher logits for {len(missing)} of {len(texts)} training texts "
            f"(e.g. {missing[0][:80]!r}); dump them with the same --aux setting"
        )
    return np.stack([logits[index[_key(t)]] for t in texts]).astype(np.float32)


def dump_teacher_logits(
    cfg, checkpoint: Path, out_path: Path, progress: Progress = no_progress
) -> Path:
    """Run the teacher (``cfg.base_model`` + ``checkpoint`` weights) over the training texts."""
    import torch
    from transformers import AutoTokenizer

    from assistant.training.common import safe_torch_load
    from assistant.training.intent import _build_model, predict_logits, training_examples

    torch.set_num_threads(cfg.threads)
    model, base_path = _build_model(cfg)
    ck = safe_torch_load(checkpoint)
    model.load_state_dict(ck.get("model", ck))
    tokenizer = AutoTokenizer.from_pretrained(str(base_path), local_files_only=True)
    texts = [e.text for e in training_examples(cfg)]
    progress(
        ProgressEvent(
            0, len(texts), "teacher", f"teacher logits for {len(texts)} texts from {checkpoint}"
        )
    )
    logits = predict_logits(model, tokenizer, texts, cfg.max_length, batch_size=32)
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_name(out_path.name + ".tmp.npz")
    np.savez(tmp, keys=np.array([_key(t) for t in texts]), logits=logits)
    tmp.replace(out_path)
    progress(ProgressEvent(len(texts), len(texts), "teacher", f"wrote {out_path}"))
    return out_path
