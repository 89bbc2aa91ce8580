"""rSIM's rewards in other libraries' shapes, torch-free (so they work from the env-only install).

* :mod:`.trl_rewards` — rSIM's reward components as TRL ``reward_funcs`` callables.

The verifiers environment is a package of its own (``integrations/verifiers_rsim`` in the repository).
"""

from . import trl_rewards  # noqa: F401

__all__ = ["trl_rewards"]
