"""Imports point down: rsim_env <- agents <- algos <- benchmarks <- studies (a static check over the source).

Every ``import`` / ``from ... import`` in a module counts, including those inside functions (lazy
imports are still dependencies). Relative imports are resolved against the module's package.
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
LEARNERS = ("algos/stackelberg.py", "algos/grpo_baseline.py", "algos/planner_only.py")


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


def test_learners_do_not_import_the_registry():
    """The registry (algos.learners) imports the learners; they take StepPlan from algos.step_plan."""
    bad = [f"{p} imports {n}" for p in LEARNERS for n in imported_modules(ROOT / p)
           if n == "algos.learners" or n.startswith("algos.learners.")]
    assert bad == []


def test_the_check_sees_lazy_and_relative_imports(tmp_path):
    """The checker itself: upward imports inside a function, written relatively, are found."""
    probe = tmp_path / "agents" / "sub" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text("def f():\n    from ...algos import trainer\n    from .. import loading\n    import studies.paper\n")
    names = imported_modules(probe, root=tmp_path)
    assert {"algos", "algos.trainer", "agents.loading", "studies.paper"} <= names
