"""A LoRA-trained reasoner that rolls out on llama.cpp and learns in torch.

``model.reasoner=llamacpp:default`` with ``model.reasoner_lora.enabled=true`` builds
:class:`EngineLoraReasoner` (:func:`agents.llamacpp.build_trainable`, beside the spec's parser): two halves over the same tokenizer and the same turn building,

* the **learner**, the torch :class:`agents.reasoner.Reasoner` with its LoRA adapter on the frozen
  fp32 base (shared with a LoRA planner on ``default``), which scores records with gradients, is the
  KL reference (adapter off) and is what the optimizer and checkpoints see (``module``);
* the **roller**, a :class:`agents.llamacpp.LlamaCppReasoner` on the embedded 4-bit GGUF, which
  writes every rollout.

At each :meth:`EngineLoraReasoner.reset` (the start of a rollout) the adapter weights are compared
with those last sent to the engine (tensor versions, as :meth:`agents.lora.SharedBase.sampler`
does); after an optimizer step, a checkpoint load or any other in-place change they are written as a
GGUF adapter and loaded (:meth:`LlamaCppReasoner.sync_adapter`), so the rollouts of step t+1 use step
t's weights and no trainer hook is needed. The records carry the engine's log-probs, which differ
slightly from torch's (4-bit weights, other kernels): pair it with ``train.grpo.tis_cap`` (truncated
importance sampling); ``studies/engine_lora.py`` measures the mismatch.

Only ``llamacpp:default`` trains (its torch twin is the dequantised embedded model, ``default``).
"""

from __future__ import annotations

import contextlib
from typing import Any, Sequence

__all__ = ["EngineLoraReasoner"]


class EngineLoraReasoner:
    """:class:`agents.base.Trainable` reasoner: rollouts on llama.cpp, scoring and updates in torch.

    Args:
        learner: A torch :class:`agents.reasoner.Reasoner` with a LoRA adapter attached.
        roller: A :class:`agents.llamacpp.LlamaCppReasoner` on the GGUF of the learner's base.
    """

    role = "reasoner"

    def __init__(self, learner: Any, roller: Any) -> None:
        if getattr(learner, "lora", None) is None:
            raise ValueError("EngineLoraReasoner needs a LoRA learner (Reasoner.attach_lora); set "
                             "model.reasoner_lora.enabled=true.")
        self.learner, self.roller = learner, roller
        self._synced: tuple | None = None

    # ------------------------------------------------------------------------------ what the learner owns

    @property
    def lora(self) -> Any:
        return self.learner.lora

    @property
    def module(self) -> Any:
        return self.learner.module

    @property
    def config(self) -> Any:
        return self.learner.config

    @property
    def tokenizer(self) -> Any:
        return self.learner.tokenizer

    @property
    def model(self) -> Any:
        return self.learner.model

    def score(self, records: Sequence[Any]) -> Any:
        """The learner's log-probs (with gradients) of the engine's records."""
        return self.learner.score(records)

    @contextlib.contextmanager
    def reference(self):
        """Context: score as the KL reference (the base with the adapter off)."""
        with self.learner.reference():
            yield self

    # ------------------------------------------------------------------------------ rollouts on the engine

    def sync(self, force: bool = False) -> bool:
        """Send the adapter to the engine if its weights changed since the last sync; return whether it did."""
        params = self.lora.parameters()
        key = tuple((n, p._version, p.data_ptr()) for n, p in sorted(params.items()))
        if key == self._synced and not force:
            return False
        self._send(params)
        self._synced = key
        return True

    def _send(self, params: dict[str, Any]) -> None:
        """Load the adapter ``params`` on the roller (a served roller overrides this, :mod:`agents.served_train`)."""
        spec = self.lora.base.adapters[self.lora.name]
        self.roller.sync_adapter(params, alpha=spec.alpha, name=self.lora.name)

    def reset(self, num_copies: int, seed: int | None = None) -> None:
        """Start a rollout with the learner's current adapter on the engine."""
        self.sync()
        self.roller.reset(num_copies, seed)

    def act(self, copy_ids: Sequence[int], observations: Sequence[dict[str, Any]]) -> list[str]:
        return self.roller.act(copy_ids, observations)

    def records(self) -> list[Any]:
        return self.roller.records()

    def num_generated(self, record: Any) -> int:
        return self.roller.num_generated(record)

    def token_usage(self, record: Any) -> dict[str, int]:
        return self.roller.token_usage(record)
