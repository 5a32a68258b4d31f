"""Shared pytest fixtures: isolated data dirs and access to the read-only shared data."""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("ASSISTANT_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory, monkeypatch):
    """Every test gets its own ASSISTANT_HOME/DB; built models are shared across the session."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("ASSISTANT_HOME", str(home))
    monkeypatch.setenv("ASSISTANT_DB", str(home / "library.sqlite"))
    monkeypatch.setenv("ASSISTANT_MODELS", str(_session_models_dir(tmp_path_factory)))
    return home


_MODELS_DIR: Path | None = None


def _session_models_dir(factory) -> Path:
    """One models dir per test session so the default encoder is built once."""
    global _MODELS_DIR
    if _MODELS_DIR is None:
        env = os.environ.get("ASSISTANT_TEST_MODELS")
        _MODELS_DIR = Path(env) if env else factory.mktemp("models")
        _MODELS_DIR.mkdir(parents=True, exist_ok=True)
    return _MODELS_DIR


def sample_imported_by_cli(factory, name: str) -> dict[str, str]:
    """The bundled sample library imported and indexed through the CLI, as a user would, in a
    new home folder ``name``: the environment (home, database, models) that points at it."""
    from click.testing import CliRunner

    from assistant.cli import main

    home = factory.mktemp(name)
    env = {
        "ASSISTANT_HOME": str(home),
        "ASSISTANT_DB": str(home / "library.sqlite"),
        "ASSISTANT_MODELS": str(_session_models_dir(factory)),
    }
    sample_bib = REPO_ROOT / "assistant" / "resources" / "sample" / "library.bib"
    runner = CliRunner()
    for args in (["library", "import", str(sample_bib), "-q"], ["index", "-q"]):
        result = runner.invoke(main, args, env=env)
        assert result.exit_code == 0, result.output
    return env


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(
            f"shared data not found at {SHARED_DATA} (needs ../shared/data next to the repo)"
        )
    return SHARED_DATA


@pytest.fixture(scope="session")
def acm_dev_dir(shared_data) -> Path:
    return shared_data / "acm-cr" / "dev"


@pytest.fixture(scope="session")
def acm_dl_dir(shared_data, tmp_path_factory) -> Path:
    """The ACM-DL BibTeX files, extracted once per session (``acm-dl/<venue>/<venue>-<year>.bib``)."""
    cached = os.environ.get("ASSISTANT_ACM_DL_DIR")
    if cached and Path(cached).is_dir():
        return Path(cached)
    out = tmp_path_factory.mktemp("acm")
    with tarfile.open(shared_data / "acm-cr" / "acm-dl.tar.xz") as tar:
        tar.extractall(out, filter="data")
    return out / "acm-dl"


@pytest.fixture(scope="session")
def acm_dl_sample_files(shared_data, tmp_path_factory) -> list[Path]:
    """A few real ACM-DL files (small venues), extracted without unpacking the whole archive."""
    wanted = (
        "acm-dl/ictir/ictir-2019.bib",
        "acm-dl/chiir/chiir-2019.bib",
        "acm-dl/wsdm/wsdm-2019.bib",
    )
    out = tmp_path_factory.mktemp("acm-sample")
    with tarfile.open(shared_data / "acm-cr" / "acm-dl.tar.xz") as tar:
        members = [m for m in tar.getmembers() if m.name in wanted]
        tar.extractall(out, members=members, filter="data")
    files = [out / name for name in wanted if (out / name).exists()]
    if not files:
        pytest.skip("sample ACM-DL files not found in the archive")
    return files
