"""Kind-aware prompts: code problems ask for a fenced program, code's termination lead-in opens the
block, extraction reads a lead-in-opened block, detection on programs, agents on code (model-free)."""

from __future__ import annotations

import pytest

from agents.scripted.policies import WRONG_PROGRAM, FixedPlanner, TemplateReasoner
from algos.rollout import rollout
from rsim_env import EnvGroup, Problem, env, render
from rsim_env.code.extract import answer_text, closes_program, extract_program, leaves_open, prose
from rsim_env.code.follow import detect_code_step
from rsim_env.kinds.code import pending_runs
from rsim_env.sources.code_tasks import code_tasks
from rsim_env.strategies import CONTINUATION, TERMINATION, detect
from tests.sandbox import module_opt_in  # noqa: F401 - code problems: bubblewrap, else the explicit opt-in

pytestmark = pytest.mark.usefixtures("module_opt_in")

DOUBLE = Problem("double", render.code_question("`double(x)` returns twice `x`.", "double"), "", kind="code",
                 entry_point="double", tests="def check(candidate):\n    assert candidate(2) == 4\n"
                                             "    assert candidate(0) == 0\n    assert candidate(-1) == -2\n")
SUM = Problem("sum", "What is 2 + 3?", "5", "number")
CODE_LEAD = "Here is the complete program:\n```python\n"
# A program whose identifiers and keywords match strategy patterns: continue / next (continuation),
# check (validation), plan (sub-planning), careful (deliberative thinking).
TRICKY = ("def double(x):\n    plan = [x, x]\n    for careful in plan:\n        if careful is None:\n"
          "            continue\n    check = next(iter(plan))\n    return check * 2\n")


# -- prompts -----------------------------------------------------------------------------------

@pytest.mark.parametrize("proto", sorted(render.PROTOCOLS))
def test_math_prompts_are_the_kind_default_and_still_ask_for_a_box(proto):
    for plans in ([], [8], [1, 8], [3, 6]):
        args = ("What is 2 + 3?", ["x"] * max(len(plans) - 1, 0), plans[:-1], plans[-1] if plans else None, proto)
        assert render.reasoner_chat(*args, kind="math") == render.reasoner_chat(*args)
    assert render.protocol(proto).system("math") == render.PROTOCOLS[proto].system("math") == render.PROTOCOLS[proto].system()
    assert render.no_planner_chat("Q", "math") == render.no_planner_chat("Q")
    text = render.chat_to_text(render.reasoner_chat("Q", ["a"], [1], TERMINATION, proto))
    assert "\\boxed" in text and "```" not in text
    assert render.protocol("lead").lead(0, TERMINATION) == "The final answer is \\boxed{"


@pytest.mark.parametrize("proto", sorted(render.PROTOCOLS))
def test_code_prompts_ask_for_a_fenced_program_and_never_for_a_box(proto):
    chat = render.reasoner_chat(DOUBLE.question, ["a"], [1], TERMINATION, proto, kind="code")
    text = render.chat_to_text(chat)
    assert "boxed" not in text and "```python" in chat[0]["content"] and "Python" in chat[0]["content"]
    if render.PROTOCOLS[proto].separate_turns:  # the termination user turn asks for the program
        assert chat[-2]["content"] == render.KIND_TEXTS["code"].termination_instruction
        assert "```python code block" in chat[-2]["content"]
    if render.PROTOCOLS[proto].leads:  # the termination lead-in opens the block: the reasoner writes code
        assert chat[-1]["content"].endswith(CODE_LEAD) and leaves_open(chat[-1]["content"])
    if proto == "inline":
        assert chat[-1]["content"].endswith("(termination: Conclude and give the complete program in one "
                                            "```python code block.)\n")
    single = render.no_planner_chat(DOUBLE.question, "code")
    assert "```python" in single[0]["content"] and "boxed" not in single[0]["content"]
    with pytest.raises(ValueError, match="unknown problem kind 'prose'"):
        render.reasoner_chat("Q", [], [], 8, proto, kind="prose")


