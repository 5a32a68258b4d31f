"""What a cold ``assistant recommend`` and ``assistant index`` load (issue 32: start-up), run as a
user runs them, in a fresh process, on a copy of the indexed sample library: the whole product
query (prefilter, learned ranker, cross-encoder, intent) and the update after one edited record,
without the training stack (torch, transformers), bm25s and the scipy.sparse/tqdm it pulled in,
sqlite_utils (only a schema migration needs it), nor the importers and the manuscript analysis."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import REPO_ROOT
from retrieval_helpers import copy_sample_library, sample_library  # noqa: F401

from assistant.library.editing import edit_paper
from assistant.library.store import Library

#: never on these commands' path
NOT_LOADED = {
    "torch",
    "transformers",
    "scipy",
    "bm25s",
    "tqdm",
    "sqlite_utils",
    "sklearn",
    "rispy",
    "fitz",
}

PROBE = """
import json, sys
from assistant.cli import main
main(sys.argv[1:], standalone_mode=False)
print("MODULES " + json.dumps(sorted(sys.modules)))
"""


def _run(*args: str) -> tuple[str, set[str]]:
    """The command's output and the top-level packages (and ``assistant`` modules) it loaded."""
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        cwd=REPO_ROOT,  # this checkout's code
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out, _, mods = proc.stdout.rpartition("MODULES ")
    names = json.loads(mods)
    loaded = {n.split(".")[0] for n in names} | {n for n in names if n.startswith("assistant.")}
    return out, loaded


@pytest.fixture
def library_copy(sample_library, tmp_path):
    """The indexed sample library, copied (the shared one stays as it is)."""
    return copy_sample_library(sample_library, tmp_path)


def test_a_cold_recommend_runs_the_whole_product_without_the_heavy_imports(library_copy):
    out, loaded = _run(
        "--db",
        str(library_copy),
        "recommend",
        "unbiased learning to rank from biased click feedback",
        "--author",
        "Joachims, Thorsten",
        "--json",
    )
    result = json.loads(out)
    items = result["items"]
    assert len(items) == 10
    assert all({"ranker", "rerank"} <= set(it["scores"]) for it in items)  # ranker + reranker ran
    assert all(it["intent"] for it in items)  # and the intent stage
    assert {"onnxruntime", "faiss", "assistant.retrieval.authorstats"} <= loaded
    assert not loaded & NOT_LOADED, sorted(loaded & NOT_LOADED)
    # the importers, the BibTeX writer's parser and the manuscript analysis are not needed
    assert not loaded & {
        "assistant.library.importers",
        "assistant.service.writing",
        "assistant.documents.manuscript",
    }, sorted(loaded)


def test_reindexing_one_edited_record_loads_no_heavy_import(library_copy):
    with Library(library_copy) as lib:
        paper = lib.get(sorted(lib.paper_versions())[5])
        edit_paper(lib, paper.id, {"abstract": paper.abstract + " A sentence added."})
    out, loaded = _run("--db", str(library_copy), "index", "--json", "-q")
    report = json.loads(out)
    assert (report["updated"], report["added"], report["removed"]) == (1, 0, 0)
    # the incremental path ran: after an edit, a full pass rebuilds BM25 (its versions changed)
    assert not report["bm25_rebuilt"]
    assert not loaded & NOT_LOADED, sorted(loaded & NOT_LOADED)
