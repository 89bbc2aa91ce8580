"""``rsim view DIR --out FILE.html``: one self-contained static page of a run's or an eval's rollouts.

Per problem, its rollouts side by side: each step with its injected strategy and the strategies
detected in it (colour-coded), the extracted answer, correctness and every reward component; a
filter by strategy, outcome (and mode, for evals); the run's TensorBoard scalars as inline SVG.
No server and no CDN: open the file in any browser. Modules: ``load`` (read the dir),
``page`` (HTML), ``svg`` (charts).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ..dataclass_cli import ArgumentParser
from .load import load_dir
from .page import render_page

__all__ = ["ViewConfig", "main", "parse"]


@dataclass(frozen=True)
class ViewConfig:
    """Arguments of ``rsim view``."""

    dir: str
    """Run dir (rsim train --out) or eval dir (rsim eval --out)."""
    out: str = ""
    """HTML file to write; "" = DIR/rollouts.html."""

    def __post_init__(self) -> None:
        if not self.dir:
            raise ValueError("ViewConfig.dir is empty; pass the run or eval directory to view.")
        if self.out and not self.out.endswith((".html", ".htm")):
            raise ValueError(f"ViewConfig.out={self.out!r}: use a file name ending in .html.")


def parse(argv: Sequence[str]) -> ViewConfig:
    p = ArgumentParser(prog="rsim view", description="Write a static HTML page of a run's or eval's rollouts.")
    p.add_argument("dir", help="run dir (rsim train --out) or eval dir (rsim eval --out)")
    p.add_argument("--out", default="", help="HTML file to write (default: DIR/rollouts.html)")
    a = p.parse_args(list(argv))
    return ViewConfig(a.dir, a.out)


def main(cfg: ViewConfig | Sequence[str]) -> dict[str, Any]:
    """Write the page; return ``{"out", "groups", "rollouts", "curves"}``."""
    if not isinstance(cfg, ViewConfig):
        cfg = parse(cfg)
    data = load_dir(cfg.dir)
    out = Path(cfg.out or Path(cfg.dir) / "rollouts.html")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_page(data), encoding="utf-8")
    result = {"out": str(out), "groups": len(data.groups), "rollouts": sum(len(g.rollouts) for g in data.groups),
              "curves": len(data.curves)}
    print(f"wrote {out}: {result['groups']} problem groups, {result['rollouts']} rollouts, {result['curves']} curves")
    return result


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
