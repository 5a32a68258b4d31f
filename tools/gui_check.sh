#!/usr/bin/env bash
# Real-window checks (issues 18 and 34): installs Xvfb when missing, runs tools/gui_check.py and
# tools/gui_check_day.py under it with throw-away ASSISTANT_HOMEs; screenshots land in
# $GUI_CHECK_OUT (default /tmp/gui-check), never in the repository: look at them.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
if ! command -v xvfb-run >/dev/null 2>&1; then
  echo "installing Xvfb and Qt's X libraries for the real-window check (apt)..."
  if [ "$(id -u)" = 0 ]; then make gui-deps || true; else sudo -n make gui-deps || true; fi
fi
if ! command -v xvfb-run >/dev/null 2>&1; then
  echo "SKIP: real-window check: Xvfb could not be installed with apt (no apt, no root or no package index); run tools/gui_check.sh where xvfb-run exists"
  exit 0
fi
HOME_DIR=$(mktemp -d)
trap 'rm -rf "$HOME_DIR"' EXIT
unset QT_QPA_PLATFORM
export ASSISTANT_HOME="$HOME_DIR" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
xvfb-run -a -s "-screen 0 1920x1080x24" "$PY" tools/gui_check.py
# the same screen at 150 % (QT_SCALE_FACTOR): the window must fit
SCALE_HOME=$(mktemp -d)
ASSISTANT_HOME="$SCALE_HOME" QT_SCALE_FACTOR=1.5 \
  xvfb-run -a -s "-screen 0 1920x1080x24" "$PY" tools/gui_check.py --scale
rm -rf "$SCALE_HOME"
# issue 34: a working day (import, cancel, fallback, curation, layout, keyboard, help)
export GUI_CHECK_OUT=${GUI_CHECK_OUT:-/tmp/gui-check}
DAY_HOME=$(mktemp -d)
ASSISTANT_HOME="$DAY_HOME" xvfb-run -a -s "-screen 0 1920x1080x24" "$PY" tools/gui_check_day.py
rm -rf "$DAY_HOME"
# the library side panel at 1024x700 and QT_SCALE_FACTOR=1.5: no clipped label
DAY_HOME=$(mktemp -d)
ASSISTANT_HOME="$DAY_HOME" QT_SCALE_FACTOR=1.5 \
  xvfb-run -a -s "-screen 0 1920x1080x24" "$PY" tools/gui_check_day.py --layout-only
rm -rf "$DAY_HOME"
