"""Turn rules shared by every reasoner that writes into a chat template: stop rules and turn glue.

The local :class:`agents.reasoner.Reasoner` applies them to token ids it decodes itself; the
served reasoner's completions client (:mod:`agents.completions`) applies them to the text a server
returns, so both stop a step at the same place and continue the same conversation. Pure functions
of text (no torch).
"""

from __future__ import annotations

from typing import Any

from rsim_env import kinds
from rsim_env.kinds import Kind
from rsim_env.render import STEP_DELIMITER

__all__ = ["step_stops", "turn_glue"]


def step_stops(text: str, lead: str, kind: str | Kind, delimiter_stops: bool) -> bool:
    """Whether a step whose generated text so far is ``text`` is complete (other than end-of-turn and the cap).

    Args:
        text: The generated text of this step so far (decoded, end-of-turn excluded).
        lead: The lead-in injected before it (a math lead-in may open ``\\boxed{``, a code one a fence).
        kind: The problem's kind (a :class:`rsim_env.kinds.Kind` or its name); its ``stops`` rule says when
            the answer is complete (math: a closed, non-empty ``\\boxed{...}``; code: a closed program block).
        delimiter_stops: Also stop at the step delimiter (planner rounds other than termination);
            leading whitespace does not count, a step ends at the first delimiter after some content.
    """
    if kinds.get(kind).stops(lead, text):
        return True
    return delimiter_stops and STEP_DELIMITER in text.lstrip()


def turn_glue(tokenizer: Any) -> tuple[str, str]:
    """``(after assistant, before a user turn's content)`` and ``(after a user turn, assistant header)``.

    Read from ``tokenizer``'s chat template with sentinel messages; the first starts with the
    end-of-turn text when the template closes assistant messages with it (ChatML:
    ``"<|im_end|>\\n<|im_start|>user\\n"`` and ``"<|im_end|>\\n<|im_start|>assistant\\n"``).

    Raises:
        ValueError: The template drops message contents (no glue can be read from it).
    """
    msgs = [{"role": "system", "content": "\x01"}, {"role": "user", "content": "\x02"},
            {"role": "assistant", "content": "\x03"}, {"role": "user", "content": "\x04"}]
    text = tokenizer.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
    if not all(c in text for c in "\x03\x04"):
        raise ValueError("the tokenizer's chat template drops message contents; the reasoner needs a template "
                         "that renders every message (e.g. ChatML).")
    return text[text.index("\x03") + 1:text.index("\x04")], text[text.index("\x04") + 1:]
