"""Issue 23, security (item 10): a checkpoint is data, never code."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from assistant.errors import AssistantError
from assistant.training import common


class _Planted:
    """What an attacker pickles: unpickling it would run ``exec`` and create a marker file."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('pwned')",))


def test_issue23_10_planted_checkpoint_is_refused_and_not_executed(tmp_path):
    marker = tmp_path / "executed"
    planted = tmp_path / "last.pt"
    torch.save({"model": {}, "state": _Planted(str(marker))}, planted)
    with pytest.raises(AssistantError) as info:
        common.safe_torch_load(planted)
    assert not marker.exists()
    assert isinstance(info.value, AssistantError) and str(planted) in str(info.value)


def test_issue23_10_intent_init_from_refuses_a_planted_file(tmp_path):
    from assistant.training.intent import _warm_start

    marker = tmp_path / "executed"
    planted = tmp_path / "best.pt"
    torch.save(_Planted(str(marker)), planted)
    with pytest.raises(AssistantError):
        _warm_start(torch.nn.Linear(2, 2), planted, progress=lambda *_: None)
    assert not marker.exists()


def test_issue23_10_training_state_round_trips_with_weights_only(tmp_path):
    random.seed(3)
    np.random.seed(4)
    state = {
        "step": 7,
        "optimizer": torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1).state_dict(),
        "rng": {
            "python": random.getstate(),
            "numpy": common._numpy_state_plain(np.random.get_state()),
            "torch": torch.get_rng_state(),
        },
        "extra": {"losses": [0.5, 0.25]},
    }
    torch.save(state, tmp_path / "state.pt")
    expected = (random.random(), np.random.rand())
    loaded = common.safe_torch_load(tmp_path / "state.pt")
    random.seed(0)
    np.random.seed(0)
    common.restore_rng(loaded)
    assert (random.random(), np.random.rand()) == expected and loaded["step"] == 7
