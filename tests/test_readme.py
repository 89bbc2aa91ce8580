"""The README and the pages its sections moved to cannot rot: their code runs, their commands parse.

* Every ```python block of the README and of :data:`PAGES` runs in a fresh interpreter from a temporary
  directory. By default the checkout is put on ``PYTHONPATH``; with ``RSIM_TEST_INSTALLED=1`` (the CI's
  wheel step) it is not, so the blocks import the *installed* package. A block whose first line starts
  with ``# not run by tests`` is skipped with that line as the reason; blocks that load the real default
  model are ``slow``.
* Every command of the README's ```bash blocks and of the ending of ``make demo`` it shows exists: a
  ``make`` target is in the Makefile, a ``python -m`` module imports from the checkout, and every ``rsim``
  command parses with the parser of its subcommand, from a directory where the runs it names exist.
* The ``make demo`` ending shown is what :func:`algos.summary.summary_text` prints for the demo preset.

* The README is a front door (at most 200 lines) and it and docs/results.md give one current answer per
  study: the adaptive study's is the block ``rsim study --docs`` generates, and no line tells an answer's history.

Prose is not pinned: the figures quoted from result files are checked where the studies' tests live, the docs
index by tests/test_docs_index.py, the paths and modules the docs name by tests/test_docs_paths.py.
"""

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
PAGES = ("README.md", "docs/environment.md", "docs/agents.md", "docs/answers.md", "docs/serving.md")
"""Pages whose Python blocks run: the README and the pages that took its sections with code."""


def _blocks(lang: str, text: str) -> list[str]:
    """The bodies of the fenced blocks tagged ``lang`` ("" = untagged), read fence by fence."""
    found, body, tag = [], None, ""
    for line in text.splitlines(keepends=True):
        if line.startswith("```"):
            if body is None:
                body, tag = [], line[3:].strip()
            else:
                if tag == lang:
                    found.append("".join(body))
                body = None
        elif body is not None:
            body.append(line)
    return found


def _params():
    for page in PAGES:
        for i, code in enumerate(_blocks("python", (ROOT / page).read_text(encoding="utf-8"))):
            first = code.splitlines()[0]
            marks = []
            if first.startswith("# not run by tests"):
                marks.append(pytest.mark.skip(reason=first.lstrip("# ")))
            elif 'from_spec("default"' in code:
                marks.append(pytest.mark.slow)
            name = f"{Path(page).stem}-block{i}-{re.sub(r'[^a-z]+', '_', first.lower())[:30]}"
            yield pytest.param(code, id=name, marks=marks)


