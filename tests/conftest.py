"""Fakes and fixtures shared by several test files (one copy here instead of one per file).

Importable without torch: the env-only install check (``make check-env-only``) collects test files with
this conftest and no torch, so torch-based fakes are built inside their fixtures, never at import.

* ``scripted_lm``: the class of a fake causal LM that writes fixed scripts (byte-level tiny tokenizer);
* ``gguf``: the embedded GGUF's path (skips without llama-cpp-python or the fetched file);
* ``single_thread``: torch on one thread for a module whose timings or results need it
  (``pytestmark = pytest.mark.usefixtures("single_thread")``);
* ``_ledgers_kept_apart`` (autouse): a test's looks at a test set go to a ledger folder of its own;
* ``_torch_threads_restored`` (autouse): a test that runs a CLI in-process (``algos.threads.use_threads`` sets
  torch's thread count for the whole process, from the machine's load) leaves the count as it found it, so a
  later test's float reductions do not depend on which tests ran before it or on the load when they did;
* long files first: a file with a ``slow`` or ``long`` test is collected before the others, so that pytest-xdist
  (``make test`` runs two workers, one file to a worker at a time) starts the longest files first instead of
  leaving one worker busy with a late minutes-long file while the other is idle;
* ``seeded(env)``: an env (AEC or parallel, wrapped or not) whose spaces and problem draws are seeded, for
  PettingZoo's stock tests, which sample actions from unseeded spaces.
"""

from __future__ import annotations

import sys

import pytest


LONG_MARKS = ("slow", "long")


def pytest_collection_modifyitems(items):
    """Files holding a ``slow`` or ``long`` test first, each file's tests kept together and in order (a stable sort):
    the longest-first order that keeps xdist's ``--dist loadfile`` from ending on one worker (module docstring)."""
    long_files = {item.path for item in items if any(item.get_closest_marker(m) for m in LONG_MARKS)}
    items.sort(key=lambda item: item.path not in long_files)


@pytest.fixture(autouse=True)
def _ledgers_kept_apart(tmp_path_factory, monkeypatch):
    """A test's looks at a test set go to a ledger folder and index of its own (``RSIM_LEDGER_DIR``, which replaces
    the search of the committed ledgers and the user's index, and ``RSIM_LEDGER_HOME``): a test that scores a copy of
    a committed tree never writes into the committed ledger of its problems (algos/study/ledger.py)."""
    d = tmp_path_factory.mktemp("ledgers")
    monkeypatch.setenv("RSIM_LEDGER_DIR", str(d / "dir"))
    monkeypatch.setenv("RSIM_LEDGER_HOME", str(d / "home"))


@pytest.fixture(autouse=True)
def _torch_threads_restored():
    torch = sys.modules.get("torch")  # never imports torch (the env-only install check has none)
    before = torch.get_num_threads() if torch is not None else None
    yield
    torch = sys.modules.get("torch")
    if torch is not None and before is not None and torch.get_num_threads() != before:
        torch.set_num_threads(before)


@pytest.fixture(scope="session")
def scripted_lm() -> type:
    """``ScriptedLM(scripts)``: row r 'writes' ``scripts[r]`` one byte-token at a time, whatever it is fed.

    It keeps no real KV cache; it only advances a row's script when the row was fed a real token in the
    last column (so rows that finished their step, fed holes, do not advance). ``.tok`` is its tokenizer.
    """
    torch = pytest.importorskip("torch")
    from agents.hf.loading import tiny_config, tiny_tokenizer

    class ScriptedLM(torch.nn.Module):
        def __init__(self, scripts: list[str]):
            super().__init__()
            self.tok = tiny_tokenizer()
            self.config = tiny_config(vocab_size=len(self.tok))
            self.scripts = [self.tok(s, add_special_tokens=False)["input_ids"] for s in scripts]
            self.cursor = [0] * len(scripts)
            self.weight = torch.nn.Parameter(torch.zeros(1))

        def forward(self, input_ids, attention_mask, position_ids, cache, use_cache, logits_to_keep):
            n, vocab = input_ids.shape[0], self.config.vocab_size
            logits = torch.zeros(n, 1, vocab)
            for r in range(n):
                if attention_mask[r, -1]:
                    script = self.scripts[r]
                    logits[r, 0, script[min(self.cursor[r], len(script) - 1)]] = 100.0
                    self.cursor[r] += 1
            return type("Out", (), {"logits": logits})()

    return ScriptedLM


@pytest.fixture(scope="module")
def gguf() -> str:
    """Path of the embedded GGUF (skips without llama-cpp-python or the fetched model file)."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed (pip install 'rsim[llamacpp]')")
    from agents.embedded import embedded_gguf_path

    try:
        return embedded_gguf_path()
    except ModuleNotFoundError as e:
        pytest.skip(f"embedded GGUF not fetched: {e}")


@pytest.fixture(scope="module")
def single_thread():
    """torch on one thread for the module, restored after."""
    torch = pytest.importorskip("torch")
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def seeded(env, seed: int = 0):
    """``env`` with every agent's action and observation space seeded and its own generator reset with ``seed``.

    PettingZoo's ``api_test``/``parallel_api_test`` call ``action_space(agent).sample()`` on spaces nobody seeded
    and ``reset()`` without a seed, so each run would play other actions on other problems: the same checks, but a
    failure could not be replayed. The spaces are the env's own objects (the API test insists), so seeding them
    here fixes every sample the test draws.
    """
    env.reset(seed=seed)
    for i, agent in enumerate(env.possible_agents):
        env.action_space(agent).seed(seed + i)
        env.observation_space(agent).seed(seed + i)
    return env
