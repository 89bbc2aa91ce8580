"""Imports point down: rsim_env <- agents <- algos <- benchmarks <- studies, and no package imports in a circle.

The installed packages are checked here; studies/ is held to the same circle check in
studies/tests/test_study_layers.py, so that a study's imports never turn the library's suite red.

A static check over the source. Every ``import`` / ``from ... import`` in a module counts, including
those inside functions and under ``TYPE_CHECKING`` (lazy imports are still dependencies: an import
circle held together by imports at use is still a circle). Relative imports are resolved against the
module's package.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = {
    "rsim_env": ("agents", "algos", "benchmarks", "studies"),
    "agents": ("algos", "benchmarks", "studies"),
    "algos": ("benchmarks", "studies"),
    "benchmarks": ("studies",),  # the shipped instruments never need a study, which the wheel leaves out
}
CYCLE_PACKAGES = ("rsim_env", "agents", "algos", "benchmarks")
# Circles tolerated for now (frozensets of module names); empty: any circle in a package fails the test. The last one,
# openai_reasoner <-> served_train, went when build_trainable moved beside parse_spec in openai_reasoner.
KNOWN_CYCLES: set[frozenset[str]] = set()


def imported_modules(path: Path, root: Path = ROOT) -> set[str]:
    """Absolute names of every module ``path`` imports (relative imports resolved from ``root``)."""
    package = list(path.relative_to(root).parts[:-1])
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            mod = ".".join([*base, node.module] if node.module else base)
            names.add(mod)
            names.update(f"{mod}.{a.name}" for a in node.names)  # `from . import x` imports module x
    return names


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_graph(package: str, root: Path = ROOT) -> dict[str, set[str]]:
    """``module -> modules of the same package it imports``, from every import statement.

    ``from pkg import name`` is an edge to the module ``pkg.name`` when there is one, else to ``pkg`` (its
    ``__init__``); ``import a.b`` is an edge to ``a.b``. The implicit import of parent packages is not an edge
    (Python always runs them first; a package ``__init__`` that imports its submodules is no circle).
    """
    files = {_module_name(p, root): p for p in (root / package).rglob("*.py") if "__pycache__" not in p.parts}
    graph: dict[str, set[str]] = {}
    for mod, path in files.items():
        here = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = here[: len(here) - node.level + 1] if node.level else []
                frm = ".".join([*base, node.module] if node.module else base)
                names = [f"{frm}.{a.name}" if f"{frm}.{a.name}" in files else frm for a in node.names]
            else:
                continue
            for name in names:
                while name and name not in files:  # `import pkg.mod.attr` style: the longest module prefix
                    name = name.rpartition(".")[0]
                if name and name != mod:
                    targets.add(name)
        graph[mod] = targets
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One circle per strongly connected group of modules, as ``[a, b, ..., a]`` (Tarjan, then a path back)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:  # v roots a group: everything above it on the stack
            group = {stack.pop()}
            while v not in group:
                group.add(stack.pop())
            if len(group) > 1:
                groups.append(group)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_circle(graph, g) for g in groups]


def _circle(graph: dict[str, set[str]], group: set[str]) -> list[str]:
    """A shortest circle through the group's first module, staying inside the group."""
    start = min(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & group):
                if w == start:
                    return paths[v] + [start]
                if w not in paths:
                    paths[w] = paths[v] + [w]
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"no circle in the strongly connected group {sorted(group)}")


def _violations(package: str, banned: tuple[str, ...]) -> list[str]:
    out = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for name in sorted(imported_modules(path)):
            if name.split(".")[0] in banned:
                out.append(f"{path.relative_to(ROOT)} imports {name}")
    return out


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_imports_point_down(package):
    assert _violations(package, FORBIDDEN[package]) == []


@pytest.mark.parametrize("package", CYCLE_PACKAGES)
def test_no_import_cycles(package):
    cycles = import_cycles(module_graph(package))
    new = [" -> ".join(c) for c in cycles if frozenset(c) not in KNOWN_CYCLES]
    assert new == [], f"import circles in {package}/ (break each by moving what is shared down): {new}"
    found = {frozenset(c) for c in cycles}
    stale = [sorted(k) for k in KNOWN_CYCLES if k <= {m for m in module_graph(package)} and k not in found]
    assert stale == [], f"known circles no longer there: remove them from KNOWN_CYCLES: {stale}"


