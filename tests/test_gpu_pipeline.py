"""The batching pipeline (issue #30.2): CPU outputs unchanged, CUDA-style windows with a
tokenising thread restore the input order, bulk tokenisation in parallel only when allowed."""

from __future__ import annotations

import os

import numpy as np
import pytest

from assistant.inference import session as sess
from assistant.inference.encoder import load_encoder

pytest.importorskip("torch")


def _texts(n: int = 96) -> list[str]:
    import bibtexparser

    from assistant.config import SHIPPED_MODELS_DIR

    lib = bibtexparser.parse_file(str(SHIPPED_MODELS_DIR.parent / "resources/sample/library.bib"))
    texts = [
        f"{e.fields_dict['title'].value}. {e.fields_dict.get('abstract').value}"
        if "abstract" in e.fields_dict
        else e.fields_dict["title"].value
        for e in lib.entries
        if "title" in e.fields_dict
    ]
    return (texts * 2)[:n]


def _old_encode(encoder, texts: list[str], batch_size: int = 32) -> np.ndarray:
    """The encoder's loop before the pipeline: tokenise all, sort longest first, batch, pad."""
    encodings = encoder.tokenizer.encode_batch(texts)
    order = np.argsort([-len(e.ids) for e in encodings], kind="stable")
    out = np.empty((len(texts), encoder.dim), dtype=np.float32)
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        batch = [encodings[i] for i in idx]
        width = max(len(e.ids) for e in batch)
        ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, enc in enumerate(batch):
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        out[idx] = encoder.session.run(None, {k: feed[k] for k in encoder.input_names})[0]
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)


@pytest.mark.parametrize("parallel", [False, True])
def test_cpu_embeddings_are_identical_to_the_old_loop(parallel, monkeypatch):
    encoder = load_encoder("minilm", device="cpu")  # int8: batch-dependent, so order matters
    texts = _texts()
    monkeypatch.setattr(sess, "_PARALLEL_ALLOWED", parallel)
    monkeypatch.setattr(sess, "PARALLEL_MIN_ITEMS", 8)
    assert encoder.default_batch_size == 32
    assert np.array_equal(encoder.encode(texts), _old_encode(encoder, texts))


def test_cuda_windows_with_a_tokenising_thread_keep_the_input_order(monkeypatch):
    encoder = load_encoder("minilm", device="cpu", precision="fp32")
    texts = _texts()
    reference = encoder.encode(texts)
    monkeypatch.setattr(encoder.info, "device", "cuda")  # the CUDA batching, run on the CPU
    monkeypatch.setattr(sess, "WINDOW_BATCHES", 2)
    assert encoder.default_batch_size == sess.CUDA_BATCH
    widths = []
    run = encoder.session.run

    def spy(names, feed):
        widths.append(feed["input_ids"].shape[1])
        return run(names, feed)

    monkeypatch.setattr(encoder.session, "run", spy, raising=False)
    events = []
    got = encoder.encode(texts, batch_size=16, progress=events.append)
    assert len(widths) == -(-len(texts) // 16) and all(w % sess.CUDA_PAD == 0 for w in widths)
    assert np.allclose(got, reference, atol=2e-5)  # padding only: fp32 sees no difference
    assert events[-1].done == len(texts)


def test_parallel_tokenization_only_for_allowed_bulk_calls(monkeypatch):
    seen = {}

    monkeypatch.setattr(sess, "_PARALLEL_ALLOWED", False)
    with sess.tokenizer_parallelism(10_000):
        seen["not allowed"] = os.environ.get("TOKENIZERS_PARALLELISM")
    sess.allow_parallel_tokenization(True)
    try:
        with sess.tokenizer_parallelism(10):
            seen["small"] = os.environ.get("TOKENIZERS_PARALLELISM")
        with sess.tokenizer_parallelism(10_000):
            seen["bulk"] = os.environ.get("TOKENIZERS_PARALLELISM")
    finally:
        sess.allow_parallel_tokenization(False)
    assert seen == {"not allowed": "false", "small": "false", "bulk": "true"}
    assert os.environ.get("TOKENIZERS_PARALLELISM") == "false"


def test_bulk_cli_commands_allow_parallel_tokenization_and_lsp_does_not():
    from assistant.cli import BULK_COMMANDS

    assert {"index", "train", "eval", "bench"} <= BULK_COMMANDS and "lsp" not in BULK_COMMANDS
