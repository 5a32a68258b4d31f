"""Keys-only completion latency of ``assistant lsp --no-recommend`` on a big library or a big
``.bib`` (JSON on stdout), as an editor sees it over stdio.

- ``first_list_s``: from sending ``initialize`` to the first completion answer with items
  (the document is opened and the completion asked for right after ``initialized``);
- ``p50_ms`` / ``p95_ms``: completions while "typing": an empty slot, then growing prefixes of
  keys, author names, title words and years, each a fresh request (the server filters and caps).

    python tools/bench_lsp_keys.py --db /tmp/lsp/acm.sqlite            # the 112k ACM library
    python tools/bench_lsp_keys.py --db /tmp/empty.sqlite --bib /tmp/big400k.bib

Targets (issues 35 and 37): library keys p95 <= 100 ms, first list <= 1 s after initialize;
a 400k-entry ``.bib`` p95 <= 200 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from assistant.lsp.client import StdioClient  # noqa: E402
from assistant.lsp.text import LineIndex  # noqa: E402

TYPED = (
    "",
    "a",
    "ag",
    "smi",
    "smith",
    "wang2",
    "learn",
    "learning",
    "neural",
    "2019",
    "zh",
    "query",
    "li2",
    "graph",
    "kumar",
    "chen20",
    "click",
    "evaluation",
    "q",
    "x",
)


def _position(text: str, offset: int) -> dict:
    p = LineIndex(text).position(offset)
    return {"line": p.line, "character": p.character}


def run(db: Path, bib: Path | None, rounds: int) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="bench-lsp-keys-"))
    tex = folder / "paper.tex"
    bib_line = f"\\bibliography{{{bib.with_suffix('')}}}\n" if bib else ""
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", ASSISTANT_DB=str(db))
    client = StdioClient(
        [sys.executable, "-m", "assistant.cli", "lsp", "--no-recommend", "--db", str(db)],
        env=env,
        stderr_path=folder / "server.log",
    )
    try:
        t_spawn = time.perf_counter()
        _wait_started(client)
        t0 = time.perf_counter()
        client.initialize(folder)
        t_initialized = time.perf_counter()
        text = "We build on prior work \\cite{}.\n" + bib_line
        tex.write_text(text, encoding="utf-8")
        uri = client.open(tex, "latex", text)
        offset = text.index("\\cite{") + len("\\cite{")
        params = {"textDocument": {"uri": uri}, "position": _position(text, offset)}
        first = client.request("textDocument/completion", params, timeout=300)
        while not first["items"]:  # keys still loading: the editor asks again
            first = client.request("textDocument/completion", params, timeout=300)
        first_list_s = time.perf_counter() - t0
        client.wait_for(
            lambda m: m.get("method") == "citeAssist/status" and m["params"]["state"] == "keys",
            timeout=600,
        )
        all_keys_s = time.perf_counter() - t0
        # the .bib index (if any) and the word index are built by now or on the first requests
        version, times, sizes, slowest = 1, [], [], []
        for r in range(rounds):
            for typed in TYPED:
                version += 1
                body = f"We build on prior work \\cite{{{typed}}}.\n" + bib_line
                client.notify(
                    "textDocument/didChange",
                    {
                        "textDocument": {"uri": uri, "version": version},
                        "contentChanges": [{"text": body}],
                    },
                )
                at = body.index("\\cite{") + len("\\cite{") + len(typed)
                p = {"textDocument": {"uri": uri}, "position": _position(body, at)}
                t = time.perf_counter()
                result = client.request("textDocument/completion", p, timeout=300)
                elapsed = (time.perf_counter() - t) * 1000
                if r > 0 or typed:  # the very first empty slot may still build indexes
                    times.append(elapsed)
                    slowest.append((round(elapsed, 1), typed))
                sizes.append(len(json.dumps(result)))
        times.sort()
        return {
            "library": str(db),
            "bib": str(bib) if bib else None,
            "bib_entries": _count_entries(bib) if bib else None,
            "process_start_s": round(t0 - t_spawn, 3),
            "initialize_s": round(t_initialized - t0, 3),
            "first_list_s": round(first_list_s, 3),
            "all_keys_loaded_s": round(all_keys_s, 3),
            "first_list_items": len(first["items"]),
            "requests": len(times),
            "p50_ms": round(statistics.median(times), 1),
            "p95_ms": round(times[int(0.95 * (len(times) - 1))], 1),
            "max_ms": round(times[-1], 1),
            "max_answer_kb": round(max(sizes) / 1024, 1),
            "slowest": sorted(slowest, reverse=True)[:4],
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_avg_1m": round(os.getloadavg()[0], 2),
        }
    finally:
        client.close()


def _wait_started(client: StdioClient) -> None:
    """Until the server process answers at all (Python start-up and imports, not the server's
    work): an unknown request gets its error once the message loop runs."""
    try:
        client.request("citeAssist/ping", None, timeout=300)
    except Exception:
        pass


def _count_entries(bib: Path) -> int:
    with open(bib, "rb") as f:
        first = f.read(1)
        return (first == b"@") + sum(
            chunk.count(b"\n@") for chunk in iter(lambda: f.read(1 << 20), b"")
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, required=True, help="library file (e.g. the 112k ACM one)")
    ap.add_argument("--bib", type=Path, default=None, help="a big .bib the manuscript names")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    print(json.dumps(run(args.db, args.bib, args.rounds), indent=2))


if __name__ == "__main__":
    main()
