"""``models import`` of a damaged model folder ends with one line, not a traceback."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from assistant.cli import main


def _run(folder, *extra):
    return CliRunner().invoke(main, ["models", "import", str(folder), *extra])


def test_a_broken_pooling_config_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSISTANT_HOME", str(tmp_path / "home"))
    (tmp_path / "m" / "1_Pooling").mkdir(parents=True)
    (tmp_path / "m" / "1_Pooling" / "config.json").write_text("{broken")
    result = _run(tmp_path / "m")
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    assert "not a readable pooling config" in result.output


@pytest.mark.slow
def test_truncated_weights_are_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSISTANT_HOME", str(tmp_path / "home"))
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "bert", "hidden_size": 8}')
    (folder / "model.safetensors").write_bytes(b"\x00\x01garbage")
    result = _run(folder, "--pooling", "cls")
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    assert result.output.strip().splitlines()[-1].startswith("Error: cannot import")
