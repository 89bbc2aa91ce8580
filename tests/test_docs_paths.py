"""Every file path and module the README and docs/*.md name exists, so a reader who follows one finds it.

Three forms are read from each page (code blocks included):

* a repository path: ``rsim_env/env.py``, ``agents/scripted/``, ``docs/atlas_results/atlas.json`` (``*`` globs and
  ``{a,b}`` alternatives must match at least one file);
* a dotted name under one of our packages: ``rsim_env.sources.data`` (a module: its file or package exists),
  ``rsim_env.record.EpisodeRecord`` (the longest module prefix exists and defines the next name at its top level,
  read from the source without importing it);
* ``python -m MODULE``: the module's file exists.

Names that look like paths but are not (placeholders a user fills in) go in :data:`ALLOWED`, each with why.
"""

import ast
import itertools
import re
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TOPS = ("rsim_env", "agents", "algos", "benchmarks", "studies", "tests", "tools", "integrations")
PATH = re.compile(r"(?<![\w./~$-])((?:" + "|".join(TOPS + ("docs", r"\.ci", "paper")) + r")/(?:[\w./*+-]|\{[\w.,*-]*\})*)")
DOTTED = re.compile(r"(?<![\w./~$-])((?:" + "|".join(TOPS[:5] + ("tools",)) + r")(?:\.[A-Za-z_]\w*)+)")
MODULE_RUN = re.compile(r"python -m ([\w.]+)")
FILE_SUFFIXES = {"md", "py", "json", "jsonl", "gz", "png", "sh", "txt", "toml", "yml", "yaml", "gguf", "html", "csv"}

ALLOWED: dict[str, str] = {
    "algos/rloo.py": "the learner docs/extending.md shows how to add (tests/test_extending.py writes it to a temp dir)",
    "tests/artifacts/": "the screenshots tests/test_viewer.py writes when it runs (not committed)",
}
"""Names a page may use that are not repository paths or modules, each with the reason."""


def _expand(path: str) -> list[str]:
    """``a/{b,c}.json`` -> ``a/b.json``, ``a/c.json``."""
    parts = re.split(r"\{([^{}]*)\}", path)
    fixed, choices = parts[0::2], [p.split(",") for p in parts[1::2]]
    return ["".join(itertools.chain.from_iterable(zip(fixed, combo + ("",)))) for combo in
            itertools.product(*choices)] if choices else [path]


def _path_exists(path: str) -> bool:
    for p in _expand(path.rstrip(".,;:")):
        if "*" in p:
            if not list(ROOT.glob(p.rstrip("/"))):
                return False
        elif not (ROOT / p).exists():
            return False
    return True


def _module_file(dotted: str) -> Path | None:
    base = ROOT.joinpath(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@lru_cache(maxsize=None)
def _top_level_names(path: Path) -> frozenset[str]:
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return frozenset(names)


def _dotted_exists(name: str) -> bool:
    parts = name.split(".")
    if parts[-1] in FILE_SUFFIXES:  # a file name such as agents.md, not a module
        return True
    for i in range(len(parts), 0, -1):
        module = _module_file(".".join(parts[:i]))
        if module is not None:
            return i == len(parts) or parts[i] in _top_level_names(module)
    return False


def names_on(page: Path) -> dict[str, str]:
    """Every path, dotted name and ``python -m`` module the page names -> its kind."""
    text = page.read_text(encoding="utf-8")
    template = "$<"  # `stackelberg_s$s.json`, `last_round_s<k>`: a name a shell variable or the reader completes
    found = {m.group(1): "path" for m in PATH.finditer(text) if text[m.end():m.end() + 1] not in template}
    found.update({m: "dotted" for m in DOTTED.findall(text) if m not in found})
    found.update({m: "module" for m in MODULE_RUN.findall(text) if m.split(".")[0] in TOPS})
    return found


def missing_on(page: Path) -> list[str]:
    missing = []
    for name, kind in sorted(names_on(page).items()):
        if name in ALLOWED:
            continue
        ok = {"path": _path_exists, "dotted": _dotted_exists, "module": lambda n: _module_file(n) is not None}[kind]
        if not ok(name):
            missing.append(f"{kind} {name}")
    return missing


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_named_path_and_module_exists(page):
    missing = missing_on(page)
    assert not missing, f"{page.relative_to(ROOT)} names what does not exist: {missing}"


@pytest.mark.parametrize("text, missing", [
    ("see `agents/scripted_families.py`", ["path agents/scripted_families.py"]),
    ("see `agents/scripted/families.py` and `agents/scripted/`", []),
    ("`rsim_env.sources.data.load_problems(spec)`", []),
    ("`rsim_env.sources.data.no_such_function`", ["dotted rsim_env.sources.data.no_such_function"]),
    ("`python -m benchmarks.plans.nothing_here`", ["module benchmarks.plans.nothing_here"]),
    ("`docs/plan_table_results/{curriculum,heldout}_L2.json`, [agents.md](agents.md)", []),
    ("`docs/plan_table_results/{curriculum,nothing}_L2.json`", ["path docs/plan_table_results/{curriculum,nothing}_L2.json"]),
    ("`docs/contextual_results/*head_only*.json.gz`", []),
    ("`docs/atlas_results/atlas.json,docs/atlas_results/nothing.json`", ["path docs/atlas_results/nothing.json"]),
    ("`--out runs/x/stackelberg_s$s.json`, `docs/training_results/last_round_s<k>`", []),
], ids=["wrong-file", "file-and-folder", "function", "no-function", "no-module", "braces", "braces-missing", "glob",
        "comma-list", "templates"])
def test_the_checker_finds_what_is_missing(tmp_path, text, missing):
    page = tmp_path / "page.md"
    page.write_text(text, encoding="utf-8")
    assert missing_on(page) == missing
