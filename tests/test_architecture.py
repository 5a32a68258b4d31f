"""The layer rules of docs/ARCHITECTURE.md, read from the source with ``ast`` (nothing imported).

- Qt (PySide6) only in ``assistant/gui``; click only in ``assistant/cli``.
- ``assistant/inference`` never imports the library (nor retrieval, service or the faces).
- ``assistant/gui`` reaches the product through ``assistant.service`` only (plus config, errors,
  logging and the atomic text-file helper).
- Nothing in ``assistant`` imports ``tools`` (developer scripts).
- No guessing at our own code's signatures: ``inspect.signature`` / ``importlib.import_module``
  only where documented (a third-party model's ``forward``; the CLI's lazy command loader).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "assistant"

#: what assistant/gui may import from the package
GUI_ALLOWED = (
    "assistant.service",
    "assistant.gui",
    "assistant.config",
    "assistant.errors",
    "assistant.logs",
    "assistant.textfile",
    "assistant",  # `from assistant import __version__`
)
DYNAMIC_ALLOWED = {
    "assistant/inference/export.py": "inspect.signature",  # a Hugging Face model's forward()
    "assistant/cli/__init__.py": "importlib.import_module",  # click's lazy subcommand loader
}


def _modules(extra: dict[str, str]):
    sources = {
        path.relative_to(PACKAGE.parent).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(PACKAGE.rglob("*.py"))
    }
    for rel, source in {**sources, **extra}.items():
        name = ".".join(Path(rel).with_suffix("").parts).removesuffix(".__init__")
        yield rel, name, ast.parse(source, rel)


def _imports(module: str, tree: ast.AST):
    """(line, imported module) for every import, relative ones resolved."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")[: -node.level] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield node.lineno, target
            for alias in node.names:  # `from assistant import library` imports a package
                yield node.lineno, f"{target}.{alias.name}"


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def violations(extra: dict[str, str] | None = None) -> list[str]:
    """Every broken rule as ``file:line: rule``; ``extra`` adds modules (path -> source)."""
    found = []
    for rel, module, tree in _modules(extra or {}):
        for line, target in _imports(module, tree):
            where = f"{rel}:{line}"
            if _under(target, "PySide6") and not _under(module, "assistant.gui"):
                found.append(f"{where}: Qt outside assistant/gui ({target})")
            if _under(target, "click") and not _under(module, "assistant.cli"):
                found.append(f"{where}: click outside assistant/cli ({target})")
            if _under(target, "tools"):
                found.append(f"{where}: the product imports a developer tool ({target})")
            if _under(module, "assistant.inference") and any(
                _under(target, f"assistant.{layer}")
                for layer in ("library", "retrieval", "service", "gui", "cli", "lsp")
            ):
                found.append(f"{where}: inference imports {target}")
            if (
                _under(module, "assistant.gui")
                and _under(target, "assistant")
                and not any(
                    target == ok or (ok != "assistant" and _under(target, ok)) for ok in GUI_ALLOWED
                )
                and not target.startswith("assistant.__")
            ):
                found.append(f"{where}: the GUI goes around the service ({target})")
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                call = f"{node.value.id}.{node.attr}"
                dynamic = call in ("inspect.signature", "importlib.import_module")
                if dynamic and DYNAMIC_ALLOWED.get(rel) != call:
                    found.append(f"{rel}:{node.lineno}: {call} outside its documented place")
    return found


def test_the_layer_rules_hold():
    assert violations() == []


@pytest.mark.parametrize(
    ("rel", "source", "rule"),
    [
        ("retrieval/fake_rule.py", "import click\n", "click outside assistant/cli"),
        ("inference/fake_rule.py", "from assistant.library.store import Library\n", "inference"),
        ("gui/fake_rule.py", "from assistant.retrieval.pipeline import Recommender\n", "GUI"),
        ("service/fake_rule.py", "from PySide6.QtCore import Qt\n", "Qt outside"),
        (
            "library/fake_rule.py",
            "import importlib\nimportlib.import_module('x')\n",
            "import_module",
        ),
        ("cli/fake_rule.py", "from tools.gui_check import main\n", "developer tool"),
    ],
)
def test_a_broken_rule_is_reported_with_file_and_line(rel, source, rule):
    found = violations({f"assistant/{rel}": source})
    assert any(f"assistant/{rel}:" in v and rule in v for v in found), found
