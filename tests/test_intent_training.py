"""Tiny end-to-end runs of the intent trainer: train, export, and resume after an interruption."""

from __future__ import annotations

import json

import numpy as np
import pytest

from assistant.errors import AssistantError
from assistant.training.intent import (
    IntentTrainConfig,
    classification_metrics,
    fit_temperature,
    load_scicite,
    train,
)


class Interrupt(Exception):
    pass


@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory, request):
    """A tiny SciCite-format train/dev pair (from the shared data when present, else the fixture)."""
    from conftest import FIXTURES, SHARED_DATA

    out = tmp_path_factory.mktemp("scicite")
    src = SHARED_DATA / "scicite" / "train.jsonl"
    lines = src.read_text(encoding="utf-8").splitlines()[:12] if src.is_file() else []
    lines += (FIXTURES / "scicite_small.jsonl").read_text(encoding="utf-8").splitlines()
    (out / "train.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (out / "dev.jsonl").write_text(
        (FIXTURES / "scicite_small.jsonl").read_text(encoding="utf-8"), encoding="utf-8"
    )
    return out


def _cfg(data, tmp_path, name, export=False, **kw):
    base = dict(
        train_path=data / "train.jsonl",
        dev_path=data / "dev.jsonl",
        out_dir=tmp_path / f"{name}-model",
        work_dir=tmp_path / f"{name}-work",
        epochs=4.0,
        batch_size=4,
        max_length=32,
        evals_per_epoch=4,
        checkpoint_every=2,
        max_steps=4,
        threads=1,
        export=export,
        seed=3,
    )
    base.update(kw)
    return IntentTrainConfig(**base)


def _interrupt_at(step):
    def progress(event) -> None:
        if event.done == step and "dev macro-F1" in event.message:
            raise Interrupt(event.message)

    return progress


def test_tiny_run_exports_a_loadable_model(tiny_data, tmp_path):
    cfg = _cfg(tiny_data, tmp_path, "full", export=True)
    summary = train(cfg, progress=lambda e: None)
    assert summary["steps"] == 4 and summary["temperature"] > 0
    assert len(summary["history"]) == 4
    manifest = json.loads((cfg.out_dir / "manifest.json").read_text())
    assert manifest["kind"] == "classifier" and manifest["labels"] == [
        "background",
        "method",
        "result",
    ]
    assert manifest["temperature"] == pytest.approx(summary["temperature"], abs=1e-3)
    assert (cfg.out_dir / "model.int8.onnx").is_file() and (
        cfg.out_dir / "tokenizer.json"
    ).is_file()
    card = (cfg.out_dir / "MODEL_CARD.md").read_text()
    assert "macro-F1" in card and "Confusion matrix" in card

    from assistant.inference.intent import IntentClassifier

    clf = IntentClassifier(cfg.out_dir)
    preds = clf.classify(["We used the method of Smith [3].", ""])
    assert len(preds) == 2
    for p in preds:
        assert p.label in clf.labels and sum(p.probs.values()) == pytest.approx(1.0, abs=1e-4)


def test_interrupted_run_resumes_to_the_same_model(tiny_data, tmp_path):
    import torch

    straight = _cfg(tiny_data, tmp_path, "straight")
    s1 = train(straight, progress=lambda e: None)

    resumed = _cfg(tiny_data, tmp_path, "resumed")
    with pytest.raises(Interrupt):
        train(resumed, progress=_interrupt_at(3))
    ck = torch.load(resumed.work_dir / "last.pt", map_location="cpu", weights_only=True)
    assert ck["state"]["step"] == 2  # the checkpoint before the interruption
    events = []
    s2 = train(resumed, progress=events.append)
    assert any(e.message.startswith("resumed from") and (e.done, e.total) == (2, 4) for e in events)
    assert s2["steps"] == 4
    a = torch.load(straight.work_dir / "last.pt", map_location="cpu", weights_only=True)["model"]
    b = torch.load(resumed.work_dir / "last.pt", map_location="cpu", weights_only=True)["model"]
    for key in a:
        assert torch.allclose(a[key], b[key], atol=1e-6), key
    assert [h["dev_macro_f1"] for h in s1["history"]] == [h["dev_macro_f1"] for h in s2["history"]]


def test_resume_refuses_a_different_configuration(tiny_data, tmp_path):

    cfg = _cfg(tiny_data, tmp_path, "cfg", max_steps=2)
    train(cfg, progress=lambda e: None)
    other = _cfg(tiny_data, tmp_path, "cfg", max_steps=2, lr=1e-3)
    with pytest.raises(AssistantError, match="different configuration"):
        train(other, progress=lambda e: None)


