"""Where problems come from: the data specs and the loaders behind them.

* :mod:`.problems` — the :class:`Problem` record and the built-in sources (families, reasoning-gym tasks).
* :mod:`.data` — one data spec grammar (``gsm8k:train``, ``rg:A+B``, ``mix:``, a local file) → problems.
* :mod:`.loaders` — hub datasets (GSM8K, MATH, …) read from local files in the hub's format.
* :mod:`.rg_tasks`, :mod:`.curriculum`, :mod:`.adaptive` — the embedded reasoning-gym curriculum and task mixes.
* :mod:`.scorer_check` — refuses a reasoning-gym task whose own scorer accepts a wrong answer.

Nothing here plays the game; the env (:mod:`rsim_env.env`, :mod:`rsim_env.game`) consumes these problems.
"""

from . import adaptive, curriculum, data, loaders, problems, rg_tasks, scorer_check  # noqa: F401

__all__ = ["adaptive", "curriculum", "data", "loaders", "problems", "rg_tasks", "scorer_check"]
