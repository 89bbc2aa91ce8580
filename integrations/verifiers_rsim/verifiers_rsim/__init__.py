"""rSIM as a verifiers v1 environment: a ``Taskset`` of rSIM problems and a two-role ``Env`` (README.md).

The taskset id is this module (``verifiers-rsim`` or ``verifiers_rsim``): verifiers' loader imports it and takes
the one :class:`~verifiers_rsim.taskset.RsimTaskset` and the one :class:`~verifiers_rsim.env.RsimEnv` that
``__all__`` exports.
"""

from .env import RsimEnv, RsimEnvConfig
from .taskset import RsimTask, RsimTaskData, RsimTaskset, RsimTasksetConfig

__all__ = ["RsimTaskset", "RsimTasksetConfig", "RsimTask", "RsimTaskData", "RsimEnv", "RsimEnvConfig"]
