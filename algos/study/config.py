"""The settings of one ``rsim study``: reasoner, data, game, split sizes, planner and learner, stages, presets.

One frozen dataclass, :class:`StudyConfig` (flags generated from it by :mod:`algos.dataclass_cli`, as ``rsim train``'s
and ``rsim eval``'s), with the learner's settings in their own section (:class:`LearnerSettings`, ``--set
learner.lr=3e-4``). Presets (:data:`PRESETS`) are override dicts on top of the defaults:

* ``adaptive``: the adaptive study as it was run (the embedded SmolLM2 on llama.cpp, greedy, 48 / 144 tokens a
  step / answer, two rounds of which the last may only terminate, 40 / 20 / 10 problems a task), reading the
  committed trees (``docs/study_results/adaptive/trees``), heads (``docs/training_results/planners/tree_adaptive_40_std``)
  and features (``docs/study_results/adaptive/features``): ``rsim study --preset adaptive`` decodes and trains nothing
  and writes its scores and report under ``runs/study_adaptive`` (its looks go to the test set's one ledger); only
  ``--docs`` without ``--out`` writes them into the committed folder (:data:`DOCS_OUT`);
* ``tiny``: tiny random-init models on two reasoning-gym tasks, a few problems a split (tests; seconds);
* ``arms``: the adaptive study's trees and heads, and every arm of :mod:`algos.study.arms` on the embedded SmolLM2
  (3 seeds x 24 steps x 2 problems x G 8 = 384 episodes a run; hours of CPU), written under ``runs/study_arms``
  (``--docs``: :data:`DOCS_OUT`).

:func:`game` and :func:`run_overrides` say how the study's game is an ``rsim train`` run (the fill decodes through it,
the train stage trains through it), so every stage plays the same game.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ..dataclass_cli import apply_overrides
from .arms.spec import ArmSettings, parse_arms

if TYPE_CHECKING:
    from rsim_env.game import EnvConfig

__all__ = ["ArmSettings", "LearnerSettings", "StudyConfig", "PRESETS", "DOCS_OUT", "STAGES", "SPLITS",
           "REPLICATION_SEED", "resolve", "game", "run_overrides", "as_dict"]

STAGES = ("fill", "train", "score", "report", "all", "route")
"""``--stage``: one stage, or every stage in order (each resumes: what is done is not done again); ``route``
(not in ``all``): the arms' training route measured on val (:mod:`algos.study.arms.route`)."""
SPLITS = ("train", "val", "test", "replication")
"""The splits a study has trees for (``replication``: a second test draw, scored with ``--replicate``)."""
REPLICATION_SEED = 3_000_000
"""The default generator seed of the replication draw (the ``adaptive`` source's own)."""
VARIANTS = ("last_round", "both")
"""Learner options that keep the planner in the game the tree holds (:mod:`algos.study.train`)."""


def _is_file(spec: str) -> bool:
    """Whether a data spec names a local file (by its suffix)."""
    return Path(spec.partition("?")[0]).suffix in (".jsonl", ".json", ".parquet", ".arrow")


