"""The checks after each round of the concurrency suite (a mixin of ``harness.Suite``): the file
is intact, no record lost/duplicated/half-imported/phantom, and the long-lived programs that were
not killed still see the library, hold no deleted ``-wal``/``-shm`` and can write."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tools.concurrency.harness import Action


class RoundChecks:
    """Needs the Suite's ``tally``, ``expected``, ``groups``, ``reported``, ``seed_count``,
    ``service``/``window`` agents, ``export`` and ``_query``/``_db_count``/``_probe``."""

    def check(self, round_no: int, actions: list[Action]) -> None:
        t = self.tally
        for a in actions:
            state = "yes" if a.ok else "maybe"
            for title in a.titles:
                self.expected[title] = state
            if len(a.titles) > 1:
                self.groups.append(a.titles)
            if not a.ok and not a.killed:
                t.program_failures += 1
                t.fail(round_no, f"{a.kind} failed without a kill: {a.error}")
        integrity = self._query("PRAGMA integrity_check")[0][0]
        if integrity != "ok":
            t.integrity_failures += 1
            t.fail(round_no, f"integrity_check: {integrity}")
        found: dict[str, int] = {}
        for (title,) in self._query(
            "SELECT title FROM papers WHERE deleted_at IS NULL AND title LIKE 'Concurrency probe %'"
        ):
            found[title] = found.get(title, 0) + 1
        for title, state in self.expected.items():
            n = found.get(title, 0)
            if title in self.reported:
                continue
            if n > 1:
                t.duplicated += 1
                t.fail(round_no, f"duplicated x{n}: {title}")
                self.reported.add(title)
            elif n == 0 and state == "yes":
                t.lost += 1
                t.fail(round_no, f"lost: {title}")
                self.reported.add(title)
        for title in found:
            if title not in self.expected and title not in self.reported:
                self.reported.add(title)
                t.phantom += 1
                t.fail(round_no, f"written by nobody: {title}")
        for group in self.groups[-len(actions) :]:
            present = sum(1 for title in group if title in found)
            if 0 < present < len(group):
                t.partial_imports += 1
                t.fail(round_no, f"import half there ({present}/{len(group)}): {group[0]}")
        total = self._db_count()
        if total != self.seed_count + len(found) and not self.count_reported:
            self.count_reported = True
            t.fail(round_no, f"count {total} != seed {self.seed_count} + probes {len(found)}")
            t.lost += 1
        self._check_agents(round_no, total)

    def _check_agents(self, round_no: int, total: int) -> None:
        t = self.tally
        for agent in (self.service, self.window):
            if agent is None or not agent.alive:
                continue  # killed this round: restarted next round (a kill, not a failure)
            answer = agent.request({"op": "count"})
            rows_ok = agent.mode != "gui" or answer.get("rows") == answer.get("count")
            if (
                not answer.get("ok")
                or answer.get("count") != total
                or answer.get("writer_count") != total
                or answer.get("deleted_fds")
                or not rows_ok
            ):
                t.needed_restart += 1
                t.fail(
                    round_no, f"{agent.mode} no longer sees the library: {answer} (file: {total})"
                )
                agent.kill()
                continue
        if self.service is not None and self.service.alive:
            title = self._probe(round_no, "check")
            answer = self.service.request(
                {"op": "add", "title": title, "doi": "10.5555/check." + title.rsplit("zq", 1)[-1]}
            )
            self.expected[title] = "yes" if answer.get("ok") else "maybe"
            if not answer.get("ok") or answer.get("export_errors"):
                t.needed_restart += 1
                t.fail(round_no, f"service cannot write: {answer}")
                return
            self._check_export(round_no)

    def _check_export(self, round_no: int) -> None:
        from assistant.library.bibfile import parse_entries

        text = self.export.read_text(encoding="utf-8")
        entries, errors = parse_entries(text, str(self.export))
        total = self._db_count()
        if errors or len(entries) != total:
            self.tally.fail(
                round_no,
                f"auto-export has {len(entries)} entries ({len(errors)} errors), library {total}",
            )
            self.tally.program_failures += 1
