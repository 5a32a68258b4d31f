"""Adapt the bi-encoder to the user's library ("Adapt to my library", ``assistant train encoder``).

SciNCL-style contrastive fine-tuning:
- the citation graph of the library (citations of imported manuscripts; co-citation and
  bibliographic coupling included) is embedded with a truncated SVD; for a paper, the
  positive is drawn from its near graph neighbours *but not the nearest* (ranks
  ``pos_ranks``) and the hard negative from a far band (``neg_ranks``), the two bands
  separated by a margin so that they never collide;
- when the graph is thin, in-library pseudo-queries fill the set (inverse-cloze sentence →
  its paper without the sentence; hard negative from a BM25 band below the top ranks);
- loss: InfoNCE over in-batch + hard negatives (temperature ``temperature``).
The adapted model is exported (mean pooling, L2-normalised) to ``models_dir()/<name>``
and the library is re-indexed with it (the index rebuilds when the encoder fingerprint changes).
"""

from __future__ import annotations

import json
import logging
import random
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from assistant.progress import ProgressEvent
from assistant.training import common, data
from assistant.training.common import Budget, TrainingError, TrainReport

log = logging.getLogger(__name__)

DATA_KEYS = ("seed", "n_queries", "pos_ranks", "neg_ranks", "base_model", "query_mix")


@dataclass
class EncoderOptions:
    name: str = "minilm-adapted"
    out_dir: str | None = None  # default: models_dir()/<name>
    work_dir: str | None = None  # default: models_dir()/.train/<name>
    base_model: str = "minilm"
    n_queries: int | None = None  # training pairs; default min(20000, 2 * usable papers)
    query_mix: tuple[float, float, float] = data.DEFAULT_QUERY_MIX  # ict, title, keywords
    pos_ranks: tuple[int, int] = (
        1,
        4,
    )  # graph neighbours at ranks [1, 4) (rank 0 = nearest, skipped)
    neg_ranks: tuple[int, int] = (12, 40)  # far band; pos_ranks[1] + margin <= neg_ranks[0]
    min_margin: int = 5
    max_length: int | None = (
        None  # None: the library index's length (128 by default), so re-indexing matches
    )
    batch_size: int = 16
    epochs: float = 1.0
    lr: float = 2e-5
    warmup: float = 0.06
    weight_decay: float = 0.01
    temperature: float = 0.05
    max_steps: int | None = None
    max_minutes: float | None = None
    checkpoint_every: int = 200
    checkpoint_minutes: float = 5.0
    seed: int = 13
    device: str = "auto"
    threads: int | None = None
    blacklist: str | None = None
    freeze_layers: int = 0  # bottom transformer layers kept frozen
    freeze_embeddings: bool = True
    quantize: bool = True
    resume: bool = True
    reindex: bool = True


def graph_embedding(corpus: data.Corpus, dim: int = 64) -> tuple[list[int], np.ndarray]:
    """Embed the papers that have citation edges: SVD of citation + co-citation + coupling."""
    from scipy import sparse
    from sklearn.decomposition import TruncatedSVD
    from sklearn.preprocessing import normalize

    nodes = sorted({c.citing_id for c in corpus.citations} | {c.cited_id for c in corpus.citations})
    if len(nodes) < 4:
        return [], np.zeros((0, 0), dtype=np.float32)
    index = {n: i for i, n in enumerate(nodes)}
    rows = [index[c.citing_id] for c in corpus.citations]
    cols = [index[c.cited_id] for c in corpus.citations]
    a = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(nodes), len(nodes)))
    a.data[:] = 1.0
    sym = a + a.T
    graph = sym + (a.T @ a) + (a @ a.T)  # direct links + co-citation + bibliographic coupling
    graph.setdiag(0)
    graph = normalize(graph.tocsr(), norm="l2")
    k = max(2, min(dim, len(nodes) - 1))
    emb = TruncatedSVD(n_components=k, random_state=0).fit_transform(graph)
    return nodes, normalize(emb).astype(np.float32)


