"""studies/vllm_paper.py: the GPU script's dry run prints the commands the served route needs, and they parse."""

import pytest


def test_gpu_script_dry_run_prints_commands_that_parse(capsys):
    """studies/vllm_paper.py (untested on a GPU): its commands are what the route needs and parse here."""
    from algos.cli import parse
    from agents.served.reasoner import parse_spec
    from agents.served.train import check_logprobs_mode
    from studies.vllm_paper import Config, main

    out = main(Config(dry_run=True, steps=3, port=8123))
    printed = capsys.readouterr().out
    assert "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True vllm serve Qwen/Qwen2.5-0.5B-Instruct" in printed
    serve = out["serve_argv"]
    assert serve[:3] == ["vllm", "serve", "Qwen/Qwen2.5-0.5B-Instruct"] and "--enable-lora" in serve
    assert serve[serve.index("--max-lora-rank") + 1] == "16" and out["serve_env"] == {"VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True"}
    command, cfg, _ = parse(out["ours_args"])
    assert command == "train" and cfg.train.steps == 3 and cfg.train.grpo.tis_cap == 2
    assert cfg.model.reasoner.startswith("openai:Qwen/Qwen2.5-0.5B-Instruct@http://127.0.0.1:8123/v1#")
    assert cfg.model.reasoner_lora.enabled and cfg.model.reasoner_lora.rank == 16 and cfg.train.groups_per_step == 32
    check_logprobs_mode(cfg.reasoner, parse_spec(cfg.model.reasoner).logprobs_mode)  # the paper samples at T = 1
    trl = pytest.importorskip("trl")
    args = trl.GRPOConfig(**dict(out["trl_kwargs"], bf16=False, use_cpu=True))  # every field is TRL's (no GPU here)
    assert args.use_vllm and args.vllm_mode == "colocate" and args.num_generations == 8
    assert args.generation_batch_size == 32 * 8  # one generation of all groups per optimizer step, as ours
