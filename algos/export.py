"""``rsim export RUN_DIR --out DIR``: standalone models from a training run, for serving or ``rsim eval``.

A LoRA checkpoint holds only adapters (+ the planner head) and the identity of the base they were
trained on. Export loads the base, checks its content hash, merges each trained adapter into a
copy of the base and writes::

    DIR/reasoner/   a plain Hugging Face causal LM + tokenizer   (rsim eval --reasoner DIR/reasoner)
    DIR/planner/    a saved planner: backbone/ + head.safetensors (rsim eval --planner DIR/planner)
    DIR/export.json where it came from (checkpoint, step, base spec and hash)

Full fine-tuning checkpoints export the same way (nothing to merge).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from .dataclass_cli import ArgumentParser

__all__ = ["export", "main"]


def _merged(agent: Any) -> Any:
    """The agent's model with its adapter merged in (a plain transformers model), or the model itself."""
    if agent.lora is None:
        return agent.backbone if agent.role == "planner" else agent.model
    base = agent.lora.base
    merged = base.peft.merge_and_unload(adapter_names=[agent.lora.name])
    return merged.get_decoder() if agent.role == "planner" else merged


def export_role(checkpoint: Path, role: str, out: Path) -> dict[str, Any]:
    """Write ``role``'s standalone model from ``checkpoint`` under ``out / role``."""
    from agents.planners.llm import Planner
    from agents.registry import AgentContext, build_agent

    built = build_agent(str(checkpoint), AgentContext(role=role, shared={}))
    agent = built.agent
    model = _merged(agent)
    target = out / role
    if role == "planner":
        plain = Planner(model, agent.tokenizer, agent.config, agent.head.out_features)
        plain.head.load_state_dict(agent.head.state_dict())
        plain.save_pretrained(target)
    else:
        model.save_pretrained(target, safe_serialization=True)
        agent.tokenizer.save_pretrained(target)
    info = dict(built.info, path=str(target), lora=agent.lora is not None)
    if agent.lora is not None:
        info["base_sha256"] = agent.lora.base.digest
    return info


def export(run: str | Path, out: str | Path) -> dict[str, Any]:
    """Export every agent the run trained (see module docstring); returns what was written."""
    from agents.runs import RunCheckpoint, find_checkpoint, weights_file

    found = find_checkpoint(run)
    if found is None:
        raise ValueError(f"rsim export: no complete checkpoint at or under {str(run)!r}; pass a run dir or a "
                         "step_* dir written by `rsim train`.")
    ck = RunCheckpoint(found)
    roles = [r for r in ("planner", "reasoner") if weights_file(found, r).is_file()]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = {role: export_role(found, role, out) for role in roles}
    summary = {"checkpoint": str(found), "step": ck.state.get("step"), "learner": ck.config.get("learner"),
               "agents": written}
    (out / "export.json").write_text(json.dumps(summary, indent=1))
    return summary


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    p = ArgumentParser(prog="rsim export", description=__doc__.split("\n\n")[0])
    p.add_argument("run", help="run dir or checkpoint dir written by `rsim train`")
    p.add_argument("--out", required=True, help="directory to write reasoner/ and planner/ into")
    a = p.parse_args(argv)
    summary = export(a.run, a.out)
    print(json.dumps(summary, indent=1))
    return summary


if __name__ == "__main__":
    main()
