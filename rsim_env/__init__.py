"""rSIM environment: a planner and a reasoner take turns over a question (PettingZoo AEC).

Pure Python + numpy + gymnasium + pettingzoo + sympy; never imports torch.
"""

from ._version import __version__
from .install import check_top_level_packages

check_top_level_packages()  # agents / algos / benchmarks must be ours (see rsim_env/install.py)

from .problem import Problem  # noqa: E402
from .sources.problems import default_source, reasoning_gym_problems  # noqa: E402
from .strategies import STRATEGIES, Strategy, detect, num_strategies  # noqa: E402

__all__ = [
    "__version__", "Problem", "default_source", "load_jsonl", "reasoning_gym_problems",
    "STRATEGIES", "Strategy", "detect", "num_strategies",
]

from .env import AnyText, env, raw_env  # noqa: E402
from .game import EnvConfig, Episode  # noqa: E402
from .sources.data import load_jsonl, load_problems  # noqa: E402
from .group import EnvGroup  # noqa: E402
from .rewards import Component, Facts, RewardWeights, Rubric  # noqa: E402

__all__ += ["AnyText", "env", "raw_env", "EnvConfig", "Episode", "EnvGroup", "RewardWeights", "load_problems",
            "Component", "Facts", "Rubric"]

from . import rsim_v0  # noqa: E402
from . import answers, echo, grading, integrations, kinds, novelty, protocols, record, render, sources  # noqa: E402
from . import rewards, scoring, strategies  # noqa: E402
from .registration import register_gymnasium  # noqa: E402

register_gymnasium()
__all__ += ["rsim_v0", "answers", "echo", "grading", "integrations", "kinds", "novelty", "protocols", "record", "render",
            "rewards", "scoring", "sources", "strategies"]  # the submodules users import by name
