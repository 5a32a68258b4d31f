"""Help (F1): one page with the keyboard, the everyday workflows and what each label means."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QTextBrowser, QVBoxLayout

WORKFLOWS = (
    (
        "Fill the library",
        "Library ▸ Import files (Ctrl+I): BibTeX, biblatex, RIS, CSL-JSON, PDFs, a folder or a "
        "Zotero database. The papers appear in the table as soon as the import is committed, with "
        "a summary beside the count; the search index is then built in the background (its own "
        "progress and Cancel in the library panel). Until an index exists, Recommend uses keyword "
        "(BM25) search and says so; <b>Index now</b> is offered whenever papers are not indexed.",
    ),
    (
        "Cite while writing",
        "Open a .tex/.md/.txt manuscript, place the caret in a sentence (or select text) and press "
        "Ctrl+R. Insert (or Enter on a card, or Alt+1…9) cites at the end of the sentence the "
        "results were computed for, even if the caret moved since; if that sentence was edited "
        "nothing is inserted and you are asked to recommend again. The .bib entry is written when "
        "the manuscript is saved; Ctrl+Z undoes the citation and its entry.",
    ),
    (
        "Cite a paper you know",
        "Ctrl+Shift+C opens the picker: type a title, an author, a citekey (also a key the paper had "
        "before a merge) or a DOI, Enter cites it at the caret.",
    ),
    (
        "Find what still needs a citation",
        "Ctrl+Shift+M flags sentences that read as needing a citation; F8 / Shift+F8 or a click in "
        "the Flagged sentences list goes to each and recommends for it.",
    ),
    (
        "Modes",
        "Auto: one or two sentences are searched as a sentence (local), three or more as a "
        "paragraph. Global searches with the manuscript's title + abstract (shown as the query).",
    ),
    (
        "Curate the library",
        "Edit any field in the details pane (History undoes a change); tags and collections in the "
        "sidebar and the context menu; Library ▸ Citation keys sets the key pattern, pins or "
        "regenerates keys; Library ▸ Find duplicates merges with a field-by-field choice; "
        "Library ▸ Export library writes BibTeX, RIS or CSL-JSON.",
    ),
)

LABELS = (
    (
        "method 87%",
        "an intent chip: this paper is likely cited here for its method (background / method / "
        "result), with the model's confidence. Shown only when the model is confident about "
        "this paper.",
    ),
    (
        "the sentence reads as: method 62%",
        "in the results header when no paper has a label of its own: what the sentence asks for, "
        "nothing about the individual papers.",
    ),
    (
        "Need: method",
        "moves papers likely cited for their method up the list; nothing is hidden.",
    ),
    ("(already cited)", "the manuscript already cites this paper; Hide cited hides such cards."),
    (
        "score",
        "the ranking score of this list (comparable within one list only); the tooltip shows the "
        "stages behind it.",
    ),
    (
        "keyword (BM25) matches only",
        "no search index yet: the results come from keyword search; Index now builds the index.",
    ),
    (
        "The index is out of date",
        "papers were added, removed or merged since the index was built; recommendations use the "
        "last index until you press Index now.",
    ),
)


def help_html(shortcuts) -> str:
    keys = "".join(f"<tr><td><b>{k}</b></td><td>{v}</td></tr>" for k, v in shortcuts)
    flows = "".join(f"<h4>{t}</h4><p>{body}</p>" for t, body in WORKFLOWS)
    labels = "".join(f"<tr><td><b>{k}</b></td><td>{v}</td></tr>" for k, v in LABELS)
    return (
        "<h2>Cite-Assist help</h2>"
        "<p>Offline citation recommendations from your own library.</p>"
        f"<h3>Keyboard</h3><table cellspacing='6'>{keys}</table>"
        f"<h3>Workflows</h3>{flows}"
        f"<h3>What the labels mean</h3><table cellspacing='6'>{labels}</table>"
    )


class HelpDialog(QDialog):
    """The help page (non-modal, resizable, scrolls)."""

    def __init__(self, window, shortcuts) -> None:
        super().__init__(window)
        self.setObjectName("helpDialog")
        self.setWindowTitle("Cite-Assist help")
        layout = QVBoxLayout(self)
        self.browser = QTextBrowser()
        self.browser.setObjectName("helpText")
        self.browser.setHtml(help_html(shortcuts))
        layout.addWidget(self.browser, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        layout.addWidget(buttons)
        self.setWindowModality(Qt.WindowModality.NonModal)
        self.resize(640, 560)

    def text(self) -> str:
        return self.browser.toPlainText()
