# Welman IK: `make demo` and `make test` set up everything they need on a fresh machine.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
OUT := out
RUFF_ARGS := --line-length 120 --target-version py311 --ignore RUF012

.PHONY: all venv demo test test-core test-blender test-blender-5 test-blender-42 e2e e2e-debs lint bench bench-drag bench-scaling bench-cleanup package clean

all: test

$(VENV)/.installed: tests/requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r tests/requirements.txt
	touch $@

# The add-on's bytecode written once here (as pip does on install): with PYTHONDONTWRITEBYTECODE set, every
# process (each clip of the clean-up command line, each Blender test) would compile it from source (~0.25 s).
venv: $(VENV)/.installed
	$(PY) -m compileall -q welman_ik

## demo: pose the Rigify basic human with each solver; writes out/demo.blend and out/demo.png
demo: venv
	$(PY) scripts/demo.py --output $(OUT)

## test: lint, the core tests (no Blender), the Blender tests (bpy 4.5, 4.2 and 5.0), the real-window test
test: venv lint test-core test-blender test-blender-42 test-blender-5 e2e

test-core: venv
	$(PY) -m pytest tests/core -q

test-blender: venv
	$(PY) -m pytest tests/blender -q

E2E_DEBS := blender xvfb xdotool imagemagick python3-numpy python3-threadpoolctl

e2e-debs:
	dpkg -s $(E2E_DEBS) >/dev/null 2>&1 || { apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(E2E_DEBS) >/dev/null; }

## e2e: the interactive drag, motion edit and bake in a real Blender 3.4 window (Debian packages, Xvfb, xdotool),
## and the batch clean-up run from that Blender executable
# The second confirm raises the right hand to head height, within the arm's reach: the trunk must stay
# within 5 degrees. The cancel run is the timing run (P4), gated at 22 ms a mouse event (about 1.9 times
# today's median of 11.8 ms, so that a 2x slowdown fails): a smaller window draws faster in software, so more of its
# 100 mouse moves reach the drag and are timed. The panel run uses Blender's default layout and sidebar width: the
# pin markers must vanish on Clear and appear on Pin with nothing else redrawing (pixels of its screenshots). The first
# run is a newcomer's first ten minutes: the README's recipe (feet pinned by the sidebar's Pin, the hand dragged from
# the Drag button, out past its reach: the feet flat, the trunk upright, no leg keyed), the Last Solve's figures, and
# pins with frames drawn dim out of force and red in force. The world run pins a hand to an Empty by the sidebar's Pin To
# (greyed out until the Empty is selected too), moves the Empty 17 cm with G and drags the other hand from the Drag
# button: the hand must follow within 1 mm.
e2e: venv e2e-debs
	$(PYTHON) tests/e2e/run_e2e.py --mode dry-run,confirm,undo,pin-key --output $(OUT)
	$(PYTHON) tests/e2e/run_e2e.py --mode confirm --drag 66,-117 --trunk-limit 5 --output $(OUT)/raise
	$(PYTHON) tests/e2e/run_e2e.py --mode cancel --steps 100 --step-sleep 0.35 --screen 1024x640 --p4-limit 22 --output $(OUT)
	$(PYTHON) tests/e2e/run_e2e.py --mode motion --shortcut ctrl+alt+m --output $(OUT)
	$(PYTHON) tests/e2e/run_e2e.py --mode panel --layout default --sidebar-width 0 --screen 1600x900 --output $(OUT)/panel
	$(PYTHON) tests/e2e/run_e2e.py --mode first --layout default --sidebar-width 0 --screen 1600x900 --output $(OUT)/first
	$(PYTHON) tests/e2e/run_e2e.py --mode world --layout default --sidebar-width 0 --screen 1600x900 --output $(OUT)/world
	$(PYTHON) tests/e2e/run_bake_e2e.py --mode cancel,undo --output $(OUT)
	WELMAN_IK_REQUIRE_BLENDER=1 $(PY) -m pytest tests/blender/test_cleanup_cli.py -q -p no:cacheprovider \
		-k blender_executable

# Blender 5.0 (no Action.fcurves, pose-bone selection on PoseBone): the same Blender tests.
VENV5 := .venv-bpy5
$(VENV5)/.installed: tests/requirements.txt
	test -x $(VENV5)/bin/python || $(PYTHON) -m venv $(VENV5)
	$(VENV5)/bin/python -m pip install --quiet "bpy==5.0.1" "numpy<2" "pytest==9.*" "hypothesis==6.*" "threadpoolctl==3.*" \
		"tqdm==4.*" "dask[distributed]==2025.*"
	touch $@

test-blender-5: $(VENV5)/.installed
	$(VENV5)/bin/python -m pytest tests/blender -q -p no:cacheprovider -m "not once"

## test-blender-42: the Blender tests again on bpy 4.2 LTS, the oldest Blender the manifest claims (tests marked
## `once`, which do not depend on the Blender version, run on the main bpy only)
VENV42 := .venv-bpy42
$(VENV42)/.installed: tests/requirements.txt
	test -x $(VENV42)/bin/python || $(PYTHON) -m venv $(VENV42)
	$(VENV42)/bin/python -m pip install --quiet "bpy==4.2.*" "numpy<2" "pytest==9.*" "hypothesis==6.*" \
		"threadpoolctl==3.*" "tqdm==4.*" "dask[distributed]==2025.*"
	touch $@

test-blender-42: $(VENV42)/.installed
	$(VENV42)/bin/python -m pytest tests/blender -q -p no:cacheprovider -m "not once"

## lint: ruff, then the import contracts of .importlinter (the Blender layer's folders import downward only;
## the core never imports bpy nor the Blender layer)
lint: venv
	$(PY) -m ruff check $(RUFF_ARGS) welman_ik tests scripts
	$(VENV)/bin/lint-imports

## bench: the speed aims S1-S7 (issue 40's targets) beside Blender's own IK and bake from the same run (S5: a real-window drag first), written into docs/performance.md
bench: venv e2e-debs
	$(PYTHON) tests/e2e/run_e2e.py --mode cancel --steps 100 --step-sleep 0.35 --screen 1024x640 --output $(OUT)/bench
	$(PY) scripts/bench.py --window $(OUT)/bench/e2e_cancel.json --page docs/performance.md

## bench-drag: time per drag step of every solver against Blender's Standard IK and iTaSC
bench-drag: venv
	$(PY) scripts/bench_drag.py

## bench-scaling: time per drag step against the number of bones (50 to 2000), ours and Blender's; docs/images/scaling.png
bench-scaling: venv
	$(PY) -c "import matplotlib" 2>/dev/null || $(PY) -m pip install --quiet matplotlib
	$(PY) scripts/bench_scaling.py

## bench-cleanup: foot contacts detected and baked on the fixture clips; out/bench_cleanup.json, docs/images/cleanup_*.png
bench-cleanup: venv
	$(PY) -c "import matplotlib" 2>/dev/null || $(PY) -m pip install --quiet matplotlib
	$(PY) scripts/bench_cleanup.py --output $(OUT)

## package: the extension .zip, built and validated by Blender's own extension tool
package: venv
	$(PY) scripts/package.py --output $(OUT)

clean:
	rm -rf $(OUT) .pytest_cache .ruff_cache .import_linter_cache