def test_reasoner_observation_carries_the_kind_and_its_texts():
    for planner in (True, False):
        e = env(problems=[DOUBLE], planner=planner)
        e.reset(seed=0)
        if planner:
            e.step(TERMINATION)
        obs = e.observe("reasoner")
        assert e.observation_space("reasoner").contains(obs)
        assert obs["kind"] == "code" and "Python programmer" in obs["system"] and "boxed" not in obs["prompt"]
        assert obs["injected"] == (CODE_LEAD if planner else "")
    e = env(problems=[SUM])
    e.reset(seed=0)
    e.step(TERMINATION)
    obs = e.observe("reasoner")
    assert obs["kind"] == "math" and obs["injected"] == "The final answer is \\boxed{"


def test_served_reasoner_sends_code_programs_whole():
    code = render.reasoner_messages(DOUBLE.question, ["a"], [1], TERMINATION, kind="code")
    step = render.reasoner_messages(DOUBLE.question, [], [], 1, kind="code")
    math = render.reasoner_messages("Q", ["a"], [1], TERMINATION)
    assert render.whole_answer_turn(code) and not render.whole_answer_turn(step)
    assert not render.whole_answer_turn(math)
    assert render.whole_answer_turn(render.reasoner_messages("Q", [], [], None))
    assert render.whole_answer_turn(render.reasoner_messages("Q", [], [], None, kind="code"))


# -- extraction of a lead-in-opened block ----------------------------------------------------------

@pytest.mark.parametrize("step,program", [
    ("def double(x):\n    return 2 * x\n```", "def double(x):\n    return 2 * x"),       # closed by the step
    ("def double(x):\n    return 2 * x", "def double(x):\n    return 2 * x"),            # cut before the fence
    ("def double(x):\n    return 2 * x\n```\nThis doubles x.", "def double(x):\n    return 2 * x"),
    ("```python\ndef double(x):\n    return 2 * x\n```", "def double(x):\n    return 2 * x"),  # re-opened
    ("Sure, here:\n```python\ndef double(x):\n    return x\n```", "def double(x):\n    return x"),  # own block
    ("```", None),                                                                         # empty block
], ids=["closed", "unclosed", "prose-after", "reopened", "own-block-after-prose", "empty"])
def test_a_block_opened_by_the_lead_in_is_read_with_the_step(step, program):
    assert extract_program(answer_text(CODE_LEAD, step)) == program


def test_other_lead_ins_are_not_part_of_the_program():
    assert answer_text("Next,", "def f():\n    return 1") == "def f():\n    return 1"
    assert answer_text("", "x") == "x" and not leaves_open("Next,") and leaves_open(CODE_LEAD)
    assert closes_program(CODE_LEAD + "x = 1\n```") and not closes_program(CODE_LEAD + "x = 1")
    assert not closes_program(CODE_LEAD + "```")  # a blank block states no program


# -- detection on code -----------------------------------------------------------------------------

def test_a_program_only_step_shows_termination_and_nothing_else():
    assert {CONTINUATION, 3, 7} <= detect(TRICKY)  # plain keyword matching finds strategies by accident
    assert detect_code_step(TRICKY + "```", CODE_LEAD) == {TERMINATION}     # lead-in-opened block
    assert detect_code_step(f"```python\n{TRICKY}```") == {TERMINATION}     # own fenced block
    assert detect_code_step(TRICKY) == {TERMINATION}                        # unfenced program
    assert detect_code_step("```python\nx = [1, 2]\n```") == set()          # code, but no function: nothing


