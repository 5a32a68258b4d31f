"""Editor set-up files: the VS Code extension folder launches `assistant lsp`; the docs' snippets
name the same command."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from assistant.cli import main

ROOT = Path(__file__).resolve().parent.parent
VSCODE = ROOT / "packaging" / "vscode"


def test_vscode_extension_folder():
    manifest = json.loads((VSCODE / "package.json").read_text(encoding="utf-8"))
    main_file = VSCODE / manifest["main"]
    assert main_file.is_file()
    assert "vscode-languageclient" in manifest["dependencies"]
    assert {"onLanguage:latex", "onLanguage:markdown"} <= set(manifest["activationEvents"])
    source = main_file.read_text(encoding="utf-8")
    assert 'require("vscode-languageclient/node")' in source
    assert '["lsp"]' in source and "citeAssist/status" in source
    contributed = {c["command"] for c in manifest["contributes"]["commands"]}
    for command in contributed:
        assert f'"{command}"' in source  # every palette command is implemented


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js not installed")
def test_vscode_extension_parses():
    subprocess.run(["node", "--check", str(VSCODE / "extension.js")], check=True, timeout=60)


def test_editor_docs_and_cli():
    docs = (ROOT / "docs" / "EDITORS.md").read_text(encoding="utf-8")
    assert 'cmd = { "assistant", "lsp" }' in docs  # Neovim
    assert '("assistant" "lsp")' in docs  # Emacs eglot
    # the quality tier from each editor (driven: Eglot 1.9 sends this contact's options)
    assert 'init_options = { quality = "best" }' in docs  # Neovim
    assert '("assistant" "lsp" :initializationOptions (:quality "best"))' in docs  # Eglot
    assert "packaging/vscode" in docs
    assert "docs/EDITORS.md" in (ROOT / "README.md").read_text(encoding="utf-8")
    result = CliRunner().invoke(main, ["lsp", "--help"])
    assert result.exit_code == 0 and "--no-recommend" in result.output