def graph_triplets(corpus: data.Corpus, opts: EncoderOptions, rng: random.Random) -> list[dict]:
    """(anchor, positive, hard negative) paper triplets from the citation-graph embedding."""
    if opts.neg_ranks[0] < opts.pos_ranks[1] + opts.min_margin:
        raise TrainingError(
            f"neg_ranks {opts.neg_ranks} must start >= pos_ranks end + margin "
            f"({opts.pos_ranks[1]} + {opts.min_margin})"
        )
    nodes, emb = graph_embedding(corpus)
    nodes_ok = [i for i, n in enumerate(nodes) if n in corpus.docs]
    if len(nodes_ok) < opts.neg_ranks[0] + 2:
        return []
    sub = emb[nodes_ok]
    out: list[dict] = []
    for row, i in enumerate(nodes_ok):
        sims = sub @ sub[row]
        order = [j for j in np.argsort(-sims) if j != row]
        pos_band = order[opts.pos_ranks[0] : opts.pos_ranks[1]]
        neg_band = order[opts.neg_ranks[0] : opts.neg_ranks[1]]
        if not pos_band or not neg_band:
            continue
        anchor = nodes[i]
        out.append(
            {
                "kind": "graph",
                "anchor": anchor,
                "pos": nodes[nodes_ok[rng.choice(pos_band)]],
                "neg": nodes[nodes_ok[rng.choice(neg_band)]],
            }
        )
    return out


#: pseudo-queries mined per prefilter call (Cancel is seen between chunks)
MINE_CHUNK = 8


def query_triplets(
    corpus: data.Corpus,
    n: int,
    opts: EncoderOptions,
    rng: random.Random,
    library=None,
    progress: common.ProgressFn | None = None,
) -> list[dict]:
    """Pseudo-query triplets: query → its paper, hard negative from the prefilter's band.
    ``progress(ProgressEvent)`` is called after every ``MINE_CHUNK`` queries (a GUI's Cancel
    raises from it, so a small chunk keeps Cancel quick)."""
    queries = [
        q for q in data.make_queries(corpus, n, rng, tuple(opts.query_mix)) if q.kind != "citation"
    ]
    candidates = data.prefilter_candidates(library, corpus)
    out: list[dict] = []
    lo, hi = 3, 30  # skip the very top (often true matches for short queries), sample below
    for start in range(0, len(queries), MINE_CHUNK):
        chunk = queries[start : start + MINE_CHUNK]
        for q, cand in zip(chunk, candidates([q.text for q in chunk], hi + 1)):
            key = data.title_key(corpus.docs[q.positive].title)
            # the prefilter ranks the whole library: keep trainable papers only (never blacklisted
            # or abstract-less ones), and never a duplicate of the positive
            band = [
                c
                for c in cand[lo:hi]
                if c != q.positive
                and c in corpus.docs
                and data.title_key(corpus.docs[c].title) != key
            ]
            neg = rng.choice(band) if band else rng.choice(corpus.ids)
            if neg == q.positive:
                continue
            out.append(
                {
                    "kind": q.kind,
                    "q": q.text,
                    "pos": q.positive,
                    "neg": neg,
                    "drop": q.drop,
                    "drop_title": q.drop_title,
                }
            )
        if progress:
            progress(
                ProgressEvent(
                    min(start + MINE_CHUNK, len(queries)),
                    len(queries),
                    "training",
                    "mining hard negatives",
                )
            )
    return out


#: Training pairs one minute of training consumes (a bit above the ~190/min measured at 128 tokens
#: on the 2-core VM, and a rough GPU figure): sizes the default training set to the time cap.
PAIRS_PER_MINUTE = {"cpu": 250, "cuda": 8000}


