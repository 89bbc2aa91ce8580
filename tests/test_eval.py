"""``rsim eval``: the figures (analysis), the JSON/plots it writes, planner loading, errors.

Scripted agents (no model) check the numbers exactly; tiny random LMs + the byte tokenizer check
the LLM path (token counts, pass@k, a saved planner, a trainer checkpoint) in seconds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from algos import analysis
from agents.reasoner import Reasoner
from algos.config import ModelConfig
from algos.evaluation import DEFAULT_FIXED, EvalConfig, main, parse, split_modes
from rsim_env.record import EpisodeRecord
from rsim_env.strategies import num_strategies

PNG = b"\x89PNG\r\n\x1a\n"


# ------------------------------------------------------------------------------------ analysis

@pytest.mark.parametrize("s,n,lo,hi", [(0, 10, 0.0, 0.2775), (5, 10, 0.2366, 0.7634), (10, 10, 0.7225, 1.0),
                                       (1, 100, 0.0018, 0.0545)], ids=["zero", "half", "all", "rare"])
def test_wilson_known_values(s, n, lo, hi):
    a, b = analysis.wilson(s, n)
    assert a == pytest.approx(lo, abs=1e-3) and b == pytest.approx(hi, abs=1e-3)


def test_wilson_rejects_bad_counts():
    with pytest.raises(ValueError, match="successes"):
        analysis.wilson(3, 2)


@pytest.mark.parametrize("n,c,k,want", [(5, 0, 1, 0.0), (5, 5, 3, 1.0), (4, 1, 1, 0.25), (4, 1, 2, 0.5),
                                        (10, 3, 5, 1 - (7 * 6 * 5 * 4 * 3) / (10 * 9 * 8 * 7 * 6))],
                         ids=["none", "all", "p1", "p2", "p5"])
def test_pass_at_k(n, c, k, want):
    assert analysis.pass_at_k(n, c, k) == pytest.approx(want)


def _row(pid, correct, planned, detected, sample=0):
    """An episodes.jsonl row as eval writes it (an EpisodeRecord's dict)."""
    return EpisodeRecord(pid, "math", "q", "1", strategies=tuple(planned), detected=tuple(map(tuple, detected)),
                         correct=correct, components={"format": 1.0}, rounds=len(detected), terminated=True,
                         sample=sample, tokens=dict.fromkeys(analysis.TOKEN_KEYS, 1)).to_dict()


def test_strategy_analysis_counts():
    rows = [_row("a", True, [1, 3, 8], [[1], [3, 6], [8]]), _row("b", False, [8], [[8]]),
            _row("c", True, [1, 8], [[1], [1, 8]])]
    h = analysis.strategy_histograms(rows)
    assert h["injected"][1] == 2 and h["injected"][8] == 3 and sum(h["injected"]) == 6
    assert h["detected_steps"][1] == 3 and h["detected_episodes"][1] == 2 and h["detected_episodes"][8] == 3
    assert h["distinct_count"] == {"1": 1, "2": 1, "4": 1}
    by = analysis.accuracy_by_strategy_count(rows)
    assert by["bins"]["1"]["accuracy"] == 0.0 and by["bins"]["4"]["accuracy"] == 1.0
    assert by["pearson_r"] > 0
    f = analysis.mode_figures(rows + [_row("a", False, [8], [[8]], sample=1)], k=2)
    assert f["problems"] == 3 and f["samples"] == 4
    assert f["accuracy"] == pytest.approx((0.5 + 0 + 1) / 3) and f["pass@2"] == pytest.approx(2 / 3)


# ------------------------------------------------------------------------------------ parsing

def test_split_modes_and_errors():
    assert split_modes("none,fixed:1,3,8,random,fixed:2,8") == ("none", "fixed:1,3,8", "random", "fixed:2,8")
    for wrong in ("none,fixed:2-8", "fixed:1 - 3"):  # one spelling of a plan: the error names it
        with pytest.raises(ValueError, match=r"separate strategy indices with commas, fixed:(2,8|1,3) "):
            split_modes(wrong)
    with pytest.raises(ValueError, match="fixed:1,3,8 "):
        EvalConfig(modes=("fixed:1-3-8",))
    assert [m for m in EvalConfig().resolved_modes() if m.startswith("fixed:")] == [
        "fixed:" + ",".join(map(str, s)) for s in DEFAULT_FIXED]
    with pytest.raises(ValueError, match="needs --planner"):
        EvalConfig(modes=("trained",))
    with pytest.raises(ValueError, match="unknown mode"):
        EvalConfig(modes=("greedy",))
    with pytest.raises(ValueError, match="0..8"):
        EvalConfig(fixed=((1, 9),))
    with pytest.raises(ValueError, match="fixed sequence '1,x'"):
        parse(["--fixed", "1,x"])


# --------------------------------------------------------------------------- end to end, scripted

def test_eval_scripted_writes_every_field(tmp_path, capsys):
    out = tmp_path / "ev"
    res = main(["--reasoner", "template", "--data", "rg:gsm_symbolic", "--limit", "5", "--batch", "2",
                "--fixed", "1,3,8", "--fixed", "8", "--modes", "none,random,fixed", "--out", str(out),
                "--no-progress"])
    printed = capsys.readouterr().out
    assert "| `fixed:1,3,8` | 5 |" in printed
    data = json.loads((out / "results.json").read_text())
    assert set(data) >= {"config", "reasoner", "planner", "data", "modes", "strategy_vs_accuracy", "per_problem",
                         "timing", "environment", "table_md", "files"}
    assert list(data["modes"]) == ["none", "random", "fixed:1,3,8", "fixed:8"] == data["config"]["modes_resolved"]
    assert data["config"]["data"]["size"] == 5 and data["config"]["fixed"] == [[1, 3, 8], [8]]
    assert data["data"]["problems"] == 5 and data["planner"] is None
    for _mode, m in data["modes"].items():
        assert m["problems"] == 5 and m["samples"] == 5
        lo, hi = m["ci95"]
        assert 0 <= lo <= m["accuracy"] <= hi <= 1
        assert set(m) >= {"accuracy", "ci95", "correct", "format_rate", "mean_rounds", "terminated_rate",
                          "truncated_rate", "mean_distinct_strategies", "mean_injected", "strategies",
                          "accuracy_by_strategy_count", "timing", "token_cost"}
        assert len(m["strategies"]["injected"]) == num_strategies() == len(m["strategies"]["names"])
        assert m["token_cost"]["wall_s"] >= 0 and m["token_cost"]["reasoner_written_mean"] is None  # scripted
    # the oracle-backed template reasoner always answers right when the episode terminates
    assert data["modes"]["fixed:1,3,8"]["accuracy"] == 1.0 and data["modes"]["none"]["accuracy"] == 1.0
    assert data["modes"]["fixed:1,3,8"]["strategies"]["injected"] == [0, 5, 0, 5, 0, 0, 0, 0, 5]
    assert data["modes"]["none"]["strategies"]["injected"] == [0] * num_strategies()
    assert data["modes"]["fixed:1,3,8"]["mean_rounds"] == 3 and data["modes"]["fixed:8"]["mean_rounds"] == 1
    assert data["modes"]["none"]["token_cost"]["planner_read_mean"] == 0
    assert len(data["per_problem"]) == 4 * 5 and "steps" not in data["per_problem"][0]
    episodes = [json.loads(x) for x in (out / "episodes.jsonl").read_text().splitlines()]
    assert len(episodes) == 20 and all(e["steps"] for e in episodes)
    # every row is a versioned episode record carrying the question and each step's injected text
    assert all(EpisodeRecord.from_json(e).question.strip() for e in episodes)
    term = [e for e in episodes if e["mode"] == "fixed:1,3,8"][0]
    assert term["injected"][-1] and term["shown_steps"][-1] == term["injected"][-1] + term["steps"][-1]
    assert (out / "table.md").read_text().strip() == res["table_md"].strip()
    for key in ("plot_accuracy", "plot_strategies", "plot_accuracy_vs_strategies"):
        assert Path(data["files"][key]).read_bytes()[:8] == PNG


def test_eval_scripted_accuracy_tracks_reasoner(tmp_path):
    """A reasoner that is right half the time scores about half; the CI covers its true rate."""
    res = main(["--reasoner", "template:0.5", "--data", "rg:basic_arithmetic", "--limit", "40", "--batch", "40",
                "--modes", "fixed:8", "--no-progress", "--seed", "3"])
    m = res["modes"]["fixed:8"]
    assert 0.2 < m["accuracy"] < 0.8 and m["ci95"][0] < 0.5 < m["ci95"][1]


# --------------------------------------------------------------------------- end to end, tiny LMs

TINY = ["--reasoner", "tiny", "--data", "rg:basic_arithmetic", "--limit", "3", "--batch", "2",
        "--set", "env.max_steps=2", "--set", "reasoner.max_step_tokens=4", "--no-progress"]


@pytest.fixture(scope="module")
def tiny_planner_dir(tmp_path_factory):
    from agents.hf.loading import tiny_model
    from agents.planners.llm import Planner

    path = tmp_path_factory.mktemp("planner") / "saved"
    Planner(*tiny_model("backbone", seed=1)).save_pretrained(path)
    return path


def test_eval_tiny_lms_via_rsim_cli(tmp_path, tiny_planner_dir):
    from algos.cli import main as rsim

    out = tmp_path / "ev"
    res = rsim(["eval", *TINY, "--planner", str(tiny_planner_dir), "--modes", "none,fixed:1,8,trained",
                "--k", "2", "--out", str(out)])
    data = json.loads((out / "results.json").read_text())
    assert res["modes"].keys() == data["modes"].keys() == {"none", "fixed:1,8", "trained"}
    assert data["planner"]["kind"] == "save_pretrained" and data["reasoner"]["kind"] == "tiny"
    assert len(data["per_problem"]) == 3 * 3 * 2
    assert sorted((r["mode"], r["problem_id"], r["sample"]) for r in data["per_problem"]) == sorted(
        (m, p, s) for m in data["modes"] for p in {r["problem_id"] for r in data["per_problem"]} for s in (0, 1))
    for _mode, m in data["modes"].items():
        assert m["samples"] == 6 and "pass@2" in m and m["pass@2"] >= m["accuracy"]
        tc = m["token_cost"]
        assert tc["reasoner_read_mean"] > 0 and 0 < tc["reasoner_written_mean"] <= 2 * 4 * 2
        assert tc["total_mean"] >= tc["reasoner_read_mean"] + tc["reasoner_written_mean"]
    assert data["modes"]["none"]["token_cost"]["planner_read_mean"] == 0
    t = data["modes"]["trained"]["token_cost"]
    # the planner keeps a KV cache across rounds, so it reads each context token once
    assert t["planner_read_mean"] == t["planner_context_mean"] > 0 and t["total_vs_none"] > 0
    assert data["modes"]["fixed:1,8"]["token_cost"]["planner_read_mean"] is None  # scripted planner: no tokens
    rows = [r for r in data["per_problem"] if r["mode"] == "trained"]
    assert all(1 <= len(r["strategies"]) <= 2 for r in rows)
    assert all(Path(data["files"][k]).is_file() for k in ("plot_accuracy", "plot_strategies"))


def test_planner_tokens_with_and_without_cache():
    from agents.hf.loading import tiny_model
    from agents.planners.llm import Planner, PlannerConfig
    from algos.evaluation import episode_tokens

    from agents.planners.llm import PlannerRecord
    from agents.reasoner import ReasonerRecord

    rec = PlannerRecord(input_ids=list(range(30)), positions=[9, 19, 29], actions=[1, 2, 8], logprobs=[-1.0] * 3,
                        action_masks=[[1] * 9] * 3, temperature=1.0)
    cached = Planner(*tiny_model("backbone"), config=PlannerConfig(use_cache=True))
    uncached = Planner(*tiny_model("backbone"), config=PlannerConfig(use_cache=False))
    assert episode_tokens(cached, rec, None, None)["planner_read"] == 30
    assert episode_tokens(uncached, rec, None, None)["planner_read"] == 10 + 20 + 30
    reasoner = Reasoner(*tiny_model("causal"))
    rrec = ReasonerRecord(input_ids=list(range(12)), gen_mask=[0] * 7 + [1] * 5, logprobs=[0.0] * 12, prompt_len=7,
                          step_spans=[(7, 12)], temperature=1.0, suppressed_ids=[], pad_id=0)
    t = episode_tokens(None, None, reasoner, rrec)
    assert (t["planner_read"], t["reasoner_read"], t["reasoner_written"]) == (0, 7, 5)


def test_eval_is_reproducible_with_a_seed():
    a = main([*TINY, "--modes", "none,random", "--k", "2", "--seed", "5"])
    b = main([*TINY, "--modes", "random,none", "--k", "2", "--seed", "5"])  # mode order must not matter
    key = lambda rows: sorted((r["mode"], r["problem_id"], r["sample"], r["extracted"], tuple(r["strategies"]),
                               r["tokens"]["reasoner_written"]) for r in rows)
    assert key(a["per_problem"]) == key(b["per_problem"])


def test_eval_planner_from_trainer_checkpoint(tmp_path):
    """A run dir of `rsim train --preset tiny` is a valid --planner (its newest checkpoint is loaded)."""
    from algos.cli import main as rsim

    run = tmp_path / "run"
    rsim(["train", "--preset", "tiny", "--steps", "2", "--out", str(run), "--set", "train.save_every=1"])
    res = main(["--reasoner", "template", "--planner", str(run), "--data", "rg:basic_arithmetic", "--limit", "4",
                "--modes", "trained", "--set", "env.max_steps=4", "--no-progress"])
    info = res["planner"]
    assert info["kind"] == "checkpoint" and info["step"] == 2 and info["learner"] == "stackelberg"
    assert info["plugin"] is True  # trained with the toy reasoner, evaluated with another one
    assert res["modes"]["trained"]["samples"] == 4


def test_eval_rejects_a_path_that_is_no_planner(tmp_path):
    with pytest.raises(ValueError, match="neither a saved planner"):
        main(["--reasoner", "template", "--planner", str(tmp_path), "--limit", "2", "--modes", "trained",
              "--no-progress"])


@pytest.mark.parametrize("frozen", ["bfloat16", "int8"])
def test_eval_reasoner_on_frozen_low_precision_weights(frozen):
    import torch

    from algos.evaluation.run import build_reasoner

    r = build_reasoner("tiny", EvalConfig(model=ModelConfig(reasoner="tiny", planner="", frozen=frozen)), []).agent
    if frozen == "bfloat16":
        assert next(r.model.parameters()).dtype == torch.bfloat16
    else:
        assert any(isinstance(m, torch.ao.nn.quantized.dynamic.Linear) for m in r.model.modules())
    assert next(build_reasoner("tiny", EvalConfig(), []).agent.model.parameters()).dtype == torch.float32
    with pytest.raises(ValueError, match="frozen='fp8'"):
        EvalConfig(set=(("model.frozen", "fp8"),))


def test_eval_builds_its_agents_on_accelerates_device(monkeypatch):
    """rsim eval puts its agents where training would (accelerate's device), not always on the CPU."""
    import importlib

    from accelerate import PartialState

    eval_run = importlib.import_module("algos.evaluation.run")
    assert str(eval_run.eval_device()) == str(PartialState().device)
    seen = []
    monkeypatch.setattr(eval_run, "build_agent", lambda spec, ctx: seen.append((ctx.role, ctx.device)) or "built")
    monkeypatch.setattr(eval_run, "eval_device", lambda: "cuda:7")
    cfg = EvalConfig()
    eval_run.load_planner("tiny", cfg)
    eval_run.build_reasoner("tiny", cfg, [])
    assert seen == [("planner", "cuda:7"), ("reasoner", "cuda:7")]
