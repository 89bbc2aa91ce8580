"""The conversation layer: how a reasoner's chat is built, turn by turn, and when a step stops. No torch.

Every reasoner route (torch, llama.cpp, a completions server, a chat server) plays the same turns:
:class:`Turns` builds each conversation's token ids (and, for servers that take text, the same
conversation as text) from the environment's observations, and owns the stop rules, the token caps
and the records. A :mod:`decoder <agents.decoding.decoder>` only feeds tokens and writes new ones.

The environment's observation says what each round adds to the chat (``rsim_env.render`` builds
it for the configured turn protocol): ``instruction`` -- the content of a new user turn ("" =
continue the open assistant message) -- and ``injected`` -- a lead-in that the assistant text
continues. Each conversation's token sequence is built only from ids -- never by re-tokenising
decoded text::

    chat_template(system, user=instruction_0, generation prompt) + ids(lead_0)   # round 0
    + generated_0
    + [end-of-turn if not generated] + ids(user turn glue + instruction_1 + assistant glue)  # chat round
      or [ids("\\n\\n") if not generated] + ...                                        # same message
    + ids(lead_1) + generated_1 ...

The turn glue (the template's text between an assistant message and the next user message, and
between a user message and the assistant header) is read once from the tokenizer's chat template
(:func:`turn_glue`), so any template whose rendering of a longer chat extends that of a shorter one
works.

Stop rules of a step (first that applies):

* the model's end-of-turn token (``tokenizer.eos_token``, never suppressed; it is recorded as a
  generated token so learners train the decision to stop);
* the problem kind's stop rule (``rsim_env.kinds.Kind.stops`` of the observation's ``kind``) on lead-in +
  generated text: math stops at a closed, non-empty ``\\boxed{...}``; code at a closed fenced Python block
  with a non-blank body;
* the step delimiter ``render.STEP_DELIMITER`` (planner rounds other than termination, if
  ``stop_at_delimiter``);
* the token cap: ``max_step_tokens``, or ``max_answer_tokens`` for the single turn of no-planner
  mode (the observation's ``no_planner`` field) and for the termination step of a kind whose answer is
  whole (``Kind.whole_answer``: a code problem's program).

The text returned to the environment is the generated step before any delimiter, without the
end-of-turn token, stripped. The record of a copy (:class:`ReasonerRecord`) is exactly what was
fed and written, with a mask of generated tokens and their log-probs (convention in
:mod:`agents.hf.sampling`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from rsim_env import kinds
from rsim_env.kinds import Kind
from rsim_env.render import REASONER_SYSTEM, STEP_DELIMITER, no_planner_chat
from rsim_env.strategies import TERMINATION

__all__ = ["Conversation", "ReasonerRecord", "Turn", "Turns", "step_stops", "turn_glue"]


@dataclass(frozen=True)
class ReasonerRecord:
    """One copy's episode as the reasoner saw it: everything a learner needs to rescore it."""

    input_ids: list[int]
    """Prompt + injections + generated tokens, in order."""
    gen_mask: list[int]
    """1 on tokens the model generated, 0 on prompt / injected / delimiter tokens."""
    logprobs: list[float]
    """Log-probs of the generated tokens at sampling time (0 elsewhere)."""
    prompt_len: int
    """Tokens of the chat-template prompt."""
    step_spans: list[tuple[int, int]]
    """``[start, end)`` of each step's generated tokens."""
    temperature: float
    """Temperature of ``logprobs`` (the log-prob convention of :mod:`agents.hf.sampling`)."""
    suppressed_ids: list[int]
    """Vocabulary ids removed from the distribution (same convention)."""
    pad_id: int
    """Padding id for batching."""
    usage: dict[str, int] | None = None
    """Tokens as a server counted them (``requests``, ``prompt_tokens``, ``completion_tokens``); None when decoded
    here. A text-prompt server's ``input_ids`` are this side's tokenization of its replies."""


