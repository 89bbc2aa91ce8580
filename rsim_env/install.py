"""Install-time identity checks: our top-level packages really are ours; heavy parts say what they need.

* **Name clashes.** rSIM ships the generic top-level packages ``agents``, ``algos`` and
  ``benchmarks`` (the layout is fixed by design). Each of our packages carries the line
  ``RSIM_PACKAGE = "<name>"`` in its ``__init__.py``; :func:`check_top_level_packages` (run by
  ``import rsim_env``) finds each name without importing it and, when the marker is missing, tells
  the two causes apart. Most often a package or module of the user's own (``./agents/``) shadows
  ours because its directory comes first on ``sys.path`` (the current directory does when you run
  ``python`` there): the error names its path and says to rename it or run from elsewhere. Rarer,
  another distribution with a package of the same name (e.g. ``openai-agents`` ships ``agents``)
  was installed over ours, and pip overwrote one with the other without a word: the error names the
  distribution and the fix (a separate virtual environment).
* **Heavy parts without their dependencies.** An env-only install (``pip install --no-deps rsim``
  plus the env's dependencies) has no torch. :func:`guard_heavy_imports` (run by our packages'
  ``__init__``) turns the bare ``No module named 'torch'`` raised while importing e.g.
  ``agents.reasoner`` into an error naming the extra to install.

Standard library only.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.metadata
import importlib.util
import sys
from pathlib import Path
from typing import Any

__all__ = ["OUR_PACKAGES", "HEAVY_MODULES", "TRAIN_EXTRA_HINT", "PackageClashError", "check_top_level_packages",
           "guard_heavy_imports"]

OUR_PACKAGES = ("agents", "algos", "benchmarks")
MARKER = "RSIM_PACKAGE ="
HEAVY_MODULES = frozenset({"torch", "peft", "transformers", "accelerate", "safetensors", "tensorboard", "datasets",
                           "matplotlib", "gguf", "tqdm", "psutil"})
"""Top-level modules of the ``train`` extra (what ``rsim_env`` runs without)."""
TRAIN_EXTRA_HINT = "pip install 'rsim[train]'   (from a checkout: pip install -e '.[train]')"


class PackageClashError(ImportError):
    """A top-level package rSIM ships is another distribution's."""


def _owners(name: str) -> list[str]:
    try:
        owners = importlib.metadata.packages_distributions().get(name, [])
    except Exception:  # metadata of some broken distribution: naming the owner is best effort
        return []
    return sorted({o for o in owners if o.lower() != "rsim"})


def _owning(name: str, found: Path) -> list[str]:
    """Installed distributions (other than rSIM) whose files include ``found``."""
    owners = []
    for owner in _owners(name):
        try:
            files = importlib.metadata.distribution(owner).files or []
            if any(Path(str(f.locate())).resolve() == found for f in files):
                owners.append(owner)
        except Exception:  # metadata of some broken distribution: naming the owner is best effort
            continue
    return owners


def _clash_message(name: str, found: Path) -> str:
    owners = _owning(name, found)
    ours = Path(__file__).resolve().parents[1] / name
    if not owners:  # nothing installed put it there: a local package on sys.path before ours
        where = found.parent if found.name == "__init__.py" else found
        theirs = f" (rSIM's is {ours})" if ours.is_dir() else ""
        return (f"A local package shadows rSIM's {name!r}: `import {name}` finds {where}, which is not rSIM's{theirs}, "
                f"because its directory {where.parent} comes before rSIM's on sys.path (the current directory does when "
                f"you run Python there). rSIM needs {', '.join(OUR_PACKAGES)} as top-level names. Fix: rename your "
                f"package (e.g. my_{name}) or run from another directory.")
    who = ", ".join(repr(o) for o in owners)
    return (f"The top-level package {name!r} at {found} is not rSIM's: it belongs to the distribution {who}, which "
            f"ships a package of the same name and was installed over rSIM's (pip overwrote one with the other). rSIM "
            f"needs {', '.join(OUR_PACKAGES)} as top-level names, so install rSIM into its own virtual environment: "
            f"python -m venv .venv-rsim && . .venv-rsim/bin/activate && pip install rsim. (To keep this environment "
            f"instead: pip uninstall {' '.join(owners)} && pip install --force-reinstall --no-deps rsim.)")


def check_top_level_packages(names: tuple[str, ...] = OUR_PACKAGES) -> None:
    """Raise :class:`PackageClashError` if ``agents`` / ``algos`` / ``benchmarks`` resolves to a package not ours.

    The message names the cause (a local package shadowing ours, or another distribution installed
    over ours) and its fix. A name that is not found at all passes (nothing to clash with), and so does a
    bare directory without ``__init__.py``: Python prefers any regular package to it.
    """
    for name in names:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None or not spec.origin or spec.origin in ("namespace", "built-in", "frozen"):
            continue
        found = Path(spec.origin).resolve()
        if found.is_file():
            with open(found, encoding="utf-8", errors="replace") as f:
                if MARKER in f.read(4096):
                    continue
        raise PackageClashError(_clash_message(name, found))


class _HintLoader(importlib.abc.Loader):
    """Delegates to the real loader; a missing heavy module becomes an error naming the extra."""

    def __init__(self, loader: Any, fullname: str) -> None:
        self._loader, self._fullname = loader, fullname

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        try:
            self._loader.exec_module(module)
        except ModuleNotFoundError as e:
            top = (e.name or "").split(".")[0]
            if top not in HEAVY_MODULES or getattr(e, "_rsim_hint", False):
                raise
            err = ModuleNotFoundError(
                f"{self._fullname} needs {top!r}, which is not installed (an env-only install of rSIM: rsim_env and "
                f"agents.scripted.policies run without it). Install the training dependencies: {TRAIN_EXTRA_HINT}", name=e.name)
            err._rsim_hint = True  # type: ignore[attr-defined]
            raise err from e

    def __getattr__(self, item: str) -> Any:  # get_source, get_code, ... for tracebacks and inspect
        return getattr(self._loader, item)


class _HintFinder(importlib.abc.MetaPathFinder):
    def __init__(self, prefixes: tuple[str, ...]) -> None:
        self.prefixes = prefixes

    def find_spec(self, fullname, path, target=None):
        if not fullname.startswith(self.prefixes):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None and not isinstance(spec.loader, _HintLoader):
            spec.loader = _HintLoader(spec.loader, fullname)
        return spec


def _missing_heavy() -> bool:
    for name in ("torch", "transformers", "accelerate"):
        try:
            if importlib.util.find_spec(name) is None:
                return True
        except (ImportError, ValueError):  # sys.modules[name] is None: blocked on purpose
            return True
    return False


def guard_heavy_imports(package: str) -> None:
    """In an install without torch/transformers/accelerate, make ``package``'s heavy submodules name the extra."""
    if not _missing_heavy():
        return
    prefix = package + "."
    for f in sys.meta_path:
        if isinstance(f, _HintFinder):
            if prefix not in f.prefixes:
                f.prefixes = (*f.prefixes, prefix)
            return
    sys.meta_path.insert(0, _HintFinder((prefix,)))
