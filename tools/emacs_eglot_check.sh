#!/usr/bin/env bash
# Editor check: Emacs + Eglot (Debian's emacs-nox + elpa-eglot, headless, no AUCTeX) against
# `assistant lsp --no-recommend` on the sample library: complete in \cite{ and [@, accept (the
# .bib entry added although Eglot 1.9 cannot create files), hover, definition, references,
# rename. Exit 0 = all steps passed; 1 = failure; 77 = skipped (no emacs or no eglot).
#   tools/emacs_eglot_check.sh            (uses .venv/bin/python, else python3)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PYTHON:-$([ -x .venv/bin/python ] && echo .venv/bin/python || echo python3)}
if ! command -v emacs >/dev/null 2>&1; then
  echo "SKIP: emacs not installed (apt-get install -y emacs-nox elpa-eglot)"; exit 77
fi
EMACS_VERSION=$(emacs --version | head -1)
if ! emacs --batch --eval '(progn (package-initialize) (require (quote eglot)))' >/dev/null 2>&1; then
  echo "SKIP: $EMACS_VERSION has no eglot (apt-get install -y elpa-eglot)"; exit 77
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/emacs-eglot-check.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export HF_HUB_OFFLINE=1 PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
PY_ABS=$("$PY" -c 'import sys; print(sys.executable)')
echo "editor check: $EMACS_VERSION + Eglot; citation editing (keys only)..."
mkdir -p "$WORK/edit"
"$PY" -m assistant.cli --db "$WORK/keys.sqlite" library import -q "$ROOT/assistant/resources/sample/library.bib"
printf 'We build on prior work \\cite{}.\n\\bibliography{refs}\n' >"$WORK/edit/paper.tex"
printf -- '---\nbibliography: refs.bib\n---\nAs [@] shows.\n' >"$WORK/edit/notes.md"
export CITE_ASSIST_FOLDER="$WORK/edit" CITE_ASSIST_RESULT="$WORK/result.json"
export CITE_ASSIST_LSP_ARGS="$PY_ABS"$'\t-m\tassistant.cli\tlsp\t--no-recommend\t--db\t'"$WORK/keys.sqlite"$'\t--log-file\t'"$WORK/server.log"
HOME="$WORK" timeout 300 emacs --batch --eval '(package-initialize)' \
  -l "$ROOT/tools/emacs_eglot_check.el" >"$WORK/emacs.out" 2>&1 || true
if [ ! -s "$WORK/result.json" ]; then
  echo "FAIL: Emacs wrote no result"; tail -40 "$WORK/emacs.out"; tail -30 "$WORK/server.log" 2>/dev/null; exit 1
fi
"$PY" - "$WORK/result.json" <<'PY'
import json, sys
out = json.load(open(sys.argv[1]))
steps = out["steps"]
print(json.dumps(out))
want = ["complete_cite", "accept_adds_bib_entry", "hover", "definition", "references", "rename", "complete_pandoc"]
failed = [s for s in want if not steps.get(s, {}).get("ok")]
if failed or "error" in steps:
    sys.exit(f"FAIL: Eglot editing steps failed: {failed} {steps.get('error', '')}")
print("OK: Eglot completes, accepts (.bib entry added), hovers, jumps, finds references and renames")
PY
