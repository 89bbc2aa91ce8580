"""Every float field of every config refuses NaN and inf (kl_coef=inf used to train NaN weights)."""

import dataclasses
import math

import pytest

from agents.planners.llm import PlannerConfig
from agents.reasoner import ReasonerConfig
from algos.config import DataConfig, ModelConfig, RunConfig, resolve
from algos.evaluation.config import EvalConfig
from algos.grpo import GRPOConfig
from algos.stackelberg import StackelbergConfig
from algos.trainer import OptimConfig, TrainConfig
from rsim_env import EnvConfig, RewardWeights
from rsim_env.answers import CheckConfig

CONFIGS = [EnvConfig, RewardWeights, GRPOConfig, StackelbergConfig, OptimConfig, TrainConfig, ModelConfig,
           DataConfig, RunConfig, PlannerConfig, ReasonerConfig, EvalConfig]
FLOAT_FIELDS = [(cls, f.name) for cls in CONFIGS for f in dataclasses.fields(cls)
                if isinstance(f.default, float)]


def test_every_config_with_floats_is_covered():
    assert {cls for cls, _ in FLOAT_FIELDS} >= {RewardWeights, GRPOConfig, StackelbergConfig, OptimConfig,
                                                 PlannerConfig, ReasonerConfig, EvalConfig}


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan], ids=["inf", "-inf", "nan"])
@pytest.mark.parametrize("cls,name", FLOAT_FIELDS, ids=[f"{c.__name__}.{n}" for c, n in FLOAT_FIELDS])
def test_non_finite_float_refused(cls, name, value):
    with pytest.raises(ValueError, match=rf"{cls.__name__}\.{name}=.* is not finite"):
        cls(**{name: value})


@pytest.mark.parametrize("key", ["train.grpo.kl_coef", "train.reasoner_optim.max_grad_norm", "reasoner.temperature",
                                 "schedule.lambda_stage1", "env.check.timeout_s", "env.weights.follow"])
def test_command_line_inf_refused(key):
    with pytest.raises(ValueError, match="is not finite"):
        resolve("tiny", {key: "inf"})


def test_answer_check_timeout_must_be_finite_in_the_env_config():
    """CheckConfig (rsim_env/answers, another branch's module) is checked where the env config nests it."""
    with pytest.raises(ValueError, match=r"CheckConfig\.timeout_s=inf is not finite"):
        EnvConfig(check=CheckConfig(timeout_s=math.inf))
