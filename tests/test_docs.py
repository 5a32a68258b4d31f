"""The documentation matches the code (in the style of sqlite-utils' ``test_docs.py``).

- Every command of the CLI (the click group walked, hidden ones left out) is documented: in
  README's command table or as ``assistant <words>`` in ``docs/*.md``.
- Every repository path the docs name (README, ``docs/*.md``, ``assistant/models/README*`` and the
  model cards) exists.
- Every default the docs state matches the code: ``PipelineConfig``'s defaults, the default fusion,
  the token length the index embeds, the shipped reranker's weight and head.
"""

from __future__ import annotations

import json
import re
from dataclasses import fields
from pathlib import Path

import click
import pytest
from test_readme_commands import _table_commands

from assistant.cli import main

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted(
    [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "assistant/models").rglob("*.md")]
)
#: the first segment of a path the docs name: a top folder of the repository or of ``assistant``
TOP_FOLDERS = ("assistant", "tools", "tests", "docs", "packaging", ".ci")


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


# --- every command is documented ------------------------------------------------------------------
def cli_commands(group: click.Group = main, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command path of the CLI (groups walked; a group with its own action counts too)."""
    ctx = click.Context(group)
    found = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        path = (*prefix, name)
        if isinstance(command, click.Group):
            found += cli_commands(command, path)
            if command.invoke_without_command:
                found.append(path)
        else:
            found.append(path)
    return found


def undocumented(
    commands, table: set[tuple[str, ...]], rows: list[str], texts: list[str]
) -> list[str]:
    """The commands neither in README's table (a sub-command of a group in the table is named in
    the group's row: ``trash [list|restore KEY...|empty]``) nor named ``assistant <words>`` in a
    document."""
    missing = []
    for path in commands:
        words = " ".join(path)
        if tuple(path) in table or any(f"assistant {words}" in text for text in texts):
            continue
        parent = tuple(path[:-1])
        if parent in table and any(
            row.startswith(f"| `assistant {' '.join(parent)}")
            or (f"`{' '.join(parent[1:])} " in row and f"assistant {parent[0]} " in row)
            for row in rows
            if re.search(rf"\b{re.escape(path[-1])}\b", row)
        ):
            continue
        missing.append(words)
    return missing


def _table_rows() -> list[str]:
    return [r for r in _text(ROOT / "README.md").splitlines() if r.startswith("| `assistant ")]


def test_cli_is_walked():
    commands = cli_commands()
    assert ("library", "import") in commands and ("recommend",) in commands
    assert ("eval", "acm-cr") in commands and ("models", "build") in commands


def test_every_cli_command_is_documented():
    texts = [_text(p) for p in DOCS if p.parent.name == "docs"]
    assert undocumented(cli_commands(), set(_table_commands()), _table_rows(), texts) == []


def test_an_undocumented_command_is_reported():
    @click.group()
    def fake():
        pass

    @fake.command("frobnicate")
    def _frob():
        pass

    @fake.command("index")
    def _index():
        pass

    @fake.group("trash")
    def trash():
        pass

    @trash.command("empty")
    def _empty():
        pass

    @trash.command("list")
    def _list():
        pass

    commands = cli_commands(fake)
    assert commands == [("frobnicate",), ("index",), ("trash", "empty"), ("trash", "list")]
    table = {("index",), ("trash",)}
    rows = ["| `assistant trash [list]` | the trash |"]
    assert undocumented(commands, table, rows, ["nothing here"]) == ["frobnicate", "trash empty"]
    assert undocumented(commands, set(), [], ["run `assistant frobnicate`"]) == [
        "index",
        "trash empty",
        "trash list",
    ]


# --- every path named exists ---------------------------------------------------------------------
_SPAN = re.compile(r"`([^`\n]+)`|\]\(([^)\s]+)\)")  # `code` spans and markdown link targets
_PLAIN_PY = re.compile(r"(?<![\w/.`-])([a-z_][a-z0-9_]*\.py)\b")  # a bare file name in prose
#: folder names of the product and the tools (``importers/x`` is a path inside ``assistant``)
_FOLDERS = frozenset(
    p.name for top in ("assistant", "tools") for p in (ROOT / top).rglob("*") if p.is_dir()
) - {"__pycache__"}


def named_paths(text: str) -> list[str]:
    """The repository paths a document names: spans like ``assistant/x.py``, ``tools/y.py``,
    ``lsp/server.py`` (a path inside ``assistant``) or a bare ``name.py``. Placeholders, globs,
    user-data paths and URLs are not paths of the repository and are left out."""
    found = []
    for match in _SPAN.finditer(text):
        span = (match.group(1) or match.group(2) or "").strip().rstrip(".,;:")
        for token in span.split():
            token = token.strip("()[]'\",;:").split("#")[0].split(":")[0]
            if not token or re.search(r"[<>$*{}~=|]|://|\.\.|^-|^/", token):
                continue
            first = token.split("/")[0]
            if ("/" in token and (first in TOP_FOLDERS or first in _FOLDERS)) or (
                "/" not in token and re.fullmatch(r"[a-z_][a-z0-9_]*\.py", token)
            ):
                found.append(token)
    prose = _SPAN.sub(" ", text)
    found += [m.group(1) for m in _PLAIN_PY.finditer(prose)]
    return found


def missing_paths(names: list[str], files: set[str]) -> list[str]:
    """The names that no file or folder of ``files`` (repository-relative paths) is: a path is
    found when a file or folder ends with it (``lsp/server.py`` is ``assistant/lsp/server.py``)."""
    folders = {str(Path(f).parents[i]) for f in files for i in range(len(Path(f).parts) - 1)}
    known = files | folders

    def exists(name: str) -> bool:
        name = name.rstrip("/")
        return any(k == name or k.endswith("/" + name) for k in known)

    return sorted({n for n in names if not exists(n)})


def _repo_files() -> set[str]:
    skip = {".git", ".venv", "__pycache__", "node_modules", ".ruff_cache", ".pytest_cache"}
    return {
        p.relative_to(ROOT).as_posix()
        for p in ROOT.rglob("*")
        if p.is_file() and not skip.intersection(p.relative_to(ROOT).parts)
    }


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_path_named_in_the_docs_exists(doc):
    assert missing_paths(named_paths(_text(doc)), _repo_files()) == []


def test_a_stale_path_is_reported():
    text = (
        "Layout: `assistant/lsp/server.py`, `lsp/commands.py`, `importers/folder`, "
        "`cli.py`, [guide](docs/EDITORS.md), `<db>.index/`, `$ASSISTANT_HOME/gui.ini`; "
        "(library, gui, main.py)."
    )
    names = named_paths(text)
    assert names == [
        "assistant/lsp/server.py",
        "lsp/commands.py",
        "importers/folder",
        "cli.py",
        "docs/EDITORS.md",
        "main.py",
    ], names
    files = {"assistant/lsp/server.py", "assistant/lsp/commands.py", "docs/EDITORS.md"}
    assert missing_paths(names, files) == ["cli.py", "importers/folder", "main.py"]


# --- every default stated matches the code --------------------------------------------------------
def stated_defaults(architecture: str, models_readme: str, reranker_card: str) -> dict:
    """The defaults the docs state, by name (a name missing from the docs is not in the dict)."""
    stated: dict = {}
    block = re.search(r"class PipelineConfig:(.*?)\n\s*@dataclass", architecture, re.S)
    if block:
        for name, value in re.findall(r"\b(\w+)=([^,\s]+)", block.group(1)):
            stated[f"PipelineConfig.{name}"] = value
    match = re.search(r"Default fusion is\s+`\"(\w+)\"`", architecture)
    if match:
        stated["default fusion"] = match.group(1)
    for where, text in (("ARCHITECTURE", architecture), ("models README", models_readme)):
        for value in re.findall(r"index embeds (\d+) tokens", text) + re.findall(
            r"`assistant\s+index` embeds documents at (\d+)", text
        ):
            stated.setdefault(f"index tokens ({where})", set()).add(int(value))
        for value in re.findall(r":L(\d+)`", text):
            stated.setdefault(f"index tokens ({where})", set()).add(int(value))
    match = re.search(r"shipped ON: weight ([\d.]+), top (\d+)", reranker_card)
    if match:
        stated["reranker weight"] = {float(match.group(1))}
        stated["reranker head"] = {int(match.group(2))}
    match = re.search(r"`rerank_weight: ([\d.]+)`, `rerank_top: (\d+)`", reranker_card)
    if match:
        stated.setdefault("reranker weight", set()).add(float(match.group(1)))
        stated.setdefault("reranker head", set()).add(int(match.group(2)))
    return stated


def default_mismatches(stated: dict) -> list[str]:
    """``name: docs say X, the code has Y`` for every stated default the code does not have."""
    from assistant.retrieval.index import DEFAULT_MAX_LENGTH
    from assistant.retrieval.pipeline import PipelineConfig

    config = PipelineConfig()
    manifest = json.loads(_text(ROOT / "assistant/models/reranker-minilm/manifest.json"))
    names = {f.name for f in fields(PipelineConfig)}
    wrong = []
    for name, said in stated.items():
        if name.startswith("PipelineConfig."):
            field = name.split(".", 1)[1]
            if field not in names:
                wrong.append(f"{name}: no such field")
                continue
            if said in ("str|None", "str", "None") and getattr(config, field) is None:
                continue
            try:
                value = eval(said, {})  # a literal of the docs' code block: 10, "rrf", (), True
            except Exception:
                continue  # a type, not a value (reranker: str|None)
            if value != getattr(config, field):
                wrong.append(f"{name}: docs say {said}, the code has {getattr(config, field)!r}")
        elif name == "default fusion" and said != config.fusion:
            wrong.append(f"{name}: docs say {said}, the code has {config.fusion}")
        elif name.startswith("index tokens") and said != {DEFAULT_MAX_LENGTH}:
            wrong.append(f"{name}: docs say {sorted(said)}, the code has {DEFAULT_MAX_LENGTH}")
        elif name == "reranker weight" and said != {manifest["rerank_weight"]}:
            wrong.append(f"{name}: docs say {sorted(said)}, manifest {manifest['rerank_weight']}")
        elif name == "reranker head" and said != {manifest["rerank_top"]}:
            wrong.append(f"{name}: docs say {sorted(said)}, manifest {manifest['rerank_top']}")
    return wrong


def _doc_defaults() -> dict:
    return stated_defaults(
        _text(ROOT / "docs/ARCHITECTURE.md"),
        _text(ROOT / "assistant/models/README.md"),
        _text(ROOT / "assistant/models/reranker-minilm/MODEL_CARD.md"),
    )


def test_the_defaults_are_read_from_the_docs():
    stated = _doc_defaults()
    for name in (
        "PipelineConfig.k",
        "PipelineConfig.fusion",
        "default fusion",
        "index tokens (ARCHITECTURE)",
        "index tokens (models README)",
        "reranker weight",
        "reranker head",
    ):
        assert name in stated, (name, stated)


def test_every_default_stated_in_the_docs_matches_the_code():
    assert default_mismatches(_doc_defaults()) == []


def test_a_stale_default_is_reported():
    architecture = (
        '  class PipelineConfig: k=10, candidates=100, fusion="rrf",\n  @dataclass\n'
        'the default index embeds 128 tokens per paper. Default fusion is `"rrf"`.'
    )
    models = "`assistant index` embeds documents at 128; fingerprint (`minilm:int8:<sha>:L128`)"
    card = "# reranker-minilm (shipped ON: weight 0.5, top 20)"
    wrong = default_mismatches(stated_defaults(architecture, models, card))
    assert any(w.startswith('PipelineConfig.fusion: docs say "rrf"') for w in wrong), wrong
    assert any(w.startswith("default fusion: docs say rrf") for w in wrong), wrong
    assert any(w.startswith("index tokens (ARCHITECTURE): docs say [128]") for w in wrong), wrong
    assert any(w.startswith("index tokens (models README): docs say [128]") for w in wrong), wrong
    assert any(w.startswith("reranker weight: docs say [0.5]") for w in wrong), wrong
    assert not any(w.startswith(("PipelineConfig.k", "reranker head")) for w in wrong), wrong
