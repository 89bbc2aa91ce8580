"""The atlas's task catalogue and difficulty ladders (:mod:`benchmarks.plans.atlas`).

A task is a problem source with a short *ladder* of settings, easiest first; the atlas's pilot picks one
rung per task. Four families:

* ``rg``: every reasoning-gym generator whose problems have a short answer. **Rule** (at the ladder's
  first rung, :data:`LADDERS` or the generator's defaults, on :data:`SAMPLES` problems of seed 0): not
  refused by the ``rg`` kind (:data:`rsim_env.kinds.rgym.REFUSED`), every gold is a single answer (not
  ``"None"``, which marks generators whose answer is any solution a simulator accepts), every gold has
  at most ``max_gold_chars`` characters and every question at most ``max_question_chars``, and its scorer
  passes the sanity check (:func:`rsim_env.kinds.scorer_check.check`: no full credit to another entry's gold, the
  opposite boolean or an empty answer; ``game_of_life_halting`` fails it). The rest are left out, each with
  its reason.
* ``curriculum``: each task of :data:`rsim_env.sources.curriculum.TASKS` (one rung: its difficulty is the task).
* ``code``: the procedural function-writing tasks (``code_tasks``, graded in the sandbox).
* ``local``: each file in ``local_dir`` named after a hub loader (``gsm8k.jsonl``, ``math500.jsonl``, ...),
  read in that hub's column layout (the repository's ``tests/fixtures/datasets`` by default: two or three
  rows each, so they are dropped for size until ``local_dir`` points at full downloads).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rsim_env.problem import Problem

__all__ = ["LADDERS", "SAMPLES", "AtlasTask", "rg_label", "catalogue"]

SAMPLES = 5
"""Problems per generator the catalogue rule looks at."""

_1D2 = {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1}
LADDERS: dict[str, list[dict[str, Any]]] = {
    "basic_arithmetic": [{**_1D2, "operators": ["+", "-"]}, {**_1D2, "max_digits": 2, "operators": ["+", "-", "*"]},
                         {"min_terms": 3, "max_terms": 3, "min_digits": 1, "max_digits": 2}],
    "chain_sum": [_1D2, {**_1D2, "min_digits": 2, "max_digits": 2}, {"min_terms": 3, "max_terms": 3, "max_digits": 2}],
    "products": [_1D2, {**_1D2, "max_digits": 2}, {**_1D2, "min_digits": 2, "max_digits": 2}],
    "decimal_chain_sum": [{**_1D2, "min_decimal_places": 1, "max_decimal_places": 1}, {"max_terms": 3, "max_digits": 2}],
    "decimal_arithmetic": [{"min_terms": 2, "max_terms": 2, "min_num_decimal_places": 1, "max_num_decimal_places": 1},
                           {"min_terms": 2, "max_terms": 3, "min_num_decimal_places": 2, "max_num_decimal_places": 2}],
    "simple_equations": [{"min_terms": 2, "max_terms": 2, "min_value": 1, "max_value": 9, "operators": ["+", "-"],
                          "operators_weights": [0.5, 0.5]},
                         {"min_terms": 2, "max_terms": 3, "min_value": 1, "max_value": 20}],
    "complex_arithmetic": [{"min_real": -3, "max_real": 3, "min_imag": -3, "max_imag": 3, "operations": ["+", "-"],
                            "operations_weights": [0.5, 0.5]}, {}],
    "fraction_simplification": [{"max_value": 20, "max_factor": 5, "styles": ["plain"]},
                                {"max_value": 100, "max_factor": 20, "styles": ["plain"]}],
    "power_function": [{"min_base": -5.0, "max_base": 5.0, "min_exponent": 0, "max_exponent": 2}, {}],
    "gcd": [{"min_value": 1, "max_value": 20}, {"min_value": 1, "max_value": 100}, {}],
    "lcm": [{"min_value": 1, "max_value": 10}, {"min_value": 1, "max_value": 30}, {}],
    "count_bits": [{"min_n": 1, "max_n": 16}, {"min_n": 1, "max_n": 1000}, {}],
    "count_primes": [{"min_n": 1, "max_n": 30}, {"min_n": 1, "max_n": 200}, {}],
    "prime_factorization": [{"min_value": 2, "max_value": 30}, {"min_value": 2, "max_value": 200}, {}],
    "base_conversion": [{"min_base": 2, "max_base": 10, "max_value": 15}, {"max_value": 100}, {}],
    "number_sequence": [{"min_terms": 4, "max_terms": 5, "min_value": 1, "max_value": 10, "max_complexity": 1},
                        {"max_complexity": 2}, {}],
    "leg_counting": [{"min_animals": 1, "max_animals": 1, "max_instances": 3},
                     {"min_animals": 2, "max_animals": 2, "max_instances": 5}, {}],
    "coin_flip": [{"min_trials": 1, "max_trials": 3}, {"min_trials": 3, "max_trials": 6}, {}],
    "letter_counting": [{"min_words": 1, "max_words": 3}, {"min_words": 5, "max_words": 8}, {}],
    "spell_backward": [{"min_word_len": 3, "max_word_len": 3}, {"min_word_len": 4, "max_word_len": 5},
                       {"min_word_len": 6, "max_word_len": 8}],
    "caesar_cipher": [{"min_words": 1, "max_words": 1, "min_rotation": 1, "max_rotation": 1},
                      {"min_words": 1, "max_words": 2, "min_rotation": 1, "max_rotation": 3}],
    "letter_jumble": [{"min_words": 1, "max_words": 1, "min_word_len": 3, "max_word_len": 5,
                       "min_corruption_level": 0.1, "max_corruption_level": 0.3},
                      {"min_words": 2, "max_words": 3, "min_word_len": 3, "max_word_len": 6}],
    "word_sequence_reversal": [{"min_words": 2, "max_words": 2}, {"min_words": 3, "max_words": 4}],
    "word_sorting": [{"min_words": 3, "max_words": 3, "min_word_length": 3, "max_word_length": 5},
                     {"min_words": 4, "max_words": 5, "min_word_length": 3, "max_word_length": 8}],
    "number_sorting": [{"min_numbers": 3, "max_numbers": 3, "min_decimals": 0, "max_decimals": 0, "min_value": 0,
                        "max_value": 9}, {"min_numbers": 4, "max_numbers": 5, "min_decimals": 0, "max_decimals": 1}],
    "sentence_reordering": [{"min_words_in_sentence": 3, "max_words_in_sentence": 4},
                            {"min_words_in_sentence": 5, "max_words_in_sentence": 8}],
    "palindrome_generation": [{"min_length": 3, "max_length": 3}, {"min_length": 4, "max_length": 5}, {}],
    "isomorphic_strings": [{"min_string_length": 2, "max_string_length": 3},
                           {"min_string_length": 4, "max_string_length": 6}, {}],
    "ransom_note": [{"max_note_length": 3, "max_magazine_length": 6}, {}],
    "family_relationships": [{"min_family_size": 3, "max_family_size": 4}, {}],
}
"""Generator -> settings (``reasoning_gym.create_dataset`` options), easiest first; one word, three letters,
one-digit operands, two terms at the bottom. A generator not here has one rung: its defaults (``{}``)."""


def rg_label(generator: str, options: dict[str, Any]) -> str:
    """The data spec of one rung (``rg:chain_sum?min_terms=2&...``): :func:`rsim_env.sources.data.load_problems` reads it."""
    query = "&".join(f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in options.items())
    return f"rg:{generator}" + (f"?{query}" if query else "")


@dataclass(frozen=True)
class AtlasTask:
    """One task of the atlas: a name, its family and its ladder (labels, easiest first)."""

    name: str
    family: str
    ladder: tuple[str, ...]
    """One label per rung: a data spec (``rg``, ``code``), ``curriculum_task:NAME`` or ``PATH?kind=HUB``."""

    def load(self, rung: int, limit: int, seed: int) -> list[Problem]:
        """The first ``limit`` problems of rung ``rung``."""
        from rsim_env.sources.data import load_problems

        label = self.ladder[rung]
        if self.family == "curriculum":
            from rsim_env.sources.curriculum import curriculum_problems

            return curriculum_problems(limit, "train", tasks=(label.partition(":")[2],), seed=seed)
        if self.family == "local":
            path, _, kind = label.partition("?kind=")
            return load_problems(path, limit, kind=kind)
        return load_problems(label, limit, seed=seed)


@functools.lru_cache(maxsize=None)
def _rules(max_gold: int, max_question: int) -> tuple[tuple[str, str], ...]:
    """``(generator, why left out or "")`` for every reasoning-gym generator (about 15 s; once per process)."""
    from reasoning_gym.factory import DATASETS

    return tuple((g, _rule(g, LADDERS.get(g, [{}])[0], max_gold, max_question)) for g in sorted(DATASETS))


def _rule(generator: str, options: dict[str, Any], max_gold: int, max_question: int) -> str:
    """"" if the generator is in the catalogue, else why it is left out (module docstring)."""
    from rsim_env.kinds.rgym import REFUSED
    from rsim_env.kinds.rg_tasks import entries
    from rsim_env.kinds.scorer_check import check

    if generator in REFUSED:
        return "refused by the rg kind: its scorer runs sympy.parse_expr on the answer"
    try:
        items = [{"question": q, "answer": a} for q, a in entries(generator, SAMPLES, 0, options)]
    except Exception as e:  # noqa: BLE001 -- any generator failure is a reason to leave it out, recorded
        return f"generator failed: {type(e).__name__}: {str(e)[:120]}"
    golds = [str(x["answer"]) for x in items]
    if "None" in golds:
        return "no single gold (answer 'None'): any solution a simulator accepts is right"
    gold, question = max(map(len, golds)), max(len(str(x["question"])) for x in items)
    if gold > max_gold:
        return f"gold up to {gold} characters > {max_gold}"
    if question > max_question:
        return f"question up to {question} characters > {max_question}"
    bad_scorer = check(generator, options)
    return f"scorer check failed: {bad_scorer}" if bad_scorer else ""


def _local_tasks(local_dir: str) -> list[AtlasTask]:
    from rsim_env.sources.loaders import _ALIASES, LOADERS

    root = Path(local_dir)
    if not local_dir or not root.is_dir():
        return []
    out = []
    for f in sorted(p for p in root.iterdir() if p.suffix in (".jsonl", ".json", ".parquet", ".arrow")):
        hub = _ALIASES.get(f.stem.lower(), f.stem.lower())
        if hub in LOADERS:
            out.append(AtlasTask(f"local:{hub}", "local", (f"{f}?kind={hub}",)))
    return out


def catalogue(names: tuple[str, ...] = (), max_gold_chars: int = 24, max_question_chars: int = 600,
              local_dir: str = "") -> tuple[list[AtlasTask], list[dict[str, str]]]:
    """``(tasks, left_out)``: the tasks of the four families (module docstring), or only those named in
    ``names`` (task names: ``chain_sum``, ``curriculum:add2_1d``, ``code_tasks``, ``local:gsm8k``); ``left_out``
    always lists every generator the rule leaves out, whatever ``names`` selects."""
    from reasoning_gym.factory import DATASETS

    from rsim_env.sources.curriculum import TASKS

    tasks, left_out = [], []
    for gen, why in _rules(max_gold_chars, max_question_chars):
        if why:
            left_out.append({"task": gen, "family": "rg", "reason": why})
        else:
            tasks.append(AtlasTask(gen, "rg", tuple(rg_label(gen, o) for o in LADDERS.get(gen, [{}]))))
    tasks += [AtlasTask(f"curriculum:{n}", "curriculum", (f"curriculum_task:{n}",)) for n in TASKS]
    tasks += [AtlasTask("code_tasks", "code", ("code_tasks",)), *_local_tasks(local_dir)]
    if names:
        unknown = set(names) - set(DATASETS) - {t.name for t in tasks}
        if unknown:
            raise ValueError(f"tasks={sorted(unknown)} are not in the catalogue; name reasoning-gym generators, "
                             "curriculum:NAME, code_tasks or local:HUB (a file in local_dir).")
        tasks = [t for t in tasks if t.name in names]
    return tasks, left_out
