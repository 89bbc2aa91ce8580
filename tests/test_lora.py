"""LoRA adapters on one shared frozen base (tiny random-init models, seconds)."""

import json
from pathlib import Path

import pytest
import torch

from agents.hf.lora import LoraSpec, base_digest
from agents.hf.loading import tiny_model
from agents.registry import AgentContext, build_agent
from algos.cli import main
from algos.config import resolve
from rsim_env.group import EnvGroup
from rsim_env.problem import Problem

LORA = LoraSpec(enabled=True, rank=4, alpha=8.0)
SMALL = {"reasoner.max_step_tokens": 6, "reasoner.max_answer_tokens": 12}


def _pair(seed=0):
    shared: dict = {}
    from agents.planners.llm import PlannerConfig
    from agents.reasoner import ReasonerConfig

    torch.manual_seed(seed)
    p = build_agent("tiny", AgentContext("planner", PlannerConfig(seed=1), lora=LORA, shared=shared)).agent
    r = build_agent("tiny", AgentContext("reasoner", ReasonerConfig(max_step_tokens=6, seed=2), lora=LORA,
                                         shared=shared)).agent
    return p, r


def _rollout(p, r, n=4):
    from algos.rollout import rollout

    group = EnvGroup([Problem("t/0", "What is 2+3?", "5")], n)
    with torch.no_grad():
        out = rollout(group, r, p, seed=3)
    return [t["planner"] for t in out.trajectories], [t["reasoner"] for t in out.trajectories]


def _base_state(base):
    return {k: v.clone() for k, v in base.model.state_dict().items() if "lora_" not in k}


def test_one_shared_base_two_adapters():
    p, r = _pair()
    assert p.lora.base is r.lora.base and p.backbone is r.model.get_decoder()
    base = p.lora.base
    n_base = sum(t.numel() for k, t in base.model.state_dict().items() if "lora_" not in k)
    plain, _ = tiny_model("causal")
    assert n_base == sum(t.numel() for t in plain.state_dict().values())  # one copy, not two
    p_names = {n for n, _ in p.module.named_parameters()}
    r_names = {n for n, _ in r.module.named_parameters()}
    assert p_names and r_names and not p_names & r_names
    assert all("lora_" in n or n.startswith("head") for n in p_names)
    assert all("lora_" in n and "__reasoner__" in n for n in r_names)
    assert {"head__weight", "head__bias"} <= p_names


def test_training_changes_only_adapter_and_head_and_base_stays_bit_identical():
    p, r = _pair()
    base = p.lora.base
    frozen = _base_state(base)
    digest = base.digest
    before = {role: {n: t.detach().clone() for n, t in a.module.named_parameters()} for role, a in
              (("planner", p), ("reasoner", r))}
    p_recs, r_recs = _rollout(p, r)
    for agent, recs in ((p, p_recs), (r, r_recs)):
        opt = torch.optim.AdamW([q for q in agent.module.parameters() if q.requires_grad], lr=1e-2)
        for _ in range(2):
            s = agent.score(recs)
            adv = torch.linspace(-1, 1, s.logp.shape[0])[:, None]
            loss = -(s.logp * s.mask * adv).sum()
            opt.zero_grad(); loss.backward(); opt.step()
    for role, agent in (("planner", p), ("reasoner", r)):
        after = dict(agent.module.named_parameters())
        assert any(not torch.equal(after[n], before[role][n]) for n in after), f"{role} adapter did not move"
    after_base = _base_state(base)
    assert after_base.keys() == frozen.keys()
    assert all(torch.equal(after_base[k], frozen[k]) for k in frozen), "shared base weights changed"
    assert base_digest(base.model) == digest


def _perturb(module):
    with torch.no_grad():
        for q in module.parameters():
            q.add_(torch.randn_like(q) * 0.5)