def planned_pairs(opts: EncoderOptions, usable_papers: int, device: str = "cpu") -> int:
    """How many training pairs to mine when ``n_queries`` is not given: at most 20,000 and two
    per usable paper, and no more than the step/time caps can use (mining costs one prefilter
    query per pair, so a 15-minute run must not spend 40 minutes mining 20,000 of them)."""
    n = min(20000, 2 * usable_papers)
    if opts.max_steps:
        n = min(n, opts.max_steps * opts.batch_size)
    if opts.max_minutes:
        n = min(n, int(opts.max_minutes * PAIRS_PER_MINUTE.get(device, PAIRS_PER_MINUTE["cpu"])))
    return max(n, opts.batch_size)


def prepare_triplets(
    library,
    opts: EncoderOptions,
    work_dir: Path,
    progress: common.ProgressFn | None = None,
    device: str = "cpu",
) -> tuple[list[dict], data.Corpus, dict, dict]:
    """The training set (graph + pseudo-query triplets) with its stats and fingerprint, reused
    from ``work_dir`` when it was mined with the same options and size from the same library."""
    blacklist = data.load_blacklist(opts.blacklist)
    corpus = data.corpus_from_library(library, blacklist)
    if len(corpus.docs) < 8:
        raise TrainingError(
            f"only {len(corpus.docs)} usable papers (title + abstract): import more papers"
        )
    n = opts.n_queries or planned_pairs(opts, len(corpus.docs), device)
    fingerprint = {**common.training_set_fingerprint(opts, DATA_KEYS, corpus), "planned": n}
    stored = common.load_training_set(work_dir, fingerprint)
    if stored is not None:
        return stored[0], corpus, stored[1], fingerprint
    rng = random.Random(opts.seed)
    rows = graph_triplets(corpus, opts, rng)
    rows = rows[:n]
    if len(rows) < n:  # thin graph: fill with in-library pseudo-queries
        rows += query_triplets(corpus, n - len(rows), opts, rng, library, progress)
    rng.shuffle(rows)
    kinds: dict[str, int] = {}
    for r in rows:
        kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
    stats = {
        "usable_papers": len(corpus.docs),
        "citation_edges": len(corpus.citations),
        "examples": len(rows),
        "kinds": kinds,
        "excluded_blacklisted_or_eval": corpus.excluded_blacklisted,
    }
    common.save_training_set(work_dir, rows, fingerprint, stats)
    return rows, corpus, stats, fingerprint


def _texts(row: dict, docs: dict[int, data.DocRecord]) -> tuple[str, str, str]:
    anchor = row["q"] if "q" in row else docs[row["anchor"]].text()
    pos = docs[row["pos"]].text(row.get("drop"), row.get("drop_title", False))
    return anchor, pos, docs[row["neg"]].text()


