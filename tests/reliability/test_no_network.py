"""No code path opens a network connection: ``models build``, ``library import``, ``index``,
``recommend``, ``manuscript`` and a tiny ``train`` run as real CLI subprocesses with Python's
sockets and name lookups blocked (a ``sitecustomize`` that raises and logs) and, where
``strace`` is installed, under ``strace`` too: native code (onnxruntime's telemetry, issue 23
item 11) bypasses Python's socket module, so only the system-call trace sees it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "assistant" / "resources" / "sample"

SITECUSTOMIZE = """
import os, socket, traceback
_LOG = os.environ["NET_GUARD_LOG"]
def _record(what):
    with open(_LOG, "a") as fh:
        fh.write(what + "\\n" + "".join(traceback.format_stack(limit=10)) + "\\n")
def _blocked(*args, **kwargs):
    _record("name lookup %r" % (args[:2],))
    raise OSError("network blocked by the test")
_init = socket.socket.__init__
def _guarded(self, family=-1, type=-1, proto=-1, fileno=None):
    if fileno is None and family in (socket.AF_INET, socket.AF_INET6, -1):
        _record("socket %r" % (family,))
        raise OSError("network blocked by the test")
    _init(self, family, type, proto, fileno)
socket.getaddrinfo = socket.gethostbyname = socket.gethostbyname_ex = _blocked
socket.create_connection = _blocked
socket.socket.__init__ = _guarded
"""
# an internet connection or datagram (DNS) in a system-call trace; AF_UNIX is local
_NET_CALL = re.compile(r"(connect|sendto|sendmsg)\(\d+, \{sa_family=AF_INET6?,")


@pytest.fixture
def guarded(tmp_path):
    folder = tmp_path / "guard"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(SITECUSTOMIZE)
    log = tmp_path / "network.log"

    def run(args: list[str], env: dict | None = None, timeout: float = 600):
        trace = tmp_path / f"strace-{len(list(tmp_path.glob('strace-*')))}.txt"
        cmd = [sys.executable, "-m", "assistant.cli", *args]
        if shutil.which("strace"):
            cmd = ["strace", "-f", "-qq", "-e", "trace=connect,sendto,sendmsg", "-o", str(trace), *cmd]  # fmt: skip
        res = subprocess.run(
            cmd,
            cwd=tmp_path,
            env={
                **os.environ,
                "PYTHONPATH": f"{folder}{os.pathsep}{REPO}",
                "NET_GUARD_LOG": str(log),
                "OMP_NUM_THREADS": "1",
                **(env or {}),
            },
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
        calls = log.read_text() if log.exists() else ""
        assert not calls, f"{args[0]} tried the network from Python:\n{calls}"
        if trace.exists():
            net = [ln for ln in trace.read_text().splitlines() if _NET_CALL.search(ln)]
            assert not net, f"{' '.join(args[:2])} opened internet sockets:\n" + "\n".join(net[:10])
        return res

    return run


def test_issue23_11_models_build_sends_no_dns(guarded, tmp_path):
    guarded(["models", "build", "minilm"], env={"ASSISTANT_MODELS": str(tmp_path / "models")})
    assert (tmp_path / "models" / "minilm" / "model.int8.onnx").exists()


def test_import_index_recommend_manuscript_stay_offline(guarded, tmp_path):
    db = str(tmp_path / "lib.sqlite")
    guarded(["--db", db, "library", "import", "-q", str(SAMPLE / "library.bib")])
    guarded(["--db", db, "index"])
    res = guarded(["--db", db, "recommend", "dense retrieval for citation recommendation"])
    assert res.stdout.strip()
    guarded(["--db", db, "manuscript", str(SAMPLE / "draft.tex")])


def test_tiny_train_run_stays_offline(guarded, tmp_path):
    db = str(tmp_path / "lib.sqlite")
    guarded(["--db", db, "library", "import", "-q", str(SAMPLE / "library.bib")])
    guarded(
        [
            "--db",
            db,
            "train",
            "reranker",
            "--max-steps",
            "1",
            "--queries",
            "16",
            "--batch",
            "4",
            "--no-quantize",
            "--negatives",
            "bm25",
            "--work-dir",
            str(tmp_path / "work"),
            "--out",
            str(tmp_path / "rr"),
            "--blacklist",
            str(tmp_path / "none.txt"),
        ],
        timeout=900,
    )