def step_stops(text: str, lead: str, kind: str | Kind, delimiter_stops: bool) -> bool:
    """Whether a step whose generated text so far is ``text`` is complete (other than end-of-turn and the cap).

    Args:
        text: The generated text of this step so far (decoded, end-of-turn excluded).
        lead: The lead-in injected before it (a math lead-in may open ``\\boxed{``, a code one a fence).
        kind: The problem's kind (a :class:`rsim_env.kinds.Kind` or its name); its ``stops`` rule says when
            the answer is complete.
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


@dataclass
class Conversation:
    """One copy's conversation: its token ids (and text, for text-prompt servers), what the decoder has read,
    and the state of its open turn."""

    ids: list[int] = field(default_factory=list)
    gen_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    text: str = ""
    """The same conversation as text (kept only when :attr:`Turns.keep_text`)."""
    fed: int = 0
    """``ids[:fed]`` are in the decoder's cache; ``ids[fed:]`` is fed with the next turn."""
    prompt_len: int = 0
    step_spans: list[tuple[int, int]] = field(default_factory=list)
    needs_delimiter: bool = False
    open: bool = True
    """The assistant message is open (its end-of-turn token was not generated)."""
    single_turn: bool = False
    """No-planner mode: one whole answer, no delimiter stop."""
    terminating: bool = False
    """This round's strategy is termination: no delimiter stop."""
    lead: str = ""
    """This round's injected lead-in (for the boxed-answer / program stop rule)."""
    kind: Kind = field(default_factory=lambda: kinds.get("math"))
    usage: dict[str, int] | None = None
    """Tokens a server counted for this copy (None: decoded here)."""

    def extend(self, ids: Sequence[int], text: str = "") -> None:
        """Append fed (not generated) tokens, and their text."""
        self.ids.extend(ids)
        self.gen_mask.extend([0] * len(ids))
        self.logprobs.extend([0.0] * len(ids))
        self.text += text

    def write(self, token: int, logprob: float) -> None:
        """Append one generated token."""
        self.ids.append(token)
        self.gen_mask.append(1)
        self.logprobs.append(logprob)


@dataclass
class Turn:
    """One copy's open turn, as a decoder sees it: what to feed, the cap, and where written tokens go.

    A decoder that writes token by token calls :meth:`write` until it returns True; one that gets a whole
    reply (a server) calls :meth:`reply` or :meth:`write` for each returned token.
    """

    copy: int
    conv: Conversation
    feed: list[int]
    """Ids the decoder has not read yet (the whole conversation on the first turn)."""
    cap: int
    """Most tokens this turn may write."""
    observation: dict[str, Any]
    turns: "Turns"
    start: int = 0
    tokens: list[int] = field(default_factory=list)
    """Tokens written in this turn so far."""
    done: bool = False
    text: str | None = None
    """The step's text when it came from a text reply (:meth:`reply`)."""

    def write(self, token: int, logprob: float) -> bool:
        """Record a generated token; True when the step is over (end-of-turn, cap or a stop rule)."""
        conv = self.conv
        conv.write(token, logprob)
        self.tokens.append(token)
        if token == self.turns.eos_id:
            conv.open = False
        self.done = (len(self.tokens) >= self.cap or not conv.open
                     or (self.turns.config.stop_at_delimiter and self.turns.stops(conv, self.tokens)))
        return self.done

    def reply(self, text: str, ended: bool, ids: Sequence[int] | None = None) -> None:
        """A text server's reply: cut it where the local stop rules stop (on its tokenization, or on ``ids``
        when the server sent the ids it sampled), keep the rest out of the conversation.

        Args:
            text: What the server wrote (it wrote until end-of-turn or the cap).
            ended: The server stopped at end-of-turn (``finish_reason == "stop"``), not at the cap.
            ids: The generated ids as the server sampled them (end-of-turn excluded); None: ``text``
                tokenized here.
        """
        turns, conv = self.turns, self.conv
        delimiter_stops = not (conv.single_turn or conv.terminating)
        ids = list(turns.encode(text) if ids is None else ids)
        kept, n_kept = text, len(ids)
        for n in range(1, len(ids) + 1):  # stopped at the last token: the end-of-turn after it was never written
            cut = turns.tokenizer.decode(ids[:n], skip_special_tokens=False)
            if step_stops(cut, conv.lead, conv.kind, delimiter_stops):
                kept, n_kept, ended = cut, n, False
                break
        for token in ids[:n_kept] + ([turns.eos_id] if ended else []):
            conv.write(token, 0.0)
            self.tokens.append(token)
        conv.text += kept + (turns.eos_text if ended else "")
        conv.open = not ended
        self.text, self.done = kept, True


