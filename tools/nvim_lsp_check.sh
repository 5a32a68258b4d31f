#!/usr/bin/env bash
# Editor check: Neovim (headless, its built-in LSP client) gets citation completions from
# `assistant lsp` on the bundled sample draft. Exit 0 = completions arrived and the draft's
# citation is among the top 5; 1 = failure; 77 = skipped (no nvim).
#   tools/nvim_lsp_check.sh            (uses .venv/bin/python, else python3)
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
PY_ABS=$("$PY" -c 'import sys; print(sys.executable)')
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
