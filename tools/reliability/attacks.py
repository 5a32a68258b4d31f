"""Received files as an attacker writes them, and links / special files at every write target.

Each case builds its own world in a fresh folder: a temporary HOME with a ``.bashrc`` and a
``.profile`` (the files an attacker aims at), the user's data dir, a library (possibly received,
with planted ``auto_exports`` rows and a field holding ``\\n touch $HOME/PWNED \\n``) and a
manuscript folder. The child process runs one real entry point (a CLI command, or the ``.bib``
write the GUI's Ctrl+S and the language server use) with the network blocked.

Counted besides the runner's crashes, hangs, lost records and network calls:

- **files written outside targets**: every file under the case folder is fingerprinted (type,
  link target, bytes) before and after; a change anywhere but the case's declared targets, the
  library's own files and the program's data dir counts;
- **code executions**: the HOME's start-up files are then run by ``bash`` (as the next shell
  would) and any ``PWNED`` file counts.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import stat
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

BASHRC = "# the user's shell start-up\nexport CITE_ASSIST_TEST=1\n"
EVIL = "x\n touch {home}/PWNED \ny"
GOOD_BIB = "@article{{mine{n}, title={{My own paper {n}}}, author={{Doe, Jane}}, year={{2021}}}}\n"


@dataclass
class World:
    root: Path
    home: Path
    data: Path
    db: Path
    manuscript: Path
    targets: list[Path] = field(default_factory=list)  # files the case may write


@dataclass
class AttackCase:
    name: str
    category: str
    setup: Callable[[World], None]
    #: CLI arguments (``{db}``, ``{home}``, ``{ms}``, ``{root}`` filled in) or a callable run in
    #: the child with the world (an AssistantError it raises is a clean refusal)
    action: list[str] | Callable[[World], None]
    good: list[str] = field(default_factory=list)


def make_world(root: Path) -> World:
    home, data, ms = root / "home", root / "home" / "appdata", root / "manuscript"
    for folder in (home, data, ms):
        folder.mkdir(parents=True, exist_ok=True)
    (home / ".bashrc").write_text(BASHRC)
    (home / ".profile").write_text(BASHRC)
    (home / "notes.txt").write_text("the user's own notes\n")
    (ms / "paper.tex").write_text("\\documentclass{article}\nAs shown \\cite{old}.\n")
    (ms / "refs.bib").write_text("@article{old, title={Old entry}, author={A, B}, year={2019}}\n")
    (root / "mine.bib").write_text(GOOD_BIB.format(n=1))
    return World(root, home, data, root / "lib.sqlite", ms)


def _plant(world: World, targets: list[str], evil: bool = True) -> None:
    """The received library: an evil field and ``auto_exports`` rows written with plain SQL."""
    from assistant.library.models import Paper
    from assistant.library.store import Library

    lib = Library(world.db)
    lib.add_paper(Paper(title="Committed paper one", authors=["Doe, Jane"], year=2019))
    note = EVIL.format(home=world.home) if evil else "plain"
    lib.add_paper(
        Paper(title="Planted paper", authors=["Mallory, M."], year=2020, extra={"note": note})
    )
    with lib.transaction():
        for target in targets:
            lib.conn.execute(
                "INSERT OR IGNORE INTO auto_exports (path, collection_id, format) VALUES (?, NULL, ?)",
                (target, "bibtex"),
            )
    lib.close()


def _library(world: World) -> None:
    _plant(world, [], evil=True)


def _received(extra: Callable[[World], list[str]] = lambda w: []):
    def setup(world: World) -> None:
        h = world.home
        _plant(
            world,
            [
                str(h / ".bashrc"),
                str(h / ".profile"),
                str(h / "notes.txt"),
                f"{world.db}-wal",
                f"{world.db}-shm",
                f"{world.db}-journal",
                str(world.db),
                f"{world.db}.index/meta.json",
                "~/.bashrc",  # as written, never expanded
                "startup.sh",  # relative: would land wherever the program runs
                *extra(world),
            ],
        )

    return setup


def _append_bib(world: World) -> None:
    """What Insert + Ctrl+S (GUI) and the language server do to a manuscript's ``.bib``."""
    from assistant.service import write_pending_entries

    entry = "@article{new, title={New entry}, author={C, D}, year={2020}}\n"
    doc = (world.manuscript / "paper.tex").read_text() + "And \\cite{new}.\n"
    write_pending_entries(world.manuscript / "refs.bib", {"new": entry}, doc, "latex")


def _special(kind: str, victim: Callable[[World], Path]):
    """Put ``kind`` (link to the victim, link to /dev/zero, dangling link, FIFO, folder) at
    the path ``victim(world)`` names."""

    def make(world: World) -> None:
        path = victim(world)
        if path.is_symlink() or path.is_file():
            path.unlink()
        if kind == "link":
            path.symlink_to(world.home / ".bashrc")
        elif kind == "devzero":
            path.symlink_to("/dev/zero")
        elif kind == "dangling":
            path.symlink_to(world.home / "nowhere" / "x")
        elif kind == "fifo":
            os.mkfifo(path)
        elif kind == "folder":
            path.mkdir()

    return make


def _may_write(where: Callable[[World], Path]):
    """Declare a file the case's action may legitimately write (the user's own save target)."""

    def declare(world: World) -> None:
        world.targets.append(where(world))

    return declare


def _save_target(world: World) -> Path:
    return world.manuscript / "refs.bib"


def _both(*steps):
    def setup(world: World) -> None:
        for step in steps:
            step(world)

    return setup


