"""Worker process of the ``rg`` kind: ``python -m rsim_env.kinds.rg_worker``.

Runs a reasoning-gym generator's own ``score_answer`` on a model's answer, one JSON request per line on
stdin, one JSON reply per line on stdout -- the protocol of :mod:`rsim_env.answers.worker`, so the same
:class:`~rsim_env.answers.sandbox.WorkerPool` bounds its time (killed past the deadline) and its address
space (:data:`rsim_env.answers.worker.MEMORY_LIMIT`).

Request: ``{"dataset", "config", "seed", "size", "index", "question", "answer"}``. The worker re-creates the
entry (``reasoning_gym.create_dataset(dataset, size=size, seed=seed, **config)[index]``, datasets cached
per worker) and checks that its question is the problem's. Reply: ``{"score": float, "reason": "ok"}``, or
``{"score": 0.0, "reason": R, "detail": ...}`` with R one of ``"refused"`` (the scorer would ``eval`` an
answer that is Python code, see :func:`literal_only`), ``"scorer_error"`` (the scorer raised on the
answer), ``"entry_mismatch"`` (the re-created entry's question differs: another reasoning-gym version or
config) or ``"bad_request"`` (the dataset could not be created).

``{"op": "entries", "dataset", "config", "seed", "size", "start", "stop"}`` asks for the ``[question, answer]``
pairs of entries ``start`` to ``stop`` instead (:func:`rsim_env.kinds.rg_tasks.entries`: the pool's workers run under
``PYTHONHASHSEED=0``, so they make the same entries in every run), and ``{"op": "scorer_check", "dataset",
"config", "seed", "samples"}`` for the scorer sanity check's failures (:func:`rsim_env.kinds.scorer_check.check`).
"""

from __future__ import annotations

import json
import math
from collections import OrderedDict
from typing import Any

from .rg_tasks import make_entry
from .eval_guard import PYTHON_EVAL, literal_only  # noqa: F401  (this worker's guard; re-exported)

CACHE_SIZE = 16
"""Datasets kept per worker (creating one can load word lists)."""
_datasets: OrderedDict[str, Any] = OrderedDict()


def _dataset(req: dict) -> Any:
    import reasoning_gym

    key = json.dumps([req["dataset"], req["config"], req["seed"], req["size"]], sort_keys=True)
    if key not in _datasets:
        _datasets[key] = reasoning_gym.create_dataset(req["dataset"], size=req["size"], seed=req["seed"],
                                                      **req["config"])
        while len(_datasets) > CACHE_SIZE:
            _datasets.popitem(last=False)
    _datasets.move_to_end(key)
    return _datasets[key]


def make_entries(req: dict) -> dict:
    """``{"entries": [[question, answer], ...] of indices [start, stop), "reason": "ok"}`` of a dataset, or
    ``{"reason": "bad_request", "detail": ...}`` when the generator refuses (:func:`rsim_env.kinds.rg_tasks.entries`)."""
    try:
        ds = _dataset(req)
        entries = (make_entry(ds, req["dataset"], req["seed"], i) for i in range(req["start"], min(req["stop"], len(ds))))
        rows = [[str(e["question"]), str(e["answer"])] for e in entries]
    except Exception as exc:  # the generator's own refusal: the parent raises it as ValueError
        return {"reason": "bad_request", "detail": f"{type(exc).__name__}: {exc}"[:300]}
    return {"entries": rows, "reason": "ok"}


def scorer_check(req: dict) -> dict:
    """``{"failures": [...], "reason": "ok"}`` of :func:`rsim_env.kinds.scorer_check.dataset_failures`, or
    ``{"reason": "bad_request", "detail": ...}`` when the generator refuses the options."""
    from .scorer_check import dataset_failures

    try:
        ds = _dataset({**req, "size": max(req["samples"], 2)})
        found = dataset_failures(ds, req["dataset"], req["seed"], req["samples"])
    except Exception as exc:  # the generator's own refusal: the parent raises it as ValueError
        return {"reason": "bad_request", "detail": f"{type(exc).__name__}: {exc}"[:300]}
    return {"failures": found, "reason": "ok"}


def handle(req: dict) -> dict:
    """Score one request, or answer an ``{"op": "entries"}`` / ``{"op": "scorer_check"}`` one (module docstring)."""
    if req.get("op") == "entries":
        return make_entries(req)
    if req.get("op") == "scorer_check":
        return scorer_check(req)
    try:
        ds = _dataset(req)
        entry = make_entry(ds, req["dataset"], req["seed"], req["index"])
    except Exception as exc:  # a problem that cannot be re-created: the parent raises, it is no answer's fault
        return {"score": 0.0, "reason": "bad_request", "detail": f"{type(exc).__name__}: {exc}"[:300]}
    if str(entry["question"]) != req["question"]:
        return {"score": 0.0, "reason": "entry_mismatch",
                "detail": f"{req['dataset']}[{req['index']}] asks {str(entry['question'])[:120]!r}"}
    answer = req["answer"]
    if req["dataset"] in PYTHON_EVAL and not literal_only(answer):
        return {"score": 0.0, "reason": "refused", "detail": "the scorer would eval Python code"}
    try:
        score = float(ds.score_answer(answer, entry))
    except Exception as exc:  # RecursionError on nested brackets, MemoryError, ...: the answer's doing
        return {"score": 0.0, "reason": "scorer_error", "detail": f"{type(exc).__name__}: {exc}"[:300]}
    if not math.isfinite(score):
        return {"score": 0.0, "reason": "scorer_error", "detail": f"score {score!r}"}
    return {"score": score, "reason": "ok"}


def main() -> None:
    """Serve requests until stdin closes."""
    from ..answers.worker import limit_memory, serve

    limit_memory()
    import reasoning_gym  # noqa: F401  (import before "ready": the first score is not charged for it)

    serve(handle, {"score": 0.0}, detail_chars=300)


if __name__ == "__main__":
    main()
