"""The layer rules of docs/ARCHITECTURE.md, read from the source with ``ast`` (nothing imported).

- The packages of ``assistant`` stand in layers (``LAYERS``, lowest first): a package imports only
  packages of lower layers, so no two packages import each other, directly or round a loop; the
  modules at the top of ``assistant`` (config, errors, progress, ...) import no package.
- Qt (PySide6) only in ``assistant/gui``; click only in ``assistant/cli``; the core (everything but
  the faces gui, cli, lsp) imports no face.
- ``assistant/inference`` never imports the library (nor retrieval, service or the faces).
- ``assistant/gui`` reaches the product through ``assistant.service`` only (plus config, errors,
  logging and the atomic text-file helper); so do the CLI's product commands (all command modules
  but the developer ones: ``train``, ``eval``, ``bench``).
- SQL only in ``assistant/library``: nowhere else ``import sqlite3`` or ``.execute(``, the
  developer scripts in ``tools/`` included (they call typed ``Library`` methods; only the
  oracles of the reliability and concurrency harnesses keep raw SQL, ``SQL_ALLOWED_TOOLS`` says why).
- No two modules of one package import each other, directly or round a loop (any import counts:
  one inside a function or under ``TYPE_CHECKING`` ties the modules too); the loops that stay
  are listed in ``ALLOWED_MODULE_CYCLES``, each with its reason.
- Nothing in ``assistant`` imports ``tools`` (developer scripts).
- No guessing at our own code's signatures: ``inspect.signature`` / ``importlib.import_module``
  only where documented (a third-party model's ``forward``; the CLI's lazy command loader;
  the service's lazy re-exports).
- Size: no module over 600 lines; no function over 80 lines unless its first body line is a
  ``# long: <reason>`` comment.
"""

from __future__ import annotations

import ast
import functools
import sys
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "assistant"
TOOLS = PACKAGE.parent / "tools"

#: the packages of ``assistant``, lowest layer first; a package may import those before it
LAYERS = (
    ("inference",),
    ("documents",),
    ("library",),
    ("retrieval",),
    ("evaluation",),
    ("training",),
    ("service",),
    ("cli", "gui", "lsp"),  # the faces
)
FACES = ("gui", "cli", "lsp")
#: what assistant/gui and the CLI's product commands may import from the package
SERVICE_ONLY_ALLOWED = (
    "assistant.service",
    "assistant.config",
    "assistant.errors",
    "assistant.logs",
    "assistant.progress",
    "assistant.textfile",
    "assistant.filewrite",
    "assistant",  # `from assistant import __version__`
)
GUI_ALLOWED = (*SERVICE_ONLY_ALLOWED, "assistant.gui")
#: developer commands (training, evaluation, benchmarks) reach the layers they measure
CLI_DEV_MODULES = ("assistant.cli.train", "assistant.cli.evaluate", "assistant.cli.bench")
CLI_ALLOWED = (*SERVICE_ONLY_ALLOWED, "assistant.cli")
CLI_LSP_LAUNCHER = ("assistant.cli.lsp", "assistant.lsp")  # `assistant lsp` starts that face
SQL_CALLS = ("execute", "executemany", "executescript")
#: developer scripts that keep raw SQL, and why (everything else in tools/ goes through Library)
SQL_ALLOWED_TOOLS = {
    # plants rows no Library method writes (hostile auto-export targets) and checks the file's
    # integrity where the attacked library may refuse to open
    "tools/reliability/attacks.py": "the attack harness",
    "tools/reliability/corpus.py": "writes a foreign SQLite file as a hostile input",
    # the harness's oracle reads the file after an attack without the code under test
    "tools/reliability/runner.py": "the attack harness's oracle",
    # the oracle of `make concurrency`: a read-only (mode=ro) connection checks what the writers
    # under test committed (integrity, lost papers) without going through the code under test
    "tools/concurrency/harness.py": "the concurrency harness's read-only oracle",
}
DYNAMIC_ALLOWED = {
    "assistant/inference/export.py": "inspect.signature",  # a Hugging Face model's forward()
    "assistant/cli/__init__.py": "importlib.import_module",  # click's lazy subcommand loader
    "assistant/service/__init__.py": "importlib.import_module",  # the lazy re-exports (PEP 562)
}
#: module loops inside a package that stay, and why (any other loop of modules is reported)
ALLOWED_MODULE_CYCLES = {
    # type-only: intent_stage annotates with the pipeline's Recommendation and reranker_setting
    # with its PipelineConfig under TYPE_CHECKING; at run time only the pipeline imports them
    (
        "assistant.retrieval.intent_stage",
        "assistant.retrieval.pipeline",
        "assistant.retrieval.reranker_setting",
    ): "type annotations of the pipeline's own types",
}
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80
LONG_MARK = "# long:"


