"""TRL's ``GRPOTrainer`` trains the reasoner while an rSIM planner injects a strategy before each step.

The hook is TRL's ``rollout_func`` (``GRPOTrainer(..., rollout_func=...)``, TRL >= 1.x): TRL hands it the
batch's prompts (each already repeated ``num_generations`` times) and the trainer, and trains on what it
returns. :class:`StrategyInjection` is such a function: it plays each prompt's problem as one rSIM episode
(:class:`rsim_env.group.EnvGroup`), with an rSIM planner choosing each strategy and the trainer's own model
as the reasoner, decoded by rSIM's turn logic (:class:`agents.reasoner.Reasoner` on a
:class:`~agents.hf.decoder.TorchDecoder`: the chat template, the injected instruction and lead-in of each
round, the stop rules). What it returns, per episode, is the reasoner's own record
(:class:`agents.decoding.turns.ReasonerRecord`)::

    prompt_ids      = record.input_ids[:prompt_len]      the chat-template prompt
    completion_ids  = record.input_ids[prompt_len:]      every later token, injected and generated, in order
    env_mask        = record.gen_mask[prompt_len:]       1 on tokens the reasoner sampled, 0 on injected ones
    logprobs        = record.logprobs[prompt_len:]       the sampled tokens' log-probs at sampling time

TRL multiplies its loss mask by ``env_mask``, so injected text (instructions, lead-ins, turn glue, a fed
delimiter) is never trained on; the ids are the ones the reasoner sampled, never re-tokenised text, so the
log-probs TRL recomputes are those of the sampled tokens. The reasoner samples from ``softmax(logits /
args.temperature)`` over the whole vocabulary (special tokens not suppressed), which is the distribution TRL
scores, so ``logprobs`` match TRL's own recomputation up to float error (``tests/test_trl_route.py``).

The reward is the env's: each episode's reasoner reward (``R_acc + R_format + R_follow`` under the env's
weights, :func:`rsim_env.scoring.score`) comes back as the extra field ``rsim_reward``, which
:func:`reasoner_reward` returns; :meth:`StrategyInjection.reward_funcs` adds each component as a weight-0
(logged-only) reward function::

    injection = StrategyInjection(problems, InjectionConfig(planner="fixed:1,8"))
    funcs, weights = injection.reward_funcs()
    trainer = GRPOTrainer(model=model, processing_class=tok, reward_funcs=funcs, train_dataset=problem_dataset(problems),
                          args=GRPOConfig(..., reward_weights=weights), rollout_func=injection)

The planner is fixed while TRL trains: a fixed plan, the seeded random planner, or any planner agent spec
(a ``rsim train`` run or checkpoint, a saved planner; :mod:`agents.registry`). Training both agents is rSIM's
own Stackelberg learner (``rsim train``; docs/trainers.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

from rsim_env.game import EnvConfig
from rsim_env.group import EnvGroup
from rsim_env.problem import Problem
from rsim_env.render import no_planner_chat
from rsim_env.strategies import num_strategies

from ..reasoner import Reasoner, ReasonerConfig

__all__ = ["InjectionConfig", "StrategyInjection", "problem_dataset", "reasoner_reward", "build_planner"]


@dataclass(frozen=True)
class InjectionConfig:
    """How the strategies are injected and how the reasoner's turns are bounded."""

    planner: str = "fixed:1,8"
    """Who injects: ``fixed:1,3,8`` (that plan, then termination), ``random`` (seeded), or a planner agent spec
    (a ``rsim train`` run or checkpoint dir, a saved planner dir, ``untrained:SPEC``; :mod:`agents.registry`)."""
    env: EnvConfig = field(default_factory=lambda: EnvConfig(max_steps=4))
    """The environment's rules: rounds, turn protocol, reward weights and components (its ``planner`` is forced on)."""
    max_step_tokens: int = 96
    """Token cap of a non-final step."""
    max_answer_tokens: int = 256
    """Token cap of a whole-answer step (a code problem's program)."""
    seed: int = 0
    """Seed of the episodes, the random planner and the reasoner's sampling (call ``n`` of process ``p`` of ``P``
    uses ``seed + n * P + p``)."""
    planner_greedy: bool = False
    """A planner agent picks its argmax strategy instead of sampling one."""

    def __post_init__(self):
        if not isinstance(self.env, EnvConfig):
            raise TypeError(f"env must be an rsim_env.EnvConfig, got {type(self.env).__name__}.")
        for name in ("max_step_tokens", "max_answer_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}.")
        if self.planner.startswith("fixed:"):
            _fixed(self.planner)


