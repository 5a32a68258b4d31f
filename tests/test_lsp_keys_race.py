"""The language server's first key list races a library check (the first completion arrives while
the keys load and asks whether the library changed): the request must be answered as soon as the
first keys are in, never after its 30 s wait runs out (it once was, when the check's reload
replaced the event the request waited on). In-process, on the bundled sample library; the key
reads are held at a gate so the interleaving is the one that failed."""

from __future__ import annotations

import asyncio
import threading

from retrieval_helpers import SAMPLE_BIB, make_library

from assistant.lsp.backend import Backend
from assistant.lsp.completion import MAX_KEY_ITEMS
from assistant.lsp.server import CiteAssistServer


class GatedBackend(Backend):
    """The real backend on a real library; each key read waits for the test to open the gate."""

    def __init__(self, db) -> None:
        super().__init__(db)
        self.gate = threading.Event()
        self.reads: list[int] = []

    def keys(self, limit: int = -1):
        self.gate.wait(10)
        self.reads.append(limit)
        return super().keys(limit)

    def library_changed(self) -> bool:  # an import from the CLI just happened
        return True


def test_a_library_check_during_the_first_key_load_does_not_strand_the_request(tmp_path):
    db = tmp_path / "library.sqlite"
    make_library(db, SAMPLE_BIB).close()
    be = GatedBackend(db)
    server = CiteAssistServer(be, recommend=False)
    statuses: list[str] = []
    server._status = lambda state, message: statuses.append(state)

    async def scenario():
        server.loop = asyncio.get_running_loop()
        server._keys_event = asyncio.Event()
        server.loop.create_task(server._load_keys())  # start-up
        await asyncio.sleep(0.05)
        waiter = asyncio.create_task(server.wait_keys())  # the first completion request
        await asyncio.sleep(0)
        server._last_library_check = float("-inf")
        server._check_library()  # ... which checks the library first
        server.loop.create_task(server._load_keys())  # a reload asked for meanwhile
        await asyncio.sleep(0.05)
        be.gate.set()
        keys = await asyncio.wait_for(waiter, timeout=5)
        for _ in range(100):  # the folded reload finishes
            if not server._keys_loading:
                break
            await asyncio.sleep(0.05)
        return keys

    try:
        keys = asyncio.run(scenario())
        assert keys is not None and len(keys) > 0
        assert server.keys is not None and server.keys.complete
        # the newest keys, the whole list, and one more whole list for the reload asked for
        assert be.reads[:2] == [MAX_KEY_ITEMS, -1] and be.reads.count(-1) == 2, be.reads
        assert statuses.count("keys") == 2
        assert len(server.keys) == len(be.keys().entries)
    finally:
        server.stop()
        be.close()