def generate() -> list[AttackCase]:
    cases = [
        AttackCase(
            "received-library-import",
            "received-library",
            _received(),
            ["--db", "{db}", "library", "import", "--workers", "1", "-q", "{root}/mine.bib"],
            ["My own paper 1", "Planted paper"],
        ),
        AttackCase(
            "received-library-edit",
            "received-library",
            _received(),
            ["--db", "{db}", "library", "edit", "1", "--set", "year=2018"],
            ["Planted paper"],
        ),
        AttackCase(
            "received-library-list",
            "received-library",
            _received(),
            ["--db", "{db}", "library", "auto-export", "--list"],
            ["Planted paper"],
        ),
        AttackCase(
            "received-library-confirm-dotfile",
            "received-library",
            _received(),
            ["--db", "{db}", "library", "auto-export", "--confirm", "{home}/.bashrc"],
            ["Planted paper"],
        ),
        AttackCase(
            "received-manuscript-bak-link",
            "received-manuscript",
            # the save writes refs.bib (no backup is made): never through the planted .bak link
            _both(
                _library,
                _special("link", lambda w: w.manuscript / "refs.bib.bak"),
                _may_write(_save_target),
            ),
            _append_bib,
        ),
        AttackCase(
            "received-manuscript-bib-link",
            "received-manuscript",
            _both(_library, _special("link", lambda w: w.manuscript / "refs.bib")),
            _append_bib,
        ),
    ]
    write_targets: dict[str, tuple[Callable[[World], Path], list[str] | Callable]] = {
        "export": (
            lambda w: w.root / "out.bib",
            ["--db", "{db}", "library", "export", "--output", "{root}/out.bib"],
        ),
        "auto-export": (
            lambda w: w.root / "sync.bib",
            ["--db", "{db}", "library", "auto-export", "{root}/sync.bib"],
        ),
        "bib": (lambda w: w.manuscript / "refs.bib", _append_bib),
        "bak": (lambda w: w.manuscript / "refs.bib.bak", _append_bib),
        "unmatched-bib": (
            lambda w: w.root / "unmatched.bib",
            [
                "--db",
                "{db}",
                "manuscript",
                "{ms}/paper.tex",
                "--no-recommend",
                "--unmatched-bib",
                "{root}/unmatched.bib",
            ],
        ),
    }
    for target, (where, action) in write_targets.items():
        for kind in ("link", "devzero", "dangling", "fifo", "folder"):
            cases.append(
                AttackCase(
                    f"{target}-{kind}",
                    "write-targets",
                    _both(
                        _library,
                        _special(kind, where),
                        *([_may_write(_save_target)] if target == "bak" else []),
                    ),
                    action,
                    ["Planted paper"],
                )
            )
    for suffix in ("-wal", "-shm", "-journal"):
        cases.append(
            AttackCase(
                f"export-onto-library{suffix}",
                "write-targets",
                _library,
                ["--db", "{db}", "library", "export", "--output", "{db}" + suffix],
                ["Planted paper"],
            )
        )
    return cases


def fill(args: list[str], world: World) -> list[str]:
    values = {"db": world.db, "home": world.home, "ms": world.manuscript, "root": world.root}
    return [a.format(**values) for a in args]


def env_for(world: World) -> dict[str, str]:
    return {
        "HOME": str(world.home),
        "ASSISTANT_HOME": str(world.data),
        "ASSISTANT_DB": str(world.db),
        "XDG_CONFIG_HOME": str(world.data / "config"),
    }


def fingerprint(root: Path) -> dict[str, str]:
    """``{path: what is there}`` for everything under ``root`` (links are not followed)."""
    out: dict[str, str] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                out[path] = "link:" + os.readlink(path)
            elif stat.S_ISREG(st.st_mode):
                with open(path, "rb") as fh:
                    out[path] = "file:" + hashlib.sha256(fh.read()).hexdigest()
            elif stat.S_ISDIR(st.st_mode):
                out[path] = "dir"
            else:
                out[path] = f"special:{stat.S_IFMT(st.st_mode)}"
    return out


def written_outside(world: World, before: dict[str, str], after: dict[str, str]) -> list[str]:
    allowed = [str(world.db) + s for s in ("", "-wal", "-shm", "-journal")]
    allowed += [str(p) for p in world.targets]
    own = [str(world.data), f"{world.db}.index", str(world.root / "_run")]
    changed = []
    for path in sorted(set(before) | set(after)):
        if before.get(path) == after.get(path) or path in allowed:
            continue
        if any(path == o or path.startswith(o + os.sep) for o in own):
            continue
        if before.get(path) == "dir" and after.get(path) == "dir":
            continue
        changed.append(path)
    return changed


def code_executed(world: World) -> int:
    """Run the HOME's start-up files as the next shell would; count the PWNED markers."""
    for start in (".bashrc", ".profile"):
        script = world.home / start
        if script.is_file() and not script.is_symlink():
            try:  # an interactive shell goes on after a syntax error: feed it line by line
                with open(script, "rb") as stdin:
                    subprocess.run(
                        ["bash", "--norc", "--noprofile", "-i"],
                        cwd=world.root,
                        env={"HOME": str(world.home), "PATH": os.environ.get("PATH", "")},
                        stdin=stdin,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                        timeout=10,
                        check=False,
                        start_new_session=True,  # never touches the caller's terminal
                    )
            except (OSError, subprocess.TimeoutExpired):
                pass
    return sum(1 for _ in world.root.rglob("PWNED"))


def integrity(db: Path) -> str:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    except sqlite3.Error as exc:
        return str(exc)
    finally:
        conn.close()