def _fixed(spec: str) -> list[int]:
    try:
        plan = [int(s) for s in spec[len("fixed:"):].split(",")]
    except ValueError:
        raise ValueError(f"planner {spec!r}: write a fixed plan as comma-separated strategy indices, e.g. fixed:1,3,8.") from None
    if not plan or not all(0 <= s < num_strategies() for s in plan):
        raise ValueError(f"planner {spec!r}: use strategy indices in 0..{num_strategies() - 1}, e.g. fixed:1,3,8.")
    return plan


def build_planner(spec: str, max_rounds: int, seed: int = 0, greedy: bool = False) -> Any:
    """The planner policy of ``spec`` (see :attr:`InjectionConfig.planner`)."""
    from ..scripted.policies import FixedPlanner, RandomPlanner

    if spec.startswith("fixed:"):
        return FixedPlanner(_fixed(spec))
    if spec == "random":
        return RandomPlanner(seed=seed)
    from ..planners.llm import PlannerConfig
    from ..registry import AgentContext, build_agent

    ctx = AgentContext("planner", config=PlannerConfig(greedy=greedy, seed=seed), seed=seed, max_rounds=max_rounds)
    return build_agent(spec, ctx).agent


def _question(prompt: Any) -> str:
    """The question of a prompt: a string, or the last user message of a conversation."""
    if isinstance(prompt, str):
        return prompt
    users = [m.get("content", "") for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
    if not users or not isinstance(users[-1], str):
        raise ValueError(f"prompt {prompt!r:.120} has no user message with text; build the dataset with problem_dataset().")
    return users[-1]


def problem_dataset(problems: Sequence[Problem]) -> Any:
    """A ``datasets.Dataset`` of ``problems`` for ``GRPOTrainer``.

    ``prompt`` is rSIM's no-planner chat (system + question), the prompt plain TRL GRPO trains on; the
    injection route reads only its question. ``answer``, ``kind`` and ``answer_type`` are what
    :mod:`rsim_env.integrations.trl_rewards`' functions read (the plain route's rewards); ``problem_id`` names the problem.
    """
    from datasets import Dataset

    return Dataset.from_list([{"prompt": no_planner_chat(p.question, p.kind), "answer": p.answer, "kind": p.kind,
                               "answer_type": p.answer_type, "problem_id": p.id} for p in problems])


class StrategyInjection:
    """TRL ``rollout_func``: each prompt played as an rSIM episode, the trainer's model as the reasoner (module docstring).

    Args:
        problems: The problems the dataset's prompts ask (looked up by question text).
        config: Planner, env rules, token caps, seed.
        planner: A planner policy to use instead of building ``config.planner`` (any :class:`agents.base.Policy`).

    Attributes:
        last: The trajectories of the latest call (``info``, ``rewards``, ``reasoner`` record), one per prompt.
    """

    def __init__(self, problems: Sequence[Problem], config: InjectionConfig | None = None, planner: Any = None) -> None:
        self.config = config or InjectionConfig()
        self.problems: dict[str, Problem] = {}
        for p in problems:
            seen = self.problems.setdefault(p.question, p)
            if (seen.answer, seen.kind) != (p.answer, p.kind):  # one question, one graded problem
                raise ValueError(f"problems {seen.id!r} and {p.id!r} ask the same question with different answers; "
                                 "the rollout finds a problem by its question, so drop one of them.")
        self._planner = planner
        self.calls = 0
        self.last: list[dict[str, Any]] = []

    @property
    def planner(self) -> Any:
        if self._planner is None:
            c = self.config
            self._planner = build_planner(c.planner, c.env.max_steps, c.seed, c.planner_greedy)
        return self._planner

    def problem(self, prompt: Any) -> Problem:
        question = _question(prompt)
        if question not in self.problems:
            raise ValueError(f"no problem asks {question!r:.120}; pass StrategyInjection the problems the "
                             "training dataset was built from (problem_dataset(problems)).")
        return self.problems[question]

    def reasoner_config(self, args: Any) -> ReasonerConfig:
        """Decoding that samples what TRL scores: its temperature and top-p, every token allowed."""
        c = self.config
        return ReasonerConfig(max_step_tokens=c.max_step_tokens, max_answer_tokens=c.max_answer_tokens,
                              temperature=float(args.temperature), top_p=float(args.top_p or 1.0),
                              suppress_special_tokens=False, seed=c.seed)

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list]:
        if getattr(trainer.args, "mask_truncated_completions", False):
            raise ValueError("mask_truncated_completions=True masks every episode that does not end in the EOS "
                             "token, but an rSIM episode ends at the env's stop rules (a closed \\boxed{}); set "
                             "GRPOConfig(mask_truncated_completions=False).")
        if getattr(trainer, "use_vllm", False):
            raise ValueError("StrategyInjection decodes every episode with the trainer's own model in torch; "
                             "use_vllm=True would start vLLM and never use it: set GRPOConfig(use_vllm=False).")
        from trl.models import unwrap_model_for_generation

        problems = [self.problem(p) for p in prompts]
        tokenizer = getattr(trainer.processing_class, "tokenizer", trainer.processing_class)
        acc = trainer.accelerator  # each process plays its own slice of prompts, with its own sampling stream
        seed = self.config.seed + self.calls * acc.num_processes + acc.process_index
        self.calls += 1
        args = trainer.args
        with unwrap_model_for_generation(trainer.model_wrapped, trainer.accelerator,
                                         gather_deepspeed3_params=args.ds3_gather_for_generation,
                                         gradient_checkpointing_kwargs=args.gradient_checkpointing_kwargs) as model:
            training = model.training
            try:
                reasoner = Reasoner(model, tokenizer, self.reasoner_config(trainer.args))
                self.last = play(problems, reasoner, self.planner, self.config.env, seed)
            finally:
                model.train(training)
        return outputs(self.last)

    def reward_funcs(self) -> tuple[list[Callable[..., list[float]]], list[float]]:
        """``(reward_funcs, reward_weights)``: the env's reasoner reward (weight 1) and each component of the
        env's rubric that the reasoner's reward reads (weight 0: logged as ``rewards/<name>/mean``)."""
        rubric = self.config.env.rubric
        names = [c.name for c in rubric.components if "reasoner" in c.agents]
        return [reasoner_reward, *[_component(n) for n in names]], [1.0] + [0.0] * len(names)