def test_code_detection_reads_the_prose_outside_the_code():
    step = f"Let me check the edge cases first.\n```python\n{TRICKY}```"
    assert detect_code_step(step) == {3, TERMINATION}
    assert detect_code_step("We loop over the items and add them up.") == {CONTINUATION}  # prose: default rule
    assert prose(TRICKY + "```\nThat should work.", opened=True).strip() == "That should work."
    # the lead-in's own words never count: only generated text is read
    assert detect_code_step("x\n```", "Let me check the last result:") == {CONTINUATION}


def test_a_program_written_for_another_strategy_does_not_follow_it():
    group = EnvGroup([DOUBLE], group_size=1, max_steps=4)
    out = rollout(group, _Fixed([f"```python\n{TRICKY}```", TRICKY + "```"]), FixedPlanner([6]), seed=0)
    info = out.trajectories[0]["info"]
    assert info["detected"] == [[TERMINATION], [TERMINATION]]
    # R_follow = share of non-answer rounds whose planned strategy was shown: round 1 (6) shows only termination
    assert info["components"]["follow"] == 0.0 and info["correct"]


class _Fixed:
    """Reasoner that writes fixed steps in order (same for every copy)."""

    role = "reasoner"

    def __init__(self, steps):
        self.steps = steps

    def reset(self, num_copies):
        self.n = num_copies

    def act(self, copy_ids, observations):
        return [self.steps[int(o["round"])] for o in observations]

    def records(self):
        return [None] * self.n


# -- a mixed math + code episode under the new prompts -------------------------------------------

def test_mixed_math_and_code_envgroup_episode_under_the_kind_aware_prompts():
    group = EnvGroup([SUM, DOUBLE], group_size=2, max_steps=4)  # default protocol: chat+lead
    group.reset(seed=0)
    group.step([8, 1, 8, 1])
    due, ids, obs = group.observe()
    assert due == "reasoner" and [o["kind"] for o in obs] == ["math", "math", "code", "code"]
    assert [o["injected"] for o in obs] == ["The final answer is \\boxed{", "Let me break this into smaller parts. First,",
                                            CODE_LEAD, "Let me break this into smaller parts. First,"]
    group.step(["5}.", "the first part is 2 + 3.", "def double(x):\n    return 2 * x\n```", "we handle negative x."])
    due, ids, obs = group.observe()
    assert ids == [1, 3]
    group.step([8, 8])
    _, _, obs = group.observe()
    assert [o["injected"] for o in obs] == ["The final answer is \\boxed{", CODE_LEAD]
    group.step(["6}.", f"{TRICKY}```\nThis doubles x."])  # copy 3: right program, then a line of prose
    res = group.results()
    # planner R_p = acc + terminal + penalty (-1/rounds); reasoner R = acc + format + follow
    # R_follow skips the answer step (R_format pays for it) and refuses steps with nothing new (rsim_env.novelty)
    # copy 0: [8]    math right, boxed,            follow 0   -> (1 + 1 - 1,   1 + 1 + 0)
    # copy 1: [1, 8] math wrong (6), "first part" shows decomposition but "2 + 3" is the question's: vacuous,
    #         follow 0 -> (0 + 1 - 0.5, 0 + 1 + 0)
    # copy 2: [8]    program passes all 3 tests,   follow 0   -> (1 + 1 - 1,   1 + 1 + 0)
    # copy 3: [1, 8] passes; step 1 prose "we handle negative x." shows continuation, not decomposition
    #         (the lead-in's words do not count) -> follow 0/1 -> (1 + 1 - 0.5, 1 + 1 + 0)
    got = [x for r in res for x in (r["rewards"]["planner"], r["rewards"]["reasoner"])]
    assert got == pytest.approx([1, 2, 0.5, 1, 1, 2, 1.5, 2])
    assert res[1]["info"]["vacuous"] == [True, False] and res[3]["info"]["vacuous"] == [False, False]
    assert [r["info"]["correct"] for r in res] == [True, False, True, True]
    assert res[2]["info"]["shown_steps"] == [CODE_LEAD + "def double(x):\n    return 2 * x\n```"]
    assert res[2]["info"]["extracted"] == "def double(x):\n    return 2 * x" and res[2]["info"]["reason"] == "ok"
    # the program's continue/next/check/plan show nothing; the prose line after it counts (default rule)
    assert res[3]["info"]["detected"] == [[CONTINUATION], [CONTINUATION, TERMINATION]]
    assert pending_runs() == 0  # the prefetched runs (lead-in + step) were the ones graded


