"""Which auto-export targets the user confirmed on this machine, and which paths never are.

A library file can come from someone else, and its ``auto_exports`` rows with it; a row only
names a file the program may overwrite once the user confirmed it here. Confirmations are kept
outside every library, in ``<data dir>/auto-export-confirmations.json``, keyed by the library's
absolute path and the target's path: a copied or received library starts with none.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from assistant import filewrite
from assistant.config import data_dir

STORE_NAME = "auto-export-confirmations.json"
#: Folders of the system (and the platform's own) that are never an export target.
SYSTEM_DIRS = (
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/proc",
    "/run",
    "/sbin",
    "/sys",
    "/usr",
    "/var/lib",
    "/var/log",
    "/var/spool",
    "/var/cache",
    "/var/mail",
    "/System",
    "/Library",
    "/Applications",
    "/private/etc",
)


def store_path() -> Path:
    return data_dir() / STORE_NAME


def _lib_key(library_path: str | os.PathLike[str]) -> str:
    return os.path.realpath(library_path)


def _load() -> dict[str, list[str]]:
    from assistant.textfile import FileRefused, read_file

    path = store_path()
    try:
        data = json.loads(read_file(path, limit=16 << 20))
    except FileRefused:
        return {}
    except ValueError:  # a damaged store confirms nothing: the user is asked again
        return {}
    libraries = data.get("libraries") if isinstance(data, dict) else None
    if not isinstance(libraries, dict):
        return {}
    return {str(k): [str(t) for t in v] for k, v in libraries.items() if isinstance(v, list)}


def _save(libraries: dict[str, list[str]]) -> None:
    text = json.dumps({"version": 1, "libraries": libraries}, indent=1, sort_keys=True) + "\n"
    filewrite.write_text(store_path(), text, mode=0o600)


def confirmed_targets(library_path: str | os.PathLike[str]) -> set[str]:
    """The targets of this library the user confirmed on this machine."""
    return set(_load().get(_lib_key(library_path), []))


def confirm(library_path: str | os.PathLike[str], target: str) -> None:
    with filewrite.locked(store_path()):
        libraries = _load()
        targets = libraries.setdefault(_lib_key(library_path), [])
        if target not in targets:
            targets.append(target)
            _save(libraries)


def forget(library_path: str | os.PathLike[str], target: str) -> None:
    with filewrite.locked(store_path()):
        libraries = _load()
        targets = libraries.get(_lib_key(library_path), [])
        if target in targets:
            targets.remove(target)
            _save(libraries)


def _under(path: Path, folder: str) -> bool:
    return path == Path(folder) or Path(folder) in path.parents


def target_problem(
    target: str | os.PathLike[str], library_path: str | os.PathLike[str] | None, new: bool = False
) -> str | None:
    """Why ``target`` can never be an auto-export target (None when it can): a dotfile or a
    file in a dot-folder of the home folder, a system folder, the library's own files; for a
    ``new`` registration also a folder that does not exist."""
    if not Path(target).is_absolute():  # a row "~/x" or "x" would be read from elsewhere
        return "is not an absolute path"
    given = Path(target).absolute()
    for path in dict.fromkeys([given, Path(os.path.realpath(given))]):
        home = Path(os.path.realpath(Path.home()))
        for base in dict.fromkeys([Path.home(), home]):
            if base in path.parents:
                hidden = [p for p in path.relative_to(base).parts if p.startswith(".")]
                if hidden:
                    return f"is a dotfile or in a hidden folder ({hidden[0]}) of the home folder"
        if any(_under(path, d) for d in SYSTEM_DIRS) and not _under(path, str(home)):
            return "is in a system folder"
        reason = filewrite.library_file_reason(path, library_path)
        if reason:
            return reason.split(";")[0]
    if new and not given.parent.is_dir():
        return "its folder does not exist"
    return None
