"""algos/study reads top to bottom: a stage depends only on the stages before it (fill -> train -> score -> report,
:data:`algos.study.cli.ORDER`), through any chain of imports, and no module reaches into another module's or object's
private names (``from x import _name``, ``module._name``, ``planner._cache``).

A static check over the source, as tests/test_layers.py: every import counts, those inside functions included."""

from __future__ import annotations

import ast

from algos.study.cli import ORDER
from tests.test_layers import ROOT, module_graph

PACKAGE = "algos.study"
FILES = sorted((ROOT / "algos" / "study").rglob("*.py"))


def reachable(graph: dict[str, set[str]], start: str) -> dict[str, list[str]]:
    """Every module ``start`` imports, directly or through others: module -> one import chain from ``start``."""
    chains, frontier = {start: [start]}, [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph.get(v, ())):
                if w not in chains:
                    chains[w] = chains[v] + [w]
                    nxt.append(w)
        frontier = nxt
    chains.pop(start)
    return chains


def later_stage_imports(graph: dict[str, set[str]], order: tuple[str, ...], package: str = PACKAGE) -> list[str]:
    """``stage -> ... -> later stage`` for every stage that reaches a stage running after it."""
    out = []
    for i, stage in enumerate(order):
        chains = reachable(graph, f"{package}.{stage}")
        for later in order[i + 1:]:
            if f"{package}.{later}" in chains:
                out.append(" -> ".join(chains[f"{package}.{later}"]))
    return out


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_uses(source: str) -> list[str]:
    """Private names used from outside their owner: imported (``from x import _y``) or read / set as an attribute of
    anything but ``self`` / ``cls`` (``module._y``, ``planner._y``)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            out += [f"line {node.lineno}: from {'.' * node.level}{node.module or ''} import {a.name}"
                    for a in node.names if _private(a.name)]
        elif isinstance(node, ast.Import):
            out += [f"line {node.lineno}: import {a.name}" for a in node.names
                    if any(_private(part) for part in a.name.split(".")[1:])]
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            owner = node.value
            if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                out.append(f"line {node.lineno}: {ast.unparse(node)}")
    return out


def test_each_stage_imports_only_the_stages_before_it():
    graph = module_graph("algos/study")
    assert {f"{PACKAGE}.{s}" for s in ORDER} <= set(graph), f"a stage of {ORDER} has no module in algos/study"
    bad = later_stage_imports(graph, ORDER)
    assert bad == [], f"stages that import a stage running after them (move what they share down a module): {bad}"


def test_the_arms_stages_follow_the_same_order():
    """The arms' part of each stage (algos/study/arms) reaches no stage after it either, the study's or the arms'."""
    graph = module_graph("algos/study")
    assert "algos.study.arms.train" in graph, sorted(graph)
    later = {"train": ("score", "report", "arms.score", "arms.report", "arms.stages"),
             "score": ("report", "arms.report", "arms.stages")}
    bad = [f"arms.{stage} -> {m}" for stage, ms in later.items()
           for m in ms if f"{PACKAGE}.{m}" in reachable(graph, f"{PACKAGE}.arms.{stage}")]
    assert bad == [], f"an arms stage imports a stage running after it: {bad}"


def test_no_module_reaches_into_private_names():
    assert len(FILES) > 10, FILES
    bad = {str(p.relative_to(ROOT)): private_uses(p.read_text(encoding="utf-8")) for p in FILES}
    bad = {k: v for k, v in bad.items() if v}
    assert bad == {}, f"private names used from outside their owner (give the owner a public name): {bad}"


def test_the_checks_see_a_later_stage_and_a_private_name():
    """The checkers themselves, on a graph and a source with one of each."""
    graph = {"p.fill": {"p.helper"}, "p.helper": {"p.score"}, "p.train": set(), "p.score": {"p.fill"}}
    assert later_stage_imports(graph, ("fill", "train", "score"), "p") == ["p.fill -> p.helper -> p.score"]
    assert later_stage_imports({"p.fill": set(), "p.score": {"p.fill"}}, ("fill", "score"), "p") == []
    source = ("from .heads import _checkpoint, find_heads\nimport a._b\n"
              "def f(planner, m):\n    planner._features = m._cache\n    self._ok = cls._ok = m.__name__\n")
    assert [u.split(": ", 1)[1] for u in private_uses(source)] == [
        "from .heads import _checkpoint", "import a._b", "planner._features", "m._cache"]
