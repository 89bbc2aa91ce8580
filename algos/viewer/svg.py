"""Small inline SVG line charts (no plotting library, no external files)."""

from __future__ import annotations

import math
from html import escape
from typing import Sequence

W, H, PAD = 260, 120, 28


def _fmt(v: float) -> str:
    return f"{v:.3g}"


def line_chart(title: str, points: Sequence[tuple[float, float]]) -> str:
    """One ``<svg>`` with the curve ``points`` ((step, value) pairs), axes ranges and the title."""
    pts = [(x, y) for x, y in points if math.isfinite(x) and math.isfinite(y)]
    head = f'<svg class="chart" viewBox="0 0 {W} {H}" role="img" aria-label="{escape(title)}">'
    head += f'<text x="{PAD}" y="12" class="ct">{escape(title)}</text>'
    if not pts:
        return head + f'<text x="{PAD}" y="{H // 2}" class="ax">no finite values</text></svg>'
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    sx = (W - 2 * PAD) / (x1 - x0) if x1 > x0 else 0.0
    sy = (H - 2 * PAD) / (y1 - y0) if y1 > y0 else 0.0

    def px(x: float, y: float) -> str:
        cx = PAD + (x - x0) * sx if sx else W / 2
        cy = H - PAD - (y - y0) * sy if sy else H / 2
        return f"{cx:.1f},{cy:.1f}"

    body = [f'<rect x="{PAD}" y="{PAD}" width="{W - 2 * PAD}" height="{H - 2 * PAD}" class="frame"/>']
    body.append(f'<polyline points="{" ".join(px(x, y) for x, y in pts)}" class="line"/>')
    if len(pts) <= 40:
        body += [f'<circle cx="{px(x, y).split(",")[0]}" cy="{px(x, y).split(",")[1]}" r="2" class="dot"/>' for x, y in pts]
    body.append(f'<text x="2" y="{PAD + 4}" class="ax">{_fmt(y1)}</text>')
    body.append(f'<text x="2" y="{H - PAD}" class="ax">{_fmt(y0)}</text>')
    body.append(f'<text x="{PAD}" y="{H - 8}" class="ax">step {_fmt(x0)}</text>')
    body.append(f'<text x="{W - PAD}" y="{H - 8}" class="ax" text-anchor="end">{_fmt(x1)}</text>')
    return head + "".join(body) + "</svg>"
