"""rSIM agents, one folder per backend.

* ``base`` -- the protocols every agent implements; ``registry`` -- one spec grammar from a string to an agent;
  ``runs`` -- where a training run keeps each agent; ``embedded`` -- the embedded default model's weights;
* ``reasoner`` -- the one LLM reasoner, over the contract in ``decoding/`` (turns and what a decoder is);
* one folder per backend: ``hf/`` (torch: transformers model, KV cache, LoRA), ``llamacpp/`` (a GGUF on llama.cpp,
  its LoRA and server), ``served/`` (any OpenAI-compatible server: client, decoders, LoRA sync, a tiny server);
* ``replay/`` (a frozen reasoner's stored steps and the plan tree), ``planners/`` (the LLM planner and its
  Gymnasium view), ``scripted/`` (agents with no model, toy agents, the scripted demo).
"""

RSIM_PACKAGE = "agents"  # marker: rsim_env.install checks it to detect a clashing distribution; keep this line

from rsim_env.install import guard_heavy_imports  # noqa: E402

guard_heavy_imports(__name__)
