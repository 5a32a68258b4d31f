"""Train a cross-encoder reranker on pairs the library itself provides (``assistant train reranker``).

Recipe: MiniLM (BERT) weights + a 1-logit head (``AutoModelForSequenceClassification``),
listwise softmax cross-entropy over groups of 1 positive + hard negatives from the
prefilter (what the first stage really retrieves for the query) + random negatives.
Pairs are encoded as ``query [SEP] title [SEP] abstract`` (longest-first truncation to
``max_length``), exactly as the ONNX runtime scores them. The result is exported
through :func:`assistant.inference.export.export_transformer` (fp32 + int8 ONNX).
"""

from __future__ import annotations

import hashlib
import logging
import random
import time
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path

from assistant.progress import ProgressEvent
from assistant.training import common, data
from assistant.training.common import Budget, TrainingError, TrainReport

log = logging.getLogger(__name__)

#: options that define the generated training set (a resume must keep them)
DATA_KEYS = (
    "seed",
    "n_queries",
    "n_hard",
    "n_random",
    "neg_depth",
    "negatives",
    "base_model",
    "query_mix",
    "contexts",
)


@dataclass
class RerankerOptions:
    out_dir: str | None = None  # default: models_dir()/<name>
    name: str = "reranker-minilm"
    work_dir: str | None = None  # default: models_dir()/.train/<name>
    base_model: str = "minilm"
    n_queries: int | None = None  # default: min(20000, 2 * usable papers)
    query_mix: tuple[float, float, float] = data.DEFAULT_QUERY_MIX  # ict, title, keywords
    n_hard: int = 4
    n_random: int = 1
    neg_depth: int = 50
    negatives: str = "auto"  # auto (fused prefilter if the library is indexed, else BM25) | bm25
    max_length: int = 192
    batch_queries: int = 4  # queries per optimiser step (each with 1 + n_hard + n_random docs)
    epochs: float = 1.0
    lr: float = 3e-5
    head_lr: float | None = 1e-3  # the new 1-logit head (and pooler) learns faster
    warmup: float = 0.06
    weight_decay: float = 0.01
    max_steps: int | None = None
    max_minutes: float | None = None
    checkpoint_every: int = 200
    checkpoint_minutes: float = 5.0
    seed: int = 13
    device: str = "auto"
    threads: int | None = None
    blacklist: str | None = None  # DOIs never trained on (the CLI defaults to ACM-CR's list)
    # citation-context files (citectx TSV/CSV: context, cited title, cited abstract) whose
    # cited papers join the corpus; each context is a query with prefilter + in-domain negatives
    contexts: tuple[str, ...] = ()
    group_negatives: int | None = None  # negatives used per query when training (default: all)
    freeze_layers: int = 0  # bottom transformer layers kept frozen (cheaper steps on a small CPU)
    freeze_embeddings: bool = True  # word embeddings stay as pre-trained (faster, less overfitting)
    quantize: bool = True
    resume: bool = True
    export: bool = True


