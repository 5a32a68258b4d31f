"""Persistent settings (QSettings, an INI file in the data dir) and the settings dialog."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, fields
from pathlib import Path

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QWidget,
)

from assistant.config import data_dir, default_db_path


@dataclass
class AppSettings:
    """What the user can change; persisted between runs."""

    library_path: str = ""
    encoder: str = ""  # "" = default encoder (minilm)
    device: str = "auto"  # auto | cpu | cuda
    reranker: str = "auto"  # auto (shipped default) | off | a model folder
    ranker: str = "auto"  # learned ranker: auto (shipped) | off | a folder
    my_names: str = ""  # the user's names, "Last, First; Last, First" (author signals)
    use_intent: bool = True
    k: int = 10
    exclude_cited: bool = True
    year_min: int = 1900
    year_max: int = 2100
    intent_filter: str = ""
    first_run_done: bool = False
    cite_command: str = "\\cite"  # LaTeX: \cite | \citep | \citet | \parencite | \autocite
    markdown_cite: str = "[@key1; @key2]"  # Markdown: merged [@a; @b] or separate [@a] [@b]
    quality: str = "auto"  # auto | fast | best (service.quality; the CLI and LSP read it too)

    @property
    def db_path(self) -> Path:
        return Path(self.library_path).expanduser() if self.library_path else default_db_path()


def settings_store() -> QSettings:
    """The INI file holding the settings (``$ASSISTANT_HOME/gui.ini``, so tests stay isolated)."""
    return QSettings(str(data_dir() / "gui.ini"), QSettings.Format.IniFormat)


def _coerce(value, default):
    if isinstance(default, bool):
        return value in (True, "true", "True", "1", 1)
    if isinstance(default, int):
        try:
            return int(value)
        except (TypeError, ValueError):
            return default
    return "" if value is None else str(value)


def load_settings(store: QSettings | None = None) -> AppSettings:
    store = store or settings_store()
    out = AppSettings()
    for f in fields(AppSettings):
        default = getattr(out, f.name)
        if store.contains(f"app/{f.name}"):
            setattr(out, f.name, _coerce(store.value(f"app/{f.name}"), default))
    return out


def save_settings(settings: AppSettings, store: QSettings | None = None) -> None:
    store = store or settings_store()
    for f in fields(AppSettings):
        store.setValue(f"app/{f.name}", getattr(settings, f.name))
    store.sync()


def _manuscript_key(path: Path) -> str:
    return hashlib.sha1(str(Path(path).resolve()).encode()).hexdigest()[:16]


def bib_for_manuscript(path: Path, store: QSettings | None = None) -> Path | None:
    """The .bib file chosen earlier for a manuscript, if any."""
    store = store or settings_store()
    value = store.value(f"bibfiles/{_manuscript_key(path)}")
    return Path(value) if value else None


def remember_bib(path: Path, bib: Path, store: QSettings | None = None) -> None:
    store = store or settings_store()
    store.setValue(f"bibfiles/{_manuscript_key(path)}", str(bib))
    store.sync()


class SettingsDialog(QDialog):
    """Models, device, K, filters, library path."""

    def __init__(self, settings: AppSettings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Settings")
        self.settings = settings
        form = QFormLayout(self)
        row = QHBoxLayout()
        self.library_edit = QLineEdit(str(settings.db_path))
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        row.addWidget(self.library_edit, 1)
        row.addWidget(browse)
        form.addRow("Library file", row)
        self.encoder_edit = QLineEdit(settings.encoder)
        self.encoder_edit.setPlaceholderText("default (minilm)")
        form.addRow("Encoder model", self.encoder_edit)
        self.reranker_edit = QComboBox()
        self.reranker_edit.setEditable(True)
        self.reranker_edit.addItems(["auto", "off"])
        self.reranker_edit.setCurrentText(settings.reranker or "off")
        form.addRow("Reranker", self.reranker_edit)
        self.ranker_edit = QComboBox()
        self.ranker_edit.setEditable(True)
        self.ranker_edit.addItems(["auto", "off"])
        self.ranker_edit.setCurrentText(settings.ranker or "off")
        form.addRow("Learned ranker", self.ranker_edit)
        self.names_edit = QLineEdit(settings.my_names)
        self.names_edit.setPlaceholderText("Last, First; Last, First")
        self.names_edit.setToolTip(
            "Your names as they appear in papers: your own papers and your co-authors' rank "
            "higher when the manuscript names no authors."
        )
        form.addRow("My names", self.names_edit)
        self.device_box = QComboBox()
        self.device_box.addItems(["auto", "cpu", "cuda"])
        self.device_box.setCurrentText(settings.device)
        form.addRow("Device", self.device_box)
        from assistant.service import QUALITIES

        self.quality_box = QComboBox()
        self.quality_box.addItems(list(QUALITIES))
        self.quality_box.setCurrentText(
            settings.quality if settings.quality in QUALITIES else "auto"
        )
        self.quality_box.setToolTip(
            "fast: the MiniLM search model. best: the larger all-mpnet-base-v2 search model "
            "with its own index (built in the background) and ranker; the reranker stays the "
            "MiniLM cross-encoder. Measured on 112k ACM papers, best finds as many cited papers "
            "in the top 10 as fast and a few more in the top 100 for bare sentences; its index "
            "takes hours on a CPU. auto: best when a CUDA GPU runs and its index is ready, else "
            "fast. The status line says which one is in use and why."
        )
        form.addRow("Quality", self.quality_box)
        self.intent_box = QCheckBox("Label citation intent (background / method / result)")
        self.intent_box.setChecked(settings.use_intent)
        form.addRow("", self.intent_box)
        self.k_box = QSpinBox()
        self.k_box.setRange(1, 100)
        self.k_box.setValue(settings.k)
        form.addRow("Results (K)", self.k_box)
        from assistant.service import textops

        self.cite_box = QComboBox()
        self.cite_box.addItems(list(textops.LATEX_COMMANDS))
        self.cite_box.setCurrentText(settings.cite_command)
        form.addRow("LaTeX citation command", self.cite_box)
        self.markdown_box = QComboBox()
        self.markdown_box.addItems(list(textops.MARKDOWN_FORMS))
        self.markdown_box.setCurrentText(settings.markdown_cite)
        form.addRow("Markdown citation form", self.markdown_box)
        self.exclude_box = QCheckBox("Exclude papers already cited in the manuscript")
        self.exclude_box.setChecked(settings.exclude_cited)
        form.addRow("", self.exclude_box)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def _browse(self) -> None:
        path, _ = QFileDialog.getSaveFileName(
            self,
            "Library file",
            self.library_edit.text(),
            "Cite-Assist library (*.sqlite);;All files (*)",
            options=QFileDialog.Option.DontConfirmOverwrite,
        )
        if path:
            self.library_edit.setText(path)

    def result_settings(self) -> AppSettings:
        from dataclasses import replace

        return replace(
            self.settings,
            library_path=self.library_edit.text().strip(),
            encoder=self.encoder_edit.text().strip(),
            reranker=self.reranker_edit.currentText().strip() or "off",
            ranker=self.ranker_edit.currentText().strip() or "off",
            my_names=self.names_edit.text().strip(),
            device=self.device_box.currentText(),
            quality=self.quality_box.currentText(),
            use_intent=self.intent_box.isChecked(),
            k=self.k_box.value(),
            exclude_cited=self.exclude_box.isChecked(),
            cite_command=self.cite_box.currentText(),
            markdown_cite=self.markdown_box.currentText(),
        )
