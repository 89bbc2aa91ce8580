"""Every ```python block of the README runs (so the README cannot rot).

Each block runs in a fresh interpreter from a temporary directory. By default the checkout is put
on ``PYTHONPATH``; with ``RSIM_TEST_INSTALLED=1`` (the CI's wheel step) it is not, so the blocks
import the *installed* package. A block whose first line starts with ``# not run by tests`` is
skipped with that line as the reason; blocks that load the real default model are ``slow``.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), flags=re.S)


def _params():
    for i, code in enumerate(BLOCKS):
        first = code.splitlines()[0]
        marks = []
        if first.startswith("# not run by tests"):
            marks.append(pytest.mark.skip(reason=first.lstrip("# ")))
        elif 'from_spec("default"' in code:
            marks.append(pytest.mark.slow)
        yield pytest.param(code, id=f"block{i}-{re.sub(r'[^a-z]+', '_', first.lower())[:30]}", marks=marks)


def test_readme_has_python_blocks():
    assert len(BLOCKS) >= 5


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