def adapt_encoder(
    library,
    options: EncoderOptions | None = None,
    progress: common.ProgressFn | None = None,
    cancelled: common.CancelledFn | None = None,
) -> TrainReport:
    """Fine-tune the bi-encoder on the library, export ONNX and (optionally) re-index."""
    # long: the trainer's steps in order (data, resume, loop, export, re-index), as reranker.train_reranker
    import torch
    from transformers import AutoModel, AutoTokenizer

    opts = options or EncoderOptions()
    run = common.start_run(opts)
    out_dir, work_dir, device, started = run.out_dir, run.work_dir, run.device, run.started
    if opts.max_length is None:
        opts = replace(opts, max_length=_index_max_length(library))
    if progress:
        progress(ProgressEvent(0, 1, "training", "building training pairs"))
    rows, corpus, stats, fingerprint = prepare_triplets(library, opts, work_dir, progress, device)
    if not rows:
        raise TrainingError("no training pair could be generated from this library")
    report = TrainReport(
        kind="encoder", work_dir=str(work_dir), examples=len(rows), device=device, data_stats=stats
    )
    state = common.resumable_state(opts, work_dir, fingerprint)
    src = (
        work_dir / common.CHECKPOINT_DIR
        if state is not None
        else common.base_model_path(opts.base_model)
    )
    model = AutoModel.from_pretrained(str(src), local_files_only=True).to(device)
    tokenizer = AutoTokenizer.from_pretrained(str(src), use_fast=True, local_files_only=True)

    batch = min(opts.batch_size, len(rows))
    steps_per_epoch, total = common.plan_steps(len(rows), batch, opts.epochs, opts.max_steps, state)
    common.freeze_bottom_layers(model, opts.freeze_layers)
    optimizer, scheduler = common.make_optimizer(
        model, opts.lr, opts.weight_decay, total, opts.warmup, opts.freeze_embeddings
    )
    step, losses = 0, []
    if state is not None:
        step, losses = common.restore_training(state, optimizer, scheduler)
        report.resumed_from_step = step

    def embed(texts: list[str]):
        enc = tokenizer(
            texts, truncation=True, max_length=opts.max_length, padding=True, return_tensors="pt"
        ).to(device)
        out = model(**enc).last_hidden_state
        mask = enc["attention_mask"].unsqueeze(-1).to(out.dtype)
        pooled = (out * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, dim=-1)

    def loss_fn(idx: list[int]):
        triples = [_texts(rows[i], corpus.docs) for i in idx]
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=device == "cuda"):
            a = embed([t[0] for t in triples]).float()
            c = embed([t[1] for t in triples] + [t[2] for t in triples]).float()
        logits = a @ c.T / opts.temperature  # in-batch positives of others + all hard negatives
        return torch.nn.functional.cross_entropy(logits, torch.arange(len(idx), device=device))

    extra = {
        "data": fingerprint,
        "total_steps": total,
        "options": json.loads(json.dumps(asdict(opts))),
    }
    result = common.train_loop(
        model,
        tokenizer,
        optimizer,
        scheduler,
        work_dir,
        loss_fn,
        len(rows),
        batch,
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
    common.record_result(report, result, total, steps_per_epoch, opts.epochs, batch, len(rows))
    report.model_dir = str(
        export_encoder(model.to("cpu").eval(), tokenizer, out_dir, opts, stats, result.step)
    )
    if opts.reindex:
        report.notes.append(_reindex(library, Path(report.model_dir), progress, cancelled))
    report.seconds = round(time.monotonic() - started, 1)
    return report


def export_encoder(
    model, tokenizer, out_dir: Path, opts: EncoderOptions, stats: dict, step: int
) -> Path:
    from assistant.inference.export import export_transformer

    extra = {
        "training": {
            "recipe": "SciNCL-style InfoNCE (graph neighbours + pseudo-queries)",
            "steps": step,
            "data": stats,
            "base": opts.base_model,
        }
    }
    return export_transformer(
        model,
        tokenizer,
        out_dir,
        kind="encoder",
        pooling="mean",
        max_length=opts.max_length,
        quantize=opts.quantize,
        name=opts.name,
        source=f"adapted from {opts.base_model} on {stats.get('usable_papers')} papers",
        extra=extra,
    )


def _index_max_length(library) -> int:
    """Tokens per paper of the library's current index (the retrieval default when unindexed)."""
    from assistant.config import index_dir_for
    from assistant.retrieval.index import DEFAULT_MAX_LENGTH, index_status

    meta = index_status(index_dir_for(library.path)) if getattr(library, "path", None) else {}
    return int(meta.get("max_length") or DEFAULT_MAX_LENGTH)


def _reindex(library, model_dir: Path, progress, cancelled) -> str:
    """Rebuild the library's index with the adapted encoder in ``model_dir`` (the retrieval layer's builder)."""
    try:
        from assistant.inference.encoder import load_encoder
        from assistant.retrieval.index import build_index
    except ImportError as exc:
        return f"re-index skipped: retrieval/inference layer not available ({exc})"
    encoder = load_encoder(model_dir)

    build_index(library, encoder, progress=progress, cancelled=cancelled)
    return f"re-indexed the library with encoder {encoder.name} (fingerprint {encoder.fingerprint})"