def test_kl_reference_is_base_with_adapter_disabled():
    p, r = _pair()
    p_recs, r_recs = _rollout(p, r)
    head0 = {k: v.clone() for k, v in p.head.state_dict().items()}
    _perturb(p.module); _perturb(r.module)  # adapters (and the planner head) now differ from init
    plain_lm, tok = tiny_model("causal")  # the same base, never wrapped by peft
    from agents.planners.llm import Planner
    from agents.reasoner import Reasoner, ReasonerConfig

    with torch.no_grad(), r.reference():
        ref = r.score(r_recs).logp
    want = Reasoner(plain_lm, tok, ReasonerConfig()).score(r_recs).logp.detach()
    assert torch.allclose(ref, want, atol=1e-5)
    with torch.no_grad():
        assert not torch.allclose(r.score(r_recs).logp, want, atol=1e-3)  # the adapter is on outside reference()
    plain_planner = Planner(plain_lm.get_decoder(), tok)
    plain_planner.head.load_state_dict(head0)
    with torch.no_grad(), p.reference():
        ref_p = p.score(p_recs).logp
    assert torch.allclose(ref_p, plain_planner.score(p_recs).logp.detach(), atol=1e-5)


def _cfg(tmp_path, **over):
    base = {"train.output_dir": str(tmp_path), "train.progress": False, "model.planner": "tiny",
            "model.reasoner": "tiny", "model.planner_lora.enabled": True, "model.reasoner_lora.enabled": True,
            "model.planner_lora.rank": 4, "model.reasoner_lora.rank": 4, "train.steps": 2, "env.max_steps": 3,
            "train.planner_optim.lr": 1e-2, "train.reasoner_optim.lr": 1e-2, "train.grpo.kl_coef": 0.05, **SMALL}
    base.update(over)
    return resolve("tiny", base)


def _flat(module):
    return torch.cat([q.detach().flatten() for q in module.parameters()]).clone()


def test_trainer_with_lora_checkpoints_megabytes_and_resumes_exactly(tmp_path):
    straight = main(_cfg(tmp_path / "a", **{"train.steps": 4}))
    main(_cfg(tmp_path / "b", **{"train.steps": 2}))
    resumed = main(_cfg(tmp_path / "b", **{"train.steps": 4, "resume": str(tmp_path / "b")}))
    for role in ("planner", "reasoner"):
        assert torch.equal(_flat(straight["params"][role]), _flat(resumed["params"][role])), role
    assert straight["history"][-1]["planner/reward"] == resumed["history"][-1]["planner/reward"]
    ck = Path(straight["checkpoint"])
    state = json.loads((ck / "state.json").read_text())
    assert set(state["base"]) == {"planner", "reasoner"} and state["base"]["planner"]["spec"] == "tiny"
    from safetensors.torch import load_file

    names = set(load_file(str(ck / "model.reasoner.safetensors")))
    assert names and all("lora_" in n for n in names)  # only the adapter, no base weights
    names = set(load_file(str(ck / "model.planner.safetensors")))
    assert all("lora_" in n or n.startswith("head") for n in names)


def test_resume_refuses_a_different_base(tmp_path):
    """The base's content hash is checked on resume. (A changed seed, which would change the tiny base,
    is already refused by the resume config check, so the saved hash is altered instead.)"""
    import json

    from agents.runs import find_checkpoint

    main(_cfg(tmp_path, **{"train.steps": 1}))
    state_file = find_checkpoint(tmp_path) / "state.json"
    state = json.loads(state_file.read_text())
    state["base"]["reasoner"]["sha256"] = "0" * 64
    state_file.write_text(json.dumps(state))
    with pytest.raises(ValueError, match="trained on base 'tiny'"):
        main(_cfg(tmp_path, **{"train.steps": 2, "resume": str(tmp_path)}))


def test_lora_config_errors():
    with pytest.raises(ValueError, match="rank"):
        LoraSpec(rank=0)
    with pytest.raises(ValueError, match="cannot take a LoRA adapter"):
        build_agent("toy", AgentContext("planner", lora=LORA))