ROOMS = {"agents": 12, "benchmarks": 15}
"""Most modules at the top level of a package, a subpackage counting once (its own ``__init__`` does not count)."""


@pytest.mark.parametrize("package", sorted(ROOMS))
def test_the_top_level_reads_as_the_architecture(package):
    """agents/ keeps one folder per backend (and per kind of agent), benchmarks/ one per family of instruments: a
    newcomer reads the top level as the architecture, and a change to one backend stays in its folder."""
    top = sorted(p.name for p in (ROOT / package).iterdir()
                 if (p.suffix == ".py" and p.name != "__init__.py") or (p / "__init__.py").is_file())
    assert len(top) <= ROOMS[package], f"{package}/ has {len(top)} top-level modules (at most {ROOMS[package]}): {top}"


def learner_files() -> list[str]:
    """The learner modules: those the registry (algos/learners.py) imports, less what every learner shares
    (algos.update_schedule, algos.learner_base)."""
    shared = {"algos.update_schedule", "algos.learner_base"}
    mods = {n for n in imported_modules(ROOT / "algos" / "learners.py") if n.startswith("algos.")} - shared
    return sorted(f for f in (n.replace(".", "/") + ".py" for n in mods) if (ROOT / f).is_file())


def test_learners_do_not_import_the_registry():
    """The registry (algos.learners) imports the learners; they take UpdateSchedule from algos.update_schedule and
    SharedObjective from algos.learner_base."""
    from algos.learners import LEARNERS

    learners = learner_files()
    assert len(learners) == len(LEARNERS), learners  # one module per registered learner
    bad = [f"{p} imports {n}" for p in learners for n in imported_modules(ROOT / p)
           if n == "algos.learners" or n.startswith("algos.learners.")]
    assert bad == []


def test_the_check_sees_lazy_and_relative_imports(tmp_path):
    """The checker itself: upward imports inside a function, written relatively, are found."""
    probe = tmp_path / "agents" / "sub" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text("def f():\n    from ...algos import trainer\n    from .. import loading\n    import benchmarks.plans.atlas\n")
    names = imported_modules(probe, root=tmp_path)
    assert {"algos", "algos.trainer", "agents.loading", "benchmarks.plans.atlas"} <= names


def test_the_cycle_check_sees_lazy_relative_and_package_imports(tmp_path):
    """The checker itself: a circle closed by a lazy relative import is found and named; a package that
    imports its submodules is no circle, a submodule that imports its own package is."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from . import a\n")
    (pkg / "a.py").write_text("from .sub import b\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("def f():\n    from .. import c\n")
    (pkg / "c.py").write_text("import pkg.a\n")
    graph = module_graph("pkg", root=tmp_path)
    assert graph["pkg"] == {"pkg.a"} and graph["pkg.sub.b"] == {"pkg.c"}
    assert import_cycles(graph) == [["pkg.a", "pkg.sub.b", "pkg.c", "pkg.a"]]
    (pkg / "c.py").write_text("from pkg import sub\n")
    (pkg / "sub" / "__init__.py").write_text("from .b import f\n")
    (pkg / "sub" / "b.py").write_text("from . import f\n")  # a submodule importing its own package's __init__
    assert import_cycles(module_graph("pkg", root=tmp_path)) == [["pkg.sub", "pkg.sub.b", "pkg.sub"]]


def _member(module: str) -> str:
    """The layer member of a module of ``rsim_env``: its subpackage or top-level module (``__init__``: the package)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def layer_violations(package: str, layers, root: Path = ROOT) -> list[str]:
    """``"a (layer) imports b (layer)"`` for each import of a module of a higher layer, every import statement counted.

    ``layers`` is bottom first, each ``(name, members, job)`` (:data:`tools.layout.RSIM_ENV_LAYERS`); a module whose
    member is in no layer is a violation too, so that a new module must be placed.
    """
    rank = {m: (i, name) for i, (name, members, _) in enumerate(layers) for m in members}
    out = []
    for mod, targets in sorted(module_graph(package, root).items()):
        if _member(mod) not in rank:
            out.append(f"{mod} is in no layer: add {_member(mod)!r} to one")
            continue
        for target in sorted(targets):
            here, there = rank[_member(mod)], rank.get(_member(target), (-1, "?"))
            if there[0] > here[0]:
                out.append(f"{mod} ({here[1]}) imports {target} ({there[1]})")
    return out