def play(problems: Sequence[Problem], reasoner: Any, planner: Any, env: EnvConfig, seed: int) -> list[dict[str, Any]]:
    """One episode per problem, the planner moving first each round; the trajectory of each (one batched act per agent per round)."""
    group = EnvGroup(list(problems), group_size=1, config=replace(env, planner=True))
    group.reset(seed=seed)
    for policy in (planner, reasoner):
        policy.reset(len(group), seed=seed)
    while not group.done:
        agent, ids, obs = group.observe()
        group.step((planner if agent == "planner" else reasoner).act(ids, obs))
    records = reasoner.records()
    return [{**res, "reasoner": records[res["copy_id"]]} for res in sorted(group.results(), key=lambda r: r["copy_id"])]


def outputs(trajectories: Sequence[dict[str, Any]]) -> dict[str, list]:
    """What ``rollout_func`` returns for TRL: ids, sampled log-probs, ``env_mask`` and the env's rewards."""
    out: dict[str, list] = {k: [] for k in ("prompt_ids", "completion_ids", "logprobs", "env_mask", "rsim_reward",
                                            "rsim_components", "rsim_strategies")}
    for t in trajectories:
        rec, n = t["reasoner"], t["reasoner"].prompt_len
        out["prompt_ids"].append(list(rec.input_ids[:n]))
        out["completion_ids"].append(list(rec.input_ids[n:]))
        out["logprobs"].append(list(rec.logprobs[n:]))
        out["env_mask"].append(list(rec.gen_mask[n:]))
        out["rsim_reward"].append(float(t["rewards"]["reasoner"]))
        out["rsim_components"].append(dict(t["info"]["components"]))
        out["rsim_strategies"].append(list(t["info"]["strategies"]))
    return out


def reasoner_reward(completions: Sequence[Any], rsim_reward: Sequence[float] | None = None, **_: Any) -> list[float]:
    """The env's reasoner reward of each completion's episode (the ``rsim_reward`` field of :class:`StrategyInjection`)."""
    if rsim_reward is None:
        raise ValueError("reasoner_reward reads the 'rsim_reward' field that StrategyInjection returns; pass "
                         "GRPOTrainer(rollout_func=StrategyInjection(...)).")
    if len(rsim_reward) != len(completions):
        raise ValueError(f"got {len(rsim_reward)} rewards for {len(completions)} completions.")
    return [float(r) for r in rsim_reward]


def _component(name: str) -> Callable[..., list[float]]:
    def reward(completions: Sequence[Any], rsim_components: Sequence[dict[str, float]] | None = None,
               **_: Any) -> list[float]:
        if rsim_components is None:
            raise ValueError(f"rsim_{name} reads the 'rsim_components' field that StrategyInjection returns; pass "
                             "GRPOTrainer(rollout_func=StrategyInjection(...)).")
        return [float(c[name]) for c in rsim_components]

    reward.__name__ = reward.__qualname__ = f"rsim_{name}"
    return reward
