#!/usr/bin/env bash
# Editor check: Neovim (headless, its built-in LSP client) gets citation completions from
# `assistant lsp` on the bundled sample draft. Exit 0 = completions arrived and the draft's
# citation is among the top 5; 1 = failure; 77 = skipped (no nvim).
#   tools/nvim_lsp_check.sh            (uses .venv/bin/python, else python3)
#   CITE_ASSIST_EDITING_ONLY=1 tools/nvim_lsp_check.sh   (step 1 only: no models, ~20 s)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-$([ -x .venv/bin/python ] && echo .venv/bin/python || echo python3)}
if ! command -v nvim >/dev/null 2>&1; then
  echo "SKIP: nvim not installed (apt-get install -y neovim)"; exit 77
fi
NVIM_VERSION=$(nvim --version | head -1)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/nvim-lsp-check.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export HF_HUB_OFFLINE=1 ASSISTANT_HOME="$WORK/home" ASSISTANT_DB="$WORK/home/library.sqlite"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
PY_ABS=$("$PY" -c 'import sys; print(sys.executable)')

# 1. what a user does with citations (keys only, no models): complete in \cite{ and [@, accept
#    (the .bib entry is added by Neovim's own applyEdit), hover, definition, references, rename
echo "editor check: $NVIM_VERSION; citation editing (keys only)..."
mkdir -p "$WORK/edit" "$WORK/home"
"$PY" -m assistant.cli --db "$WORK/home/keys.sqlite" library import -q "$ROOT/assistant/resources/sample/library.bib"
printf 'We build on prior work \\cite{}.\n\\bibliography{refs}\n' >"$WORK/edit/paper.tex"
printf -- '---\nbibliography: refs.bib\n---\nAs [@] shows.\n' >"$WORK/edit/notes.md"
CITE_ASSIST_FOLDER="$WORK/edit" CITE_ASSIST_RESULT="$WORK/edit.json" \
CITE_ASSIST_LSP_CMD="[\"$PY_ABS\", \"-m\", \"assistant.cli\", \"lsp\", \"--no-recommend\", \"--db\", \"$WORK/home/keys.sqlite\", \"--log-file\", \"$WORK/edit-server.log\"]" \
  timeout 300 nvim --headless --clean -u NONE -c "luafile $ROOT/tools/nvim_lsp_editing.lua" >"$WORK/nvim-edit.out" 2>&1 || true
if [ ! -s "$WORK/edit.json" ]; then
  echo "FAIL: Neovim wrote no editing result"; cat "$WORK/nvim-edit.out"; tail -30 "$WORK/edit-server.log" 2>/dev/null; exit 1
fi
"$PY" - "$WORK/edit.json" <<'PY'
import json, sys
steps = json.load(open(sys.argv[1]))["steps"]
print(json.dumps(steps))
want = ["complete_cite", "accept_adds_bib_entry", "hover", "definition", "references", "rename", "complete_pandoc"]
failed = [s for s in want if not steps.get(s, {}).get("ok")]
if failed:
    sys.exit(f"FAIL: Neovim editing steps failed: {failed}")
print("OK: Neovim completes, accepts (.bib entry added), hovers, jumps, finds references and renames")
PY
[ -n "${CITE_ASSIST_EDITING_ONLY:-}" ] && exit 0

# 2. recommendations: the sample library indexed, the draft's citation among the top 5
echo "editor check: $NVIM_VERSION; importing and indexing the sample library..."
"$PY" - <<PY
from pathlib import Path
from assistant.service import Service, ServiceSettings
from assistant.gui import sample
engine = Service(ServiceSettings(db_path=Path("$ASSISTANT_DB")))
status = sample.setup_sample(engine).status
assert status.ready, status.describe()
engine.close()
draft = sample.SAMPLE_DRAFT.read_text(encoding="utf-8")
Path("$WORK/paper").mkdir()
Path("$WORK/paper/draft.tex").write_text(draft.replace(r"\cite{wang2016learningc}", r"\cite{}"), encoding="utf-8")
PY
export CITE_ASSIST_DRAFT="$WORK/paper/draft.tex" CITE_ASSIST_RESULT="$WORK/result.json"
export CITE_ASSIST_LSP_CMD="[\"$PY_ABS\", \"-m\", \"assistant.cli\", \"lsp\", \"--log-file\", \"$WORK/server.log\"]"
timeout 1200 nvim --headless --clean -u NONE -c "luafile $ROOT/tools/nvim_lsp_check.lua" >"$WORK/nvim.out" 2>&1 || true
if [ ! -s "$WORK/result.json" ]; then
  echo "FAIL: Neovim wrote no result"; cat "$WORK/nvim.out"; tail -30 "$WORK/server.log" 2>/dev/null; exit 1
fi
"$PY" - "$WORK/result.json" "$NVIM_VERSION" <<'PY'
import json, sys
out = json.load(open(sys.argv[1]))
labels = out.get("labels") or []
print(json.dumps({"editor": sys.argv[2], "server_state": out.get("state"), "items": len(labels),
                  "top5": labels[:5], "error": out.get("error")}))
if out.get("error") or out.get("state") != "ready" or not labels:
    sys.exit("FAIL: no completions from assistant lsp in Neovim")
if "wang2016learningc" not in labels[:5]:
    sys.exit("FAIL: the draft's citation wang2016learningc is not in the top 5")
print("OK: Neovim got citation completions from assistant lsp")
PY
