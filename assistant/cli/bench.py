"""`assistant bench`: encoder throughput and recommendation latency, printed as JSON (click only; the
measurements live in assistant/inference/bench.py and assistant/evaluation/bench.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from assistant import filewrite
from assistant.cli.options import db_option
from assistant.evaluation.bench import run_query_bench
from assistant.inference.bench import run_encode_bench


def _require_psutil() -> None:
    """The benchmarks report memory through psutil (the ``bench`` extra; no product path needs
    it)."""
    try:
        import psutil  # noqa: F401
    except ImportError:
        raise click.ClickException(
            "the benchmarks measure memory with psutil: pip install 'cite-assist[bench]'"
        ) from None


@click.command("encode")
@click.option(
    "--model", "model_name", default="minilm", show_default=True, help="Encoder to benchmark."
)
@click.option(
    "--docs", "n_docs", default=256, show_default=True, help="Documents per run (batch 32/128)."
)
@click.option(
    "--docs-bs1", default=48, show_default=True, help="Documents per run at batch size 1."
)
@click.option("--batch-sizes", default="1,32,128", show_default=True)
@click.option(
    "--device",
    type=click.Choice(["cpu", "cuda"]),
    default="cpu",
    show_default=True,
    help="cpu: PyTorch fp32 vs onnxruntime fp32/int8; cuda: the GPU variants (see --backends).",
)
@click.option(
    "--backends",
    default=None,
    help="Comma list. cpu: torch, onnx-fp32, onnx-int8 (default: all three); "
    "cuda: torch, torch-fp16, onnx-fp32, onnx-fp16 (default: all four).",
)
@click.option(
    "--rounds", default=3, show_default=True, help="Interleaved rounds (median reported)."
)
@click.option("--threads", default=2, show_default=True, help="Threads for every backend.")
@click.option(
    "--max-length",
    default=128,
    show_default=True,
    help="Tokens per document (128: the length `assistant index` embeds at; 256 is MiniLM's training length).",
)
@click.option(
    "--db", "db_path", type=click.Path(dir_okay=False), help="Take texts from this library DB."
)
@click.option(
    "--archive",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="Else from this ACM-DL archive (acm-dl.tar.xz); else the bundled sample library.",
)
@click.option("--json", "as_json", is_flag=True, help="Print only the JSON result.")
@click.option(
    "--out", type=click.Path(dir_okay=False, path_type=Path), help="Also write the JSON here."
)
def bench_encode(
    model_name: str,
    n_docs: int,
    docs_bs1: int,
    batch_sizes: str,
    device: str,
    backends: str | None,
    rounds: int,
    threads: int,
    max_length: int,
    db_path: str | None,
    archive: Path | None,
    as_json: bool,
    out: Path | None,
) -> None:
    """Documents/s encoding title+abstract: ONNX fp32, ONNX int8 and PyTorch side by side (or on a GPU)."""
    _require_psutil()
    # PyTorch's OpenMP threads busy-wait at barriers by default; on a shared, oversubscribed
    # machine that collapses its throughput. Passive waiting (set before torch loads) is the
    # fair setting, the same as onnxruntime's (no spinning).
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    sizes = [int(s) for s in batch_sizes.split(",") if s.strip()]
    say = (lambda m: None) if as_json else (lambda m: click.echo(m, err=True))
    from assistant.evaluation.texts import sample_documents
    from assistant.inference.bench import CPU_BACKENDS, CUDA_BACKENDS

    known = CPU_BACKENDS if device == "cpu" else CUDA_BACKENDS
    unknown = [b.strip() for b in (backends or "").split(",") if b.strip() not in ("", *known)]
    if unknown:
        raise click.BadParameter(
            f"unknown backend(s) {', '.join(unknown)} for --device {device}; "
            f"choose from {', '.join(known)}",
            param_hint="--backends",
        )

    texts = sample_documents(max(n_docs, docs_bs1), db_path=db_path, archive=archive)
    result = run_encode_bench(
        model_name,
        n_docs,
        docs_bs1,
        sizes,
        device,
        backends,
        rounds,
        threads,
        max_length,
        texts,
        say,
    )
    text = json.dumps(result, indent=2)
    if out:
        filewrite.write_text(out, text + "\n")
    click.echo(text)


def _stage_bench(db: Path, draft, papers, n_queries, rounds, cold_runs) -> dict:
    from assistant.cli.retrieval import result_to_dict
    from assistant.config import RESOURCES_DIR
    from assistant.library.store import Library
    from assistant.service.bench import acm_cr_queries, draft_queries, run_stage_bench

    if draft is None and papers is not None:
        library = Library(db)
        small = library.count() < 1000
        library.close()
        if not small:
            queries = acm_cr_queries(papers, n_queries)
            source = f"acm-cr:{papers}"
    if draft is not None or papers is None or small:
        draft = draft or RESOURCES_DIR / "sample" / "draft.tex"
        queries, source = draft_queries(draft, n_queries), f"draft:{draft.name}"
    out = run_stage_bench(db, queries, result_to_dict, rounds=rounds, cold_runs=cold_runs)
    return {"db": str(db), "query_source": source, **out}


@click.command("query")
@db_option("An indexed library (default: global --db).")
@click.option(
    "--papers",
    "papers_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="ACM-CR dev folder to draw realistic queries from (default: none, the queries come from "
    "the library's own papers).",
)
@click.option(
    "--sizes",
    default="10000,100000",
    show_default=True,
    help="Library sizes (capped at the index size).",
)
@click.option("--queries", "n_queries", type=int, default=50, show_default=True)
@click.option(
    "--reranker",
    default=None,
    help="Cross-encoder timed on top of the ranker: auto (the shipped one with its head, as the "
    "product runs it), or a folder (reranks all --candidates).",
)
@click.option("--candidates", type=int, default=100, show_default=True)
@click.option(
    "--ranker",
    default="auto",
    show_default=True,
    help="Learned ranker timed on top of the prefilter ('ranked'): auto (the shipped one), "
    "off, or a folder.",
)
@click.option(
    "--embed-docs",
    type=int,
    default=256,
    show_default=True,
    help="Papers embedded to measure indexing throughput.",
)
@click.option(
    "--stages",
    is_flag=True,
    help="Only the latency budget of the whole product query (ranker, reranker, intent as the "
    "settings run them): each stage's wall/CPU p50/p95, uncached and repeated, and a cold "
    "`assistant recommend`.",
)
@click.option(
    "--draft",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="--stages: ask each sentence of this draft (default: the bundled sample draft when the "
    "library has under 1000 papers or no ACM-CR dev folder is found, else ACM-CR contexts).",
)
@click.option("--rounds", type=int, default=2, show_default=True, help="--stages: passes.")
@click.option("--cold-runs", type=int, default=2, show_default=True, help="--stages: cold runs.")
@click.option(
    "--device",
    type=click.Choice(["auto", "cpu", "cuda"]),
    default="auto",
    show_default=True,
    help="Where every model runs (encoder, reranker, intent): cuda = the GPU mode (fp16).",
)
@click.pass_context
def bench_query(
    ctx,
    db,
    papers_dir,
    sizes,
    n_queries,
    reranker,
    candidates,
    ranker,
    embed_docs,
    stages,
    draft,
    rounds,
    cold_runs,
    device,
):
    """Latency (p50/p95) of one recommendation, indexing throughput and memory."""
    _require_psutil()
    from assistant.cli import resolve_db_path, resolve_quality

    os.environ["ASSISTANT_QUALITY"] = resolve_quality(ctx)  # the global --quality: this tier
    if device != "auto":
        os.environ["ASSISTANT_DEVICE"] = device  # read by every model load of this process
    papers = Path(papers_dir) if papers_dir else None
    if stages:
        click.echo(
            json.dumps(
                _stage_bench(resolve_db_path(ctx, db), draft, papers, n_queries, rounds, cold_runs),
                indent=2,
            )
        )
        return
    out = run_query_bench(
        resolve_db_path(ctx, db),
        papers,
        [int(s) for s in sizes.split(",") if s.strip()],
        n_queries,
        reranker,
        candidates,
        ranker,
        embed_docs,
    )
    from assistant.inference.runtime import cuda_problems
    from assistant.service.models import loaded_model_runtimes

    out["device"] = device
    out["models"] = loaded_model_runtimes()  # the device each model really ran on
    if device == "cuda":
        out["cuda_problems"] = cuda_problems()
    click.echo(json.dumps(out, indent=2))


@click.command("scale")
@click.option("--papers", "n_papers", type=int, required=True, help="Synthetic papers (N).")
@click.option(
    "--dir",
    "workdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where to build the library (default: a temporary folder, removed after).",
)
@click.option("--queries", "n_queries", type=int, default=40, show_default=True)
@click.option(
    "--kind",
    type=click.Choice(["auto", "flat", "ivf", "hnsw", "ivfpq"]),
    default="auto",
    show_default=True,
    help="FAISS index the library is built with.",
)
@click.option(
    "--recall",
    default="hnsw,ivfpq",
    show_default=True,
    help="Approximate indexes whose recall@100 against exact search is measured ('' for none).",
)
@click.option("--no-product", is_flag=True, help="Skip the cross-encoder + intent timing.")
@click.option("--keep", is_flag=True, help="Keep the built library and index in --dir.")
@click.option(
    "--ef-search",
    default="",
    help="HNSW search lists to measure recall@100 and search time at, e.g. 800,1600,3200.",
)
def bench_scale(n_papers, workdir, n_queries, kind, recall, no_product, keep, ef_search):
    """A synthetic library of N papers drawn from the ACM-DL statistics, imported and indexed for
    real (vectors without the encoder): import/index time, RSS, disk, query p50/p95 and the
    recall of approximate indexes, as JSON."""
    _require_psutil()
    import tempfile

    from assistant.evaluation.scale_bench import run_scale_bench

    say = lambda m: click.echo(m, err=True)  # noqa: E731
    kinds = tuple(k.strip() for k in recall.split(",") if k.strip())
    efs = tuple(int(e) for e in ef_search.split(",") if e.strip())
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
            out = run_scale_bench(
                n_papers, Path(tmp), n_queries, kind, kinds, not no_product, False, say, efs
            )
    else:  # the figures so far land in <dir>/scale-report.json after each step

        def checkpoint(partial: dict) -> None:
            report = Path(workdir) / "scale-report.json"
            report.write_text(json.dumps(partial, indent=2), encoding="utf-8")

        out = run_scale_bench(
            n_papers, workdir, n_queries, kind, kinds, not no_product, keep, say, efs, checkpoint
        )
    click.echo(json.dumps(out, indent=2))