def test_load_scicite_reports_file_and_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"string": "ok [1]", "label": "method"}\n{"string": "x", "label": "other"}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2: field 'label'"):
        load_scicite(bad)
    bad.write_text('{"string": "ok", "label": "method"}\n{not json\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2: invalid JSON"):
        load_scicite(bad)
    good = tmp_path / "good.jsonl"
    good.write_text(
        '{"string": "As shown in [12], x.", "label": "result", "label_confidence": 0.6}\n'
    )
    ex = load_scicite(good)[0]
    assert ex.text == "As shown in @@CITATION, x." and ex.label == 2 and ex.weight == 0.6


def test_metrics_and_temperature():
    y = np.array([0, 0, 1, 2, 2, 1])
    m = classification_metrics(y, np.array([0, 1, 1, 2, 0, 1]))
    assert m["accuracy"] == pytest.approx(4 / 6)
    assert m["confusion_matrix"]["rows_true_cols_pred"] == [[1, 1, 0], [0, 2, 0], [1, 0, 1]]
    assert m["per_class"]["method"]["recall"] == 1.0
    # over-confident logits (right 2/3 of the time) need T > 1
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, 600)
    pred = np.where(rng.random(600) < 0.67, labels, (labels + 1) % 3)
    logits = np.eye(3)[pred] * 8.0
    assert fit_temperature(logits, labels) > 2.0


def test_warm_start_continues_from_an_earlier_checkpoint(tiny_data, tmp_path):
    """``--init-from`` loads an earlier run's weights: with a zero learning rate the warm-started
    model predicts exactly what the checkpoint predicts, and differs from a cold start."""
    import torch

    first = _cfg(tiny_data, tmp_path, "first")
    train(first, progress=lambda e: None)
    checkpoint = first.work_dir / "last.pt"
    trained = torch.load(checkpoint, map_location="cpu", weights_only=True)["model"]

    warm = _cfg(tiny_data, tmp_path, "warm", init_from=checkpoint, lr=0.0, head_lr=0.0, max_steps=1)
    train(warm, progress=lambda e: None)
    warm_state = torch.load(warm.work_dir / "last.pt", map_location="cpu", weights_only=True)[
        "model"
    ]
    cold = _cfg(tiny_data, tmp_path, "cold", lr=0.0, head_lr=0.0, max_steps=1)
    train(cold, progress=lambda e: None)
    cold_state = torch.load(cold.work_dir / "last.pt", map_location="cpu", weights_only=True)[
        "model"
    ]

    head = next(k for k in trained if k.startswith("head.") and k.endswith("weight"))
    assert torch.allclose(warm_state[head], trained[head])
    assert not torch.allclose(cold_state[head], trained[head])

    with pytest.raises(Exception, match="not found"):
        train(
            _cfg(tiny_data, tmp_path, "missing", init_from=tmp_path / "nope.pt"),
            progress=lambda e: None,
        )


def test_distillation_from_a_teacher_checkpoint(tiny_data, tmp_path):
    """A teacher run's logits are dumped once and steer a student run (soft targets)."""
    import torch

    from assistant.training.intent import dump_teacher_logits, training_examples
    from assistant.training.intent_distill import load_teacher_logits, soft_target_loss

    teacher = _cfg(tiny_data, tmp_path, "teacher", train_top_layers=2)
    train(teacher, progress=lambda e: None)
    logits_file = dump_teacher_logits(
        teacher, teacher.work_dir / "best.pt", tmp_path / "t.npz", progress=lambda e: None
    )
    texts = [e.text for e in training_examples(teacher)]
    logits = load_teacher_logits(logits_file, texts)
    assert logits.shape == (len(texts), 3) and np.isfinite(logits).all()
    with pytest.raises(AssistantError, match="no teacher logits for 1 of"):
        load_teacher_logits(logits_file, [*texts[:2], "a text the teacher never saw"])

    t = torch.tensor(logits[:4])
    assert torch.allclose(soft_target_loss(t, t, 2.0), torch.zeros(4), atol=1e-6)
    assert (soft_target_loss(-t, t, 2.0) > 0).all()

    # alpha = 1: the student learns from the teacher's soft targets only
    student = _cfg(
        tiny_data, tmp_path, "student", teacher_logits=logits_file, distill_alpha=1.0, max_steps=2
    )
    summary = train(student, progress=lambda e: None)
    assert summary["steps"] == 2
    hard = _cfg(tiny_data, tmp_path, "hard", max_steps=2)
    train(hard, progress=lambda e: None)
    a = torch.load(student.work_dir / "last.pt", map_location="cpu", weights_only=True)["model"]
    b = torch.load(hard.work_dir / "last.pt", map_location="cpu", weights_only=True)["model"]
    head = next(k for k in a if k.startswith("head.") and k.endswith("weight"))
    assert not torch.allclose(a[head], b[head])  # the soft targets changed the updates


def test_top_layer_training_freezes_the_rest(tiny_data, tmp_path):
    from assistant.training.intent import _build_model, _freeze_below

    cfg = _cfg(tiny_data, tmp_path, "freeze")
    model, _ = _build_model(cfg)
    _freeze_below(model.encoder, 2)
    trainable = {n for n, p in model.encoder.named_parameters() if p.requires_grad}
    n_layers = len(model.encoder.encoder.layer)
    assert trainable and all(
        n.startswith(f"encoder.layer.{n_layers - 1}.")
        or n.startswith(f"encoder.layer.{n_layers - 2}.")
        or n.startswith("pooler.")
        for n in trainable
    )
