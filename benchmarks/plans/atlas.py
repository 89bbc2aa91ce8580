"""The atlas: the plan table over many tasks, and where the strategy matters.

For every task of the catalogue (:mod:`benchmarks.plans.atlas_tasks`: short-answer reasoning-gym generators, the
curriculum tasks, the code tasks, local hub-format files), with one frozen greedy reasoner through the replay
store (:func:`benchmarks.plans.table.play_table`):

1. **Pilot** (cheap): ``pilot_problems`` problems under ``pilot_plans`` (``[8]``: answer at once, ``[3, 8]``),
   walking each task's difficulty ladder from the easiest rung to the first where the better plan solves a
   share in ``[band_low, band_high]`` (:func:`benchmarks.plans.atlas_stats.pilot_step`); tasks at 0 are dropped.
2. **Main pass**: per kept task ``problems`` problems (split into validation/test per task), every plan of
   L = 2 (9 plans), and every plan of L = 3 (73) for tasks whose validation runner-up is *close*: within
   ``close`` of the best, when the best solves at least ``extend_min`` of validation (at the floor every plan
   is close). The L = 3 plans' first steps are read back from the L = 2 pass (same observation).
3. **Across tasks** (:mod:`benchmarks.plans.atlas_stats`): per task each plan's accuracy with Wilson intervals, the
   validation-best plan and its test accuracy, the runner-up gap; pairs of tasks with different best plans,
   tested both ways on test problems; the greedy ``mix_size``-task mix of largest validation headroom, and its
   per-task policy minus best single plan on test with a 95 % paired bootstrap interval; and the same for the
   mix of *every* main-pass task (``mix_all``: no choice of tasks on validation, every test problem).

Files: ``OUT`` (JSON), ``OUT.outcomes.jsonl.gz`` (one row per task, problem and plan, appended as they finish:
a rerun skips them, and every step is in the replay store), ``OUT.png`` (task x plan accuracy).
``--table-from OUT.outcomes.jsonl.gz`` rebuilds JSON and PNG from the outcomes alone, decoding nothing. ::

    OMP_NUM_THREADS=1 python -m benchmarks.plans.atlas --reasoner llamacpp:default --pilot-only \\
        --tasks chain_sum,spell_backward --out docs/atlas_results/pilot.json
"""

from __future__ import annotations

import gzip
import json
import os
import sys
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from . import atlas_stats, atlas_tasks
from . import stats as plan_stats
from . import table as plan_table
from .atlas_stats import key

__all__ = ["Config", "Outcomes", "report", "main"]


def parse_plans(text: str) -> tuple[tuple[int, ...], ...]:
    """``"8;3,8"`` -> ``((8,), (3, 8))``."""
    try:
        return tuple(tuple(int(s) for s in p.split(",")) for p in text.split(";") if p.strip())
    except ValueError:
        raise ValueError(f"plans {text!r}: write plans as comma lists separated by ';', e.g. '8;3,8'.") from None


