"""Code problems: a sandbox for model-written programs and program extraction (the code datasets are sources:
:mod:`rsim_env.sources.code_tasks`, :mod:`~rsim_env.sources.humaneval`, :mod:`~rsim_env.sources.mbpp`,
:mod:`~rsim_env.sources.codealpaca`).

Public entry point: :func:`execute` (``rsim_env.code.execute(program, tests, timeout_s=10.0,
entry_point="solution")``) returning an :class:`ExecResult`. See :mod:`.execute` for how the
verdict is made unforgeable and :mod:`.isolation` for the confinement (bubblewrap or rlimits).
"""

from .execute import Executor, configure, default_executor, execute
from .extract import extract_program, program_parses
from .isolation import OPT_IN_ENV, SandboxUnavailable
from .result import REASONS, ExecResult, SandboxConfig, pairs_to_check

__all__ = ["Executor", "configure", "default_executor", "execute", "extract_program", "program_parses",
           "REASONS", "ExecResult", "SandboxConfig", "pairs_to_check", "OPT_IN_ENV", "SandboxUnavailable"]
