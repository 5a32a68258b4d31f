"""Issue 29 item 4: a damaged or foreign file inside ``LIB.sqlite.index/`` gives one clear line
and the rebuild hint (never a traceback, never a hang), and ``assistant index --rebuild`` repairs
whatever is there."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from assistant.library.models import Paper
from assistant.library.store import Library
from assistant.retrieval.index import build_index

HINT = "run `assistant index --rebuild`"


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    from retrieval_helpers import load_test_encoder

    return load_test_encoder(tmp_path_factory)


@pytest.fixture
def indexed(tmp_path, encoder) -> Path:
    db = tmp_path / "lib.sqlite"
    lib = Library(db)
    for i, title in enumerate(
        ["Dense retrieval of passages", "BM25 ranking revisited", "Citation recommendation"]
    ):
        lib.add_paper(Paper(title=title, authors=["Doe, J."], year=2018 + i, abstract=title * 3))
    build_index(lib, encoder)
    lib.close()
    return db


def _damage(index: Path, case: str) -> Path:
    """Apply one kind of damage; returns the file it concerns."""
    faiss_path = index / "dense" / "faiss.index"
    bm25_ids = index / "bm25" / "ids.npy"
    if case == "faiss-garbage":
        faiss_path.write_bytes(b"\x00garbage" * 50)
        return faiss_path
    if case == "faiss-truncated":
        faiss_path.write_bytes(faiss_path.read_bytes()[:60])
        return faiss_path
    if case == "faiss-fifo":
        faiss_path.unlink()
        os.mkfifo(faiss_path)
        return faiss_path
    if case == "faiss-dir":
        faiss_path.unlink()
        faiss_path.mkdir()
        return faiss_path
    if case == "faiss-device-link":
        faiss_path.unlink()
        faiss_path.symlink_to("/dev/zero")
        return faiss_path
    if case == "faiss-wrong-size":
        import faiss

        from assistant.retrieval.index_layout import make_faiss

        vecs = np.ones((3, 5), np.float32)
        faiss.write_index(make_faiss(vecs, np.arange(1, 4), "flat"), str(faiss_path))
        return faiss_path
    if case == "bm25-garbage":
        for f in (index / "bm25").iterdir():
            if f.suffix in (".npy", ".json") and f.name != "bm25.json":
                f.write_bytes(b"not an index file")
        return index / "bm25"
    if case == "bm25-ids-wrong-size":
        np.save(bm25_ids, np.arange(7))
        return bm25_ids
    if case == "bm25-ids-fifo":
        bm25_ids.unlink()
        os.mkfifo(bm25_ids)
        return bm25_ids
    if case == "bm25-json-garbage":
        (index / "bm25" / "bm25.json").write_text("{ not json")
        return index / "bm25" / "bm25.json"
    if case == "meta-fifo":
        (index / "meta.json").unlink()
        os.mkfifo(index / "meta.json")
        return index / "meta.json"
    if case == "years-fifo":
        (index / "bm25" / "years.npy").unlink()
        os.mkfifo(index / "bm25" / "years.npy")
        return index / "bm25" / "years.npy"
    if case == "bm25-dir-is-a-file":
        shutil.rmtree(index / "bm25")
        (index / "bm25").write_text("x")
        return index / "bm25"
    raise AssertionError(case)


CASES = [
    "faiss-garbage",
    "faiss-truncated",
    "faiss-fifo",
    "faiss-dir",
    "faiss-device-link",
    "faiss-wrong-size",
    "bm25-garbage",
    "bm25-ids-wrong-size",
    "bm25-ids-fifo",
    "bm25-json-garbage",
    "meta-fifo",
    "years-fifo",
    "bm25-dir-is-a-file",
]


def _recommend(db: Path, *extra: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "assistant.cli",
            "--db",
            str(db),
            "recommend",
            "dense retrieval",
            "--no-intent",
            "--reranker",
            "none",
            "--ranker",
            "off",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=60,  # a FIFO opened for reading would block forever: this bounds the test
        env=env,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize("case", CASES)
def test_issue29_4_damaged_index_is_one_line_with_the_rebuild_hint(indexed, case):
    index = indexed.with_name(indexed.name + ".index")
    where = _damage(index, case)
    try:
        proc = _recommend(indexed)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{case}: recommend hung")
    err = proc.stderr.strip()
    assert proc.returncode != 0, (case, proc.stdout, err)
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "the index is damaged" in lines[0] and HINT in lines[0], lines[0]
    assert str(where) in lines[0], lines[0]


@pytest.mark.parametrize("case", ["faiss-fifo", "bm25-ids-fifo", "meta-fifo", "faiss-dir"])
@pytest.mark.timeout(300)
def test_issue29_4_rebuild_repairs_whatever_is_there(indexed, encoder, case):
    from assistant.retrieval.searcher import Searcher

    index = indexed.with_name(indexed.name + ".index")
    _damage(index, case)
    lib = Library(indexed)
    report = build_index(lib, encoder, rebuild=True)
    assert report.total == 3
    searcher = Searcher.open(lib, encoder=encoder)
    assert searcher.faiss_index.ntotal == 3 and len(searcher.bm25) == 3
    lib.close()


def test_issue29_4_incremental_index_ignores_wrong_size_vectors(indexed, encoder):
    index = indexed.with_name(indexed.name + ".index")
    np.save(index / "dense" / "vectors.npy", np.ones((3, 5), np.float32))
    lib = Library(indexed)
    lib.add_paper(Paper(title="A fourth paper", authors=["Roe, R."], year=2022))
    report = build_index(lib, encoder)
    assert report.total == 4 and not report.missing
    lib.close()


@pytest.mark.timeout(300)
def test_issue29_4_incremental_index_names_a_fifo_instead_of_hanging(indexed, encoder):
    from assistant.errors import AssistantError

    index = indexed.with_name(indexed.name + ".index")
    _damage(index, "bm25-ids-fifo")
    lib = Library(indexed)
    with pytest.raises(AssistantError, match="index --rebuild"):
        build_index(lib, encoder)
    lib.close()


def test_a_folder_the_index_does_not_own_is_left_alone(indexed):
    """An old version wrote ``eval acm-cr`` runs into ``LIB.sqlite.index/runs/``: recommending
    then said "the index is damaged (…/runs: a folder …): run `assistant index --rebuild`", and
    the rebuild kept the folder, so the hint never helped. Such a folder is never read: it is
    left alone, while one of the index's own names holding a folder is still damage."""
    index = indexed.with_name(indexed.name + ".index")
    runs = index / "runs"
    runs.mkdir()
    (runs / "paragraph-plain-fused.run").write_text("q1 Q0 10.1/x 1 1.0 fused\n")
    proc = _recommend(indexed)
    assert proc.returncode == 0, proc.stderr
    assert (runs / "paragraph-plain-fused.run").is_file()  # never removed either
    where = _damage(index, "faiss-dir")
    proc = _recommend(indexed)
    assert proc.returncode != 0 and str(where) in proc.stderr and HINT in proc.stderr