def prepare_examples(
    library, opts: RerankerOptions, work_dir: Path, progress: common.ProgressFn | None = None
) -> tuple[list[dict], dict[int, data.DocRecord], dict, dict]:
    """Generate (or reload) the listwise training set; returns examples, docs, stats and the
    training set's fingerprint (options + library state)."""
    blacklist = data.load_blacklist(opts.blacklist)
    if progress:
        progress(ProgressEvent(0, 1, "training", "reading the library"))
    corpus = data.corpus_from_library(library, blacklist)
    if len(corpus.docs) < 3:
        raise TrainingError(
            f"only {len(corpus.docs)} usable papers (title + abstract of >= 80 characters, not "
            "blacklisted): import more papers before training"
        )
    n_library = len(corpus.docs)
    pairs = load_context_pairs(opts.contexts)
    context_queries = data.add_external_papers(corpus, pairs)
    fingerprint = common.training_set_fingerprint(opts, DATA_KEYS, corpus)
    fingerprint["contexts_sha1"] = _pairs_digest(pairs)
    stored = common.load_training_set(work_dir, fingerprint)
    if stored is not None:
        return stored[0], corpus.docs, stored[1], fingerprint
    rng = random.Random(opts.seed)
    n_queries = opts.n_queries or min(20000, 2 * n_library)
    queries = data.make_queries(corpus, n_queries, rng, tuple(opts.query_mix))
    candidates = data.prefilter_candidates(library, corpus, use_index=opts.negatives != "bm25")
    mine = partial(
        data.add_negatives,
        corpus=corpus,
        n_hard=opts.n_hard,
        n_random=opts.n_random,
        rng=rng,
        depth=opts.neg_depth,
        progress=progress,
    )
    examples = mine(queries, candidates=candidates)
    if context_queries:
        # what the library's prefilter returns for the context, interleaved with the closest
        # of the other cited papers (same field and style as the positive: no shortcut)
        external = data.Bm25Candidates(corpus, [i for i in corpus.docs if i < 0])
        examples += mine(
            context_queries, candidates=data.interleave_candidates(candidates, external.batch)
        )
    kinds: dict[str, int] = {}
    for e in examples:
        kinds[e["kind"]] = kinds.get(e["kind"], 0) + 1
    ranks = [e["pos_rank"] for e in examples if e["pos_rank"]]
    stats = {
        "usable_papers": n_library,
        "context_pairs": len(context_queries),
        "context_papers": len(corpus.docs) - n_library,
        "context_title_only": sum(q.title_only for q in context_queries),
        "examples": len(examples),
        "kinds": kinds,
        "excluded_blacklisted_or_eval": corpus.excluded_blacklisted,
        "excluded_no_abstract": corpus.excluded_no_abstract,
        "citation_pairs": len(corpus.citations),
        "prefilter_positive_in_top_depth": round(len(ranks) / max(1, len(examples)), 3),
    }
    common.save_training_set(work_dir, examples, fingerprint, stats)
    return examples, corpus.docs, stats, fingerprint


def load_context_pairs(paths: tuple[str, ...] | list[str]) -> list[data.ExternalPair]:
    """Citation contexts with their cited paper from citectx-format files; an abstract that
    shares no content word with its title is dropped (the pair is kept, title only)."""
    from assistant.inference.intent import CITATION_TOKEN
    from assistant.training.intent_aux import load_citectx
    from assistant.training.paper_intent import abstract_agrees

    pairs: list[data.ExternalPair] = []
    seen: set[tuple[str, str]] = set()
    for path in paths:
        for p in load_citectx(path):
            context = " ".join(p.context.replace(CITATION_TOKEN, " ").split())
            key = (context.lower(), p.cited_title.lower())
            if not p.cited_title or key in seen:
                continue
            seen.add(key)
            trusted = p.cited_abstract if abstract_agrees(p.cited_title, p.cited_abstract) else ""
            pairs.append(data.ExternalPair(context, p.cited_title, trusted))
    return pairs


def _pairs_digest(pairs: list[data.ExternalPair]) -> str:
    h = hashlib.sha1()
    for p in pairs:
        h.update(f"{p.context}\x1f{p.title}\x1f{p.abstract}\x1e".encode("utf-8", "replace"))
    return h.hexdigest()[:16]


def _group_texts(
    example: dict, docs: dict[int, data.DocRecord], n_negs: int | None = None
) -> tuple[str, list[str]]:
    """Query and [positive, negatives...]; with ``n_negs`` fewer than stored, the hardest
    ``n_negs - 1`` plus the last (random) one are kept."""
    pos = docs[example["pos"]].text(example.get("drop"), example.get("drop_title", False))
    negs = list(example["negs"])
    if n_negs is not None and len(negs) > n_negs >= 2:
        negs = negs[: n_negs - 1] + negs[-1:]
    elif n_negs is not None:
        negs = negs[:n_negs]
    if example.get("title_only"):  # a title-only positive: negatives shown the same way
        return example["q"], [pos] + [docs[n].title for n in negs]
    return example["q"], [pos] + [docs[n].text() for n in negs]


def _load_model(path: Path):
    import warnings

    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = AutoModelForSequenceClassification.from_pretrained(
            str(path), num_labels=1, local_files_only=True
        )
    tokenizer = AutoTokenizer.from_pretrained(str(path), use_fast=True, local_files_only=True)
    return model, tokenizer