def private_imports(package: str, root: Path = ROOT) -> list[str]:
    """``"a imports b._c"`` for each import of a ``_name`` (a name or a module on the path) held in another package
    than the importer's: a helper two packages share is public, in the lower one. Modules of one package may share
    their private helpers."""
    out = []
    for path in sorted((root / package).rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        mod = _module_name(path, root)
        own = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom):
                here = own.split(".")
                base = here[: len(here) - node.level + 1] if node.level else []
                frm = ".".join([*base, node.module] if node.module else base)
                names = [f"{frm}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                parts = name.split(".")
                private = [i for i, p in enumerate(parts) if p.startswith("_") and not p.startswith("__")]
                if not private:
                    continue
                holder = parts[: private[0]]  # the package that holds the private name (a module's own package)
                if not (root / Path(*holder)).is_dir():
                    holder = holder[:-1]
                if ".".join(holder) != own:
                    out.append(f"{mod} imports {name}")
    return out


def test_rsim_env_imports_follow_its_layers():
    """Inside rsim_env every import points down the layers of docs/layout.md (tools.layout.RSIM_ENV_LAYERS): plain
    data, then checking, kinds, texts, sources, and the game on top. Fix a violation by moving what is shared down,
    never by importing up."""
    from tools.layout import RSIM_ENV_LAYERS

    members = [m for _, ms, _ in RSIM_ENV_LAYERS for m in ms]
    assert len(members) == len(set(members)), "a member sits in two layers"
    assert layer_violations("rsim_env", RSIM_ENV_LAYERS) == []


def test_no_module_imports_another_packages_private_name():
    assert private_imports("rsim_env") == []


def test_problem_is_plain_data_at_the_bottom():
    """Problem is defined in rsim_env/problem.py, which imports nothing of rSIM, and every file reads it from there
    (or from ``rsim_env`` itself)."""
    from rsim_env import Problem

    assert Problem.__module__ == "rsim_env.problem"
    assert not {n for n in imported_modules(ROOT / "rsim_env" / "problem.py") if n.split(".")[0] == "rsim_env"}
    files = [p for d in ("rsim_env", "agents", "algos", "benchmarks", "studies", "tests", "integrations")
             for p in (ROOT / d).rglob("*.py") if "__pycache__" not in p.parts]
    assert [str(p.relative_to(ROOT)) for p in files
            if "rsim_env.sources.problems.Problem" in imported_modules(p)] == []


LAYERS_PROBE = (("bottom", ("low",), ""), ("top", ("high", "__init__"), ""))


def test_the_layer_check_sees_upward_and_private_imports(tmp_path):
    """The checkers themselves: an upward import (lazy, relative) and another package's private name are found; the
    same imports pointing down, or a package's own private helper, are not."""
    pkg = tmp_path / "pkg"
    (pkg / "low").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "low" / "__init__.py").write_text("")
    (pkg / "low" / "a.py").write_text("from ._b import _helper\n\ndef f():\n    from ..high import g\n")
    (pkg / "low" / "_b.py").write_text("_helper = 1\n")
    (pkg / "high.py").write_text("from .low.a import _secret\nfrom .low import a\n\ndef g():\n    pass\n")
    assert layer_violations("pkg", LAYERS_PROBE, root=tmp_path) == ["pkg.low.a (bottom) imports pkg.high (top)"]
    assert private_imports("pkg", root=tmp_path) == ["pkg.high imports pkg.low.a._secret"]
    (pkg / "extra.py").write_text("")
    assert layer_violations("pkg", LAYERS_PROBE, root=tmp_path)[0] == "pkg.extra is in no layer: add 'extra' to one"
