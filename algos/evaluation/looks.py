"""An evaluation's look at a sealed test split: ``rsim eval`` scoring any problem of a study's test (or replication)
set is recorded in that set's ledger (:mod:`algos.study.ledger`), like every scoring by ``rsim study``.

The look's configuration hash is SHA-256 of what the episodes depend on (:func:`.journal.settings_of`: the resolved
config without the output settings, the problem ids, the checkpoint the settings came from) and of the weights of
every local agent directory named by ``--reasoner`` / ``--planner`` (their ``model.*`` files: retrained weights under
the same path are another look). An evaluation has no primary comparison, so its ``p_value`` is None: the ledger's
Holm step-down counts it as p = 1. An evaluation touching no ledger records nothing and creates none.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Sequence

__all__ = ["weights_digest", "look_hash", "record_look"]


def weights_digest(spec: str) -> str:
    """SHA-256 of the ``model.*`` files under the local directory an agent spec names (the spec itself, without its
    ``#options``, or after its ``kind:`` prefix); "" when it names none."""
    from algos.study.ledger import digest_files

    bare = spec.split("#", 1)[0]
    for cand in (spec, bare, bare.partition(":")[2]):
        path = Path(cand) if cand else None
        if path is not None and path.is_dir():
            return digest_files((p for p in path.rglob("model.*") if p.is_file()), path)
    return ""


def look_hash(settings: dict[str, Any], specs: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """``(hash, what was hashed)`` of an evaluation: its settings and the digests of its agents' local weights."""
    doc = {"settings": settings, "weights": {s: weights_digest(s) for s in sorted(set(specs)) if s}}
    text = json.dumps(doc, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest(), doc


def record_look(cfg: Any, problems: Sequence[Any], settings: dict[str, Any], modes: Sequence[str]) -> list[str]:
    """Record the evaluation in every ledger its ``problems`` touch; returns their paths (module docstring)."""
    from algos.study import ledger

    own = [cfg.ledger_dir] if cfg.ledger_dir else []
    questions = [p.question for p in problems]
    if not ledger.touching(questions, own):
        return []
    specs = [cfg.model.reasoner] + ([cfg.model.planner] if "trained" in modes else [])
    h, doc = look_hash(settings, specs)
    line = ledger.look(h, command="rsim eval", p_value=None, problems=len(questions),
                       scored=f"rsim eval --data {cfg.data.source}: modes {', '.join(modes)}",
                       settings={"data": cfg.data.source, "modes": list(modes), "weights": doc["weights"]},
                       p_note="rsim eval has no primary comparison: counted as p = 1")
    return [str(lg.path) for lg in ledger.record_scoring(questions, line, own=own)]
