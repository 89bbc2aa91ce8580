"""Answer-checker benchmark: our checker vs Math-Verify on labelled tables, hostile inputs, bombs.

Run: ``python -m benchmarks.grading.answer_check --out /tmp/ac.json``. Prints, for both checkers,
per-category accuracy and false positives on three labelled tables (data files in
``benchmarks/grading/answer_cases/``, read by :func:`load_cases`; their provenance is in its README) -- the project's own
(``own.jsonl``, written by the hands that tuned the checker, so self-graded),
the held-out one (``heldout.jsonl``, written without reading the checker)
and the unseen-form families (``families.jsonl``: durations and unit
conversions, Unicode math, scientific-notation spellings, stated-precision floats; committed before
the checker was changed for them; a second batch, ``families2.jsonl``, written after the
fixes but committed before being run) -- then latency (median/p99/max), the hostile-input results (every one must be
``correct=False`` within the time bound), the "bombs + innocent" latency row (ordinary checks
made while a dozen expression bombs run from other threads), and the reasoning-gym gold round
trip. Math-Verify runs in the main thread (its signal-based timeout only works there); it is
skipped if not installed.
"""

from __future__ import annotations

import json
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from rsim_env.answers import CheckConfig, check
from rsim_env.answers.parser import MAX_DEPTH

CASES_DIR = Path(__file__).resolve().parent / "answer_cases"
"""The labelled tables, one JSONL file each (``own``, ``heldout``, ``families``, ``families2``)."""
CASE_KEYS = ("category", "response", "gold", "expected", "answer_type")


def load_cases(name: str) -> list[tuple[str, str, str, bool, str]]:
    """The labelled table ``name`` as ``(category, response, gold, expected, answer_type)`` tuples, in file order."""
    path = CASES_DIR / f"{name}.jsonl"
    if not path.is_file():
        have = sorted(p.stem for p in CASES_DIR.glob("*.jsonl"))
        raise ValueError(f"no answer-case table {name!r} (no {path}); the tables are {have}.")
    with path.open(encoding="utf-8") as f:  # iterating a file splits on "\n" only (never on U+2028 in a case)
        return [tuple(json.loads(line)[k] for k in CASE_KEYS) for line in f if line.strip()]


CASES = load_cases("own")
HELDOUT = load_cases("heldout")
FAMILIES = load_cases("families")
FAMILIES2 = load_cases("families2")

HOSTILE: list[tuple[str, str, str]] = [
    ("deep_parens", "\\boxed{" + "(" * 20000 + "1" + ")" * 20000 + "}", "1"),
    ("deep_braces", "\\boxed{" + "{" * 20000 + "1" + "}" * 20000 + "}", "1"),
    ("tower_9^9^9^9", "\\boxed{9^9^9^9}", "1"),
    ("tower_2^2^..", "\\boxed{2^{2^{2^{2^{2^{2}}}}}}", "4"),
    ("huge_pow_10^10^10", "\\boxed{10^{10^{10}}}", "10"),
    ("symbolic_pow", "\\boxed{(x+1)^{1000000}}", "x"),
    ("huge_factorial", "\\boxed{100000!}", "1"),
    ("megabyte_digits", "\\boxed{" + "1" * 1_000_000 + "}", "1"),
    ("megabyte_junk", "a(" * 500_000, "1"),
    ("many_unclosed_boxed", "\\boxed{" * 100_000, "1"),
    ("many_think_tags", "<think>" * 100_000 + "\\boxed{1}", "1"),
    ("many_answer_words", "answer " * 100_000 + "is", "1"),
    ("spaces_after_answer", "answer" + " " * 500_000 + "x", "1"),
    ("nul_and_bidi", "\\boxed{1\x00\u202e\ufeff2}", "12"),
    ("odd_unicode", "\\boxed{\U0001F600\u0301\u200b}", "1"),
    ("inject_import", "\\boxed{__import__('os').system('touch /tmp/rsim_pwned')}", "0"),
    ("inject_lambda", "\\boxed{(lambda: __import__('os'))()}", "0"),
    ("inject_eval", "\\boxed{eval(\"1+1\")}", "2"),
    ("inject_dunder", "\\boxed{().__class__.__bases__[0].__subclasses__()}", "0"),
    ("inject_sympy_S", "\\boxed{S('exec(\"import os\")')}", "0"),
    ("frac_chain", "\\boxed{" + "\\frac{1}{" * 3000 + "2" + "}" * 3000 + "}", "1"),
    ("long_sum", "\\boxed{" + "+".join(["x"] * 5000) + "}", "5000x"),
    ("nested_sqrt", "\\boxed{" + "\\sqrt{" * 40 + "2" + "}" * 40 + "}", "1"),
    # the paths added for the unseen-form families: final statements, two-unit quantities, x/** spellings of powers
    ("long_statement", "The value is " + "(1, " * 200_000 + "2", "1"),
    ("statement_units", "So it is " + "1 hour and " * 100_000 + "2 minutes.", "1"),
    ("compound_units", "\\boxed{" + "1 hour and " * 100_000 + "30 minutes}", "1"),
    ("star_powers", "\\boxed{" + "2**" * 100_000 + "2}", "1"),
    ("times_ten", "\\boxed{" + "3 x 10^" * 100_000 + "1}", "7"),
    ("unit_chain", "\\boxed{5 \\text{ m}" + "/s" * 100_000 + "}", "5"),
]


