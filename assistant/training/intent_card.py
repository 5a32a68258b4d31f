"""Model card and shipping layout of the trained intent model (see ``assistant.training.intent``)."""

from __future__ import annotations

import json
from pathlib import Path


def ship_int8_only(out_dir: Path) -> None:
    """Drop ``model.onnx`` (fp32) from a shipped folder; its sha256 stays as ``fp32_sha256_not_shipped``."""
    from assistant.inference.export import MANIFEST, write_manifest

    out_dir = Path(out_dir)
    fp32, int8 = out_dir / "model.onnx", out_dir / "model.int8.onnx"
    if not (fp32.exists() and int8.exists()):
        return
    manifest = json.loads((out_dir / MANIFEST).read_text(encoding="utf-8"))
    sha = manifest.get("files", {}).pop("fp32", None)
    if sha:
        manifest["fp32_sha256_not_shipped"] = sha
    write_manifest(out_dir, manifest)
    fp32.unlink()


def write_model_card(out_dir: Path, summary: dict, extra_sections: str = "") -> Path:
    """``MODEL_CARD.md``: data, recipe, seed, time and dev metrics of a trained intent model."""
    dev, cfgd = summary["dev"], summary["config"]
    labels = dev["confusion_matrix"]["labels"]
    rows = "\n".join(
        f"| {lab} | {m['precision']:.3f} | {m['recall']:.3f} | {m['f1']:.3f} | {m['support']} |"
        for lab, m in dev["per_class"].items()
    )
    cm = "\n".join(
        f"| **{lab}** | " + " | ".join(str(v) for v in row) + " |"
        for lab, row in zip(labels, dev["confusion_matrix"]["rows_true_cols_pred"])
    )
    hist = ", ".join(f"{h['step']}: {h['dev_macro_f1']:.4f}" for h in summary["history"])
    text = f"""# Citation-intent classifier ({Path(out_dir).name})

Labels (SciCite scheme): {", ".join(labels)}. Input: one citation context (a sentence);
citation markers are normalised to `@@CITATION` (`assistant.inference.intent.normalize_context`).
Output: calibrated probabilities (temperature scaling, T = {summary["temperature"]:.4f}, stored in
`manifest.json` and applied by `IntentClassifier`).

## Data
- Train: SciCite `train.jsonl` ({summary["train_examples"]} examples; Cohan et al., NAACL 2019), `label_confidence`
  used as a loss weight (0.5 + 0.5 * confidence; 1 when missing).
{_aux_lines(cfgd)}- Selection and calibration: SciCite `dev.jsonl` ({summary["dev_examples"]} examples). No test data was used.

## Recipe
- Base: `{cfgd["base_model"]}` (`{summary["base_path"]}`), mean pooling, dropout {cfgd["dropout"]}, linear head.
- AdamW lr {cfgd["lr"]} (head {cfgd["head_lr"]}), weight decay {cfgd["weight_decay"]}, linear warm-up
  {cfgd["warmup"]:.0%} then decay, {cfgd["epochs"]} epochs, batch {cfgd["batch_size"]} (length-bucketed, dynamic padding),
  max {cfgd["max_length"]} tokens, class weights (inverse sqrt frequency) = {cfgd["class_weighting"]}, grad-clip 1.0.
- Seed {cfgd["seed"]}; {cfgd["threads"]} CPU threads; {summary["steps"]} steps in {summary["train_time_s"] / 60:.1f} min
  (wall, shared 2-core CPU). Best checkpoint: step {summary["best_step"]} (dev macro-F1 evaluated
  {cfgd["evals_per_epoch"]}x per epoch).
- Export: `assistant.inference.export.export_transformer(kind="classifier")`, dynamic int8 quantisation
  (`model.int8.onnx`; the fp32 file is not shipped, its sha256 is in the manifest).
- Reproduce: `assistant train intent --base-model {cfgd["base_model"]} --epochs {cfgd["epochs"]} --lr {cfgd["lr"]} --seed {cfgd["seed"]}`.

## Dev metrics (PyTorch fp32, best checkpoint)
Accuracy {dev["accuracy"]:.4f}, macro-F1 **{dev["macro_f1"]:.4f}** with the per-class logit bias
{summary.get("logit_bias")} (5-fold CV gain on dev {summary.get("bias_cv_gain", 0):+.4f}; applied only when
positive); without it: accuracy {summary.get("dev_without_bias", dev)["accuracy"]:.4f},
macro-F1 {summary.get("dev_without_bias", dev)["macro_f1"]:.4f}.

| label | precision | recall | F1 | support |
|---|---|---|---|---|
{rows}

Confusion matrix (rows = gold, columns = predicted: {", ".join(labels)}):

| | {" | ".join(labels)} |
|---|{"---|" * len(labels)}
{cm}

Dev macro-F1 during training (step: F1): {hist}
{_int8_section(summary)}{extra_sections}"""
    path = Path(out_dir) / "MODEL_CARD.md"
    if path.is_file():  # hand-written sections (per-paper intent, ...) survive a re-export
        old = path.read_text(encoding="utf-8")
        if KEEP_MARKER in old:
            text = text.rstrip() + "\n\n" + old[old.index(KEEP_MARKER) :]
    path.write_text(text, encoding="utf-8")
    return path


KEEP_MARKER = "<!-- sections below are kept when the model is re-exported -->"


def _aux_lines(cfgd: dict) -> str:
    out = ""
    if cfgd.get("aux"):
        out += (
            "- Auxiliary: citectx ACL-ARC train + 3C ACT train contexts, 6 classes mapped to SciCite "
            "(BACKGROUND, FUTURE, MOTIVATION -> background; USES, EXTENSION -> method; "
            f"COMPARES_CONTRASTS -> result; `assistant.training.intent_aux`), loss weight {cfgd.get('aux_weight')}.\n"
        )
    if cfgd.get("teacher_logits"):
        out += (
            f"- Distilled from teacher logits `{cfgd['teacher_logits']}`: loss = "
            f"{1 - cfgd['distill_alpha']:.2f} * CE + {cfgd['distill_alpha']:.2f} * T^2 KL(teacher_T || student_T), "
            f"T = {cfgd['distill_temperature']}.\n"
        )
    return out


def _int8_section(summary: dict) -> str:
    q = summary.get("int8_dev")
    if not q:
        return ""
    per = ", ".join(f"{lab} {m['f1']:.3f}" for lab, m in q["per_class"].items())
    return f"""
## Shipped int8 ONNX on dev (`assistant eval scicite dev.jsonl`)
Accuracy {q["accuracy"]:.4f}, macro-F1 **{q["macro_f1"]:.4f}** (per-class F1: {per}).
Confusion matrix (rows = gold): {q["confusion_matrix"]["rows_true_cols_pred"]}.
Throughput while exporting: {q["n"]} contexts in {q["seconds"]} s wall / {q["cpu_seconds"]} s CPU
({q["runtime"]}; machine load average {q["load_avg"]}).
"""