@dataclass(frozen=True)
class Config:
    """Atlas settings."""

    reasoner: str = "default"
    """Reasoner spec (``default``: torch; ``llamacpp:default``: the llama.cpp engine); greedy, replayed."""
    tasks: tuple[str, ...] = ()
    """Task names to run (empty = the whole catalogue; ``chain_sum``, ``curriculum:add2_1d``, ``code_tasks``)."""
    local_dir: str = "tests/fixtures/datasets"
    """Folder of hub-format files (``gsm8k.jsonl``, ...) that become tasks ``local:HUB``."""
    max_gold_chars: int = 24
    """Catalogue rule: longest gold answer of a generator at its easiest rung."""
    max_question_chars: int = 600
    """Catalogue rule: longest question of a generator at its easiest rung."""
    pilot_problems: int = 10
    """Problems per rung in the pilot."""
    pilot_plans: tuple[tuple[int, ...], ...] = field(default=((8,), (3, 8)), metadata={"parse": parse_plans})
    """Plans of the pilot (``8;3,8``)."""
    band_low: float = 0.2
    """Pilot: lowest wanted accuracy of the better pilot plan."""
    band_high: float = 0.8
    """Pilot: highest wanted accuracy of the better pilot plan."""
    pilot_only: bool = False
    """Stop after the pilot."""
    problems: int = 40
    """N: problems per task in the main pass (a task with fewer is dropped)."""
    val_fraction: float = 0.5
    """Share of each task's problems in its validation split."""
    split_seed: int = 0
    """Seed of the validation/test split."""
    data_seed: int = 0
    """Generator seed of procedural tasks."""
    close: float = 0.1
    """A runner-up within this much validation accuracy of the best is close: the task also gets L = 3."""
    extend: bool = True
    """Play L = 3 on tasks with a close runner-up."""
    extend_min: float = 0.2
    """...and whose best validation accuracy is at least this (near the floor every plan is close to the best)."""
    alpha: float = 0.05
    """Family-wise level of the heterogeneity tests (Bonferroni over pairs)."""
    mix_size: int = 4
    """K: tasks in the heterogeneous mix."""
    batch: int = 4
    """Problems per rollout (each with one copy per plan)."""
    max_step_tokens: int = 48
    """Longest reasoner step in tokens."""
    max_answer_tokens: int = 144
    """Longest final answer in tokens."""
    protocol: str = ""
    """Turn protocol ("" = the env's default)."""
    store: str = ""
    """Replay store ("" = $RSIM_REPLAY_DIR/steps.sqlite)."""
    bootstrap: int = 10000
    """Bootstrap resamples of the mix's headroom interval."""
    seed: int = 0
    """Seed of the bootstrap and of a random-init reasoner."""
    out: str = "runs/atlas/atlas.json"
    """JSON path; the outcomes file and the PNG go beside it."""
    table_from: str = ""
    """Rebuild JSON and PNG from this outcomes file (no decoding)."""

    def __post_init__(self) -> None:
        for name in ("pilot_problems", "problems", "batch", "max_step_tokens", "max_answer_tokens", "bootstrap",
                     "mix_size", "max_gold_chars", "max_question_chars"):
            if getattr(self, name) < 1:
                raise ValueError(f"Config.{name}={getattr(self, name)} must be >= 1.")
        if self.pilot_problems > self.problems:
            raise ValueError(f"Config.pilot_problems={self.pilot_problems} > problems={self.problems}: the pilot plays "
                             "the first problems of the main pass; lower pilot_problems or raise problems.")
        if not 0 <= self.band_low < self.band_high <= 1:
            raise ValueError(f"Config.band_low={self.band_low}, band_high={self.band_high}: use 0 <= low < high <= 1, "
                             "e.g. 0.2 and 0.8.")
        if not 0 < self.val_fraction < 1:
            raise ValueError(f"Config.val_fraction={self.val_fraction}: use a share in (0, 1), e.g. 0.5.")
        if not 0 < self.alpha < 1 or not 0 <= self.close <= 1:
            raise ValueError(f"Config.alpha={self.alpha} / close={self.close}: alpha in (0, 1), close in [0, 1].")
        bad = [p for p in self.pilot_plans if not p or p[-1] != 8 or 8 in p[:-1] or len(p) > 2
               or any(not 0 <= s <= 8 for s in p)]
        if not self.pilot_plans or bad:
            raise ValueError(f"Config.pilot_plans={self.pilot_plans}: plans of 1-2 strategies (0-8) ending in 8, "
                             "e.g. '8;3,8'.")
        if not self.out:
            raise ValueError("Config.out is empty: give a JSON path; the outcomes file that makes a run resumable "
                             "lives beside it.")


def _config(recorded: dict[str, Any], **over: Any) -> Config:
    """A Config from its JSON form (lists back to tuples)."""
    d = {f.name: recorded[f.name] for f in fields(Config) if f.name in recorded}
    d["tasks"] = tuple(d.get("tasks", ()))
    d["pilot_plans"] = tuple(tuple(p) for p in d.get("pilot_plans", ((8,), (3, 8))))
    return Config(**{**d, **over})