class Turns:
    """Turn building, stop rules and records of a reasoner, over one tokenizer (see module docstring).

    Args:
        tokenizer: The reasoner's tokenizer (chat template, end-of-turn token, special ids); None for a chat
            server, which renders the chat itself (only rounds, lead-ins and the step text are kept).
        config: An :class:`agents.reasoner.ReasonerConfig` (caps, stop rules, sampling convention).
        keep_text: Also keep each conversation as text (for servers that take text prompts).
    """

    def __init__(self, tokenizer: Any, config: Any, keep_text: bool = False) -> None:
        self.tokenizer, self.config, self.keep_text = tokenizer, config, keep_text
        if tokenizer is None:
            self.delimiter_ids, self.eos_id, self.eos_text, self.suppressed_ids, self.pad_id = [], None, "", [], 0
            self.glue_user = self.glue_assistant = ""
            return
        self.delimiter_ids = self.encode(STEP_DELIMITER)
        self.eos_id = tokenizer.eos_token_id
        self.eos_text = tokenizer.eos_token or ""
        # The end-of-turn token ends a step, so it stays samplable (unless steps have a fixed length).
        allowed = {self.eos_id} if config.stop_at_delimiter else set()
        self.suppressed_ids = (sorted(set(tokenizer.all_special_ids) - allowed)
                               if config.suppress_special_tokens else [])
        self.glue_user, self.glue_assistant = turn_glue(tokenizer)
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id

    @property
    def record_temperature(self) -> float:
        """Temperature of the recorded log-probs: 1 when greedy (:mod:`agents.hf.sampling`)."""
        return 1.0 if self.config.greedy else self.config.temperature

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def decode(self, tokens: Sequence[int]) -> str:
        """A step's text: its tokens without end-of-turn, special tokens kept."""
        return self.tokenizer.decode([t for t in tokens if t != self.eos_id], skip_special_tokens=False)

    def system(self, no_planner: bool, system: str | None) -> str:
        return (no_planner_chat("")[0]["content"] if no_planner else REASONER_SYSTEM) if system is None else system

    def prompt_ids(self, question: str, no_planner: bool = False, system: str | None = None) -> list[int]:
        """System + user(``question``) through the chat template, ending with the assistant header.

        ``question`` is the round-0 user turn (``obs["instruction"]``); ``system`` defaults to the
        no-planner or ``inline`` system prompt.
        """
        out = self.tokenizer.apply_chat_template(self._chat(question, no_planner, system), add_generation_prompt=True,
                                                 tokenize=True)
        return list(out["input_ids"] if hasattr(out, "keys") else out)

    def _chat(self, question: str, no_planner: bool, system: str | None) -> list[dict[str, str]]:
        return [{"role": "system", "content": self.system(no_planner, system)}, {"role": "user", "content": question}]

    def _add(self, conv: Conversation, text: str, ids: list[int] | None = None) -> None:
        if self.tokenizer is not None and text:
            conv.extend(self.encode(text) if ids is None else ids, text if self.keep_text else "")

    def cap(self, conv: Conversation) -> int:
        """This turn's token cap: the answer cap for a whole answer (no-planner mode, or a kind whose
        termination turn is one, as a program is), else the step cap."""
        whole = conv.single_turn or (conv.terminating and conv.kind.whole_answer)
        return self.config.max_answer_tokens if whole else self.config.max_step_tokens

    def start(self, copy: int, conv: Conversation, obs: dict[str, Any]) -> Turn:
        """Open round ``obs["round"]`` of ``conv``: append what the round adds before the model writes."""
        written = len(conv.step_spans)
        if int(obs["round"]) != written:
            raise ValueError(f"copy {copy}: observation is for round {obs['round']} but this reasoner has written "
                             f"{written} steps; call reset() at the start of every rollout")
        user = obs.get("instruction", obs["question"] if not written else "")
        conv.lead = str(obs.get("injected", ""))
        conv.terminating = int(obs.get("strategy", TERMINATION)) == TERMINATION
        conv.kind = kinds.get(str(obs.get("kind", "math")))
        eos = self.eos_text
        if not written:
            # env(planner=False): one whole answer (the no_planner field; older observations: protocol "none")
            conv.single_turn = bool(obs.get("no_planner", obs.get("protocol") == "none"))
            if self.tokenizer is not None:
                question, system = user or obs["question"], obs.get("system")
                text = (self.tokenizer.apply_chat_template(self._chat(question, conv.single_turn, system),
                                                           add_generation_prompt=True, tokenize=False)
                        if self.keep_text else "")
                conv.extend(self.prompt_ids(question, conv.single_turn, system), text)
            conv.prompt_len = len(conv.ids)
        elif user:  # a new user turn: close the assistant turn (unless the model did), then open the next
            close = self.glue_user[len(eos):] if not conv.open and eos and self.glue_user.startswith(eos) else self.glue_user
            self._add(conv, close + user + self.glue_assistant)
        elif not conv.open:  # the model ended its turn but the protocol continues the assistant text
            self._add(conv, self.glue_assistant[len(eos):] if eos and self.glue_assistant.startswith(eos)
                      else self.glue_assistant)
        elif conv.needs_delimiter:
            self._add(conv, STEP_DELIMITER, self.delimiter_ids)
        conv.open = True
        self._add(conv, conv.lead)
        feed = conv.ids[conv.fed:]
        conv.fed = len(conv.ids)
        return Turn(copy, conv, feed, self.cap(conv), obs, self, start=len(conv.ids))

    def stops(self, conv: Conversation, tokens: list[int]) -> bool:
        """Stop rules other than end-of-turn and the cap (module docstring)."""
        delimiter_stops = self.config.stop_at_delimiter and not (conv.single_turn or conv.terminating)
        return step_stops(self.decode(tokens), conv.lead, conv.kind, delimiter_stops)

    def finish(self, turn: Turn) -> str:
        """Close ``turn``: record its step span and return its step text (cut at the delimiter unless the turn is
        one whole answer)."""
        conv = turn.conv
        conv.step_spans.append((turn.start, len(conv.ids)))
        text = self.decode(turn.tokens) if turn.text is None else turn.text
        if turn.tokens and turn.text is None:
            conv.fed = len(conv.ids) - 1  # the last written token was never fed
            if self.keep_text:
                conv.text += text + (self.eos_text if not conv.open else "")
        text = text.lstrip()
        conv.needs_delimiter = conv.open and STEP_DELIMITER not in text
        whole = conv.single_turn or conv.terminating
        return text.strip() if whole else text.split(STEP_DELIMITER)[0].strip()

    def prefill(self, copy: int, conv: Conversation, obs: dict[str, Any], ids: Sequence[int], text: str = "") -> str:
        """Play round ``obs["round"]`` of ``conv`` with a step this reasoner wrote before, without decoding it.

        The conversation then holds exactly what it holds after a decoder wrote ``ids`` (ids, mask, spans, text,
        open/delimiter state), but the decoder has read none of this round: ``conv.fed`` stays where it was, so the
        next turn's feed carries the step as a prompt continuation (:mod:`agents.replay.reasoner`'s catch-up). Log-probs of
        prefilled tokens are recorded as 0 (never computed: a replayed reasoner is not trained).

        Args:
            copy: The copy's id (for errors).
            conv: Its conversation.
            obs: This round's observation.
            ids: Every token the step's turn wrote, end-of-turn included when written (:meth:`step_ids`).
            text: The step's text; used only without a tokenizer (a chat server renders the chat from the
                observations, so no token history is kept).

        Returns:
            The step's text, as :meth:`finish` returns it.

        Raises:
            ValueError: ``ids`` does not end exactly where this reasoner's cap and stop rules end the step (it was
                written under other settings or by another reasoner).
        """
        fed = conv.fed
        turn = self.start(copy, conv, obs)
        if self.tokenizer is None:
            turn.text, turn.done = text, True
        elif not ids:
            raise ValueError(f"copy {copy}: prefill got no token ids for round {obs['round']}; a step of a reasoner "
                             "with a tokenizer is the ids its turn wrote (Turns.step_ids).")
        for i, token in enumerate(ids if self.tokenizer is not None else ()):
            if turn.write(int(token), 0.0) != (i == len(ids) - 1):
                raise ValueError(f"copy {copy}: the prefilled step of round {obs['round']} ({len(ids)} tokens) "
                                 f"{'ends after' if i < len(ids) - 1 else 'goes on past'} token {i + 1} under this "
                                 f"reasoner's cap ({turn.cap}) and stop rules: it was written by another reasoner or "
                                 "under other settings; prefill only steps this reasoner wrote.")
        out = self.finish(turn)
        conv.fed = fed  # nothing of this round is in the decoder's cache: the next turn feeds it
        return out

    @staticmethod
    def step_ids(conv: Conversation, round: int = -1) -> list[int]:
        """Every token the turn of ``round`` wrote (its step span: end-of-turn included when written)."""
        start, end = conv.step_spans[round]
        return list(conv.ids[start:end])

    def record(self, conv: Conversation) -> ReasonerRecord:
        """Everything a learner needs to recompute and weight this conversation's log-probs."""
        return ReasonerRecord(input_ids=list(conv.ids), gen_mask=list(conv.gen_mask), logprobs=list(conv.logprobs),
                              prompt_len=conv.prompt_len, step_spans=list(conv.step_spans),
                              temperature=self.record_temperature, suppressed_ids=list(self.suppressed_ids),
                              pad_id=self.pad_id, usage=None if conv.usage is None else dict(conv.usage))
