"""Where problems come from: the data specs and the loaders behind them.

* :mod:`.problems` — the built-in sources (reasoning-gym tasks); the :class:`~rsim_env.problem.Problem` record itself
  is plain data in :mod:`rsim_env.problem`.
* :mod:`.data` — one data spec grammar (``gsm8k:train``, ``rg:A+B``, ``mix:``, a local file) → problems.
* :mod:`.loaders` — hub datasets (GSM8K, MATH, …) read from local files in the hub's format.
* :mod:`.curriculum`, :mod:`.adaptive` — the embedded reasoning-gym curriculum and task mixes (the ``rg`` kind's
  :mod:`~rsim_env.kinds.rg_tasks` makes their entries, its :mod:`~rsim_env.kinds.scorer_check` refuses a task whose
  own scorer accepts a wrong answer).
* :mod:`.code_tasks`, :mod:`.humaneval`, :mod:`.mbpp`, :mod:`.codealpaca` — code problems (kind ``code``).

Nothing here plays the game; the env (:mod:`rsim_env.env`, :mod:`rsim_env.game`) consumes these problems.
"""

from . import adaptive, code_tasks, curriculum, data, loaders, problems  # noqa: F401

__all__ = ["adaptive", "code_tasks", "curriculum", "data", "loaders", "problems"]