def commands(text: str) -> list[str]:
    """The command lines of a block: continuation lines joined, comments and blank lines dropped."""
    joined = re.sub(r"\\\n\s*", " ", text)
    return [line.split("  #")[0].split(" # ")[0].strip() for line in joined.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def readme_commands() -> list[str]:
    return [c for block in _blocks("bash", README) for c in commands(block)]


def demo_ending() -> str:
    """The plain ``` block the README shows as the end of ``make demo``."""
    blocks = [b for b in _blocks("", README) if b.startswith("rsim train: ")]
    assert len(blocks) == 1, "the README shows the end of `make demo` in one plain ``` block"
    return blocks[0].rstrip("\n")


def test_readme_has_python_blocks():
    assert len(_blocks("python", README)) >= 2 and len(list(_params())) >= 8


STUDY_BLOCK = ("<!-- study:adaptive begin (generated: rsim study --preset adaptive --stage report --replicate --docs) -->\n",
               "<!-- study:adaptive end -->")
"""The markers of the adaptive study's generated answer (``rsim study ... --docs`` fills what is between them)."""

HISTORY = re.compile(r"\b(not yet|latest:|now yes|earlier:)", re.I)
"""How a page tells the history of an answer instead of the answer (history lives in git and the CHANGELOG)."""


def test_readme_is_a_front_door():
    """At most 200 lines, and the two commands within the first 30."""
    lines = README.splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; move detail to docs/ (docs/index.md links it)"
    head = "\n".join(lines[:30])
    assert "make demo" in head and "make test" in head


@pytest.mark.parametrize("page", ["README.md", "docs/results.md"])
def test_one_current_answer_per_study(page):
    """The adaptive study's answer is one generated block (with a link to how to run it), and no sentence tells
    the history of an answer."""
    text = (ROOT / page).read_text(encoding="utf-8")
    begin, end = STUDY_BLOCK
    assert text.count(begin) == 1 and text.count(end) == 1 and text.index(begin) < text.index(end), \
        f"{page}: keep exactly one adaptive-study block, {begin.strip()} ... {end}"
    assert "study.md" in text, f"{page}: link docs/study.md beside the adaptive study's answer"
    hits = [line for line in text.splitlines() if HISTORY.search(line)]
    assert not hits, f"{page} tells the history of an answer (keep it in git and the CHANGELOG): {hits}"


@pytest.mark.parametrize("code", list(_params()))
def test_readme_block_runs(code, tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    if os.environ.get("RSIM_TEST_INSTALLED") != "1":
        env["PYTHONPATH"] = str(ROOT)
    else:
        env.pop("PYTHONPATH", None)
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=900)
    assert out.returncode == 0, f"README block failed:\n{code}\n--- stderr ---\n{out.stderr[-3000:]}"


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory):
    """A directory holding the runs the README's commands name (tiny ones: seconds), as the cwd for parsing."""
    import algos.cli as cli

    where = tmp_path_factory.mktemp("readme_cwd")
    named = {m for c in [*readme_commands(), demo_ending()] for m in re.findall(r"\bruns/\w+", c)}
    for run in sorted(named):
        cli.main(["train", "--preset", "tiny", "--steps", "1", "--out", str(where / run)])
    return where


def _parse_rsim(argv: list[str]) -> None:
    import algos.cli as cli
    from algos import evaluation, viewer

    parsers = {"train": lambda a: cli.parse(["train", *a]), "eval": evaluation.parse, "view": viewer.parse}
    assert argv[1] in parsers, f"rsim {argv[1]}: not a subcommand the README should show"
    parsers[argv[1]](argv[2:])


def test_every_readme_command_exists_or_parses(runs_dir, monkeypatch, capsys):
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    shown = readme_commands() + commands(demo_ending().split("\nnext:\n", 1)[1])
    kinds = set()
    monkeypatch.chdir(runs_dir)
    for command in shown:
        argv = shlex.split(command)
        kinds.add(argv[0])
        if argv[0] == "make":
            assert re.search(rf"^{re.escape(argv[1])}:", makefile, re.M), f"no Makefile target: {command}"
        elif argv[:2] == ["python", "-m"]:
            assert importlib.util.find_spec(argv[2]) is not None, f"no module: {command}"
        elif argv[0] == "rsim":
            _parse_rsim(argv)
        elif argv[:2] == ["accelerate", "launch"]:
            assert "-m" in argv and argv[argv.index("-m") + 1] == "algos.cli", f"launches what? {command}"
            _parse_rsim(["rsim", *argv[argv.index("-m") + 2:]])
        else:
            assert argv[0] == "tensorboard", f"a README command this test does not know how to check: {command}"
    assert {"make", "rsim"} <= kinds


def test_demo_ending_is_what_rsim_train_prints():
    """Every line of the shown ending but the first two (time and rewards of one run) is summary_text's for
    the demo preset, so a change to the summary shows up here."""
    from algos.config import resolve
    from algos.summary import summary_text

    shown = demo_ending().splitlines()
    steps = int(re.match(r"rsim train: (\d+) steps", shown[0]).group(1))
    cfg = resolve("demo", {})
    want = summary_text(cfg, {"steps": steps, "output_dir": cfg.train.output_dir, "seconds": 1.0,
                              "seconds_per_step": 0.1, "checkpoint": f"runs/demo/checkpoints/step_{steps:08d}",
                              "last": {"planner/reward": 0.0, "reasoner/reward": 0.0}}).splitlines()
    assert shown[0].split(" in ")[0] == want[0].split(" in ")[0]
    assert shown[2:] == want[2:]
