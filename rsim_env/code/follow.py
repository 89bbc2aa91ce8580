"""Strategy detection on a code problem's step: the rule behind ``R_follow`` and strategy counts for code.

Keyword detection (:func:`rsim_env.strategies.detect`) reads prose. Run on a program it finds
strategies by accident: Python's ``continue`` and ``next()`` match continuation, a ``check`` helper
matches validation, ``plan`` / ``first ... then`` in identifiers match sub-planning, and a step with
no keyword at all counts as continuation by default. Rule for code problems (documented contract,
tested in ``tests/test_code_prompts.py``):

* detection reads the step's **prose** only (:func:`rsim_env.code.extract.prose`: the generated text
  with every fenced block removed; a step without fences that parses as a program is removed whole;
  a step continuing the block its lead-in opened is code up to its closing fence), with echoed clauses
  removed as for math (:func:`rsim_env.echo.generated_content`). The default-continuation rule applies
  to prose: a step that is only a program shows no strategy by it;
* **termination** is shown by a program -- the code analogue of a closed, non-empty ``\\boxed{}``: the
  program the extraction rule reads from the step (lead-in-opened block included) parses and defines
  a function. Only its body counts and it is generated text: a lead-in contributes at most the
  opening fence line.

So a program-only step follows termination and nothing else, whatever its identifiers say.
"""

from __future__ import annotations

from ..echo import generated_content
from ..strategies import TERMINATION, detect
from .extract import answer_text, defines_function, extract_program, prose


def detect_code_step(step: str, lead: str = "") -> set[int]:
    """Strategies a generated code-problem step shows (see module docstring); ``lead``: its lead-in."""
    text = answer_text(lead, step)
    words = prose(step, opened=text != step)
    found = detect(generated_content(words)) if words.strip() else set()
    if step.strip() and defines_function(extract_program(text)):
        found.add(TERMINATION)
    return found
