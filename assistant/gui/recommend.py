"""Recommending from the main window: the query for the selection or the sentence at the
cursor (built by the service as for ``assistant recommend``), the run on the recommend thread,
and the result list with its header (the recommend controller)."""

from __future__ import annotations

from assistant.gui.anchoring import Anchor, shown_query
from assistant.gui.parts import WindowPart
from assistant.gui.result_card import _esc
from assistant.service import (
    RequestOptions,
    content_words,
    manuscript_cited_ids,
    query_for_selection,
    textops,
)


class RecommendController(WindowPart):
    """Runs recommendations on ``window.rec_runner`` (never behind an engine job)."""

    def __init__(self, window) -> None:
        super().__init__(window)
        self.last_result = None
        self.cited_ids: tuple[int, ...] = ()

    def current_mode(self) -> str:
        return self.window.mode_box.currentData() or "auto"

    def build_query(self):
        """The pipeline Query for the current selection/cursor and the chosen mode (built by the
        service exactly as for ``assistant recommend``)."""
        editor, state = self.current_editor(), self.current_state()
        text = editor.toPlainText()
        start, end = editor.selection_range()
        doc = state.extras.get("doc")  # a manuscript PDF: its references, year and DOI
        self.cited_ids = manuscript_cited_ids(self.library_panel.library, text, state.style, doc)
        return query_for_selection(
            text,
            start,
            end,
            self.current_mode(),
            state.style,
            meta=(state.title, state.abstract) if state.read_only else None,
            cited_ids=self.cited_ids,
            year=getattr(doc, "year", None),
            doi=getattr(doc, "doi", None),
        )

    def recommend(self) -> int | None:
        """Run the pipeline for the selection/cursor on the recommend thread (a newer call wins).

        It never waits for an engine job (import, index, adapt, analysis): those run on the
        engine thread and the recommender keeps using the last committed index meanwhile.
        """
        try:
            query, spec = self.build_query()
        except Exception as exc:
            self.show_error("Cannot recommend", str(exc))
            return None
        self.results_panel.clear_results()  # old cards never stay under a new query
        editor = self.current_editor()
        text = editor.toPlainText()
        self.window.citations.anchor = Anchor(
            editor, spec.start, spec.end, text[spec.start : spec.end]
        )
        if not (query.text or query.title or query.abstract):
            self.results_panel.set_message(
                "Nothing to recommend for: place the cursor in a sentence."
            )
            return None
        if query.text and not content_words(query.text) and not (query.title or query.abstract):
            self.results_panel.set_message(
                "⚠ The text has no content words (only words such as “the”, “this is”): "
                "select a sentence that says what the cited work is about."
            )
            self.set_status("Nothing to search for: the query has only stop words")
            return None
        k = self.settings.k
        hide_cited = self.results_panel.exclude_cited.isChecked()  # the service's one rule
        self.window.mode_label.setText(f"  → {spec.mode}")
        self.results_panel.set_message(
            f"Recommending ({spec.mode}) for: “{_esc(spec.text[:140])}”…"
        )
        self.set_status("Recommending…")

        filters = self.results_panel.filter_values()
        max_year = filters["year_max"] if filters["year_max"] < 2100 else None
        intent = filters["intent"] or None
        only_collection = self.library_panel.collections.recommend_collection

        request = RequestOptions(
            k=k,
            max_year=max_year,
            intent_preference=intent,
            collection_ids=(only_collection,) if only_collection is not None else (),
            exclude_cited=hide_cited,
        )

        def job(progress, cancelled):
            return self.engine.recommend(query, request=request, cancelled=cancelled, fallback=True)

        return self.window.rec_runner.submit(
            "recommend",
            job,
            on_done=self._recommended,
            on_error=self._recommend_failed,
            on_progress=lambda e: self.set_status(e.message or "Recommending…"),
            on_cancel=lambda: None,
        )

    def _recommend_failed(self, message: str, trace: str) -> None:
        if "being imported or indexed" in message:
            self.results_panel.set_message(f"⏳ {_esc(message)}")
            self.set_status("Waiting for the first index")
            return
        self.window.job_failed(message, trace)

    def _recommended(self, result) -> None:
        self.last_result = result
        editor, state = self.current_editor(), self.current_state()
        cited = textops.cited_keys(editor.toPlainText(), state.style)
        cited_ids = set(state.extras.get("cited_ids", ()))
        cited |= {r.paper.citekey for r in result.items if r.paper.id in cited_ids}
        timings = getattr(result, "timings_ms", {}) or {}
        total_ms = timings.get("total", sum(timings.values())) if timings else 0.0
        shown = min(len(result.items), self.settings.k)
        header = (
            f"{shown} recommendations · mode {result.mode} · {total_ms:.0f} ms"
            + f"<br><span style='color:#666'>“{_esc(shown_query(result.query))}”</span>"
        )
        for warning in getattr(result, "warnings", None) or []:
            header += f"<br><span style='color:#b26a00'>⚠ {_esc(warning)}</span>"
        self.results_panel.limit = self.settings.k
        self.results_panel.scope_note = self.library_panel.collections.recommend_scope_note()
        self.results_panel.set_results(
            result.items, header, cited, query_text=result.query.display_text()
        )
        self.set_status(f"{shown} recommendations in {total_ms:.0f} ms ({result.mode})")
        self.library_panel.set_status(self.engine.status())
        self.window.recommendations_ready.emit(result)

    def need_changed(self, _need: str) -> None:
        """The "Need" box re-ranks: recommend again for the same text when a list is shown."""
        if self.last_result is not None and self.results_panel.items:
            self.recommend()