def _parse(rel: str, source: str):
    name = ".".join(Path(rel).with_suffix("").parts).removesuffix(".__init__")
    return rel, name, source, ast.parse(source, rel)


@functools.cache
def _tree(root: Path = PACKAGE) -> tuple:
    return tuple(
        _parse(path.relative_to(PACKAGE.parent).as_posix(), path.read_text(encoding="utf-8"))
        for path in sorted(root.rglob("*.py"))
    )


def _modules(extra: dict[str, str], real: bool = True):
    """(path, module name, source, tree) of every module of the tree (``real``) and ``extra``."""
    modules = {m[0]: m for m in _tree()} if real else {}
    modules.update({rel: _parse(rel, source) for rel, source in extra.items()})
    return list(modules.values())


def _packages(modules) -> set[str]:
    """The subpackages of ``assistant``: on disk and among ``modules`` (``assistant/X/...``)."""
    on_disk = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    return on_disk | {rel.split("/")[1] for rel, *_ in modules if rel.count("/") >= 2}


def _imports(module: str, tree: ast.AST, is_package: bool = False):
    """(line, imported module) for every import, relative ones resolved."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")[: len(module.split(".")) - node.level + is_package]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield node.lineno, target
            for alias in node.names:  # `from assistant import library` imports a package
                yield node.lineno, f"{target}.{alias.name}"


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _allowed(target: str, allowed: tuple[str, ...]) -> bool:
    return any(
        target == ok or (ok != "assistant" and _under(target, ok)) for ok in allowed
    ) or target.startswith("assistant.__")


def _package(module: str, packages: set[str]) -> str | None:
    """``assistant.retrieval.index`` -> ``retrieval``; a top-level module (config, errors, ...),
    the top package itself or a module outside ``assistant`` -> None."""
    parts = module.split(".")
    if parts[0] != "assistant" or len(parts) < 2 or parts[1] not in packages:
        return None
    return parts[1]


def _layer(package: str) -> int | None:
    return next((i for i, names in enumerate(LAYERS) if package in names), None)


def package_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The loops of a package graph (``{package: packages it imports}``): each strongly connected
    group of more than one package, sorted (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(groups)


def _import_rules(rel: str, module: str, line: int, target: str) -> list[str]:
    where = f"{rel}:{line}"
    found = []
    if _under(target, "PySide6") and not _under(module, "assistant.gui"):
        found.append(f"{where}: Qt outside assistant/gui ({target})")
    if _under(target, "click") and not _under(module, "assistant.cli"):
        found.append(f"{where}: click outside assistant/cli ({target})")
    if _under(target, "tools"):
        found.append(f"{where}: the product imports a developer tool ({target})")
    if _under(target, "sqlite3") and not _under(module, "assistant.library"):
        found.append(f"{where}: SQL outside assistant/library ({target})")
    if _under(module, "assistant.inference") and any(
        _under(target, f"assistant.{layer}")
        for layer in ("library", "retrieval", "service", "gui", "cli", "lsp")
    ):
        found.append(f"{where}: inference imports {target}")
    entry_point = module == "assistant.__main__"  # `python -m assistant` runs the CLI
    if (
        not entry_point
        and not any(_under(module, f"assistant.{face}") for face in FACES)
        and any(_under(target, f"assistant.{face}") for face in FACES)
    ):
        found.append(f"{where}: the core imports a face ({target})")
    if (
        _under(module, "assistant.gui")
        and _under(target, "assistant")
        and not _allowed(target, GUI_ALLOWED)
    ):
        found.append(f"{where}: the GUI goes around the service ({target})")
    if (
        _under(module, "assistant.cli")
        and module not in CLI_DEV_MODULES
        and _under(target, "assistant")
        and not _allowed(target, CLI_ALLOWED)
        and not (module == CLI_LSP_LAUNCHER[0] and _under(target, CLI_LSP_LAUNCHER[1]))
    ):
        found.append(f"{where}: a product command goes around the service ({target})")
    return found


def _layer_rules(source: str | None, dest: str | None, where: str, module: str, target: str):
    if dest is None or source == dest:
        return []
    if source is None and module == "assistant.__main__":
        return []
    if source is None:  # a top-level module: the foundation imports no package
        return [f"{where}: the foundation module {module} imports a package ({target})"]
    mine, theirs = _layer(source), _layer(dest)
    if mine is None:
        return [f"{where}: package {source} is in no layer of LAYERS"]
    if theirs is not None and theirs > mine:
        return [f"{where}: {source} imports the higher layer {dest} ({target})"]
    return []


def _foundation(module: str, package: str | None) -> bool:
    """A top-level module of ``assistant`` (config, errors, textfile, ...), not a package."""
    return (
        package is None
        and module.startswith("assistant.")
        and module.count(".") == 1
        and not module.endswith("__")
    )


def violations(extra: dict[str, str] | None = None, real: bool = True) -> list[str]:
    """Every broken import rule as ``file:line: rule``; ``extra`` adds modules (path -> source)."""
    found = []
    graph: dict[str, set[str]] = defaultdict(set)
    first_edge: dict[tuple[str, str], str] = {}
    modules = _modules(extra or {}, real)
    packages = _packages(modules)
    for rel, module, _source, tree in modules:
        for line, target in _imports(module, tree, rel.endswith("__init__.py")):
            found += _import_rules(rel, module, line, target)
            source, dest = _package(module, packages), _package(target, packages)
            found += _layer_rules(source, dest, f"{rel}:{line}", module, target)
            if source and dest and source != dest:
                graph[source].add(dest)
                first_edge.setdefault((source, dest), f"{rel}:{line}")
            if _foundation(module, source) and _foundation(target, dest) and target != module:
                # the foundation modules: a loop between two of them is a cycle too
                graph[module].add(target)
                first_edge.setdefault((module, target), f"{rel}:{line}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                call = f"{node.value.id}.{node.attr}"
                dynamic = call in ("inspect.signature", "importlib.import_module")
                if dynamic and DYNAMIC_ALLOWED.get(rel) != call:
                    found.append(f"{rel}:{node.lineno}: {call} outside its documented place")
    for group in package_cycles(graph):
        ties = [
            f"{a} -> {b} ({first_edge[a, b]})" for a in group for b in group if (a, b) in first_edge
        ]
        what = "modules" if group[0].startswith("assistant.") else "packages"
        found.append(f"import cycle between {what} {', '.join(group)}: " + "; ".join(ties))
    return found


def _module_graph(modules) -> dict[str, dict[str, str]]:
    """``{module: {module it imports: "file:line"}}`` between modules of one package of
    ``assistant`` (``from pkg import mod`` ties to ``pkg.mod``, not to ``pkg/__init__``)."""
    names = {module for _rel, module, _source, _tree in modules}

    def resolve(target: str) -> str | None:
        while target and target not in names:
            target = target.rpartition(".")[0]
        return target or None

    graph: dict[str, dict[str, str]] = defaultdict(dict)
    for rel, module, _source, tree in modules:
        by_line: dict[int, set[str]] = defaultdict(set)
        for line, target in _imports(module, tree, rel.endswith("__init__.py")):
            found = resolve(target)
            if found and found != module and found.split(".")[:2] == module.split(".")[:2]:
                by_line[line].add(found)
        for line, found in by_line.items():
            for target in found:
                if any(_under(other, target) and other != target for other in found):
                    continue  # the package named only on the way to one of its modules
                graph[module].setdefault(target, f"{rel}:{line}")
    return graph


def module_cycles(extra: dict[str, str] | None = None, real: bool = True) -> list[str]:
    """Every loop of modules inside one package but those of ``ALLOWED_MODULE_CYCLES``, as
    ``import cycle between modules a, b: a -> b (file:line); ...``."""
    modules = [m for m in _modules(extra or {}, real) if m[0].count("/") >= 2]
    graph = _module_graph(modules)
    found = []
    for group in package_cycles({a: set(b) for a, b in graph.items()}):
        if tuple(group) in ALLOWED_MODULE_CYCLES:
            continue
        ties = [
            f"{a} -> {b} ({graph[a][b]})" for a in group for b in group if b in graph.get(a, {})
        ]
        found.append(f"import cycle between modules {', '.join(group)}: " + "; ".join(ties))
    return found


def sql_outside_library(extra: dict[str, str] | None = None, real: bool = True) -> list[str]:
    """Every ``.execute(`` / ``.executemany(`` / ``.executescript(`` call and ``sqlite3`` import
    outside ``assistant/library`` (``tools/`` included, but ``SQL_ALLOWED_TOOLS``) as
    ``file:line: ...``."""
    found = []
    modules = {m[0]: m for m in _tree(TOOLS)} if real else {}
    modules.update({m[0]: m for m in _modules(extra or {}, real)})
    for rel, module, _source, tree in modules.values():
        if _under(module, "assistant.library") or rel in SQL_ALLOWED_TOOLS:
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in SQL_CALLS
            ):
                found.append(
                    f"{rel}:{node.lineno}: SQL outside assistant/library (.{node.func.attr})"
                )
        for line, target in _imports(module, tree):
            if _under(target, "sqlite3"):
                found.append(f"{rel}:{line}: SQL outside assistant/library (import {target})")
    return found


def _has_reason(lines: list[str], func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A ``# long: <reason>`` comment between the signature and the first statement (the
    docstring counts as the top)."""
    body = func.body
    first = body[1] if len(body) > 1 and _is_docstring(body[0]) else body[0]
    for text in lines[func.lineno : first.lineno]:
        stripped = text.strip()
        if stripped.startswith(LONG_MARK) and stripped[len(LONG_MARK) :].strip():
            return True
    return False


def _is_docstring(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def size_violations(extra: dict[str, str] | None = None, real: bool = True) -> list[str]:
    """Modules over ``MAX_MODULE_LINES`` and functions over ``MAX_FUNCTION_LINES`` (def line to
    last line) without a ``# long:`` reason, as ``file:line: ...``."""
    found = []
    for rel, _module, source, tree in _modules(extra or {}, real):
        lines = source.splitlines()
        if len(lines) > MAX_MODULE_LINES:
            found.append(f"{rel}:1: module of {len(lines)} lines (> {MAX_MODULE_LINES})")
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            length = node.end_lineno - node.lineno + 1
            if length > MAX_FUNCTION_LINES and not _has_reason(lines, node):
                found.append(
                    f"{rel}:{node.lineno}: function {node.name} of {length} lines "
                    f"(> {MAX_FUNCTION_LINES}) without a '{LONG_MARK} <reason>' line at its top"
                )
    return found


# --- the rules on the real tree ------------------------------------------------------------------
def test_the_layer_rules_hold():
    assert violations() == []


def test_no_module_cycles_inside_a_package():
    assert module_cycles() == []


def test_the_incremental_index_pass_calling_build_index_back_is_a_cycle():
    """The index job's steps live in ``index_steps``, so ``index_update`` (the incremental pass,
    which ``index`` calls) needs nothing from ``index``: importing it again, even inside a
    function, is the loop the split removed and is reported."""
    rel = "assistant/retrieval/index_update.py"
    source = (PACKAGE.parent / rel).read_text(encoding="utf-8")
    found = module_cycles(
        {rel: source + "\n\ndef f():\n    from assistant.retrieval import index\n"}
    )
    assert [v for v in found if "assistant.retrieval.index, assistant.retrieval.index_update" in v]


def test_every_allowed_module_cycle_is_still_there():
    """An entry of ``ALLOWED_MODULE_CYCLES`` whose loop is gone is removed from the list."""
    modules = [m for m in _modules({}) if m[0].count("/") >= 2]
    graph = _module_graph(modules)
    loops = {tuple(g) for g in package_cycles({a: set(b) for a, b in graph.items()})}
    assert [c for c in ALLOWED_MODULE_CYCLES if c not in loops] == []


def test_no_sql_outside_the_library():
    """Acceptance of issue 33: ``grep -rn "execute(" assistant | grep -v "^assistant/library/"``
    finds nothing (holds once the library owns every statement)."""
    assert sql_outside_library() == []


def _top_packages() -> list[str]:
    return sorted({p.parent.relative_to(PACKAGE).parts[0] for p in PACKAGE.glob("*/__init__.py")})


@pytest.mark.parametrize("package", ["(top-level modules)", *_top_packages()])
def test_size_rules_hold(package):
    """Per package, so that a failure names the part of the tree it is in."""

    def part(violation: str) -> str:
        path = violation.split(":", 1)[0].split("/")
        return path[1] if len(path) > 2 else "(top-level modules)"

    assert [v for v in size_violations() if part(v) == package] == []


# --- each rule fails on a bad case ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("rel", "source", "rule"),
    [
        ("retrieval/fake_rule.py", "import click\n", "click outside assistant/cli"),
        ("inference/fake_rule.py", "from assistant.library.store import Library\n", "inference"),
        ("gui/fake_rule.py", "from assistant.retrieval.pipeline import Recommender\n", "GUI"),
        ("service/fake_rule.py", "from PySide6.QtCore import Qt\n", "Qt outside"),
        ("documents/fake_rule.py", "from PySide6 import QtWidgets\n", "Qt outside"),
        (
            "retrieval/fake_rule.py",
            "from assistant.gui.app import main\n",
            "the core imports a face",
        ),
        ("library/fake_rule.py", "from assistant.cli import main\n", "the core imports a face"),
        (
            "library/fake_rule.py",
            "import importlib\nimportlib.import_module('x')\n",
            "import_module",
        ),
        ("cli/fake_rule.py", "from tools.gui_check import main\n", "developer tool"),
        ("retrieval/fake_rule.py", "import sqlite3\n", "SQL outside assistant/library"),
        (
            "cli/fake_rule.py",
            "from assistant.library.manager import LibraryManager\n",
            "a product command goes around the service",
        ),
        ("cli/fake_rule.py", "from assistant.lsp.server import create_server\n", "around"),
        (
            "documents/fake_rule.py",
            "from assistant.retrieval.query import Query\n",
            "documents imports the higher layer retrieval",
        ),
        (
            "library/fake_rule.py",
            "from ..service import Service\n",
            "library imports the higher layer service",
        ),
        ("fake_rule.py", "from assistant.library.store import Library\n", "foundation module"),
        ("newpkg/fake_rule.py", "from assistant.library import store\n", "in no layer"),
    ],
)
def test_a_broken_rule_is_reported_with_file_and_line(rel, source, rule):
    found = violations({f"assistant/{rel}": source}, real=False)
    assert any(f"assistant/{rel}:" in v and rule in v for v in found), found


@pytest.mark.parametrize(
    ("rel", "source"),
    [
        ("cli/bench.py", "from assistant.inference.bench import run_encode_bench\n"),
        ("cli/lsp.py", "from assistant.lsp.server import create_server\n"),
        ("cli/fake_rule.py", "from assistant.service.library import LibraryManager\n"),
        ("gui/fake_rule.py", "from assistant.service import Service\n"),
        ("library/fake_rule.py", "import sqlite3\nconn.execute('SELECT 1')\n"),
        ("retrieval/fake_rule.py", "from assistant.library.store import Library\n"),
        ("training/fake_rule.py", "from assistant.evaluation.metrics import query_metrics\n"),
    ],
)
def test_an_allowed_import_is_not_reported(rel, source):
    found = violations({f"assistant/{rel}": source}, real=False)
    found += sql_outside_library({f"assistant/{rel}": source}, real=False)
    assert found == []


def test_a_cycle_of_packages_is_found_in_a_fake_module_graph(monkeypatch):
    """Two fake packages of one layer that import each other (the layer rule cannot see it)."""
    monkeypatch.setattr(sys.modules[__name__], "LAYERS", (*LAYERS, ("alpha", "beta")))
    found = violations(
        {
            "assistant/alpha/a.py": "from assistant.beta.b import B\n",
            "assistant/beta/b.py": "from ..alpha import a\n",
            "assistant/beta/__init__.py": "",
            "assistant/alpha/__init__.py": "",
        },
        real=False,
    )
    assert any(
        "import cycle between packages alpha, beta" in v
        and "alpha -> beta (assistant/alpha/a.py:1)" in v
        for v in found
    ), found


def test_a_cycle_of_foundation_modules_is_found():
    found = violations(
        {
            "assistant/fake_a.py": "from assistant.fake_b import x\n",
            "assistant/fake_b.py": "def f():\n    from assistant import fake_a\n",
        },
        real=False,
    )
    assert any(
        "import cycle between modules assistant.fake_a, assistant.fake_b" in v for v in found
    ), found


def test_a_cycle_of_modules_inside_a_package_is_found():
    """A loop hidden by a function-level import, and one through ``from pkg import mod``."""
    found = module_cycles(
        {
            "assistant/retrieval/fake_a.py": "from assistant.retrieval.fake_b import B\n",
            "assistant/retrieval/fake_b.py": "def f():\n    from assistant.retrieval import fake_a\n",
            "assistant/documents/fake_c.py": "from . import fake_d\n",
            "assistant/documents/fake_d.py": "import assistant.documents.fake_c\n",
            "assistant/library/fake_e.py": "from assistant.retrieval import fake_a\n",
        },
        real=False,
    )
    assert found == [
        "import cycle between modules assistant.documents.fake_c, assistant.documents.fake_d: "
        "assistant.documents.fake_c -> assistant.documents.fake_d "
        "(assistant/documents/fake_c.py:1); assistant.documents.fake_d -> "
        "assistant.documents.fake_c (assistant/documents/fake_d.py:1)",
        "import cycle between modules assistant.retrieval.fake_a, assistant.retrieval.fake_b: "
        "assistant.retrieval.fake_a -> assistant.retrieval.fake_b "
        "(assistant/retrieval/fake_a.py:1); assistant.retrieval.fake_b -> "
        "assistant.retrieval.fake_a (assistant/retrieval/fake_b.py:2)",
    ]


def test_a_module_importing_its_own_package_is_no_cycle_with_a_sibling():
    """``from assistant.retrieval import fake_b`` ties fake_a to fake_b only (not to the
    package's ``__init__``, which imports fake_a here); a one-way chain is no loop."""
    found = module_cycles(
        {
            "assistant/retrieval/__init__.py": "from assistant.retrieval.fake_a import A\n",
            "assistant/retrieval/fake_a.py": "from assistant.retrieval import fake_b\n",
            "assistant/retrieval/fake_b.py": "import numpy\n",
        },
        real=False,
    )
    assert found == []


def test_package_cycles_are_every_loop_and_only_loops():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a", "e"}, "e": {"d"}, "f": {"a"}}
    assert package_cycles(graph) == [["a", "b", "c"], ["d", "e"]]
    assert package_cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


@pytest.mark.parametrize(
    ("source", "bad"),
    [
        ("conn.execute('SELECT 1')\n", ".execute"),
        ("self.db.conn.executemany('INSERT', rows)\n", ".executemany"),
        ("import sqlite3\n", "import sqlite3"),
        ("from sqlite3 import connect\n", "import sqlite3"),
    ],
)
@pytest.mark.parametrize("rel", ["assistant/lsp/fake_rule.py", "tools/fake_rule.py"])
def test_sql_outside_the_library_is_reported(source, bad, rel):
    found = sql_outside_library({rel: source}, real=False)
    assert found and all(f.startswith(f"{rel}:1:") for f in found), found
    assert any(bad in f for f in found), found


def test_the_tools_sql_rule_reads_the_real_tools():
    """The rule sees tools/ (a raw statement there is found) and lets the listed harness be."""
    source = "def ids(lib):\n    return lib.conn.execute('SELECT id FROM papers')\n"
    found = sql_outside_library({"tools/acm_stats.py": source})
    assert found == ["tools/acm_stats.py:2: SQL outside assistant/library (.execute)"]
    assert sql_outside_library({"tools/reliability/runner.py": source}) == []


def _function(lines: int, top: str = "") -> str:
    body = "".join(f"    x{i} = {i}\n" for i in range(lines - 3 - bool(top)))
    return f"def f():\n{top}    '''Doc.'''\n{body}    return 0\n"


def test_a_long_function_needs_a_reason_at_its_top():
    rel = "assistant/evaluation/fake_rule.py"
    assert size_violations({rel: _function(80)}, real=False) == []
    found = size_violations({rel: _function(81)}, real=False)
    assert found == [
        f"{rel}:1: function f of 81 lines (> 80) without a '# long: <reason>' line at its top"
    ]
    reason = "    # long: one table of cases, read top to bottom\n"
    assert size_violations({rel: _function(81, reason)}, real=False) == []
    assert size_violations({rel: _function(81, "    # long:\n")}, real=False) == found
    late = _function(81)
    late = late.replace("    x5 = 5\n", "    # long: too late, not at the top\n    x5 = 5\n")
    assert size_violations({rel: late}, real=False)


def test_a_long_module_is_reported():
    rel = "assistant/library/fake_rule.py"
    assert size_violations({rel: "x = 1\n" * 600}, real=False) == []
    assert size_violations({rel: "x = 1\n" * 601}, real=False) == [
        f"{rel}:1: module of 601 lines (> 600)"
    ]
