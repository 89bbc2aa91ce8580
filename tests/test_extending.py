"""docs/extending.md, run: a new learner, reward component, hub dataset and source, added as the doc says.

Each section's ```python blocks are applied to a copy of the packages in ``tmp_path`` as their
first line says (``# PATH``: a new file; ``# PATH, above|below the line `ANCHOR```: inserted at
the one line that starts with ANCHOR), then a fresh interpreter on that copy uses the change end
to end. The checkout is never edited and nothing is registered in this process, so no test sees
another's extension. A doc whose code no longer applies, or no longer works, fails here.
(Strategy rows and protocols: tests/test_strategy_rows.py; problem kinds: tests/test_kinds.py.)
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "extending.md").read_text(encoding="utf-8")
PACKAGES = ("rsim_env", "algos", "agents")
HEADER = re.compile(r"# (?P<path>[\w/]+\.py)(?:, (?P<where>above|below) the line `(?P<anchor>.+)`)?")


def section(title: str) -> list[str]:
    """The ```python blocks under the doc heading ``#### title`` (up to the next heading)."""
    m = re.search(rf"^#### {re.escape(title)}\n(.*?)(?=^#{{2,4}} |\Z)", DOC, flags=re.S | re.M)
    assert m, f"docs/extending.md has no '#### {title}' section"
    return re.findall(r"```python\n(.*?)```", m.group(1), flags=re.S)


def apply(block: str, tree: Path) -> None:
    """Make the change ``block``'s header line describes, in the copy at ``tree``."""
    header, _, body = block.partition("\n")
    m = HEADER.fullmatch(header)
    assert m, f"block header {header!r} is not '# PATH' or '# PATH, above|below the line `ANCHOR`'"
    path = tree / m["path"]
    if m["where"] is None:
        assert not path.exists(), f"{m['path']} exists already; the doc's new file would overwrite it"
        path.write_text(body, encoding="utf-8")
        return
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    hits = [i for i, line in enumerate(lines) if line.strip().startswith(m["anchor"])]
    assert len(hits) == 1, f"{m['path']}: {len(hits)} lines start with {m['anchor']!r}; the doc needs exactly one"
    at = hits[0]
    if m["where"] == "above":
        while at > 0 and lines[at - 1].lstrip().startswith("@"):  # above a definition means above its decorators
            at -= 1
        lines.insert(at, body + "\n")
    else:
        lines.insert(at + 1, body)
    path.write_text("".join(lines), encoding="utf-8")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A throwaway copy of the packages."""
    out = tmp_path / "tree"
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, out / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    return out


def run(tree: Path, code: str, **values: str) -> str:
    """Run ``code`` on the copy in a fresh interpreter (``values`` become its constants); its stdout."""
    head = "".join(f"{k} = {v!r}\n" for k, v in values.items())
    check = f"import rsim_env, algos, agents\nassert all(m.__file__.startswith({str(tree)!r}) for m in (rsim_env, algos, agents))\n"
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", head + check + textwrap.dedent(code)], cwd=tree, env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, f"--- stdout ---\n{out.stdout[-2000:]}\n--- stderr ---\n{out.stderr[-4000:]}"
    return out.stdout


TABLE_ROW = re.compile(r"^\| (?P<change>[^|]+?) \|.*\| `(?P<test>tests/test_\w+\.py)::(?P<name>test_\w+)` \|$", re.M)


def test_each_row_names_a_test_that_exists():
    """Every row of the table names the test that makes its change, and that test is defined."""
    table = re.search(r"^\| change \|.*?\n\n", DOC, flags=re.S | re.M)
    assert table, "docs/extending.md has no table starting with '| change |'"
    rows = [line for line in table.group(0).splitlines()[2:] if line.startswith("| ")]
    named = [TABLE_ROW.match(line) for line in rows]
    assert rows and all(named), [r.split(" | ")[0] for r, m in zip(rows, named) if not m]
    for m in named:
        source = (ROOT / m["test"]).read_text(encoding="utf-8")
        assert re.search(rf"^def {m['name']}\(", source, flags=re.M), f"{m['change']}: {m['test']}::{m['name']} is not defined"


@pytest.mark.parametrize("title,files", [
    ("A learner", {"algos/rloo.py", "algos/learners.py"}),
    ("A reward component", {"my_rewards.py"}),
    ("A hub dataset", {"rsim_env/sources/loaders.py"}),
    ("Another problem source", {"rsim_env/sources/data.py"}),
], ids=["learner", "reward", "loader", "source"])
def test_each_section_says_where_its_code_goes(title, files):
    blocks = section(title)
    headers = [HEADER.fullmatch(b.partition("\n")[0]) for b in blocks]
    assert blocks and all(headers), [b.partition("\n")[0] for b in blocks]
    assert {h["path"] for h in headers} == files


LEARNER_CHECK = """
import contextlib, io, json
from pathlib import Path

import torch
from accelerate.utils import set_seed

import algos.rloo
from algos.cli import build_agents, build_learner, main, parse

calls = []
doc_advantages = algos.rloo.RLOO.advantages


def counted(self, rewards, group_size, cfg):
    calls.append(group_size)
    return doc_advantages(self, rewards, group_size, cfg)


algos.rloo.RLOO.advantages = counted  # to see that the trainer calls the learner's own hook
shown = io.StringIO()
with contextlib.redirect_stdout(shown), contextlib.suppress(SystemExit):
    parse(["train", "--help"])
assert "rloo" in shown.getvalue(), "rsim train --help does not list the learner"
argv = ["train", "--preset", "tiny", "--learner", "rloo", "--steps", "2", "--out", OUT, "--set", "train.progress=false"]
_, cfg, _ = parse(argv)
assert cfg.learner == "rloo"


def flat(module):
    return torch.cat([p.detach().flatten() for p in module.parameters()]).clone()


set_seed(cfg.train.seed)
agents = build_agents(cfg, build_learner(cfg), "cpu")
assert set(agents) == {"reasoner"}, "env_planner=False: no planner is built"
before = flat(agents["reasoner"].module)
out = main(argv)
assert set(out["params"]) == {"reasoner"}
assert not torch.equal(flat(out["params"]["reasoner"]), before), "the reasoner's parameters did not change"
assert calls and set(calls) == {cfg.train.grpo.group_size}, calls
assert json.loads((Path(out["checkpoint"]) / "config.json").read_text())["learner"] == "rloo"
r = torch.tensor([1.0, 0.0, 0.0, 1.0, 2.0, 2.0])  # RLOO's baseline is the mean of the others
assert torch.allclose(doc_advantages(algos.rloo.RLOO(), r, 3, cfg.train.grpo),
                      torch.tensor([1.0, -0.5, -0.5, -1.0, 0.5, 0.5]))
"""


def test_a_learner_added_as_the_doc_says_trains_by_name(tree, tmp_path):
    """``--learner rloo`` is accepted and listed, trains the reasoner for 2 steps through the learner's hook."""
    for block in section("A learner"):
        apply(block, tree)
    run(tree, LEARNER_CHECK, OUT=str(tmp_path / "run"))


REWARD_CHECK = """
import math

from agents.scripted.policies import FixedPlanner, TemplateReasoner
from algos.cli import main, parse
from my_rewards import brevity, r_brevity
from rsim_env import EnvConfig, EnvGroup, Problem

assert brevity.agents == ("reasoner",) and not brevity.needs_plans and brevity.weight == 0.5
PROB = Problem("p", "What is 6 * 7?", "42", "number")


def play(components):
    group = EnvGroup([PROB], 1, max_steps=6, components=components)
    agents = {"planner": FixedPlanner([3]), "reasoner": TemplateReasoner({PROB.question: "42"})}
    group.reset(seed=0)
    for a in agents.values():
        a.reset(len(group))
    while not group.done:
        agent, ids, observations = group.observe()
        group.step(agents[agent].act(ids, observations))
    return group.results()[0]


off, on = play(()), play((brevity,))
value = on["info"]["components"]["brevity"]
assert "brevity" not in off["info"]["components"] and value == r_brevity(on["info"]["shown_steps"][-1]) > 0, value
assert math.isclose(on["rewards"]["reasoner"], off["rewards"]["reasoner"] + 0.5 * value)
assert on["rewards"]["planner"] == off["rewards"]["planner"], "the planner's sum does not list it"
assert r_brevity("x" * 400) == 1.0 and r_brevity("x" * 600) == 0.5 and r_brevity("x" * 800) == 0.0
argv = ["train", "--preset", "tiny", "--steps", "1", "--out", OUT, "--set", "train.progress=false",
        "--set", 'env.components=["my_rewards:brevity"]']
_, cfg, _ = parse(argv)
assert cfg.env.components == ("my_rewards:brevity",) and EnvConfig(components=cfg.env.components).rubric.names[-1] == "brevity"
out = main(argv)
assert "rewards/brevity/mean" in out["history"][-1], sorted(out["history"][-1])
"""


def test_a_reward_component_added_as_the_doc_says_is_logged_weighted_and_settable(tree, tmp_path):
    """Its value is in ``info["components"]``, its weight moves the reasoner's reward only, ``--set`` names it."""
    for block in section("A reward component"):
        apply(block, tree)
    run(tree, REWARD_CHECK, OUT=str(tmp_path / "run"))


SVAMP_ROWS = [
    {"ID": "chal-2", "Body": "Dan had $ 3 left with him after he bought a candy bar. If he had $ 4 at the start",
     "Question": "How much did the candy bar cost?", "Equation": "( 4.0 - 3.0 )", "Answer": 1.0, "Type": "Subtraction"},
    {"ID": "chal-777", "Body": "There are 87 oranges and 290 bananas. The bananas are organized into 2 groups",
     "Question": "How big is each group of bananas?", "Equation": "( 290.0 / 2.0 )", "Answer": "145",
     "Type": "Common-Division"},
]

LOADER_CHECK = """
import json, sys, types

from agents.scripted.policies import TemplateReasoner
from algos.cli import build_problems
from algos.config import resolve
from rsim_env import EnvGroup
from rsim_env.sources.data import check_spec, load_problems, spec_help

rows = json.loads(ROWS)
local = load_problems(PATH, kind="svamp")  # a local file in the hub set's layout
assert [(p.id, p.answer, p.answer_type, p.source) for p in local] == [
    ("svamp/chal-2", "1", "number", "svamp"), ("svamp/chal-777", "145", "number", "svamp")], local
assert local[0].question.startswith("Dan had") and local[0].question.endswith("How much did the candy bar cost?")
assert local[1].metadata["equation"] == "( 290.0 / 2.0 )"
seen = []


def load_dataset(name, *args, split=None, **kwargs):  # the hub, faked: no network in tests
    seen.append((name, split))
    return rows


sys.modules["datasets"] = types.SimpleNamespace(load_dataset=load_dataset)
check_spec("svamp")
assert "svamp" in spec_help(), "--help does not list the dataset"
assert [p.id for p in load_problems("svamp", limit=1)] == ["svamp/chal-2"] and seen == [("ChilleD/SVAMP", "test")]
cfg = resolve("tiny", {"data.source": "svamp", "data.split": "train"})  # = rsim train --data svamp
problems = build_problems(cfg)
assert seen[-1] == ("ChilleD/SVAMP", "train") and [p.answer for p in problems] == ["1", "145"]
group = EnvGroup(problems, 1, planner=False)
reasoner = TemplateReasoner({p.question: p.answer for p in problems})
group.reset(seed=0)
reasoner.reset(len(group))
while not group.done:
    _, ids, observations = group.observe()
    group.step(reasoner.act(ids, observations))
assert [r["info"]["correct"] for r in group.results()] == [True, True]
"""


def test_a_hub_dataset_added_as_the_doc_says_loads_by_name_and_from_a_file(tree, tmp_path):
    """``svamp`` is a data spec (hub faked) and ``kind="svamp"`` reads a local file; its problems play."""
    for block in section("A hub dataset"):
        apply(block, tree)
    path = tmp_path / "svamp.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in SVAMP_ROWS), encoding="utf-8")
    run(tree, LOADER_CHECK, PATH=str(path), ROWS=json.dumps(SVAMP_ROWS))


SOURCE_CHECK = """
import contextlib, io

from agents.scripted.policies import TemplateReasoner
from algos.cli import build_problems, parse
from rsim_env import EnvGroup
from rsim_env.sources.data import check_spec, load_problems

check_spec("products")
shown = io.StringIO()
with contextlib.redirect_stdout(shown), contextlib.suppress(SystemExit):
    parse(["train", "--help"])
assert "products" in shown.getvalue(), "rsim train --help does not list the source"
problems = load_problems("products", limit=8, seed=1)
assert len(problems) == 8 and problems == load_problems("products", limit=8, seed=1) != load_problems("products", limit=8)
assert all(p.source == "products" and int(p.answer) == int(p.question[8]) * int(p.question[12]) for p in problems)
_, cfg, _ = parse(["train", "--preset", "tiny", "--data", "products", "--set", "data.size=4"])
assert [p.id for p in build_problems(cfg)] == [f"products/{i}" for i in range(4)]
assert [p.source for p in load_problems("mix:products,tiny", limit=2)] == ["products", "tiny", "products", "tiny"]
group = EnvGroup(problems[:2], 1, planner=False)
reasoner = TemplateReasoner({p.question: p.answer for p in problems})
group.reset(seed=0)
reasoner.reset(len(group))
while not group.done:
    _, ids, observations = group.observe()
    group.step(reasoner.act(ids, observations))
assert [r["info"]["correct"] for r in group.results()] == [True, True]
"""


def test_a_problem_source_added_as_the_doc_says_is_a_data_spec(tree):
    """``products`` is a seeded data spec of ``rsim train --data``, listed by ``--help``, mixable, and plays."""
    for block in section("Another problem source"):
        apply(block, tree)
    run(tree, SOURCE_CHECK)
