"""The decoding layer: one Reasoner over turns + a decoder; adding an engine is one small class.

The turn building, stop rules and records live once (``agents/decoding/turns.py``); these tests add a decoder in a
few lines, play it through the environment, and show that a decoder writing the torch reasoner's tokens gets the
torch reasoner's records exactly (the turns do not depend on who decodes).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytest.importorskip("transformers", reason="the turns render a chat template (the 'train' extra)")

from agents.decoding.turns import Turns  # noqa: E402
from agents.hf.loading import tiny_model, tiny_tokenizer  # noqa: E402
from agents.reasoner import Reasoner, ReasonerConfig  # noqa: E402
from agents.scripted.policies import FixedPlanner  # noqa: E402
from algos.rollout import rollout  # noqa: E402
from rsim_env import EnvGroup  # noqa: E402
from rsim_env.problem import Problem  # noqa: E402

AGENTS = Path(__file__).resolve().parents[1] / "agents"


class ScriptDecoder:
    """A whole engine, as docs/extending.md says: ``reset`` and ``decode``; it writes ``script`` token by token
    (log-prob 0) then end-of-turn, and the turns decide where each step stops."""

    def __init__(self, tokenizer, script: str) -> None:
        self.ids = list(tokenizer(script, add_special_tokens=False)["input_ids"])

    def reset(self, num_copies: int, seed: int | None = None) -> None:
        pass

    def decode(self, turns) -> None:
        for turn in turns:
            for token in self.ids + [turn.turns.eos_id]:
                if turn.write(token, 0.0):
                    break


def _reasoner(script: str, **config) -> Reasoner:
    cfg = ReasonerConfig(greedy=True, **config)
    turns = Turns(tiny_tokenizer(), cfg)
    return Reasoner(config=cfg, decoder=ScriptDecoder(turns.tokenizer, script), turns=turns)


def test_a_decoder_in_a_few_lines_plays_the_environment_under_the_shared_stop_rules():
    problems = [Problem("t/0", "What is 1 + 3?", "4")]
    r = _reasoner("It is \\boxed{4} and more text.")
    out = rollout(EnvGroup(problems, group_size=2, max_steps=2), r, FixedPlanner([3, 8]), seed=0)
    assert all(t["info"]["correct"] for t in out.trajectories)
    for rec in (t["reasoner"] for t in out.trajectories):
        assert len(rec.step_spans) == 2 and rec.prompt_len > 0
        text = r.tokenizer.decode(rec.input_ids[rec.step_spans[-1][0]:rec.step_spans[-1][1]])
        assert text.endswith("\\boxed{4}")  # the kind's stop rule cut the script at the closed box
        assert sum(rec.gen_mask) == sum(end - start for start, end in rec.step_spans)
    assert not hasattr(r, "score") and not hasattr(r, "module")  # no scorer: nothing can train it


def test_a_step_stops_at_the_delimiter_and_the_next_turn_is_glued_by_the_turns():
    r = _reasoner("first part\n\nsecond part")
    r.reset(1)
    obs = {"question": "Q?", "round": 0, "strategy": 3, "injected": "", "instruction": "Q?"}
    assert r.act([0], [obs]) == ["first part"]
    assert r.act([0], [dict(obs, round=1, instruction="")]) == ["first part"]
    rec = r.records()[0]
    (s0, e0), (s1, e1) = rec.step_spans
    assert s1 == e0  # the model wrote the delimiter, so the turns feed none: the next step follows at once
    assert r.tokenizer.decode(rec.input_ids[s0:e0]).endswith("first part\n\n")


class ReplayTokens:
    """A decoder that writes the tokens another reasoner wrote (from its record), step by step."""

    def __init__(self, records) -> None:
        self.records = records

    def reset(self, num_copies: int, seed: int | None = None) -> None:
        pass

    def decode(self, turns) -> None:
        for turn in turns:
            rec = self.records[turn.copy]
            start, end = rec.step_spans[len(turn.conv.step_spans)]
            for token, lp in zip(rec.input_ids[start:end], rec.logprobs[start:end]):
                if turn.write(token, lp):
                    break


def test_the_turns_do_not_depend_on_who_decodes():
    """The torch reasoner's episode, and another decoder writing the same tokens: the very same records."""
    model, tok = tiny_model()
    cfg = ReasonerConfig(max_step_tokens=6, greedy=True)
    problems = [Problem("t/0", "What is 2 + 2?", "4"), Problem("t/1", "What is 3 * 3?", "9")]
    plan = FixedPlanner([1, 3, 8])
    local = rollout(EnvGroup(problems, group_size=2, max_steps=3, protocol="chat+lead"), Reasoner(model, tok, cfg),
                    plan, seed=0)
    records = [t["reasoner"] for t in local.trajectories]
    turns = Turns(tok, cfg)
    other = Reasoner(config=cfg, decoder=ReplayTokens(records), turns=turns)
    again = rollout(EnvGroup(problems, group_size=2, max_steps=3, protocol="chat+lead"), other, plan, seed=0)
    for a, b in zip(local.trajectories, again.trajectories):
        assert b["reasoner"] == a["reasoner"]  # ids, mask, log-probs, spans: all equal
        assert b["info"]["shown_steps"] == a["info"]["shown_steps"]


def _classes(path: Path) -> list[ast.ClassDef]:
    return [n for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if isinstance(n, ast.ClassDef)]


def test_no_class_borrows_another_classs_methods():
    """``name = Other.method`` in a class body copies behaviour without saying what it needs: not in agents/."""
    found = []
    for path in sorted(AGENTS.rglob("*.py")):
        for cls in _classes(path):
            for stmt in cls.body:
                if (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Attribute)
                        and isinstance(stmt.value.value, ast.Name) and stmt.value.value.id[:1].isupper()):
                    found.append(f"{path.name}:{stmt.lineno} {cls.name}")
    assert not found, found


def test_one_llm_reasoner_class():
    """Every class in agents/ that acts as a reasoner is the LLM Reasoner, the replay wrapper, the plan tree's reader
    (which only looks steps up) or a scripted/toy one."""
    acting = {cls.name for path in AGENTS.rglob("*.py") for cls in _classes(path)
              if any(isinstance(f, ast.FunctionDef) and f.name == "act" for f in cls.body)}
    planners = {"Policy", "Planner", "RandomPlanner", "FixedPlanner", "ToyPlanner", "PlanPlayer"}
    assert acting - planners == {"Reasoner", "ReplayReasoner", "_Session", "TreeReasoner", "TemplateReasoner",
                                 "FamilyReasoner", "ToyReasoner"}


def test_the_turns_import_no_torch():
    tree = ast.parse((AGENTS / "decoding" / "turns.py").read_text(encoding="utf-8"))
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not any(n.split(".")[0] in ("torch", "transformers", "numpy", "llama_cpp") for n in names)
