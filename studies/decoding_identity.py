"""Before/after check of a change under the reasoners: are the greedy episodes of every route byte-identical?

``studies/decoding_identity.sh`` writes ``rsim eval`` folders (one per route) from one code tree; ``--pack`` keeps of
each episode what a reader compares (route, mode, problem, the injected lead-ins, the reasoner's steps, the answer,
the token counts) in one gzipped JSON-lines file, and ``--before``/``--after`` puts two packs side by side::

    python -m studies.decoding_identity --pack docs/decoding_results/before --out docs/decoding_results/before.jsonl.gz
    python -m studies.decoding_identity --before docs/decoding_results/before.jsonl.gz \\
        --after docs/decoding_results/after.jsonl.gz --out docs/decoding_results/identity.json

It prints one row per route (episodes in both, identical steps, identical token counts) and the first differences.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

KEEP = ("mode", "problem_id", "sample", "injected", "steps", "extracted", "correct", "tokens")


def pack(folder: Path) -> list[dict[str, Any]]:
    """Every episode of every route folder (``<route>/episodes.jsonl``) under ``folder``."""
    rows = []
    for episodes in sorted(folder.glob("*/episodes.jsonl")):
        for line in episodes.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            rows.append({"route": episodes.parent.name, **{k: row.get(k) for k in KEEP}})
    if not rows:
        raise SystemExit(f"{folder}: no <route>/episodes.jsonl under it; run studies/decoding_identity.sh first.")
    return rows


def read(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def compare(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> dict[str, Any]:
    """Per route: episodes in both packs, how many have the same steps and the same token counts, first differences."""
    def key(r: dict[str, Any]) -> tuple:
        return r["route"], r["mode"], r["problem_id"], r["sample"]

    a = {key(r): r for r in before}
    out: dict[str, Any] = {}
    for r in after:
        k = key(r)
        route = out.setdefault(r["route"], {"episodes": 0, "same_steps": 0, "same_tokens": 0, "only_after": 0,
                                            "differences": []})
        if k not in a:
            route["only_after"] += 1
            continue
        old = a[k]
        route["episodes"] += 1
        same = old["steps"] == r["steps"] and old["injected"] == r["injected"]
        route["same_steps"] += same
        route["same_tokens"] += old["tokens"] == r["tokens"]
        if (not same or old["tokens"] != r["tokens"]) and len(route["differences"]) < 5:
            route["differences"].append({"mode": r["mode"], "problem_id": r["problem_id"],
                                         "before": {"steps": old["steps"], "tokens": old["tokens"]},
                                         "after": {"steps": r["steps"], "tokens": r["tokens"]}})
    for route, stats in out.items():
        stats["only_before"] = sum(1 for k in a if k[0] == route) - stats["episodes"]
    return out


def table(summary: dict[str, Any]) -> str:
    lines = ["| route | episodes in both | identical steps | identical token counts | only before | only after |",
             "|---|---|---|---|---|---|"]
    for route, s in summary.items():
        lines.append(f"| {route} | {s['episodes']} | {s['same_steps']} | {s['same_tokens']} | {s['only_before']} | "
                     f"{s['only_after']} |")
    return "\n".join(lines)


@dataclass(frozen=True)
class Config:
    """What to do: pack one capture folder, or compare two packs."""

    out: str = ""
    """Where the pack (``--pack``) or the comparison JSON (``--before``/``--after``) goes."""
    pack: str = ""
    """A folder written by studies/decoding_identity.sh (its ``<route>/episodes.jsonl``)."""
    before: str = ""
    """The pack of the code before the change."""
    after: str = ""
    """The pack of the code after it."""

    def __post_init__(self) -> None:
        if not self.out:
            raise ValueError("--out is required: the pack or the comparison JSON to write")
        if bool(self.pack) == bool(self.before or self.after) or bool(self.before) != bool(self.after):
            raise ValueError("give --pack FOLDER, or --before PACK --after PACK")


def main(cfg: Config) -> dict[str, Any]:
    out = Path(cfg.out)
    if cfg.pack:
        rows = pack(Path(cfg.pack))
        with gzip.open(out, "wt", encoding="utf-8") as f:
            f.writelines(json.dumps(r, sort_keys=True) + "\n" for r in rows)
        print(f"{len(rows)} episodes -> {out}")
        return {"episodes": len(rows)}
    summary = compare(read(Path(cfg.before)), read(Path(cfg.after)))
    out.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    print(table(summary))
    for route, s in summary.items():
        for d in s["differences"][:2]:
            print(f"{route} {d['mode']} {d['problem_id']}:\n  before {d['before']}\n  after  {d['after']}")
    return summary


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m studies.decoding_identity", __doc__)