@dataclass(frozen=True)
class BenchConfig:
    """Benchmark knobs."""

    out: str | None = None
    """Write the JSON result here (None: only print)."""
    timeout_s: float = 3.0
    """Our checker's time bound per check."""
    rgym_size: int = 500
    """How many embedded reasoning-gym problems to round-trip as ``\\boxed{gold}``."""
    math_verify: bool = True
    """Also score Math-Verify when it is installed."""
    bombs: int = 12
    """Expression bombs running from other threads in the "bombs + innocent" row (0 skips it)."""


def _mv_checker():
    try:
        from math_verify import parse, verify
    except ImportError:
        return None
    import logging

    logging.getLogger("math_verify").setLevel(logging.CRITICAL)  # it logs whole hostile inputs

    def run(response: str, gold: str, answer_type: str) -> bool:
        g = gold if "\\boxed" in gold else f"${gold}$"
        try:
            return bool(verify(parse(g), parse(response)))
        except Exception:  # Math-Verify raising counts as "not correct", as in its own graders
            return False
    return run


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else 0.0


def _score(name: str, fn, cases) -> dict:
    per_cat: dict[str, dict[str, int]] = {}
    lat, fps = [], 0
    for cat, resp, gold, expected, atype in cases:
        t0 = time.perf_counter()
        got = fn(resp, gold, atype)
        lat.append(time.perf_counter() - t0)
        c = per_cat.setdefault(cat, {"n": 0, "right": 0, "fp": 0})
        c["n"] += 1
        c["right"] += got == expected
        c["fp"] += got and not expected
        fps += got and not expected
    right = sum(c["right"] for c in per_cat.values())
    return {"checker": name, "accuracy": right / len(cases), "false_positives": fps, "per_category": per_cat,
            "latency_median_ms": 1e3 * statistics.median(lat), "latency_p99_ms": 1e3 * _pct(lat, 0.99),
            "latency_max_ms": 1e3 * max(lat)}


def _hostile(fn_ours, fn_mv) -> list[dict]:
    rows = []
    for name, resp, gold in HOSTILE:
        t0 = time.perf_counter()
        res = fn_ours(resp, gold)
        row = {"case": name, "ours_correct": res.correct, "ours_reason": res.reason,
               "ours_s": time.perf_counter() - t0}
        if fn_mv is not None:
            t0 = time.perf_counter()
            row["mv_correct"] = fn_mv(resp, gold, "auto")
            row["mv_s"] = time.perf_counter() - t0
        rows.append(row)
    return rows


BOMBS = (("((a+b)(a-b))^{300}", "(a^2-b^2)^{300}"), ("((a+b+c)(a-b-c))^{300}", "(a^2-(b+c)^2)^{300}"),
         ("((a+b)(a+c))^{200}", "(a^2+ab+ac+bc)^{200}"))
"""Equal-valued pairs whose sympy proof runs until the time bound (huge symbolic expansions; being
equal at sample points, the cheap numeric disproof cannot cut them short)."""
INNOCENT = (("\\boxed{2\\sqrt{2}}", "\\sqrt{8}", True), ("\\boxed{(x+1)^2}", "x^2+2x+1", True),
            ("\\boxed{1-\\cos^2 x}", "\\sin^2 x", True), ("\\boxed{\\sqrt{3}}", "\\sqrt{2}", False))


