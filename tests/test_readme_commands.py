"""Every command in README's command table exists: ``assistant <words> --help`` exits 0."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from assistant.cli import main

README = Path(__file__).resolve().parent.parent / "README.md"


def _table_commands() -> list[tuple[str, ...]]:
    """Command words of each table row: ``assistant train reranker / encoder`` gives two."""
    text = README.read_text(encoding="utf-8")
    table = text.split("## Command line", 1)[1].split("\n\n## ", 1)[0]
    found: list[tuple[str, ...]] = []
    for row in table.splitlines():
        if not row.startswith("| `assistant "):
            continue
        spans = re.findall(r"`([^`]*)`", re.split(r"(?<!\\)\|", row)[1])
        # "`assistant library show KEY` / `edit KEY`": a later span continues the first's group
        group_word = spans[0].removeprefix("assistant ").split()[0]
        cells = [spans[0].removeprefix("assistant ")] + [
            s if s.split()[0] == group_word else f"{group_word} {s}" for s in spans[1:]
        ]
        for cell in cells:
            first = cell.split("/")[0].split()
            group = [w for w in first if re.fullmatch(r"[a-z][a-z-]*", w)]
            words = (
                group[:2]
                if group[0] in {"library", "models", "train", "eval", "bench"}
                else group[:1]
            )
            found.append(tuple(words))
            for alt in cell.split("/")[1:]:  # "train reranker / encoder / intent", "eval pdf DIR"
                alt_words = [w for w in alt.split() if re.fullmatch(r"[a-z][a-z-]*", w)]
                if alt_words and alt_words[0] == words[0]:
                    alt_words = alt_words[1:]
                if alt_words:
                    found.append((words[0], alt_words[0]))
    return sorted(set(found))


def test_readme_table_is_read():
    commands = _table_commands()
    assert ("library", "import") in commands and ("recommend",) in commands
    assert ("train", "encoder") in commands and ("bench", "query") in commands
    assert len(commands) >= 15


@pytest.mark.parametrize("words", _table_commands(), ids=" ".join)
def test_readme_command_has_help(words):
    result = CliRunner().invoke(main, [*words, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output
