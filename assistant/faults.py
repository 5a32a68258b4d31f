"""Named write points where the reliability tests kill the process (``kill -9`` at a known moment).

``ASSISTANT_KILL_AT=NAME`` (or ``NAME:N`` for the N-th time the point is reached) makes
:func:`point` send ``SIGKILL`` to the own process there; unset (always, outside the tests) it
does nothing. The points sit between the steps of each durable write (import transaction,
index files, atomic file replacement) so a test can prove that no kill loses committed data.
"""

from __future__ import annotations

import os
import signal

_SPEC = os.environ.get("ASSISTANT_KILL_AT", "")
_NAME, _, _NTH = _SPEC.partition(":")
_COUNT = {"n": 0}


def point(name: str) -> None:
    """Die here (``SIGKILL``) when ``ASSISTANT_KILL_AT`` names this point (its N-th passage)."""
    if not _NAME or name != _NAME:
        return
    _COUNT["n"] += 1
    if _COUNT["n"] >= (int(_NTH) if _NTH.isdigit() else 1):
        os.kill(os.getpid(), signal.SIGKILL)