def _int(owner: str, name: str, value: Any, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{owner}.{name}={value!r} is invalid: use an int >= {low}.")


@dataclass(frozen=True)
class LearnerSettings:
    """How each planner seed is trained on the train tree (head-only GRPO on the planner's frozen features)."""

    seeds: int = 6
    """Planner seeds trained (and scored: the seeds share one test set, so their spread is training noise)."""
    steps: int = 200
    """Optimizer steps per seed."""
    groups_per_step: int = 32
    """Problems per step (most problems give one outcome under every plan: more problems a step, more signal)."""
    group_size: int = 8
    """G: episodes per problem in a GRPO group."""
    lr: float = 1e-3
    """Planner head learning rate."""
    entropy_coef: float = 0.0
    """Entropy bonus of the planner's GRPO loss."""
    standardize: bool = True
    """Standardise the head's input features by the train tree's contexts (per dimension: minus the mean, over the
    std); False: raw features."""
    variant: str = "last_round"
    """Learner option that keeps the planner in the tree's game: ``last_round`` (env.terminate_last_round) or
    ``both`` (with per-term advantages)."""
    eval_every: int = 20
    """Steps between greedy evaluations on the train tree (the training curve)."""

    def __post_init__(self) -> None:
        for name in ("seeds", "steps", "groups_per_step", "eval_every"):
            _int("learner", name, getattr(self, name), 1)
        _int("learner", "group_size", self.group_size, 2)
        if not isinstance(self.lr, (int, float)) or isinstance(self.lr, bool) or not 0 < self.lr < 1:
            raise ValueError(f"learner.lr={self.lr!r} is invalid: use a learning rate in (0, 1), e.g. 1e-3.")
        if not isinstance(self.entropy_coef, (int, float)) or self.entropy_coef < 0:
            raise ValueError(f"learner.entropy_coef={self.entropy_coef!r} is invalid: use a number >= 0.")
        if self.variant not in VARIANTS:
            raise ValueError(f"learner.variant={self.variant!r} is invalid: on a plan tree only {VARIANTS} keep the "
                             "planner in the game the tree holds.")


@dataclass(frozen=True)
class StudyConfig:
    """``rsim study``: does a trained strategy planner help this reasoner on these tasks, beyond a hand-picked plan?"""

    FLAGS: ClassVar[dict[str, str]] = {"seeds": "learner.seeds", "steps": "learner.steps", "lr": "learner.lr"}

    out: str = "runs/study"
    """The study folder: trees/, heads/, features/, scores/, report/ (each stage resumes from what is there)."""
    stage: str = "all"
    """Which stage to run: fill, train, score, report, or all (in that order); route: measure the arms' training
    route on val."""
    reasoner: str = "llamacpp:default#threads=1"
    """The frozen reasoner, decoded greedily once into the plan trees: any agent spec (llamacpp:, a hub id or model
    dir, openai:MODEL@URL, package.module:factory; replay: is added when missing)."""
    data: str = "adaptive"
    """Problems with a task label: ``adaptive`` (its own splits), or any data spec (rg:A+B, mix:A,B, curriculum, a
    local file whose ``task_column`` labels the task)."""
    task_column: str = "task"
    """A local data file's column that holds each problem's task (other sources label it themselves)."""
    tasks: int = 0
    """Only the first this many tasks (0 = every task; fewer for a smoke run)."""
    data_seed: int = 0
    """Generator seed of the train / val / test draw of a procedural source (``adaptive`` draws them from its own
    fixed seeds, so only 0 is accepted there; a file is not drawn: only 0)."""
    replication_seed: int = REPLICATION_SEED
    """Generator seed of the replication draw of any procedural source, ``adaptive`` included (another seed: another
    replication draw, which the ledger counts as another look)."""
    test_data: str = ""
    """A file of your own problems (JSONL / parquet, ``task_column`` naming one of the study's tasks) scored as the
    test split: the study's heads and the plans chosen on its train + val ("" = the study's own test split)."""
    replication_data: str = ""
    """A file of your own problems scored as the replication split (as ``test_data``; "" = the study's own draw)."""
    train_per_task: int = 40
    """Problems a task in the train tree (the planner trains on it)."""
    val_per_task: int = 20
    """Problems a task in the val tree (with train, chooses the fixed and per-task plans)."""
    test_per_task: int = 10
    """Problems a task in the test tree (every mode is scored on it)."""
    replication_per_task: int = 0
    """Problems a task in the replication tree (0 = as test)."""
    rounds: int = 2
    """Rounds of the game (``env.max_steps``): a problem's tree is 17 steps for 2 rounds, 145 for 3."""
    terminate_last_round: bool = True
    """The last round may only terminate, so every plan ends in termination (9 plans for 2 rounds)."""
    max_step_tokens: int = 48
    """Longest reasoner step, in tokens."""
    max_answer_tokens: int = 144
    """Longest final answer, in tokens."""
    name: str = "study"
    """The trees are ``<tree_dir>/<name>_<split>.tree.json.gz`` (with an info JSON and the test ledger beside)."""
    tree_dir: str = ""
    """Where the trees are ("" = ``<out>/trees``)."""
    fill_splits: str = "train,val,test"
    """Splits the fill stage fills (comma list; add ``replication`` for the second test draw)."""
    increment: int = 1
    """Problems a task added per fill increment (the tree is balanced after each: training can use it)."""
    max_copies: int = 48
    """Episodes per fill rollout (the reasoner's batch; a served reasoner gets as many concurrent requests)."""
    planner: str = "default"
    """The planner spec (trained head-only: a linear head on its frozen features)."""
    learner: LearnerSettings = field(default_factory=LearnerSettings)
    """How each planner seed is trained (``--set learner.KEY=VALUE``)."""
    heads_dir: str = ""
    """Where the trained heads are, one run dir per seed ("" = ``<out>/heads``)."""
    head_name: str = "seed_{seed}"
    """A seed's head dir under ``heads_dir`` (``{seed}`` is replaced by the seed)."""
    heads_from: str = ""
    """Another study's folder whose heads are scored on this study's test tree (plug-in transfer; "" = this one's)."""
    replicate: bool = False
    """Also score the replication tree (once, at the end; it must be filled)."""
    features_dir: str = ""
    """Where the planner backbone's features of the trees' contexts are kept ("" = ``<out>/features``)."""
    none_episodes: str = ""
    """``rsim eval --modes none`` episodes (JSONL, .gz read too) on the test problems: mode ``none`` ("" =
    ``<out>/episodes/none_test.jsonl.gz``; another split reads ``none_<split>.jsonl.gz`` there; without them
    ``none`` is left out)."""
    sc_episodes: str = ""
    """Sampled no-planner episodes (``rsim eval --modes none --k K --temperature T``) on the test problems:
    self-consistency at equal reasoner tokens ("" = ``<out>/episodes/sc_test.jsonl.gz``; another split reads
    ``sc_<split>.jsonl.gz`` there; without them ``sc`` is left out)."""
    threads: int = 0
    """Torch CPU threads (0 = chosen for the machine)."""
    arms: str = ""
    """Also run these arms (comma list of base, planner, grpo, grpo_fixed, rsim, rsim_warm; :mod:`algos.study.arms`):
    the reasoner trained alone, under the best fixed plan, with a planner, ... at equal episodes, scored live."""
    arm: ArmSettings = field(default_factory=ArmSettings)
    """How every trained arm trains and how the arms are scored (``--set arm.KEY=VALUE``)."""

    def __post_init__(self) -> None:
        parse_arms(self.arms)
        if self.stage not in STAGES:
            raise ValueError(f"StudyConfig.stage={self.stage!r} is invalid: use one of {STAGES}.")
        for name in ("out", "reasoner", "data", "planner", "name"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ValueError(f"StudyConfig.{name}={getattr(self, name)!r} is invalid: give a non-empty string.")
        if self.reasoner.startswith("tree:"):
            raise ValueError(f"StudyConfig.reasoner={self.reasoner!r} is invalid: a study decodes its own trees; "
                             "give the reasoner that wrote the tree (its tree_dir is a setting).")
        if "/" in self.name or self.name.startswith("."):
            raise ValueError(f"StudyConfig.name={self.name!r} is invalid: use a plain file-name stem, e.g. 'study'.")
        for name in ("train_per_task", "val_per_task", "test_per_task", "rounds", "increment", "max_copies",
                     "max_step_tokens", "max_answer_tokens"):
            _int("StudyConfig", name, getattr(self, name), 1)
        for name in ("replication_per_task", "tasks", "data_seed", "replication_seed", "threads"):
            _int("StudyConfig", name, getattr(self, name), 0)
        if not isinstance(self.terminate_last_round, bool):
            raise ValueError(f"StudyConfig.terminate_last_round={self.terminate_last_round!r} is invalid: true or "
                             "false.")
        if self.rounds == 1 and not self.terminate_last_round:
            raise ValueError("StudyConfig.rounds=1 without terminate_last_round leaves the planner one decision with "
                             "nothing after it; use rounds >= 2.")
        bad = [s for s in self.fill_split_list() if s not in SPLITS]
        if bad or not self.fill_split_list():
            raise ValueError(f"StudyConfig.fill_splits={self.fill_splits!r} is invalid: a comma list of {SPLITS}.")
        if "{seed}" not in self.head_name or "/" in self.head_name:
            raise ValueError(f"StudyConfig.head_name={self.head_name!r} is invalid: a dir name with '{{seed}}' in it, "
                             "e.g. seed_{seed}.")
        if self.data_seed == self.replication_seed:
            raise ValueError(f"StudyConfig.replication_seed={self.replication_seed} equals data_seed: the replication "
                             "draw needs its own generator seed (e.g. 3000000).")
        self._check_seeds()
        for name in ("test_data", "replication_data"):
            value = getattr(self, name)
            if not isinstance(value, str) or (value and not _is_file(value)):
                raise ValueError(f"StudyConfig.{name}={value!r} is invalid: give a local .jsonl / .json / .parquet "
                                 f"file of problems with a {self.task_column!r} column, or leave it empty.")

    def _check_seeds(self) -> None:
        """Refuse a generator seed the data does not use (module docstring of :mod:`algos.study.splits`)."""
        if self.data == "adaptive":
            if self.data_seed != 0:
                raise ValueError(f"StudyConfig.data_seed={self.data_seed} is invalid for data 'adaptive': its train / "
                                 "val / test splits are drawn from the source's own seeds (val 0, test 1000000, train "
                                 "2000000); leave data_seed at 0 (replication_seed draws another replication split).")
            if self.replication_seed in (0, 1_000_000, 2_000_000):
                raise ValueError(f"StudyConfig.replication_seed={self.replication_seed} is invalid for data 'adaptive':"
                                 " it is the seed of another split (val 0, test 1000000, train 2000000); use another, "
                                 "e.g. 3000000 (the default) or 4000000.")
        elif _is_file(self.data) and (self.data_seed != 0 or self.replication_seed != REPLICATION_SEED):
            raise ValueError(f"StudyConfig.data_seed / replication_seed ({self.data_seed} / {self.replication_seed}) "
                             f"are invalid for data {self.data!r}: a file is not drawn from a generator seed; leave "
                             "them at 0 / 3000000 (a replication on other problems: --replication-data FILE).")

    def fill_split_list(self) -> list[str]:
        """:attr:`fill_splits` as a list."""
        return [s.strip() for s in self.fill_splits.split(",") if s.strip()]

    def per_task(self, split: str) -> int:
        """Problems a task in ``split``'s tree."""
        if split not in SPLITS:
            raise ValueError(f"split {split!r} is not one of {SPLITS}.")
        if split == "replication":
            return self.replication_per_task or self.test_per_task
        return getattr(self, f"{split}_per_task")


PRESETS: dict[str, dict[str, Any]] = {
    # the committed adaptive study: its trees (40 / 20 / 10 problems a task), its six heads (6 seeds x 200 steps x
    # 32 problems x G 8, lr 1e-3, standardised features), plans chosen on train + val and scored on test
    "adaptive": {
        "out": "runs/study_adaptive", "features_dir": "docs/study_results/adaptive/features", "data": "adaptive", "reasoner": "llamacpp:default#threads=1", "name": "adaptive",
        "rounds": 2, "terminate_last_round": True, "max_step_tokens": 48, "max_answer_tokens": 144,
        "train_per_task": 40, "val_per_task": 20, "test_per_task": 10, "increment": 1, "max_copies": 48,
        "tree_dir": "docs/study_results/adaptive/trees", "planner": "default",
        "heads_dir": "docs/training_results/planners/tree_adaptive_40_std", "head_name": "last_round_s{seed}",
        "learner.seeds": 6, "learner.steps": 200, "learner.groups_per_step": 32, "learner.group_size": 8,
        "learner.lr": 1e-3, "learner.entropy_coef": 0.0, "learner.standardize": True, "learner.variant": "last_round",
        "learner.eval_every": 20,
        "none_episodes": "docs/training_results/eval_checks/none_test282_replay.episodes.jsonl.gz",
        "sc_episodes": "docs/training_results/tree_sc_test.episodes.jsonl.gz",
    },
    # tests and smoke runs: tiny random-init models, two reasoning-gym tasks, a few problems a split
    "tiny": {
        "out": "runs/study_tiny", "data": "rg:chain_sum+products", "reasoner": "tiny", "planner": "tiny",
        "train_per_task": 3, "val_per_task": 2, "test_per_task": 2, "max_step_tokens": 4, "max_answer_tokens": 6,
        "max_copies": 16, "increment": 2, "learner.seeds": 2, "learner.steps": 2, "learner.groups_per_step": 2,
        "learner.group_size": 4, "learner.eval_every": 1,
        "arm.seeds": 2, "arm.steps": 2, "arm.groups_per_step": 2, "arm.group_size": 2, "arm.lr": 1e-2,
        "arm.planner_lr": 1e-2, "arm.lora_rank": 2, "arm.batch": 4,
    },
}
# the paper's headline on the embedded reasoner: the adaptive study's trees and heads (the plug-in column), and every
# arm trained on its train split at 384 episodes a run (24 steps x 2 problems x G 8), 3 seeds, scored live on test
PRESETS["arms"] = {
    **PRESETS["adaptive"], "out": "runs/study_arms",
    "arms": "base,planner,grpo,grpo_fixed,rsim,rsim_warm",
    "arm.seeds": 3, "arm.steps": 24, "arm.groups_per_step": 2, "arm.group_size": 8, "arm.lr": 2e-4,
    "arm.planner_lr": 1e-3, "arm.lora_rank": 16, "arm.kl": 0.0, "arm.temperature": 0.7, "arm.lambda1": 0.7,
    "arm.lambda2": 0.3, "arm.stage1_share": 0.5, "arm.route": "torch", "arm.batch": 16,
    # the replication split scored in the same run: every setting is fixed here before any look, and each run is
    # decoded on both held-out splits as soon as it is trained (its weights are not kept with the committed results)
    "replicate": True,
}
"""Override dicts on top of :class:`StudyConfig`'s defaults (module docstring)."""
DOCS_OUT: dict[str, str] = {"adaptive": "docs/study_results/adaptive", "arms": "docs/study_results/arms"}
"""A preset's committed study folder: ``rsim study --preset NAME --docs`` without ``--out`` writes its scores and
report there (the only way the command writes into tracked ``docs/`` files besides the ledger of item 1)."""


def resolve(preset: str | None = None, overrides: dict[str, Any] | None = None) -> StudyConfig:
    """Defaults, then a preset, then overrides (dotted keys; each step validated)."""
    cfg = StudyConfig()
    if preset:
        if preset not in PRESETS:
            raise ValueError(f"unknown study preset {preset!r}; choose one of {sorted(PRESETS)}.")
        cfg = apply_overrides(cfg, PRESETS[preset])
    return apply_overrides(cfg, overrides or {})


def game(cfg: StudyConfig) -> EnvConfig:
    """The env config of every episode of the study (:class:`rsim_env.game.EnvConfig`, the planner playing)."""
    from rsim_env.game import EnvConfig

    return EnvConfig(max_steps=cfg.rounds, terminate_last_round=cfg.terminate_last_round, planner=True)


def run_overrides(cfg: StudyConfig, reasoner: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``rsim train`` overrides (on the ``study`` preset of :data:`algos.config.PRESETS`) of a planner-only,
    head-only run of the study's game with ``reasoner`` (greedy, the study's step lengths): the fill decodes through
    its reasoner, the train stage trains through it. Its data is two problems of the study's data (each stage
    passes its problems itself)."""
    data = "adaptive:train" if cfg.data == "adaptive" else cfg.data
    return {"learner": "planner_only", "model.planner": cfg.planner, "model.reasoner": reasoner,
            "data.source": data, "data.size": 2, "reasoner.greedy": True, "env.max_steps": cfg.rounds,
            "env.terminate_last_round": cfg.terminate_last_round, "model.planner_lora.enabled": False,
            "model.reasoner_lora.enabled": False, "planner.head_only": True, "train.progress": False,
            "reasoner.max_step_tokens": cfg.max_step_tokens, "reasoner.max_answer_tokens": cfg.max_answer_tokens,
            "train.output_dir": str(Path(cfg.out) / "_run"), **(extra or {})}


def as_dict(cfg: StudyConfig) -> dict[str, Any]:
    """The config as plain JSON values (``--print-config``, the report's meta, the ledger's settings)."""
    return dataclasses.asdict(cfg)
