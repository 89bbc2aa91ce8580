"""Two evaluations of the same problems, compared problem by problem: is reasoner B as accurate as A?

Reads the ``results.json`` of two ``rsim eval --out`` runs that differ in one thing (e.g. the reasoner: torch
vs the llama.cpp engine) and, for every mode they share, pairs their greedy outcomes on the same problems:
right counts, problems only one of them solves, the exact McNemar test, and how often the final texts agree.
Writes the per-problem outcomes (``F_outcomes.jsonl.gz``, one row per evaluation, mode and problem) so the
table can be recomputed, and prints it::

    python -m benchmarks.plans.paired_eval --a runs/torch/results.json --b runs/engine/results.json \\
        --a-name torch --b-name engine --out docs/lean_results/engine_vs_torch_400.json
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

__all__ = ["Config", "compare", "main"]


@dataclass(frozen=True)
class Config:
    """Paired comparison settings."""

    a: str = ""
    """``results.json`` of evaluation A (``rsim eval --out DIR`` writes ``DIR/results.json``)."""
    b: str = ""
    """``results.json`` of evaluation B, on the same problems."""
    a_name: str = "a"
    """Label of A in the table."""
    b_name: str = "b"
    """Label of B in the table."""
    out: str = ""
    """JSON path ("" = print only); the per-problem outcomes go to ``<stem>_outcomes.jsonl.gz`` beside it."""


def _rows(path: str) -> dict[tuple[str, str], dict[str, Any]]:
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"{path}: no such file; give the results.json of an `rsim eval --out DIR` run.")
    per = json.loads(p.read_text()).get("per_problem")
    if not isinstance(per, list):
        raise ValueError(f"{path}: no per_problem list; is it the results.json of `rsim eval`?")
    return {(r["mode"], r["problem_id"]): r for r in per if int(r.get("sample", 0)) == 0}


def _final(row: dict[str, Any]) -> str:
    steps = row.get("shown_steps") or row.get("steps") or [""]
    return steps[-1] if steps else ""


def compare(a: dict[tuple[str, str], dict[str, Any]], b: dict[tuple[str, str], dict[str, Any]]) -> dict[str, Any]:
    """Per shared mode: ``n``, right in A and B, only-A / only-B, exact McNemar p, same final text (share).

    Raises ``ValueError`` when the two share no (mode, problem) pair.
    """
    from .seedstats import mcnemar_exact

    shared = sorted(set(a) & set(b))
    if not shared:
        raise ValueError("the two evaluations share no (mode, problem); run both on the same --data, --limit and --modes.")
    out: dict[str, Any] = {}
    for mode in sorted({m for m, _ in shared}):
        keys = [k for k in shared if k[0] == mode]
        ca = [bool(a[k]["correct"]) for k in keys]
        cb = [bool(b[k]["correct"]) for k in keys]
        mc = mcnemar_exact(ca, cb)
        out[mode] = {"n": len(keys), "right_a": sum(ca), "right_b": sum(cb), "only_a": mc["only_a"],
                     "only_b": mc["only_b"], "mcnemar_p": mc["p_value"],
                     "same_final_text": sum(_final(a[k]) == _final(b[k]) for k in keys) / len(keys)}
    return out


def table(res: dict[str, Any], a_name: str, b_name: str) -> str:
    """Markdown table of :func:`compare`'s result."""
    lines = [f"| mode | n | {a_name} right | {b_name} right | only {a_name} / only {b_name} | exact McNemar p | same final text |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for mode, r in res.items():
        lines.append(f"| `{mode}` | {r['n']} | {r['right_a']} | {r['right_b']} | {r['only_a']} / {r['only_b']} | "
                     f"{r['mcnemar_p']:.3g} | {100 * r['same_final_text']:.0f} % |")
    return "\n".join(lines)


def main(cfg: Config) -> dict[str, Any]:
    """Compare, print the table, write JSON and the per-problem outcomes."""
    from .seedstats import write_outcomes

    if not cfg.a or not cfg.b:
        raise ValueError("give both evaluations: --a A/results.json --b B/results.json.")
    a, b = _rows(cfg.a), _rows(cfg.b)
    res = compare(a, b)
    md = table(res, cfg.a_name, cfg.b_name)
    print(md)
    result = {"config": asdict(cfg), "modes": res, "table_md": md}
    if cfg.out:
        out = Path(cfg.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        rows = [{"mode": f"{name}:{mode}", "seed": 0, "problem_id": pid, "sample": 0, "correct": bool(src[(mode, pid)]["correct"]),
                 "extracted": src[(mode, pid)].get("extracted"), "final": _final(src[(mode, pid)])}
                for name, src in ((cfg.a_name, a), (cfg.b_name, b)) for mode, pid in sorted(set(a) & set(b))]
        result["outcomes_file"] = str(write_outcomes(out.with_name(out.stem + "_outcomes.jsonl.gz"), rows))
        out.write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m benchmarks.plans.paired_eval", __doc__)
