"""Answer extraction and checking, safe on hostile model output.

Public API: :func:`check`, :func:`extract_answer`, :func:`reason_counts`, :data:`REASONS`,
:class:`AnswerCheck`, :class:`CheckConfig`.
Modules: ``extract`` (find the answer), ``normalize`` (text clean-up), ``parser`` (bounded
recursive-descent parser, no ``eval``/``sympify``), ``structure`` (sets, tuples, intervals, ...),
``numeric`` (exact fast path + tolerance rule), ``compare`` (structural rules), ``symbolic``
(sympy leaf test), ``sandbox``/``worker`` (time-bounded worker processes), ``check`` (the flow),
``unicode`` (Unicode math to ASCII/LaTeX), ``units`` (trailing units and labels).
"""

from .check import REASONS, AnswerCheck, CheckConfig, check, extract_answer, reason_counts

__all__ = ["REASONS", "AnswerCheck", "CheckConfig", "check", "extract_answer", "reason_counts"]