# -- the template reasoner on code ---------------------------------------------------------------

@pytest.mark.parametrize("proto", sorted(render.PROTOCOLS))
def test_template_reasoner_writes_the_reference_program_with_probability_p(proto):
    probs = code_tasks(3, seed=1)
    oracle = {p.question: p.answer for p in probs}
    for p, acc in ((1.0, [True] * 6), (0.0, [False] * 6)):
        out = rollout(EnvGroup(probs, 2, protocol=proto), TemplateReasoner(oracle, p_correct=p, seed=0),
                      FixedPlanner([3]), seed=0)
        infos = [t["info"] for t in out.trajectories]
        assert [i["correct"] for i in infos] == acc and all(i["components"]["format"] == 1.0 for i in infos)
        assert all(i["detected"][-1] == [TERMINATION] for i in infos)
        if p == 0.0:
            assert {i["extracted"] for i in infos} == {WRONG_PROGRAM}
    out = rollout(EnvGroup(probs, 1, planner=False), TemplateReasoner(oracle), None, seed=0)
    assert [t["info"]["correct"] for t in out.trajectories] == [True] * 3
    assert out.trajectories[0]["info"]["steps"][0].startswith("```python\ndef ")


# -- the LLM reasoner's stop rule on code (fake byte-level LM, no weights) --------------------------

@pytest.fixture
def scripted_reasoner(scripted_lm):
    """``scripted_reasoner(script, **cfg)``: the LLM reasoner on a fake LM that writes ``script``."""
    from agents.reasoner import Reasoner, ReasonerConfig

    def make(script: str, **cfg):
        model = scripted_lm([script])
        return Reasoner(model, model.tok, ReasonerConfig(greedy=True, share_prefill=False, cache="dynamic", **cfg))

    return make


def test_no_planner_code_answer_stops_at_the_closing_fence(scripted_reasoner):
    program = "def double(x):\n    return 2 * x"
    reasoner = scripted_reasoner(f"Easy.\n```python\n{program}\n```\nAnd more rambling 99 99 99", max_answer_tokens=120)
    info = rollout(EnvGroup([DOUBLE], 1, planner=False), reasoner, None, seed=0).trajectories[0]["info"]
    assert info["steps"] == [f"Easy.\n```python\n{program}\n```"] and info["correct"]


def test_code_termination_step_continues_the_opened_block_and_stops_at_its_fence(scripted_reasoner):
    program = "def double(x):\n\n    y = x\n\n    return 2 * y"  # blank lines: no delimiter stop inside a program
    # max_step_tokens=10 would cut the program; code's termination step has the answer cap
    reasoner = scripted_reasoner(f"{program}\n```\nThat is all.\n\nMore 99", max_step_tokens=10, max_answer_tokens=120)
    info = rollout(EnvGroup([DOUBLE], 1), reasoner, FixedPlanner([]), seed=0).trajectories[0]["info"]
    assert info["steps"] == [program + "\n```"] and info["shown_steps"] == [CODE_LEAD + program + "\n```"]
    assert info["correct"] and info["extracted"] == program


def test_a_math_answer_is_not_stopped_by_a_code_block(scripted_reasoner):
    reasoner = scripted_reasoner("```python\nx = 5\n```\nso \\boxed{5} and 99 99", max_answer_tokens=120)
    info = rollout(EnvGroup([SUM], 1, planner=False), reasoner, None, seed=0).trajectories[0]["info"]
    assert info["steps"] == ["```python\nx = 5\n```\nso \\boxed{5}"] and info["correct"]
