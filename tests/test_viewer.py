"""``rsim view``: the static rollout page, from a real tiny run and a real eval dir, in a real browser."""

import json
from pathlib import Path

import pytest

from algos.cli import main as cli
from algos.viewer import ViewConfig, main
from algos.viewer.load import load_dir
from rsim_env.record import RECORD_VERSION, EpisodeRecord
from tests.browser import Browser, find_chromium

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "tests" / "artifacts"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    cli(["train", "--preset", "tiny", "--out", str(out)])
    return out


@pytest.fixture(scope="module")
def eval_dir(tmp_path_factory):
    """An ``rsim eval --out`` dir written now, under today's protocol (a scripted reasoner that is right
    half the time, so both outcomes and every mode's strategies are there to filter on)."""
    out = tmp_path_factory.mktemp("eval")
    cli(["eval", "--reasoner", "template:0.5", "--data", "rg:basic_arithmetic", "--limit", "8",
         "--modes", "none,fixed:1,3,8,random", "--set", "env.max_steps=4", "--no-progress", "--out", str(out)])
    return out


def test_run_dir_groups_rollouts_and_reads_curves(run_dir):
    data = load_dir(run_dir)
    rows = [json.loads(x) for x in (run_dir / "samples.jsonl").read_text().splitlines()]
    assert data.origin == "run" and sum(len(g.rollouts) for g in data.groups) == len(rows)
    assert {"planner/reward", "reasoner/reward", "rewards/acc/mean"} <= set(data.curves)
    r, row = data.groups[0].rollouts[0], rows[0]
    assert r.steps == row["steps"] and r.components == row["components"] and r.rewards == row["rewards"]
    # a sample row is a versioned episode record: question, injected texts and detection are in the file
    assert row["version"] == RECORD_VERSION and row["question"] and data.groups[0].question == row["question"]
    assert r.injected == row["injected"] and len(r.injected) == len(r.steps) and not r.detected_computed


def test_page_is_self_contained_and_escapes_model_text(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    evil = "<script>alert(1)</script><img src=x onerror=alert(2)> \\boxed{1}"
    row = EpisodeRecord("p/0", "math", "q", "1", strategies=(8,), injected=("",), steps=(evil,), shown_steps=(evil,),
                        extracted="1", correct=True, step=1, rewards={"planner": 0.0, "reasoner": 3.0},
                        components={"acc": 1.0, "format": 1.0, "follow": 1.0, "terminal": 1.0, "penalty": -1.0})
    record = EpisodeRecord("p/1", "math", evil, "1", protocol="chat+lead", strategies=(8,), injected=(evil,),
                           steps=("1}.",), shown_steps=(evil + "1}.",), correct=True, step=1)  # question and lead-in too
    (d / "samples.jsonl").write_text(row.to_json() + "\n" + record.to_json() + "\n")
    out = main(ViewConfig(str(d), str(tmp_path / "v.html")))
    html = Path(out["out"]).read_text()
    assert "<script>alert" not in html and "<img src=x" not in html and "&lt;script&gt;alert(1)" in html
    assert html.count("&lt;script&gt;alert(1)") == 3  # the step, the question, the injected text
    assert "http://" not in html and "https://" not in html  # no CDN, nothing fetched
    assert "default-src 'none'" in html and out["curves"] == 0


def test_cli_hook_and_bad_dirs(tmp_path, capsys, eval_dir):
    out = cli(["view", str(eval_dir), "--out", str(tmp_path / "eval.html")])
    assert out["rollouts"] == len((eval_dir / "episodes.jsonl").read_text().splitlines())
    assert "wrote" in capsys.readouterr().out
    with pytest.raises(ValueError, match="not a directory"):
        main(ViewConfig(str(tmp_path / "nope")))
    with pytest.raises(ValueError, match="neither samples.jsonl"):
        main(ViewConfig(str(tmp_path)))
    with pytest.raises(ValueError, match="ending in .html"):
        ViewConfig(str(tmp_path), "page.txt")


def _count(b):
    return int(b.eval("document.getElementById('count').textContent"))


def _select(b, sel_id, value):
    b.eval(f"var s=document.getElementById('{sel_id}'); s.value='{value}'; s.dispatchEvent(new Event('change')); 0")


@pytest.fixture
def browser():
    exe = find_chromium()
    if exe is None:
        pytest.skip("no Chromium on PATH (Debian/Ubuntu: apt-get install -y chromium); the browser test needs it")
    b = Browser(exe)
    yield b
    b.close()


def test_eval_page_in_a_real_browser(browser, tmp_path, eval_dir):
    page = Path(main(ViewConfig(str(eval_dir), str(tmp_path / "eval.html")))["out"])
    rows = [json.loads(x) for x in (eval_dir / "episodes.jsonl").read_text().splitlines()]
    browser.open(page.as_uri())
    assert browser.errors == []
    assert _count(browser) == len(rows)
    _select(browser, "f-outcome", "correct")
    assert _count(browser) == sum(r["correct"] for r in rows) > 0
    assert browser.eval("[...document.querySelectorAll('.card:not(.hidden)')].every(c => c.dataset.outcome === 'correct')")
    _select(browser, "f-outcome", "")
    _select(browser, "f-mode", "fixed:1,3,8")
    _select(browser, "f-strategy", "3")
    expect = sum(r["mode"] == "fixed:1,3,8" and (3 in r["strategies"] or any(3 in d for d in r["detected"])) for r in rows)
    assert _count(browser) == expect > 0
    # the question and the injected lead-in are on the page, the lead-in marked apart from the generated text
    card = "[...document.querySelectorAll('.card:not(.hidden)')][0]"
    group = f"{card}.closest('.group')"
    title, question = browser.eval(f"[{group}.querySelector('h2').innerText, {group}.querySelector('.question').innerText]")
    row = next(r for r in rows if title.startswith(r["problem_id"] + " "))
    assert row["question"].strip() and row["question"].split("\n")[0].strip() in question
    leads = browser.eval(f"[...{card}.querySelectorAll('.step .inj')].map(e => e.innerText)")
    term = [r for r in rows if r["mode"] == "fixed:1,3,8"][0]["injected"][-1]
    assert term and term.strip() in [x.strip() for x in leads]  # e.g. "The final answer is \\boxed{"
    assert browser.eval(f"getComputedStyle({card}.querySelector('.step .inj')).fontStyle") == "italic"
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "viewer_eval_filtered.png"
    browser.screenshot(str(shot))
    assert shot.stat().st_size > 10_000 and browser.errors == []
    print(f"screenshot: {shot}")


def test_run_page_with_curves_in_a_real_browser(browser, run_dir, tmp_path):
    page = Path(main(ViewConfig(str(run_dir), str(tmp_path / "run.html")))["out"])
    browser.open(page.as_uri())
    assert browser.errors == []
    assert browser.eval("document.querySelectorAll('svg.chart polyline').length") >= 3
    _select(browser, "f-outcome", "wrong")
    assert _count(browser) == browser.eval("document.querySelectorAll('.card[data-outcome=wrong]').length")
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "viewer_run.png"
    browser.screenshot(str(shot))
    assert shot.stat().st_size > 10_000 and browser.errors == []
    print(f"screenshot: {shot}")