def test_export_round_trips_base_plus_adapter(tmp_path):
    from safetensors.torch import load_file, save_file

    from agents.runs import find_checkpoint

    main(_cfg(tmp_path / "run", **{"train.steps": 1}))
    ck = find_checkpoint(tmp_path / "run")
    for role in ("planner", "reasoner"):  # make sure both adapters are far from their zero init
        f = ck / f"model.{role}.safetensors"
        sd = load_file(str(f))
        save_file({k: v + 0.3 * torch.randn_like(v) for k, v in sd.items()}, str(f))
    out = main(["export", str(tmp_path / "run"), "--out", str(tmp_path / "exp")])
    assert set(out["agents"]) == {"planner", "reasoner"}
    ctx = dict(shared={})
    from agents.planners.llm import Planner
    from transformers import AutoModelForCausalLM

    lora_r = build_agent(str(tmp_path / "run"), AgentContext("reasoner", **ctx)).agent
    lora_p = build_agent(str(tmp_path / "run"), AgentContext("planner", shared={})).agent
    assert lora_r.lora is not None and lora_p.lora is not None
    ids = torch.tensor([[5, 17, 99, 3, 250, 41, 7]])
    exported_lm = AutoModelForCausalLM.from_pretrained(tmp_path / "exp" / "reasoner")
    with torch.no_grad(), lora_r.lora.active():
        want = lora_r.model(input_ids=ids).logits
    got = exported_lm(input_ids=ids).logits.detach()
    assert torch.allclose(got, want, atol=1e-4)
    plain, _ = tiny_model("causal")
    assert not torch.allclose(plain(input_ids=ids).logits.detach(), want, atol=1e-2)  # the adapter mattered
    exported_p = Planner.from_pretrained(tmp_path / "exp" / "planner")
    pos = [[2, 6]]
    with torch.no_grad():
        assert torch.allclose(exported_p.strategy_logits(ids.tolist(), pos), lora_p.strategy_logits(ids.tolist(), pos),
                              atol=1e-4)
    # the exported dirs are ordinary agent specs
    built = build_agent(str(tmp_path / "exp" / "reasoner"), AgentContext("reasoner"))
    assert built.info["kind"] == "model" and built.agent.lora is None


