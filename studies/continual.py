"""Continual training of the planner (the shape of the paper's Table 2): math, then code.

1. ``rsim train --learner planner_only`` trains a planner on math problems with a frozen reasoner
   (run A), unless ``math_run`` names an existing run;
2. ``rsim train --learner planner_only --init-planner A`` trains that planner further on code
   problems with the same frozen reasoner (run B);
3. both planners are evaluated greedily as plug-ins (``rsim eval --modes trained``) on held-out
   math and code problems with the same reasoner, next to the reasoner alone (``none``).

The table gives each accuracy with its 95% Wilson CI and the change B - A, so forgetting on math
and gain on code are visible; JSON, markdown and a PNG plot go to ``out``. Held-out problems come
from ``math_eval`` / ``code_eval`` (default: the curriculum's held-out split; the code source at
``eval_seed``, while training uses seed 0).

    flock /tmp/rsim-heavy.lock python -m studies.continual --out results/continual
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from algos.cli import main as rsim_main
from algos.config import DataConfig, ModelConfig
from algos.evaluation import EvalConfig
from algos.evaluation.run import run as evaluate


@dataclass(frozen=True)
class Config:
    """Benchmark settings."""

    preset: str = "demo"
    """``rsim train`` preset both runs start from ("" = none); the fields below override it."""
    planner: str = "default"
    """Planner to start run A from (agent spec)."""
    reasoner: str = "default"
    """The one frozen reasoner used for training and evaluation (agent spec)."""
    math_data: str = "curriculum"
    """Math training source (data spec; the embedded curriculum's train split)."""
    code_data: str = "code_tasks"
    """Code training source (data spec)."""
    math_eval: str = "curriculum:heldout"
    """Math evaluation source ("" = math_data at eval_seed); the curriculum's held-out split shares no
    question text with its train split."""
    code_eval: str = ""
    """Code evaluation source ("" = code_data at eval_seed)."""
    math_run: str = ""
    """Existing run dir to use as run A ("" = train it here)."""
    steps_math: int = 10
    """Optimizer steps of run A."""
    steps_code: int = 10
    """Optimizer steps of run B."""
    train_size: int = 200
    """Training problems per source."""
    eval_limit: int = 50
    """Held-out problems per source."""
    eval_seed: int = 1000
    """Generator seed of the held-out problems (training uses seed 0)."""
    max_steps: int = 3
    """Planner rounds per episode (training and evaluation)."""
    max_step_tokens: int = 96
    """Reasoner token cap per step (a program needs room)."""
    extra: str = ""
    """Extra ``--set KEY=VALUE`` overrides for both training runs, separated by spaces."""
    out: str = "results/continual"
    """Output directory (runs, eval results, continual.json, continual.md, continual.png)."""


def _train(cfg: Config, out: Path, data: str, steps: int, init: str | None) -> str:
    argv = ["train", "--learner", "planner_only", "--reasoner", cfg.reasoner, "--data", data, "--steps", str(steps),
            "--out", str(out), "--set", f"data.size={cfg.train_size}", "--set", f"env.max_steps={cfg.max_steps}",
            "--set", f"reasoner.max_step_tokens={cfg.max_step_tokens}", "--set", f"train.save_every={steps}"]
    argv += ["--init-planner", init] if init else ["--planner", cfg.planner]
    argv += ["--preset", cfg.preset] if cfg.preset else []
    for item in cfg.extra.split():
        argv += ["--set", item]
    rsim_main(argv)
    return str(out)


def _eval(cfg: Config, planner: str, source: str, modes: tuple[str, ...], out: Path) -> dict:
    named = {"env.max_steps": cfg.max_steps, "reasoner.max_step_tokens": cfg.max_step_tokens}
    res = evaluate(EvalConfig(model=ModelConfig(reasoner=cfg.reasoner, planner=planner),
                              data=DataConfig(source=source, seed=cfg.eval_seed, size=cfg.eval_limit), modes=modes,
                              set=tuple((k, str(v)) for k, v in named.items() if v), out=str(out), plots=False,
                              progress=False))
    return {m: {k: res["modes"][m][k] for k in ("accuracy", "ci95", "problems", "format_rate", "mean_rounds")}
            for m in modes} | {"examples": examples(res["per_problem"])}


EXAMPLE_KEYS = ("mode", "problem_id", "question", "answer", "extracted", "correct", "strategies", "injected", "shown_steps")


def examples(per_problem: list[dict], mode: str = "trained", per_outcome: int = 2) -> list[dict]:
    """Episodes of the planner being reported (``mode``), correct ones first, then wrong ones.

    Each carries its question, its plan (``strategies``), the injected texts and its steps as shown, so a reader can judge the reasoning.
    (The first version took the first three rows of the file, which were the reasoner-alone mode.)
    """
    rows = [r for r in per_problem if r.get("mode") == mode]
    picked = [r for r in rows if r.get("correct")][:per_outcome] + [r for r in rows if not r.get("correct")][:per_outcome]
    return [{k: r.get(k) for k in EXAMPLE_KEYS} for r in picked]


def _pct(fig: dict) -> str:
    lo, hi = fig["ci95"]
    return f"{100 * fig['accuracy']:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"


def _table(rows: list[dict]) -> str:
    lines = ["| eval set | reasoner alone | planner A (math) | planner B (math → code) | change B − A |",
             "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['set']} | {_pct(r['none'])} | {_pct(r['A'])} | {_pct(r['B'])} | "
                     f"{100 * (r['B']['accuracy'] - r['A']['accuracy']):+.1f} |")
    return "\n".join(lines)


def _plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    width = 0.25
    for j, key in enumerate(("none", "A", "B")):
        xs = [i + (j - 1) * width for i in range(len(rows))]
        acc = [100 * r[key]["accuracy"] for r in rows]
        err = [[100 * (r[key]["accuracy"] - r[key]["ci95"][0]) for r in rows],
               [100 * (r[key]["ci95"][1] - r[key]["accuracy"]) for r in rows]]
        ax.bar(xs, acc, width, yerr=err, capsize=3, label={"none": "reasoner alone", "A": "planner A (math)",
                                                           "B": "planner B (math → code)"}[key])
    ax.set_xticks(range(len(rows)), [r["set"] for r in rows])
    ax.set_ylabel("accuracy % (95% CI)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(cfg: Config) -> dict:
    """Train A (unless given) and B, evaluate both on math and code, print/write the table."""
    from algos.preflight import check_sandbox
    from rsim_env.sources.data import load_problems

    check_sandbox(load_problems(cfg.code_data, limit=1))  # run B grades code: bubblewrap or the opt-in, before run A
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    run_a = cfg.math_run or _train(cfg, out / "run_math", cfg.math_data, cfg.steps_math, None)
    run_b = _train(cfg, out / "run_code", cfg.code_data, cfg.steps_code, run_a)
    rows = []
    for name, source in (("math", cfg.math_eval or cfg.math_data), ("code", cfg.code_eval or cfg.code_data)):
        a = _eval(cfg, run_a, source, ("none", "trained"), out / f"eval_{name}_A")
        b = _eval(cfg, run_b, source, ("trained",), out / f"eval_{name}_B")
        rows.append({"set": name, "source": source, "none": a["none"], "A": a["trained"], "B": b["trained"],
                     "examples": {"A": a["examples"], "B": b["examples"]}})
    table = _table(rows)
    print(table)
    result = {"config": asdict(cfg), "run_math": run_a, "run_code": run_b, "rows": rows, "table_md": table}
    (out / "continual.json").write_text(json.dumps(result, indent=2))
    (out / "continual.md").write_text(table + "\n")
    _plot(rows, out / "continual.png")
    return result


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m studies.continual", __doc__)
