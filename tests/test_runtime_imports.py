"""The product's import path holds no benchmark or training dependency, and no default that
points beside a development checkout (issue 33: benchmarks and training out of the runtime)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys

from conftest import REPO_ROOT

#: imported only by `assistant bench` (psutil), training (scikit-learn, torch, transformers)
NOT_AT_RUNTIME = ("psutil", "sklearn", "torch", "transformers")

PROBE = """
import json, sys
import assistant.service, assistant.cli, assistant.lsp, assistant.lsp.server
from assistant.cli import main
try:
    main(["--help"], standalone_mode=False)
except SystemExit:
    pass
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules})))
"""


def _loaded(probe: str) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=REPO_ROOT,  # this checkout's code, not another editable install's
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_service_cli_and_lsp_import_no_benchmark_or_training_dependency():
    loaded = _loaded(PROBE)
    assert "assistant" in loaded and "click" in loaded  # the probe really imported the product
    assert not loaded & set(NOT_AT_RUNTIME), sorted(loaded & set(NOT_AT_RUNTIME))


def test_the_probe_sees_a_training_dependency_when_one_is_imported():
    """The check above can fail: importing the trainer's metric library shows up."""
    loaded = _loaded(PROBE.replace("import json, sys", "import json, sys, sklearn.metrics"))
    assert "sklearn" in loaded


def test_no_product_module_defaults_to_the_checkouts_neighbour_folders():
    """``REPO_ROOT`` and ``../shared`` defaults belong to tools/, never to the package."""
    strays = []
    for path in sorted((REPO_ROOT / "assistant").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id == "REPO_ROOT":
                strays.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}: REPO_ROOT")
            elif isinstance(node, ast.Constant) and node.value == "shared":
                strays.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}: 'shared'")
    assert not strays, strays


def test_declared_dependencies_cover_the_third_party_imports_of_the_runtime():
    """spaCy and SciPy are imported by the product (abbreviations; ``bench scale`` and the
    trainers' sparse matrices), so they are declared, not left to arrive with another package."""
    import tomllib

    deps = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {
        d.split(">")[0].split("=")[0].split("<")[0].split("[")[0].strip().lower() for d in deps
    }
    assert {"spacy", "scipy", "rich", "filelock"} <= names
    assert not names & {"psutil", "scikit-learn"}, names


def test_the_product_import_path_loads_neither_bm25s_nor_scipy():
    """The BM25 index is read and written without bm25s (``retrieval.bm25_files``), which
    pulled in scipy.sparse, tqdm and asyncio on every start (issue 32: cold start-up)."""
    loaded = _loaded(PROBE)
    assert "numpy" in loaded and "faiss" in loaded  # the probe imported the retrieval stack
    assert not loaded & {"bm25s", "scipy", "tqdm", "sqlite_utils"}, sorted(
        loaded & {"bm25s", "scipy", "tqdm", "sqlite_utils"}
    )
