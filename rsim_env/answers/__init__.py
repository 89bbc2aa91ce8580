"""Answer extraction and checking, safe on hostile model output.

Public API: :func:`check`, :func:`extract_answer`, :class:`AnswerCheck`, :class:`CheckConfig`.
Modules: ``extract`` (find the answer), ``normalize`` (text clean-up), ``parser`` (bounded
recursive-descent parser, no ``eval``/``sympify``), ``structure`` (sets, tuples, intervals, ...),
``numeric`` (exact fast path + tolerance rule), ``compare`` (structural rules), ``symbolic``
(sympy leaf test), ``sandbox``/``worker`` (time-bounded worker processes), ``check`` (the flow).
"""

from .check import AnswerCheck, CheckConfig, check, extract_answer

__all__ = ["AnswerCheck", "CheckConfig", "check", "extract_answer"]
