"""rsim_env (and the scripted agents) must import and run with torch absent."""

import subprocess
import sys

import pytest

from tests.sandbox import module_opt_in  # noqa: F401 - code problems: bubblewrap, else the explicit opt-in

pytestmark = pytest.mark.usefixtures("module_opt_in")

CODE = r"""
import sys
for name in ("torch", "transformers", "accelerate"):
    sys.modules[name] = None  # any import of these now raises ImportError
import rsim_env
assert not any(m == "agents" or m.startswith("agents.") for m in sys.modules), "rsim_env imported agents"
import gymnasium
from agents.planners.gym import TextFeatures
g = TextFeatures(gymnasium.make("rsim/Planner-v0", max_steps=3))
g.reset(seed=0); g.step(8)
from rsim_env import rsim_v0
par = rsim_v0.parallel_env(max_steps=2); par.reset(seed=0)
from agents.scripted.policies import FixedPlanner, TemplateReasoner
e = rsim_env.env(max_steps=4)
e.reset(seed=3)
prob = e.unwrapped.episode.problem
p, r = FixedPlanner([1, 8]), TemplateReasoner(oracle={prob.question: prob.answer})
p.reset(1); r.reset(1)
for agent in e.agent_iter():
    obs, rew, term, trunc, info = e.last()
    if term or trunc:
        e.step(None); continue
    e.step((p if agent == "planner" else r).act([0], [obs])[0])
assert info["correct"] is True, info
import rsim_env.code, rsim_env.sources.humaneval, rsim_env.sources.mbpp, rsim_env.sources.codealpaca, rsim_env.sources.code_tasks
assert rsim_env.code.execute("def solution():\n    return 1\n", "def check(c):\n    assert c() == 1\n").passed
assert "torch" not in {m.split(".")[0] for m, v in sys.modules.items() if v is not None}
print("OK")
"""


def test_env_runs_without_torch():
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("OK")
