"""A scripted ``rsim study`` whose answer is known, for the train / score tests: two task families, each solved only
under its own plan (:mod:`agents.scripted.families`), a scripted reasoner plugged in as ``package.module:factory``,
the data a local JSONL file with a task column, the planner the tiny random-init LM. No weights, seconds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agents.scripted.families import Family, FamilyReasoner, family_problems
from rsim_env.strategies import TERMINATION

ADD = ("add", "Add {a} and {b}.", "+")
MUL = ("mul", "Multiply {a} by {b}.", "*")
FAMILIES = (Family(*ADD, (3, TERMINATION)), Family(*MUL, (1, TERMINATION)))
"""The study's game: ``add`` is solved only under ``[3, 8]``, ``mul`` only under ``[1, 8]``."""
SWAPPED = (Family(*ADD, (1, TERMINATION)), Family(*MUL, (3, TERMINATION)))
"""Another reasoner on the same tasks: each family solved only under the other's plan."""
PROBLEMS = family_problems(FAMILIES, 120, seed=7)


class _Scripted(FamilyReasoner):
    deterministic = True
    """Its steps are a function of its inputs: the fill may replay them."""

    def __init__(self, families: Any, name: str) -> None:
        super().__init__(PROBLEMS, families)
        self.fingerprint = f"tests.study_helpers:{name}"


def family_reasoner(ctx: Any) -> Any:
    """Plug-in factory: the reasoner of :data:`FAMILIES`."""
    return _Scripted(FAMILIES, "family_reasoner")


def swapped_reasoner(ctx: Any) -> Any:
    """Plug-in factory: the reasoner of :data:`SWAPPED` (another reasoner, the same tasks)."""
    return _Scripted(SWAPPED, "swapped_reasoner")


def data_file(folder: Path) -> Path:
    """The study's data: :data:`PROBLEMS` as JSONL with a ``task`` column."""
    path = Path(folder) / "families.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"question": p.question, "answer": p.answer, "task": p.id.split("/")[0]}) + "\n"
                            for p in PROBLEMS))
    return path


def study(folder: Path, reasoner: str = "family_reasoner", **overrides: Any) -> Any:
    """A :class:`algos.study.config.StudyConfig` of the scripted study in ``folder`` (its trees filled)."""
    from algos.study import fill
    from algos.study.config import resolve

    cfg = resolve("tiny", {"out": str(folder / "study"), "data": str(data_file(folder)), "planner": "tiny",
                           "reasoner": f"tests.study_helpers:{reasoner}", "train_per_task": 6, "val_per_task": 3,
                           "test_per_task": 4, "increment": 6, "learner.seeds": 2, "learner.steps": 30,
                           "learner.groups_per_step": 4, "learner.group_size": 8, "learner.lr": 0.05,
                           "learner.eval_every": 10, **overrides})
    fill.run(cfg)
    return cfg


def ledger_of(test, modes: dict, looks: int = 1, rounds: int = 10_000) -> dict:
    """A test set's ledger as the report reads it: this look (with the p-value its scores give) and ``looks - 1``
    earlier looks with no p-value kept (each counted as p = 1)."""
    from algos.study.stats import paired
    from algos.study.view import View

    v = View.of(test, modes)
    p = paired(v.modes["trained"].pooled(), v.modes["best_fixed"].pooled(), rounds)["p_value"]
    others = [{"hash": f"{i:064x}", "p": 1.0, "p_kept": False, "historical": True} for i in range(1, looks)]
    return {"hash": "f" * 64, "family": others + [{"hash": "f" * 64, "p": p, "p_kept": True}], "path": "ledger.jsonl",
            "test_set": "0" * 64}
