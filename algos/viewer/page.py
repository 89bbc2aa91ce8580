"""The viewer's one self-contained HTML page: inline CSS, inline SVG, a few lines of inline JS.

Nothing is fetched (a Content-Security-Policy forbids any network access), and every piece of
model text is HTML-escaped: rollouts are hostile input and must not become markup or script.
"""

from __future__ import annotations

from html import escape
from typing import Iterable

from rsim_env.strategies import STRATEGIES

from .load import NO_QUESTION, Group, Loaded, Rollout
from .svg import line_chart

COLORS = ("#d62728", "#1f77b4", "#9467bd", "#2ca02c", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#ff7f0e")
"""One colour per strategy, in table order."""

CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0 1.5em 3em;color:#222}
h1{font-size:1.3em}h2{font-size:1.1em;margin:1.2em 0 .4em}
.legend span,.badge{display:inline-block;border-radius:3px;padding:0 .4em;margin:0 .2em .2em 0;color:#fff;font-size:12px}
.badge.det{background:#fff!important;border:2px solid;color:#222}
.bar{position:sticky;top:0;background:#f6f6f6;padding:.5em;border-bottom:1px solid #ccc;z-index:1}
.bar label{margin-right:1em}
.charts{display:flex;flex-wrap:wrap;gap:.5em}
.chart{width:260px;height:120px;border:1px solid #ddd;background:#fff}
.chart .ct{font-size:10px;font-weight:bold}.chart .ax{font-size:9px;fill:#555}
.chart .frame{fill:none;stroke:#eee}.chart .line{fill:none;stroke:#1f77b4;stroke-width:1.5}.chart .dot{fill:#1f77b4}
.group{border-top:1px solid #ccc;margin-top:1em}
.rollouts{display:flex;gap:.6em;overflow-x:auto;align-items:flex-start}
.card{flex:0 0 330px;border:1px solid #ccc;border-radius:4px;padding:.4em;background:#fff}
.card.correct{border-left:5px solid #2ca02c}.card.wrong{border-left:5px solid #d62728}
.step{border-top:1px dashed #ddd;padding:.3em 0}
.text{white-space:pre-wrap;word-break:break-word;font-family:ui-monospace,monospace;font-size:12px;max-height:12em;overflow:auto}
table{border-collapse:collapse;font-size:12px}td{padding:0 .5em 0 0}
.note{color:#666;font-size:12px}.hidden{display:none}
.question{background:#fafafa;border:1px solid #e3e3e3;border-radius:4px;padding:.3em .5em;margin:.3em 0 .5em;max-width:80em}
.question .text{max-height:8em}
.inj{background:#e8eefc;color:#2b3f73;font-style:italic;border-bottom:1px dotted #2b3f73}
"""

JS = """
(function(){
  var s=document.getElementById('f-strategy'), o=document.getElementById('f-outcome'), m=document.getElementById('f-mode');
  function apply(){
    var shown=0;
    document.querySelectorAll('.group').forEach(function(g){
      var any=false;
      g.querySelectorAll('.card').forEach(function(c){
        var ok=(s.value==='' || (' '+c.dataset.strategies+' ').indexOf(' '+s.value+' ')>=0)
          && (o.value==='' || c.dataset.outcome===o.value)
          && (!m || m.value==='' || c.dataset.mode===m.value);
        c.classList.toggle('hidden', !ok); if(ok){any=true; shown++;}
      });
      g.classList.toggle('hidden', !any);
    });
    document.getElementById('count').textContent=shown;
  }
  [s,o,m].forEach(function(e){ if(e){ e.addEventListener('change', apply); } });
  apply();
})();
"""


def _badge(i: int | None, detected: bool = False) -> str:
    if i is None:
        return ""
    cls = "badge det" if detected else "badge"
    style = f"border-color:{COLORS[i]}" if detected else f"background:{COLORS[i]}"
    return f'<span class="{cls}" style="{style}" title="{"detected" if detected else "injected"}">{escape(STRATEGIES[i].name)}</span>'


def _rollout(r: Rollout) -> str:
    strategies = sorted({p for p in r.planned if p is not None} | {s for d in r.detected for s in d})
    mode = r.label.split(" #")[0]
    head = (f'<b>{escape(r.label)}</b> · {"✔ correct" if r.correct else "✘ wrong"} · answer '
            f'<code>{escape(r.extracted[:200]) or "—"}</code>')
    steps = []
    injected = r.injected + [""] * (len(r.steps) - len(r.injected))
    for k, (p, z, d, inj) in enumerate(zip(r.planned, r.steps, r.detected, injected)):
        det = "".join(_badge(s, detected=True) for s in d) or '<span class="note">nothing</span>'
        lead = f'<span class="inj" title="injected by the protocol, not generated">{escape(inj)}</span>' if inj else ""
        steps.append(f'<div class="step"><div>{k + 1}. {_badge(p) or "<span class=note>no plan</span>"} '
                     f'→ shows {det}</div><div class="text">{lead}{escape(z)}</div></div>')
    rows = [f"<tr><td>{escape(k)}</td><td>{v:+.3g}</td></tr>" for k, v in r.components.items()]
    rows += [f"<tr><td><b>R {escape(k)}</b></td><td><b>{v:+.3g}</b></td></tr>" for k, v in r.rewards.items()]
    rows += [f"<tr><td>{escape(str(k))}</td><td>{escape(str(v))}</td></tr>" for k, v in r.extra.items()]
    note = '<div class="note">detected strategies recomputed with rsim_env.detect</div>' if r.detected_computed else ""
    return (f'<div class="card {"correct" if r.correct else "wrong"}" data-outcome="{"correct" if r.correct else "wrong"}" '
            f'data-strategies="{" ".join(map(str, strategies))}" data-mode="{escape(mode)}">'
            f'<div>{head}</div>{"".join(steps)}<table>{"".join(rows)}</table>{note}</div>')


def _group(g: Group) -> str:
    ok = sum(r.correct for r in g.rollouts)
    return (f'<section class="group"><h2>{escape(g.title)} <span class="note">gold <code>{escape(g.answer)}</code> · '
            f'{ok}/{len(g.rollouts)} correct</span></h2><div class="question"><b>Question</b>'
            f'<div class="text">{escape(g.question) if g.question else f"<span class=note>{escape(NO_QUESTION)}</span>"}'
            '</div></div><div class="rollouts">'
            + "".join(_rollout(r) for r in g.rollouts) + "</div></section>")


def _options(values: Iterable[tuple[str, str]]) -> str:
    return "".join(f'<option value="{escape(v)}">{escape(t)}</option>' for v, t in values)


def render_page(data: Loaded) -> str:
    """The whole HTML document for ``data``."""
    n = sum(len(g.rollouts) for g in data.groups)
    legend = "".join(f'<span style="background:{COLORS[s.index]}">{s.index} {escape(s.name)}</span>' for s in STRATEGIES)
    modes = sorted({r.label.split(" #")[0] for g in data.groups for r in g.rollouts}) if data.origin == "eval" else []
    mode_filter = (f'<label>mode <select id="f-mode"><option value="">all</option>{_options((m, m) for m in modes)}'
                   "</select></label>") if modes else ""
    bar = (f'<div class="bar"><label>strategy (injected or shown) <select id="f-strategy"><option value="">any</option>'
           f'{_options((str(s.index), s.name) for s in STRATEGIES)}</select></label>'
           '<label>outcome <select id="f-outcome"><option value="">all</option><option value="correct">correct</option>'
           f'<option value="wrong">wrong</option></select></label>{mode_filter}'
           f'<span class="note"><span id="count">{n}</span> of {n} rollouts shown</span></div>')
    charts = "".join(line_chart(tag, pts) for tag, pts in data.curves.items())
    curves = (f'<details open><summary><b>Training curves</b> ({len(data.curves)} TensorBoard scalars)</summary>'
              f'<div class="charts">{charts}</div></details>' if charts else "")
    notes = "".join(f'<p class="note">{escape(x)}</p>' for x in data.notes)
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            f"<title>rSIM rollouts · {escape(data.source)}</title><style>{CSS}</style></head><body>"
            f"<h1>rSIM rollouts — {escape(data.origin)} <code>{escape(data.source)}</code></h1>"
            f'<p class="note">{len(data.groups)} problem groups, {n} rollouts. Filled badge = injected strategy, '
            f"outlined badge = strategies detected in the step's text; <span class=\"inj\">shaded italic text</span> = "
            f"injected by the protocol before the step (not generated).</p><div class=\"legend\">{legend}</div>"
            f"{notes}{curves}{bar}{''.join(_group(g) for g in data.groups)}<script>{JS}</script></body></html>")