def outcomes_path(out: str) -> Path:
    return Path(out).with_suffix(".outcomes.jsonl.gz")


class Outcomes:
    """The append-only outcomes file: rows ``{"row": "outcome" | "task" | "catalogue" | "run", ...}``."""

    def __init__(self, path: Path) -> None:
        self.path, self.rows = path, []
        if path.exists():
            self.rows, cut = _read(path)
            if cut:  # rows appended after a cut member would be unreadable: rewrite the good rows first
                tmp = path.with_suffix(".tmp")
                with gzip.open(tmp, "wt", encoding="utf-8") as f:
                    f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in self.rows)
                os.replace(tmp, path)
        self.done = {_okey(r) for r in self.rows if r["row"] == "outcome"}

    def append(self, rows: list[dict[str, Any]]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(self.path, "at", encoding="utf-8") as f:  # one gzip member per append: a crash loses one
            f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        self.rows += rows
        self.done |= {_okey(r) for r in rows if r["row"] == "outcome"}


def _okey(r: dict[str, Any]) -> tuple[str, str, str, str]:
    return r["task"], r["setting"], r["problem_id"], key(r["plan"])


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """Every complete row of an outcomes file (a tail cut by a crash is skipped with a warning)."""
    return _read(path)[0]


def _read(path: str | Path) -> tuple[list[dict[str, Any]], bool]:
    rows = []
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                rows.append(json.loads(line))
    except (EOFError, gzip.BadGzipFile, json.JSONDecodeError) as e:
        print(f"[atlas] {path}: cut tail skipped ({type(e).__name__}); {len(rows)} rows read", file=sys.stderr)
        return rows, True
    return rows, False


class Runner:
    """Plays plans on problems through the replay store and appends the outcomes (skipping finished ones)."""

    def __init__(self, cfg: Config, outcomes: Outcomes, problems: list[Any]) -> None:
        from tqdm import tqdm

        self.cfg, self.outcomes, self.problems, self._reasoner = cfg, outcomes, problems, None
        self.bar = tqdm(total=0, desc="atlas episodes", unit="ep", file=sys.stderr, mininterval=5)

    def table_cfg(self, rounds: int) -> plan_table.Config:
        c = self.cfg
        return plan_table.Config(reasoner=c.reasoner, max_rounds=rounds, batch=c.batch, max_step_tokens=c.max_step_tokens,
                                 max_answer_tokens=c.max_answer_tokens, protocol=c.protocol, store=c.store, seed=c.seed)

    @property
    def reasoner(self) -> Any:
        if self._reasoner is None:
            self._reasoner = plan_table.replay_reasoner(self.table_cfg(2), self.problems)
        return self._reasoner

    def play(self, task: str, setting: str, problems: list[Any], split: dict[str, str],
             plans: list[tuple[int, ...]]) -> None:
        index = {p.id: i for i, p in enumerate(problems)}
        todo = [p for p in problems if any((task, setting, p.id, key(q)) not in self.outcomes.done for q in plans)]
        self.bar.total += len(todo) * len(plans)
        self.bar.refresh()
        tcfg = self.table_cfg(max(map(len, plans)))
        for b in range(0, len(todo), self.cfg.batch):
            chunk = todo[b:b + self.cfg.batch]
            rows = [{"row": "outcome", "task": task, "setting": setting, "problem_id": r["problem_id"],
                     "index": index[r["problem_id"]], "split": split[r["problem_id"]], "plan": r["plan"],
                     "correct": r["correct"], "extracted": r["extracted"], "reason": r["reason"], "answer": r["answer"],
                     "question": r["question"], "steps": r["steps"], "shown_steps": r["shown_steps"]}
                    for r in plan_table.play_table(tcfg, chunk, plans, self.reasoner)]
            self.outcomes.append([r for r in rows if _okey(r) not in self.outcomes.done])
            self.bar.update(len(chunk) * len(plans))


def _pilot_best(rows: list[dict[str, Any]], cfg: Config) -> float | None:
    """Best pilot accuracy of one setting's rows (None when its pilot is incomplete)."""
    want = {key(p) for p in cfg.pilot_plans}
    acc: dict[str, list[bool]] = {}
    for r in rows:
        if r["index"] < cfg.pilot_problems and key(r["plan"]) in want:
            acc.setdefault(key(r["plan"]), []).append(r["correct"])
    if set(acc) != want or len({len(v) for v in acc.values()}) != 1:
        return None
    return max(sum(v) / len(v) for v in acc.values())


def walk(meta: dict[str, Any], by_setting: dict[tuple[str, str], list], cfg: Config, play: Any = None) -> dict[str, Any]:
    """One task's pilot: the rungs walked and the decision (``play(rung)`` fills a rung's rows when given)."""
    name, ladder = meta["task"], meta["ladder"]
    entry: dict[str, Any] = {"task": name, "family": meta["family"], "rungs": [], "setting": None}
    if meta["error"] or meta["n_available"][0] < cfg.problems:
        why = meta["error"] or f"{meta['n_available'][0]} problems; the main pass needs {cfg.problems}"
        return {**entry, "decision": "drop", "reason": why}
    bests: list[float] = []
    while True:
        act, arg = atlas_stats.pilot_step(bests, len(ladder), cfg.band_low, cfg.band_high)
        if act != "play":
            break
        if play is not None:
            play(arg)
        rows = by_setting.get((name, ladder[arg]), [])
        best = _pilot_best(rows, cfg)
        if best is None:
            return {**entry, "decision": "incomplete", "reason": f"rung {arg} not played"}
        bests.append(best)
        entry["rungs"].append({"setting": ladder[arg], "best": best, "accuracy": _pilot_acc(rows, cfg),
                               "majority_gold": atlas_stats.majority([r for r in rows if r["index"] < cfg.pilot_problems])})
    if act == "drop":
        return {**entry, "decision": "drop", "reason": arg}
    k, why = arg
    return {**entry, "decision": "keep", "reason": why, "setting": ladder[k], "rung": k}


def _pilot_acc(rows: list[dict[str, Any]], cfg: Config) -> dict[str, float]:
    out: dict[str, list[bool]] = {}
    for r in rows:
        if r["index"] < cfg.pilot_problems and tuple(r["plan"]) in cfg.pilot_plans:
            out.setdefault(key(r["plan"]), []).append(r["correct"])
    return {p: sum(v) / len(v) for p, v in out.items()}


def _engine(spec: str) -> str:
    head = spec.removeprefix("replay:").partition(":")[0]
    return {"llamacpp": "llama.cpp", "openai": "http", "toy": "toy", "tiny": "torch"}.get(head, "torch" if ":" not in
                                                                                          spec else "plugin")


def report(rows: list[dict[str, Any]], cfg: Config) -> dict[str, Any]:
    """The atlas JSON (module docstring) from the outcomes rows alone."""
    metas = {r["task"]: r for r in rows if r["row"] == "task"}
    catalogue = [r for r in rows if r["row"] == "catalogue"]
    runs = [r for r in rows if r["row"] == "run"]
    by_setting: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        if r["row"] == "outcome":
            by_setting.setdefault((r["task"], r["setting"]), []).append(r)
    pilot = [walk(m, by_setting, cfg) for m in metas.values()]
    l2 = plan_table.all_plans(2)
    stats, rows_of = [], {}
    for e in pilot:
        if e["decision"] != "keep":
            continue
        task_rows = [r for r in by_setting[(e["task"], e["setting"])] if r["index"] < cfg.problems]
        played = {key(r["plan"]) for r in task_rows}
        if not {key(p) for p in l2} <= played or len({r["problem_id"] for r in task_rows}) < cfg.problems:
            continue  # main pass not (yet) played
        rows_of[e["task"]] = task_rows
        stats.append(atlas_stats.task_stats(e["task"], e["setting"], task_rows, cfg.close))
    decoder = {"spec": cfg.reasoner, "engine": _engine(cfg.reasoner),
               # the newest run that built the reasoner: a rerun that only reads the outcomes back builds none
               "fingerprint": next((r["fingerprint"] for r in reversed(runs) if r.get("fingerprint")), None)}
    return {
        "tasks": stats,
        "heterogeneity": atlas_stats.heterogeneity(stats, rows_of, cfg.alpha),
        "mix": atlas_stats.mix(rows_of, l2, cfg.mix_size, cfg.bootstrap, cfg.seed),
        # every task of the main pass as one mix: no selection on validation to regress, many more test problems
        "mix_all": atlas_stats.mix(rows_of, l2, len(rows_of), cfg.bootstrap, cfg.seed),
        "left_out": catalogue[-1]["left_out"] if catalogue else [],
        "pilot": {"plans": [list(p) for p in cfg.pilot_plans], "problems": cfg.pilot_problems,
                  "band": [cfg.band_low, cfg.band_high], "tasks": pilot,
                  "dropped": [{"task": e["task"], "reason": e["reason"]} for e in pilot if e["decision"] == "drop"]},
        "config": asdict(cfg), "decoder": decoder,
        "runs": [{k: r[k] for k in ("wall_seconds", "replay")} for r in runs],
        "outcomes": {"rows": sum(len(v) for v in by_setting.values())},
    }


def _heatmap(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if result["tasks"]:
        lines = [(t["task"], t["accuracy"]) for t in result["tasks"]]
        title = "accuracy, all problems of the main pass"
    else:
        lines = [(f"{e['task']} @{i}", r["accuracy"]) for e in result["pilot"]["tasks"] for i, r in enumerate(e["rungs"])]
        title = "pilot accuracy (task @ ladder rung)"
    plans = [key(p) for p in plan_table.all_plans(2) if any(key(p) in a for _, a in lines)]
    M = [[a.get(p, float("nan")) for p in plans] for _, a in lines]
    fig, ax = plt.subplots(figsize=(3 + 0.7 * len(plans), 1.5 + 0.32 * len(lines)))
    im = ax.imshow(M if M else [[0.0]], vmin=0, vmax=1, cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(plans)), [f"[{p}]" for p in plans], rotation=45, ha="right")
    ax.set_yticks(range(len(lines)), [n for n, _ in lines], fontsize=7)
    for i, row in enumerate(M):
        for j, v in enumerate(row):
            if v == v:
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", color="w" if v < 0.5 else "k", fontsize=6)
    ax.set_xlabel("plan")
    ax.set_title(title, fontsize=9)
    fig.colorbar(im, ax=ax)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _markdown(result: dict[str, Any]) -> str:
    lines = ["| task | setting | pilot best | decision |", "| --- | --- | --- | --- |"]
    for e in result["pilot"]["tasks"]:
        best = ", ".join(f"{r['best']:.1f}" for r in e["rungs"])
        lines.append(f"| {e['task']} | {e['setting'] or ''} | {best} | {e['decision']}: {e['reason']} |")
    if result["tasks"]:
        lines += ["", "| task | n | best plan (val) | val | test | runner-up | gap (val) |", "| --- " * 7 + "|"]
        lines += [f"| {t['task']} | {t['n']} | {t['best_plan']} | {t['best_val']:.2f} | {t['best_test']:.2f} | "
                  f"{t['runner_up']} | {t['gap_val']:.2f} |" for t in result["tasks"]]
        for name in ("mix", "mix_all"):
            h = (result.get(name) or {}).get("headroom")
            if h:
                lines.append(f"\n{name} {result[name]['tasks']}: best single plan {result[name]['best_fixed']['plan']}, "
                             f"headroom {h['point']:.4f}, 95 % CI {h['ci95']}")
        lines += ["", docs_table(result), "", docs_mix_table(result)]
    return "\n".join(lines)


def docs_table(result: dict[str, Any]) -> str:
    """The main-pass table docs/atlas.md copies: each L = 2 plan's accuracy in %, best plan's val -> test."""
    plans = [key(p) for p in plan_table.all_plans(2)]

    def pct(x: float) -> str:
        return f"{100 * x:.1f}".removesuffix(".0")

    lines = ["| task | " + " | ".join(f"`[{p}]`" for p in plans) + " | best (val) → test |", "| --- " * (len(plans) + 2) + "|"]
    for t in result["tasks"]:
        best = ", ".join(map(str, t["best_plan"]))
        lines.append(f"| {t['task']} | " + " | ".join(pct(t["accuracy"][p]) for p in plans)
                     + f" | `[{best}]` {pct(t['best_val'])} → {pct(t['best_test'])} |")
    return "\n".join(lines)


def docs_mix_table(result: dict[str, Any]) -> str:
    """The across-task table docs/atlas.md copies: heterogeneity and each mix's headroom on test."""
    het = result["heterogeneity"]
    lines = ["| mix | tasks | test problems | best single plan (val) | its test % | per-task policy test % | "
             "headroom, points (95 % CI) | oracle test % |", "| --- " * 8 + "|"]
    for name in ("mix", "mix_all"):
        m = result.get(name) or {}
        if not m.get("headroom"):
            continue
        h, fixed = m["headroom"], m["best_fixed"]
        lo, hi = (100 * x for x in h["ci95"])
        names = ", ".join(m["tasks"]) if name == "mix" else f"all {len(m['tasks'])}"
        lines.append(f"| `{name}` | {names} | "
                     f"{m['n_test']} | `{fixed['plan']}` | {100 * fixed['test_accuracy']:.1f} | "
                     f"{100 * m['per_task']['test_accuracy']:.1f} | {100 * h['point']:+.1f} ({lo:+.1f}, {hi:+.1f}) | "
                     f"{100 * m['oracle']['test_accuracy']:.1f} |")
    lines.append("")
    lines.append(f"Heterogeneity: {len(het['distinct_best_plans'])} distinct validation-best plans; "
                 f"{het['surviving']} of {het['pairs_tested']} task pairs survive (level {het['level']:.2g}: a pair "
                 f"needs each task's own plan to win >= {het['min_wins_to_survive']} of its test problems with no loss).")
    return "\n".join(lines)


def _write(result: dict[str, Any], out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    _heatmap(result, out.with_suffix(".png"))


def _load_tasks(cfg: Config, outcomes: Outcomes) -> tuple[list[Any], dict, dict]:
    tasks, left_out = atlas_tasks.catalogue(cfg.tasks, cfg.max_gold_chars, cfg.max_question_chars, cfg.local_dir)
    outcomes.append([{"row": "catalogue", "left_out": left_out, "config": asdict(cfg)}])
    problems, splits, metas = {}, {}, []
    for t in tasks:
        sizes, error = [], ""
        for k, label in enumerate(t.ladder):
            try:
                ps = t.load(k, cfg.problems, cfg.data_seed)
            except (ValueError, ImportError, FileNotFoundError, RuntimeError) as e:  # recorded as the drop reason
                error = f"loading {label} failed: {type(e).__name__}: {str(e)[:160]}"
                break
            problems[(t.name, k)], sizes = ps, sizes + [len(ps)]
            val, _ = plan_stats.split([p.id for p in ps], cfg.val_fraction, cfg.split_seed)
            splits[(t.name, k)] = {p.id: "val" if p.id in set(val) else "test" for p in ps}
        metas.append({"row": "task", "task": t.name, "family": t.family, "ladder": list(t.ladder),
                      "n_available": sizes or [0], "error": error})
    outcomes.append(metas)
    return metas, problems, splits


def _play_task(m: dict[str, Any], cfg: Config, runner: Runner, problems: dict, splits: dict,
               by_setting: dict, refresh: Any) -> None:
    """One task: its pilot, then (when kept) the main pass and the L = 3 extension."""
    def play(k: int) -> None:
        ps = problems[(m["task"], k)][:cfg.pilot_problems]
        runner.play(m["task"], m["ladder"][k], ps, splits[(m["task"], k)], list(cfg.pilot_plans))
        refresh()
    refresh()
    e = walk(m, by_setting, cfg, play)
    if e["decision"] != "keep" or cfg.pilot_only:
        return
    ps, split = problems[(m["task"], e["rung"])][:cfg.problems], splits[(m["task"], e["rung"])]
    runner.play(m["task"], e["setting"], ps, split, plan_table.all_plans(2))
    refresh()
    rows = [r for r in by_setting[(m["task"], e["setting"])] if r["index"] < cfg.problems]
    st = atlas_stats.task_stats(m["task"], e["setting"], rows, cfg.close)
    if cfg.extend and st["close"] and st["best_val"] >= cfg.extend_min:
        runner.play(m["task"], e["setting"], ps, split, plan_table.all_plans(3))


def main(cfg: Config) -> dict[str, Any]:
    """Run (or resume) the atlas, or rebuild it from ``cfg.table_from``; print a summary; write JSON and PNG."""
    t0 = time.perf_counter()
    if cfg.table_from:
        rows = read_rows(cfg.table_from)
        recorded = next((r["config"] for r in reversed(rows) if r["row"] == "catalogue"), None)
        if recorded is None:
            raise ValueError(f"--table-from {cfg.table_from}: no catalogue row; pass an atlas outcomes file.")
        result = report(rows, _config(recorded, out=cfg.out, table_from=cfg.table_from))
        result["wall_seconds"] = round(sum(r["wall_seconds"] for r in result["runs"]), 1)  # what decoding took
        result["rebuild_seconds"] = round(time.perf_counter() - t0, 1)
        result["outcomes"]["file"] = Path(cfg.table_from).name
        _write(result, Path(cfg.out))
        print(_markdown(result))
        return result
    outcomes = Outcomes(outcomes_path(cfg.out))
    metas, problems, splits = _load_tasks(cfg, outcomes)
    runner = Runner(cfg, outcomes, [p for ps in problems.values() for p in ps])
    by_setting: dict[tuple[str, str], list] = {}

    def refresh() -> None:
        by_setting.clear()
        for r in outcomes.rows:
            if r["row"] == "outcome":
                by_setting.setdefault((r["task"], r["setting"]), []).append(r)

    for m in metas:
        try:
            _play_task(m, cfg, runner, problems, splits, by_setting, refresh)
        except RuntimeError as exc:  # this task's own failure (e.g. a problem its grader cannot re-create)
            why = f"failed during play: {type(exc).__name__}: {exc}"[:400]
            outcomes.append([{**m, "error": why}])  # report() drops it with this reason; a rerun tries it again
            runner.bar.write(f"atlas: {m['task']} dropped, {why}", file=sys.stderr)
    runner.bar.close()
    rep = runner._reasoner
    wall = round(time.perf_counter() - t0, 1)
    from agents.replay.reasoner import STATS

    counts = dict(rep.stats) if rep else dict.fromkeys(STATS, 0)  # nothing played: no reasoner was built
    outcomes.append([{"row": "run", "wall_seconds": wall, "replay": counts,
                      "fingerprint": rep.fingerprint if rep else None}])
    result = report(outcomes.rows, cfg)
    result["replay"] = {**counts, "store": str(rep.store.path) if rep else None,
                        "catch_up": rep.catch_up if rep else None}
    result["decoder"]["fingerprint"] = result["decoder"]["fingerprint"] or (rep.fingerprint if rep else None)
    result["wall_seconds"] = round(sum(r["wall_seconds"] for r in result["runs"]), 1)  # every (resumed) run
    result["run_seconds"] = wall
    result["outcomes"]["file"] = outcomes.path.name
    _write(result, Path(cfg.out))
    print(_markdown(result))
    return result


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m benchmarks.plans.atlas", __doc__)
