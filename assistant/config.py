"""Where Cite-Assist keeps its files.

Every path can be overridden by an environment variable so that tests, CI and
portable installs never touch the user's real data directory:

- ``ASSISTANT_HOME``   — root data directory (default: the platform's user data dir)
- ``ASSISTANT_DB``     — the SQLite library file (default: ``$ASSISTANT_HOME/library.sqlite``)
- ``ASSISTANT_MODELS`` — built/imported models (default: ``$ASSISTANT_HOME/models``)
"""

from __future__ import annotations

import logging
import os
from importlib.resources import files
from pathlib import Path

import platformdirs

APP_NAME = "cite-assist"
#: the quality tiers (``assistant.service.quality.QUALITIES``; config imports no package,
#: tests/test_quality.py checks they agree)
QUALITIES = ("auto", "fast", "best")

log = logging.getLogger(__name__)

#: The installed package's own folder (package data lives under it; works for editable and
#: non-editable installs alike).
PACKAGE_DIR = Path(str(files("assistant")))
#: Models we train and ship as package data (``assistant/models/<name>/``).
SHIPPED_MODELS_DIR = Path(os.environ.get("ASSISTANT_SHIPPED_MODELS", PACKAGE_DIR / "models"))
#: Icons, styles, the bundled sample library and draft (``assistant/resources/``).
RESOURCES_DIR = PACKAGE_DIR / "resources"


def data_dir() -> Path:
    """Root directory for user data (library, models, indexes)."""
    root = os.environ.get("ASSISTANT_HOME") or platformdirs.user_data_dir(APP_NAME, appauthor=False)
    path = Path(root).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return path


def default_db_path() -> Path:
    """The library database used when no ``--db`` is given."""
    env = os.environ.get("ASSISTANT_DB")
    return Path(env).expanduser() if env else data_dir() / "library.sqlite"


def models_dir() -> Path:
    """Directory holding built/imported ONNX models, one sub-directory per model."""
    env = os.environ.get("ASSISTANT_MODELS")
    path = Path(env).expanduser() if env else data_dir() / "models"
    path.mkdir(parents=True, exist_ok=True)
    return path


def index_dir_for(db_path: Path | str) -> Path:
    """Directory next to a library DB holding its vector/BM25 indexes."""
    db_path = Path(db_path)
    return db_path.with_name(db_path.name + ".index")


#: The settings file the app (Settings dialog) writes: ``$ASSISTANT_HOME/gui.ini`` (INI, ``[app]``)
SETTINGS_FILE = "gui.ini"


def saved_setting(name: str) -> str | None:
    """A setting the user saved in the app's Settings (``[app] name=value`` of
    :data:`SETTINGS_FILE`), for the CLI and the language server; None when unset or unreadable."""
    import configparser

    path = data_dir() / SETTINGS_FILE
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, OSError, UnicodeDecodeError):
        return None
    value = parser.get("app", name, fallback=None)
    return value.strip().strip('"') if value is not None else None


def quality_setting(value: str | None = None) -> str:
    """The quality tier asked for: ``value`` (a ``--quality`` option, an editor's initialization
    option), else ``$ASSISTANT_QUALITY``, else the app's saved setting, else ``auto``. A saved
    setting that is no tier (a hand-edited gui.ini) is skipped with a warning, as the app does:
    it must not stop the CLI's or the language server's recommendations."""
    asked = value or os.environ.get("ASSISTANT_QUALITY")
    if not asked:
        saved = (saved_setting("quality") or "").strip().lower()
        if saved and saved not in QUALITIES:
            log.warning(
                "ignoring quality %r in %s: expected one of %s",
                saved,
                data_dir() / SETTINGS_FILE,
                ", ".join(QUALITIES),
            )
            saved = ""
        asked = saved
    return (asked or "auto").strip().lower()