DEPTH_BUILDS = {
    "parens": lambda d: "(" * d + "1" + ")" * d, "frac": lambda d: "\\frac{1}{" * d + "2" + "}" * d,
    "sqrt": lambda d: "\\sqrt{" * d + "4" + "}" * d, "power": lambda d: "2^{" * d + "1" + "}" * d,
    "unary": lambda d: "-" * d + "1", "sin": lambda d: "\\sin(" * d + "x" + ")" * d,
    "brackets": lambda d: "[" * d + "1" + "]" * d,
}
"""Each nesting construct at the parser's depth limit (the worst case the limit allows)."""


def _depth_worst_case(ccfg: CheckConfig) -> list[dict]:
    rows = []
    for name, build in DEPTH_BUILDS.items():
        t0 = time.perf_counter()
        res = check(f"\\boxed{{{build(MAX_DEPTH)}}}", "2", "auto", ccfg)
        rows.append({"construct": name, "depth": MAX_DEPTH, "reason": res.reason, "s": time.perf_counter() - t0})
    return rows


def _innocent_latency(ccfg: CheckConfig) -> list[tuple[float, bool]]:
    out = []
    for resp, gold, expected in INNOCENT:
        t0 = time.perf_counter()
        res = check(resp, gold, "auto", ccfg)
        out.append((time.perf_counter() - t0, res.correct == expected and res.reason == "ok"))
    return out


def _bombs_and_innocent(n_bombs: int, ccfg: CheckConfig) -> dict:
    """Latency of ordinary sympy checks alone, then while ``n_bombs`` bombs run from other threads."""
    alone = _innocent_latency(ccfg)
    with ThreadPoolExecutor(max_workers=n_bombs + 1) as ex:
        bombs = [ex.submit(check, f"\\boxed{{{BOMBS[i % len(BOMBS)][0]}}}", BOMBS[i % len(BOMBS)][1], "auto", ccfg)
                 for i in range(n_bombs)]
        time.sleep(0.5)  # let the bombs take their workers first
        during = ex.submit(_innocent_latency, ccfg).result()
        running = sum(not b.done() for b in bombs)
        reasons = [b.result().reason for b in bombs]
    return {"bombs": n_bombs, "alone_max_s": max(t for t, _ in alone), "during_max_s": max(t for t, _ in during),
            "during_median_s": statistics.median(t for t, _ in during),
            "innocent_all_right": all(ok for _, ok in alone + during), "bombs_still_running_after": running,
            "bomb_reasons": {r: reasons.count(r) for r in sorted(set(reasons))}}


def main(cfg: BenchConfig) -> dict:
    """Score both checkers; return (and optionally write) the result dict."""
    ccfg = CheckConfig(timeout_s=cfg.timeout_s)
    check(B1 := "\\boxed{\\sqrt{2}}", "\\sqrt{2}", config=ccfg)  # warm the worker (startup is not a check)
    ours = _score("ours", lambda r, g, t: check(r, g, t, ccfg).correct, CASES)
    ours_ho = _score("ours", lambda r, g, t: check(r, g, t, ccfg).correct, HELDOUT)
    mv_fn = _mv_checker() if cfg.math_verify else None
    mv = _score("math-verify", mv_fn, CASES) if mv_fn else None
    mv_ho = _score("math-verify", mv_fn, HELDOUT) if mv_fn else None
    ours_fam = _score("ours", lambda r, g, t: check(r, g, t, ccfg).correct, FAMILIES)
    mv_fam = _score("math-verify", mv_fn, FAMILIES) if mv_fn else None
    ours_fam2 = _score("ours", lambda r, g, t: check(r, g, t, ccfg).correct, FAMILIES2)
    mv_fam2 = _score("math-verify", mv_fn, FAMILIES2) if mv_fn else None
    hostile = _hostile(lambda r, g: check(r, g, "auto", ccfg), mv_fn)
    depth = _depth_worst_case(ccfg)
    bombs = _bombs_and_innocent(cfg.bombs, ccfg) if cfg.bombs else None
    from rsim_env.sources.problems import default_source

    probs = default_source(size=cfg.rgym_size)
    rg_ok = sum(check(f"\\boxed{{{p.answer}}}", p.answer, p.answer_type, ccfg).correct for p in probs)
    result = {"n_cases": len(CASES), "ours": ours, "math_verify": mv, "hostile": hostile,
              "heldout": {"n_cases": len(HELDOUT), "ours": ours_ho, "math_verify": mv_ho}, "bombs_innocent": bombs,
              "families": {"n_cases": len(FAMILIES), "ours": ours_fam, "math_verify": mv_fam},
              "families2": {"n_cases": len(FAMILIES2), "ours": ours_fam2, "math_verify": mv_fam2},
              "depth_worst_case": depth,
              "hostile_all_rejected": all(not h["ours_correct"] for h in hostile),
              "hostile_max_s": max(h["ours_s"] for h in hostile), "time_bound_s": cfg.timeout_s,
              "over_time_bound": sum(h["ours_s"] > cfg.timeout_s + 1.0 for h in hostile),
              "rgym": {"n": len(probs), "correct": rg_ok}, "config": asdict(cfg), "warmup": B1}
    _print(result)
    if cfg.out:
        with open(cfg.out, "w", encoding="utf-8") as fh:
            json.dump(result, fh, indent=2)
    return result


