# Welman IK: `make demo` and `make test` set up everything they need on a fresh machine.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
OUT := out
RUFF_ARGS := --line-length 120 --target-version py311 --ignore RUF012

.PHONY: all venv demo test test-core test-blender e2e lint bench package clean

all: test

$(VENV)/.installed: tests/requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r tests/requirements.txt
	touch $@

venv: $(VENV)/.installed

## demo: pose the Rigify basic human with each solver; writes out/demo.blend and out/demo.png
demo: venv
	$(PY) scripts/demo.py --output $(OUT)

## test: lint, the core tests (no Blender), the Blender tests (bpy module), the real-window test
test: venv lint test-core test-blender e2e

test-core: venv
	$(PY) -m pytest tests/core -q

test-blender: venv
	$(PY) -m pytest tests/blender -q

E2E_DEBS := blender xvfb xdotool imagemagick python3-numpy

## e2e: the interactive drag in a real Blender 3.4 window (Debian packages, Xvfb, xdotool)
e2e:
	dpkg -s $(E2E_DEBS) >/dev/null 2>&1 || { apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(E2E_DEBS) >/dev/null; }
	$(PYTHON) tests/e2e/run_e2e.py --mode dry-run,confirm,undo --output $(OUT)
	$(PYTHON) tests/e2e/run_e2e.py --mode cancel --steps 100 --step-sleep 0.35 --output $(OUT)

lint: venv
	$(PY) -m ruff check $(RUFF_ARGS) welman_ik tests scripts

## bench: time per drag step against Blender's own IK
bench: venv
	$(PY) scripts/bench_drag.py

## package: the extension .zip, built and validated by Blender's own extension tool
package: venv
	$(PY) scripts/package.py --output $(OUT)

clean:
	rm -rf $(OUT) .pytest_cache .ruff_cache
