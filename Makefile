# latentfuzz: `make run` opens the dashboard, `make test` runs the suite. Both start from a
# fresh machine: they create .venv and install what they need first.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
# torch is pinned to the local CPU build; an unpinned torch pulls a multi-GB CUDA build.
TORCH  := torch==2.13.0
PORT   ?= 8501

.PHONY: run test test-loaded test-slow test-browser test-all lint bench bench-ui bench-gpu models install dev clean chromium stress-ng golden figures

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q $(TORCH)
	$(BIN)/pip install -q -e .
	touch $@

$(VENV)/.dev-installed: $(VENV)/.installed
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

install: $(VENV)/.installed
dev: $(VENV)/.dev-installed

# Through `latentfuzz ui`: loopback, XSRF, no usage statistics, from any directory.
# ADDRESS=0.0.0.0 listens beyond loopback (containers), with a warning.
ADDRESS ?= 127.0.0.1
run: install
	$(BIN)/latentfuzz ui --port $(PORT) --address $(ADDRESS)

# Two workers (pytest-xdist): while one test waits on a campaign process, a browser or a
# store lock, the other runs. `pytest -q` alone runs the same tests one at a time.
test: dev chromium
	$(BIN)/python -m pytest -q -n 2

# The suite beside a CPU-bound load (Debian's stress-ng: four busy workers, so that with
# the suite's two the 2-core CI machine runs at a load average of about 8, as a shared one
# does). The load runs in its own session (setsid), and its whole group is killed when the
# suite ends, passed, failed or interrupted; make's exit status is the suite's.
LOAD_CPUS ?= 4
test-loaded: dev chromium stress-ng
	@setsid stress-ng --cpu $(LOAD_CPUS) --quiet 2>/dev/null & load=$$!; \
	  trap 'kill -- -$$load 2>/dev/null; wait $$load 2>/dev/null' EXIT INT TERM; \
	  $(BIN)/python -m pytest -q -n 2

stress-ng:
	@command -v stress-ng >/dev/null || (apt-get update -q && apt-get install -y -q stress-ng) \
	  || (echo "make: Debian's stress-ng is needed for test-loaded; install it as root" && false)

test-slow: dev
	$(BIN)/python -m pytest -q -m slow

# Browser tests drive Debian's Chromium with Playwright (no browser download).
chromium:
	@command -v chromium >/dev/null || (apt-get update -q && apt-get install -y -q chromium) \
	  || (echo "make: Debian's chromium is needed for the browser test; install it as root" && false)

test-browser: dev chromium
	$(BIN)/python -m pytest -q -m browser

test-all: dev
	$(BIN)/python -m pytest -q -m "slow or not slow"

# ruff's rules and its formatter, then the architecture's contracts (pyproject.toml).
lint: dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache

bench: install
	$(BIN)/latentfuzz bench

# Time to act in the browser (issue 36): every page's first load and rerun with 300
# campaigns, labelling key to next image, launch to first generation; one core kept busy.
# Figures to test-artifacts/ui-timing.json.
bench-ui: dev chromium
	$(BIN)/python -m pytest -q -m "browser and slow" tests/dashboard/test_browser_timing.py -s

# On a GPU machine: the tests marked cuda (which `test` and `test-slow` leave out), the
# campaigns on CUDA and the efficiency at three sizes, within 8 minutes; figures to OUT.
OUT ?= bench-gpu.json
bench-gpu: dev
	$(BIN)/latentfuzz bench gpu --out $(OUT)

# Retrain the default MNIST zoo (commands and seeds are recorded in each card). --out names
# the bundled folder: `latentfuzz train` writes to the user's models folder otherwise.
ZOO := --out models
models: install
	$(BIN)/latentfuzz train classifier --architecture convnet --epochs 15 --seed 0 --default $(ZOO)
	$(BIN)/latentfuzz train classifier --architecture lenet5 --epochs 15 --seed 0 --no-default $(ZOO)
	$(BIN)/latentfuzz train vae --epochs 100 --seed 0 --default $(ZOO)
	$(BIN)/latentfuzz train gan --epochs 60 --seed 0 --no-default $(ZOO)
	$(BIN)/latentfuzz train dm --epochs 30 --seed 0 --no-default $(ZOO)

# The golden outcomes (tests/golden/outcomes.json) that tests/engine/test_golden.py pins:
# rerun only when a change to the search's draws is intended, and note it in
# docs/changelog.md (the command prints the line the test looks for). ONLY=NAME: one case.
golden: dev
	$(BIN)/python -m tests.golden.regenerate $(if $(ONLY),--only $(ONLY))

# The docs' measured figures (engine/figures/), each into docs/figures/NAME.md stamped with
# the commit; ONLY=NAME[,NAME]: those only; QUICK=1: a test's size, not for quoting.
figures: install
	$(BIN)/python -m engine.figures $(if $(ONLY),--only $(ONLY)) $(if $(QUICK),--quick) $(if $(KEEP),--keep $(KEEP))

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info

# The documentation site, into site/; --strict fails on a broken link or anchor.
.PHONY: docs
docs: dev
	$(BIN)/mkdocs build --strict