def test_free_space_check_names_the_size(tmp_path, monkeypatch):
    import shutil
    from collections import namedtuple

    Usage = namedtuple("Usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda p: Usage(10, 10, 1000))
    with pytest.raises(OSError, match=r"a checkpoint needs about \d+\.\d MB .* 0\.0 MB are free.*LoRA adapters"):
        main(_cfg(tmp_path, **{"train.steps": 1}))


def test_eval_of_a_lora_run_loads_one_shared_base(tmp_path):
    from algos.evaluation.config import EvalConfig
    from algos.evaluation.run import build_reasoner, load_planner

    main(_cfg(tmp_path / "run", **{"train.steps": 1}))
    run = str(tmp_path / "run")
    cfg = EvalConfig(set=(("model.reasoner", run), ("model.planner", run)))
    shared: dict = {}
    r = build_reasoner(run, cfg, [], shared).agent
    p = load_planner(run, cfg, shared).agent
    assert r.lora.base is p.lora.base and len(shared) == 1
    with pytest.raises(ValueError, match="rsim export"):  # model.frozen would be silently ignored on an adapter
        build_reasoner(run, EvalConfig(set=(("model.reasoner", run), ("model.frozen", "bfloat16"))), [])


@pytest.mark.parametrize("frozen", ["bfloat16", "int8"])
def test_frozen_reasoner_variants_in_planner_only_training(tmp_path, frozen):
    out = main(_cfg(tmp_path, learner="planner_only", **{"model.frozen": frozen, "model.reasoner_lora.enabled": False,
                                                        "train.steps": 1}))
    assert set(out["params"]) == {"planner"} and out["history"][0]["planner/reward"] == out["history"][0]["planner/reward"]
    from agents.registry import AgentContext as Ctx

    r = build_agent("tiny", Ctx("reasoner", frozen=frozen)).agent
    kinds = {type(m).__name__ for m in r.model.modules()}
    if frozen == "bfloat16":
        assert next(r.model.parameters()).dtype == torch.bfloat16
    else:
        assert any(isinstance(m, torch.ao.nn.quantized.dynamic.Linear) for m in r.model.modules()), kinds


def test_merged_sampler_decodes_like_the_adapter_and_refreshes_after_updates():
    """Greedy decoding on the merged sampler writes the same tokens as the LoRA path, before and after
    the adapter changes; the base stays untouched."""
    from dataclasses import replace as dc_replace

    from agents.reasoner import ReasonerConfig

    def decode(merged, bump):
        torch.manual_seed(0)
        shared: dict = {}
        spec = dc_replace(LORA, merged_sampler=merged)
        r = build_agent("tiny", AgentContext("reasoner", ReasonerConfig(max_step_tokens=6, greedy=True),
                                             lora=spec, shared=shared)).agent
        frozen = _base_state(r.lora.base)
        texts = []
        for step in range(2):
            g = torch.Generator().manual_seed(step)
            with torch.no_grad():
                for q in r.module.parameters():
                    q.add_(bump * torch.randn(q.shape, generator=g))
            r.reset(2)
            obs = [{"question": q, "round": 0, "strategy": 1, "injected": "Break it down.", "steps": (),
                    "strategies": (), "prompt": ""} for q in ("What is 2+3?", "Name a prime.")]
            r.act([0, 1], obs)
            texts.append([x.input_ids for x in r.records()])
        after = _base_state(r.lora.base)
        assert all(torch.equal(after[k], frozen[k]) for k in frozen)
        return texts

    merged, plain = decode(True, 1.0), decode(False, 1.0)
    assert merged == plain and merged[0] != merged[1]  # the second rollout saw the updated adapter


def test_truncated_is_weights():
    from agents.reasoner import ReasonerRecord
    from algos.trainer import truncated_is_weights

    old = torch.tensor([[0.0, -1.0, -2.0, 0.0], [0.0, -0.5, 0.0, 0.0]])
    recs = [ReasonerRecord([1, 2, 3, 4], [0, 1, 1, 0], [0.0, -1.5, -0.5, 0.0], 1, [], 1.0, [], 0),
            ReasonerRecord([1, 2], [0, 1], [0.0, -0.5], 1, [], 1.0, [], 0)]
    mask = torch.tensor([[0, 1, 1, 0], [0, 1, 0, 0]])
    w = truncated_is_weights(old, recs, mask, 2.0)
    want = torch.tensor([[1.0, min(2.0, float(torch.exp(torch.tensor(0.5)))), float(torch.exp(torch.tensor(-1.5))), 1.0],
                         [1.0, 1.0, 1.0, 1.0]])
    assert torch.allclose(w, want)


@pytest.mark.parametrize("lora", [True, False], ids=["lora", "full"])
def test_bf16_sampling_copy_with_tis_trains_and_keeps_the_base(tmp_path, lora):
    cfg = _cfg(tmp_path, **{"reasoner.sample_dtype": "bfloat16", "train.grpo.tis_cap": 2.0, "train.steps": 2,
                            "model.reasoner_lora.enabled": lora, "model.planner_lora.enabled": lora})
    out = main(cfg)
    assert out["steps"] == 2 and "planner/reward" in out["history"][-1]
    from agents.reasoner import ReasonerConfig

    r = build_agent("tiny", AgentContext("reasoner", ReasonerConfig(max_step_tokens=4, sample_dtype="bfloat16"),
                                         lora=LORA if lora else None, shared={})).agent
    decoder = r.scorer.decode_model()
    assert next(decoder.parameters()).dtype == torch.bfloat16 and decoder is not r.model
    with torch.no_grad():
        for q in r.module.parameters():
            q.add_(0.5)
    again = r.scorer.decode_model()
    assert again is decoder  # refreshed in place, not rebuilt
    with torch.no_grad():
        if lora:
            with r.lora.active():
                want = r.model(input_ids=torch.tensor([[5, 6, 7]])).logits
        else:
            want = r.model(input_ids=torch.tensor([[5, 6, 7]])).logits
        got = again(input_ids=torch.tensor([[5, 6, 7]])).logits.float()
    assert torch.allclose(got, want, rtol=0.02, atol=0.1)  # bf16: ~3 significant digits


@pytest.mark.parametrize("loss_type", ["grpo", "dapo"])
def test_score_chunks_give_the_same_update(tmp_path, loss_type, monkeypatch):
    """Scoring in chunks of rows (less activation memory) makes the same optimizer step."""
    from rsim_env import rewards

    # A random tiny reasoner earns no reward under the env's rules (no box, no contentful step that follows its
    # strategy), so every group would have zero variance and nothing to update. This test is about the update
    # plumbing, so it gives the reasoner a reward that varies with its text: R_format = length parity.
    monkeypatch.setattr(rewards, "r_format", lambda final: float(len(final) % 2))
    outs = {}
    for chunk in (0, 3):
        # one step: later steps (or passes) start from weights that differ by ~1e-8, which Adam can
        # amplify on parameters whose gradient is ~0 (its first steps are ~lr * sign(grad))
        outs[chunk] = main(_cfg(tmp_path / str(chunk), **{"train.score_chunk": chunk, "train.steps": 1,
                                                          "train.grpo.loss_type": loss_type}))
    for role in ("planner", "reasoner"):
        # 1e-5: one Adam step moves a weight by ~lr (1e-2 here); a parameter whose gradient is ~0 can move
        # by ~1e-6 from summation-order noise alone (measured 1.6e-6 on 1 of 4,393 planner weights)
        assert torch.allclose(_flat(outs[0]["params"][role]), _flat(outs[3]["params"][role]), atol=1e-5), role
    assert outs[0]["history"][-1]["planner/loss"] == pytest.approx(outs[3]["history"][-1]["planner/loss"], abs=1e-5)


def test_export_of_a_full_fine_tuning_run(tmp_path):
    from transformers import AutoModelForCausalLM

    run = tmp_path / "run"
    main(_cfg(run, **{"train.steps": 1, "model.planner_lora.enabled": False, "model.reasoner_lora.enabled": False}))
    out = main(["export", str(run), "--out", str(tmp_path / "exp")])
    assert {k: v["lora"] for k, v in out["agents"].items()} == {"planner": False, "reasoner": False}
    trained = build_agent(str(run), AgentContext("reasoner")).agent
    ids = torch.tensor([[5, 17, 99, 3]])
    got = AutoModelForCausalLM.from_pretrained(tmp_path / "exp" / "reasoner")(input_ids=ids).logits
    assert torch.allclose(got, trained.model(input_ids=ids).logits, atol=1e-5)


@pytest.mark.parametrize("frozen", ["bfloat16", "int8"])
def test_frozen_reasoner_decodes_on_its_own_weights_not_a_float32_copy(frozen):
    """model.frozen (rsim train and rsim eval): the default sample_dtype decodes the low-precision model as it is
    (it used to build a float32 copy, which also failed on inference-mode tensors)."""
    from agents.reasoner import ReasonerConfig

    with torch.inference_mode():  # benchmarks build their frozen copies under inference mode
        r = build_agent("tiny", AgentContext("reasoner", ReasonerConfig(max_step_tokens=3, greedy=True),
                                             frozen=frozen)).agent
        r.reset(2)
        obs = {"question": "1+1?", "round": 0, "strategy": 8, "injected": "", "no_planner": True}
        texts = r.act([0, 1], [obs, obs])
        assert r.scorer.decode_model() is r.model and r.scorer._sampler is None
    assert len(texts) == 2 and sum(r.records()[0].gen_mask) >= 1


def test_frozen_compile_wraps_the_forward_without_building_kernels():
    """model.frozen="compile": the forward is torch.compile'd (kernels are built at the first call, which
    takes minutes on a CPU; benchmarks/runtime/rollout.py measures it); configs accept the choice."""
    from algos.evaluation.config import EvalConfig

    r = build_agent("tiny", AgentContext("reasoner", frozen="compile")).agent
    assert hasattr(r.model.forward, "_torchdynamo_orig_callable")
    assert not any(p.requires_grad for p in r.model.parameters())
    assert resolve("tiny", {"model.frozen": "compile"}).model.frozen == EvalConfig(set=(("model.frozen", "compile"),)).model.frozen == "compile"
    with pytest.raises(ValueError, match="model.frozen|ModelConfig.frozen"):
        resolve("tiny", {"model.frozen": "fp8"})
