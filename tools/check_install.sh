#!/usr/bin/env bash
# The package installs like a library: a NON-editable `pip install` into a fresh venv, then the
# main job run from another directory (no checkout on the path): build the encoder, import the
# bundled sample library (package data), index, recommend, and the GUI's headless demo.
# Usage: tools/check_install.sh   (PYTHON=python3.11 by default; prints one OK line or fails)
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
PY=${PYTHON:-python3.11}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
start=$(date +%s)

"$PY" -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install -q --upgrade pip
# a wheel built from the tree, installed as users get it (not -e)
"$WORK/venv/bin/pip" install -q torch==2.13.0 "$REPO[cpu,gui,train]"

cd "$WORK"  # nothing of the checkout is importable from here
export ASSISTANT_HOME="$WORK/home" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 QT_QPA_PLATFORM=offscreen
BIN="$WORK/venv/bin"
where=$("$BIN/python" -c 'import assistant, pathlib; print(pathlib.Path(assistant.__file__).parent)')
case "$where" in
  "$REPO"*) echo "FAIL: assistant imported from the checkout ($where), not the installed package"; exit 1 ;;
esac
sample=$("$BIN/python" -c 'import importlib.resources as r; print(r.files("assistant") / "resources" / "sample" / "library.bib")')
test -f "$sample" || { echo "FAIL: the sample library is not package data ($sample)"; exit 1; }

"$BIN/assistant" --version
"$BIN/assistant" models build minilm
"$BIN/assistant" library import "$sample" -q
"$BIN/assistant" index -q
out=$("$BIN/assistant" recommend "Click models separate the attractiveness of a snippet from satisfaction." --json -k 5)
echo "$out" | "$BIN/python" -c 'import json, sys; d = json.load(sys.stdin); assert len(d["items"]) == 5, d; print("top:", d["items"][0]["citekey"])'
"$BIN/assistant-gui" --sample --demo --sentences 1 -k 3 > "$WORK/demo.txt"
grep -q . "$WORK/demo.txt" || { echo "FAIL: assistant-gui --sample --demo printed nothing"; exit 1; }

echo "OK: non-editable install works from another directory ($(( $(date +%s) - start )) s)"