def _print_table(title: str, ours: dict, mv: dict | None) -> None:
    print(f"\n{title}")
    print(f"{'category':<22}{'n':>4}  {'ours acc':>8} {'ours FP':>7}  {'MV acc':>7} {'MV FP':>6}")
    for cat, c in ours["per_category"].items():
        m = mv["per_category"][cat] if mv else None
        mv_cols = f"{m['right'] / m['n']:>7.2f} {m['fp']:>6}" if m else f"{'-':>7} {'-':>6}"
        print(f"{cat:<22}{c['n']:>4}  {c['right'] / c['n']:>8.2f} {c['fp']:>7}  {mv_cols}")
    for s in (ours, mv):
        if s:
            n = sum(c["n"] for c in s["per_category"].values())
            right = sum(c["right"] for c in s["per_category"].values())
            print(f"{s['checker']:<12} accuracy {s['accuracy']:.3f} ({right}/{n})  false positives "
                  f"{s['false_positives']}  latency median {s['latency_median_ms']:.2f} ms  "
                  f"p99 {s['latency_p99_ms']:.1f} ms  max {s['latency_max_ms']:.1f} ms")


def _print(r: dict) -> None:
    _print_table("own cases (benchmarks/grading/answer_cases/own.jsonl; self-graded: written by the checker's authors)",
                 r["ours"], r["math_verify"])
    ho = r["heldout"]
    _print_table("held-out cases (benchmarks/grading/answer_cases/heldout.jsonl; written without reading the checker)",
                 ho["ours"], ho["math_verify"])
    fam = r["families"]
    _print_table("unseen-form families (benchmarks/grading/answer_cases/families.jsonl; written before the checker was fixed for them)",
                 fam["ours"], fam["math_verify"])
    fam2 = r["families2"]
    _print_table("unseen-form families, second batch (benchmarks/grading/answer_cases/families2.jsonl; written after the fixes, "
                 "committed before being run)", fam2["ours"], fam2["math_verify"])
    print(f"\n{'hostile case':<22}{'ours':>6} {'reason':>12} {'ours s':>8}  {'MV':>6} {'MV s':>8}")
    for h in r["hostile"]:
        print(f"{h['case']:<22}{str(h['ours_correct']):>6} {h['ours_reason']:>12} {h['ours_s']:>8.3f}  "
              f"{str(h.get('mv_correct', '-')):>6} {h.get('mv_s', float('nan')):>8.3f}")
    print(f"hostile: all rejected={r['hostile_all_rejected']}  max {r['hostile_max_s']:.3f} s  "
          f"over bound ({r['time_bound_s']} s + 1 s slack): {r['over_time_bound']}")
    print("worst case at the depth limit: " + ", ".join(
        f"{d['construct']} {d['reason']} {d['s']:.2f} s" for d in r["depth_worst_case"]) + f" (depth {MAX_DEPTH})")
    b = r["bombs_innocent"]
    if b:
        print(f"bombs + innocent: {len(INNOCENT)} sympy checks alone max {b['alone_max_s']:.2f} s; with "
              f"{b['bombs']} bombs running: max {b['during_max_s']:.2f} s, median {b['during_median_s']:.2f} s; "
              f"all right: {b['innocent_all_right']}; bombs still running after them: "
              f"{b['bombs_still_running_after']}/{b['bombs']}; bomb reasons {b['bomb_reasons']}")
    print(f"reasoning-gym golds as \\boxed{{gold}}: {r['rgym']['correct']}/{r['rgym']['n']} correct")


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, BenchConfig, "python -m benchmarks.grading.answer_check", __doc__)