def train_reranker(
    library,
    options: RerankerOptions | None = None,
    progress: common.ProgressFn | None = None,
    cancelled: common.CancelledFn | None = None,
) -> TrainReport:
    """Generate the training set, train (resuming from the work dir's checkpoint), export ONNX."""
    # long: the trainer's steps in order (data, resume, loop, export), as encoder.adapt_encoder
    import torch

    opts = options or RerankerOptions()
    run = common.start_run(opts)
    out_dir, work_dir, device, started = run.out_dir, run.work_dir, run.device, run.started
    examples, docs, stats, fingerprint = prepare_examples(library, opts, work_dir, progress)
    if not examples:
        raise TrainingError("no training example could be generated from this library")
    report = TrainReport(
        kind="reranker",
        work_dir=str(work_dir),
        examples=len(examples),
        device=device,
        data_stats=stats,
    )

    state = common.resumable_state(opts, work_dir, fingerprint)
    src = (
        work_dir / common.CHECKPOINT_DIR
        if state is not None
        else common.base_model_path(opts.base_model)
    )
    model, tokenizer = _load_model(src)
    model.to(device)

    steps_per_epoch, total = common.plan_steps(
        len(examples), opts.batch_queries, opts.epochs, opts.max_steps, state
    )
    common.freeze_bottom_layers(model, opts.freeze_layers)
    optimizer, scheduler = common.make_optimizer(
        model,
        opts.lr,
        opts.weight_decay,
        total,
        opts.warmup,
        opts.freeze_embeddings,
        head_lr=opts.head_lr,
    )
    step = 0
    losses: list[float] = []
    if state is not None:
        step, losses = common.restore_training(state, optimizer, scheduler)
        report.resumed_from_step = step
        log.info("resuming reranker training at step %d/%d from %s", step, total, work_dir)

    def loss_fn(batch_idx: list[int]):
        queries, groups = [], []
        for i in batch_idx:
            q, texts = _group_texts(examples[i], docs, opts.group_negatives)
            queries.append(q)
            groups.append(texts)
        size = min(len(t) for t in groups)
        flat_q = [q for q in queries for _ in range(size)]
        flat_d = [d for texts in groups for d in texts[:size]]
        enc = tokenizer(
            flat_q,
            flat_d,
            truncation="longest_first",
            max_length=opts.max_length,
            padding=True,
            return_tensors="pt",
        ).to(device)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=device == "cuda"):
            logits = model(**enc).logits.view(len(batch_idx), size).float()
        target = torch.zeros(len(batch_idx), dtype=torch.long, device=device)
        return torch.nn.functional.cross_entropy(logits, target)

    extra = {"data": fingerprint, "total_steps": total, "options": asdict(opts)}
    result = common.train_loop(
        model,
        tokenizer,
        optimizer,
        scheduler,
        work_dir,
        loss_fn,
        len(examples),
        opts.batch_queries,
        opts.seed,
        total,
        step,
        losses,
        Budget(total, opts.max_minutes, cancelled),
        extra,
        opts.checkpoint_every,
        opts.checkpoint_minutes,
        progress,
    )
    common.record_result(
        report, result, total, steps_per_epoch, opts.epochs, opts.batch_queries, len(examples)
    )
    if opts.export:
        report.model_dir = str(export_reranker(model, tokenizer, out_dir, opts, stats, result.step))
    report.seconds = round(time.monotonic() - started, 1)
    return report


def export_reranker(
    model, tokenizer, out_dir: Path, opts: RerankerOptions, stats: dict, step: int
) -> Path:
    """Export through the inference layer (fp32 + int8 ONNX, tokenizer.json, manifest.json)."""
    from assistant.inference.export import export_transformer

    model = model.to("cpu").eval()
    extra = {
        "training": {
            "recipe": "listwise softmax CE, 1 positive + prefilter/random negatives"
            + (" (+ real citation contexts)" if opts.contexts else ""),
            "steps": step,
            "data": stats,
            "options": {
                k: v
                for k, v in asdict(opts).items()
                if k not in ("out_dir", "work_dir", "blacklist", "contexts")
            }
            | {"contexts": [Path(c).name for c in opts.contexts]},
        },
        "pair_format": "query [SEP] title [SEP] abstract",
        "enabled_by_default": False,
    }
    return export_transformer(
        model,
        tokenizer,
        out_dir,
        kind="cross-encoder",
        max_length=opts.max_length,
        quantize=opts.quantize,
        name=opts.name,
        source=f"trained from {opts.base_model}",
        extra=extra,
    )
