"""``rsim_env.sources.data.load_problems``: one spec grammar for every problem source."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rsim_env.sources import loaders
from rsim_env.sources.data import check_spec, load_problems
from rsim_env.problem import Problem
from rsim_env.sources.problems import default_source

FIX = Path(__file__).parent / "fixtures" / "datasets"
HUB_SETS = ("gsm8k", "math", "math500", "aime2024", "mmlu_pro", "theoremqa")


def test_default_is_the_embedded_source():
    assert load_problems("default", limit=6, seed=2) == default_source(size=6, seed=2)


def test_rg_tasks_and_options():
    ps = load_problems("rg:basic_arithmetic+gsm_symbolic", limit=4, seed=1)
    assert [p.source for p in ps] == ["reasoning_gym:basic_arithmetic", "reasoning_gym:gsm_symbolic"] * 2
    three = load_problems("rg:basic_arithmetic?min_terms=3&max_terms=3&operators=[\"+\"]", limit=5, seed=1)
    for p in three:  # the options reached the generator: three added terms
        expr = p.question.split("=")[0].split(":")[-1]
        assert expr.count("+") == 2, p.question


def test_tiny_source_is_seeded_digit_sums():
    a, b = load_problems("tiny", limit=5, seed=3), load_problems("tiny", limit=5, seed=3)
    assert a == b and all(int(p.answer) <= 9 for p in a)


@pytest.mark.parametrize("name", HUB_SETS)
def test_every_hub_set_is_a_valid_spec(name):
    check_spec(name)  # no download: resolved against rsim_env.sources.loaders.LOADERS


@pytest.mark.parametrize("kind,fname", [("gsm8k", "gsm8k.jsonl"), ("mmlu_pro", "mmlu_pro.parquet")])
def test_local_file_in_a_hub_layout(kind, fname):
    assert load_problems(str(FIX / fname), kind=kind) == loaders.LOADERS[kind](source=str(FIX / fname))


def test_generic_local_files(tmp_path):
    rows = [{"question": "1+1?", "answer": "2"}, {"question": "2+2?", "answer": "4", "id": "b"}]
    (tmp_path / "p.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    (tmp_path / "p.json").write_text(json.dumps(rows))
    import pandas as pd

    pd.DataFrame(rows).to_parquet(tmp_path / "p.parquet")
    for ext in ("jsonl", "json", "parquet"):
        ps = load_problems(str(tmp_path / f"p.{ext}"))
        assert [(p.question, p.answer) for p in ps] == [("1+1?", "2"), ("2+2?", "4")], ext
    assert load_problems(str(tmp_path / "p.parquet"), limit=1)[0].answer == "2"


def test_datasets_object_and_problem_list():
    import datasets

    ds = datasets.Dataset.from_list([{"question": "3+4?", "answer": "7"}, {"question": "1+0?", "answer": "1"}])
    ps = load_problems(ds, limit=1)
    assert len(ps) == 1 and ps[0].answer == "7"
    given = [Problem(id="x", question="q", answer="a")]
    assert load_problems(given) == given


@pytest.mark.parametrize("spec,kwargs,err,match", [
    ("gsm9k", {}, ValueError, "unknown data spec"),
    ("rg:", {}, ValueError, "names no task"),
    ("rg:basic_arithmetic?min_terms", {}, ValueError, "key=value"),
    ("tiny", {"limit": 0}, ValueError, "limit"),
    ("missing.parquet", {}, FileNotFoundError, "No data file"),
], ids=["unknown", "rg-empty", "rg-option", "limit", "missing-file"])
def test_errors(spec, kwargs, err, match):
    with pytest.raises(err, match=match):
        load_problems(spec, **kwargs)


def test_rows_without_answer_are_named(tmp_path):
    import pandas as pd

    pd.DataFrame([{"question": "q", "solution": "s"}]).to_parquet(tmp_path / "x.parquet")
    with pytest.raises(ValueError, match="lacks"):
        load_problems(str(tmp_path / "x.parquet"))


BAD_FILES = {
    "json-null-question": ("p.json", b'[{"question": "q", "answer": "1"}, {"question": null, "answer": "2"}]',
                           r"p row 1: 'question' must be text, got NoneType"),
    "json-row-not-object": ("p.json", b'[{"question": "q", "answer": "1"}, "just text"]', r"p row 1 is a str, not an object"),
    "json-metadata-list": ("p.json", b'[{"question": "q", "answer": "1", "metadata": [1]}]', r"p row 0: .*'metadata' an object"),
    "json-not-utf8": ("p.json", b'[{"question": "caf\xe9", "answer": "1"}]', r"p.json is not a UTF-8 JSON file"),
    "hub-layout-jsonl-bad-line": ("g.jsonl", b'{"question": "q", "answer": "#### 1"}\n{oops\n', r"g.jsonl:2 is not valid JSON"),
    "hub-layout-jsonl-not-utf8": ("g.jsonl", b'{"question": "caf\xe9", "answer": "#### 1"}\n', r"g.jsonl:1 is not UTF-8"),
}


@pytest.mark.parametrize("fname,content,match", list(BAD_FILES.values()), ids=list(BAD_FILES))
def test_malformed_local_files_name_the_row_or_line(tmp_path, fname, content, match):
    (tmp_path / fname).write_bytes(content)
    kwargs = {"kind": "gsm8k"} if fname == "g.jsonl" else {}
    with pytest.raises(ValueError, match=match):
        load_problems(str(tmp_path / fname), **kwargs)


def test_numeric_answers_of_generic_rows_stay_accepted(tmp_path):
    (tmp_path / "p.json").write_text(json.dumps([{"question": "2+2?", "answer": 4}]))
    assert load_problems(str(tmp_path / "p.json"))[0].answer == "4"


def test_mix_parts_may_carry_list_options():
    """A mix splits at top-level commas only: an rg part's list option (``operators=["+","-"]``) stays whole."""
    from rsim_env.sources.data import load_problems, split_top

    assert split_top('rg:basic_arithmetic?operators=["+","-"]&min_terms=2,tiny') == [
        'rg:basic_arithmetic?operators=["+","-"]&min_terms=2', "tiny"]
    assert split_top("a,'x,y',b") == ["a", "'x,y'", "b"]
    mixed = load_problems('mix:rg:basic_arithmetic?min_terms=2&max_terms=2&min_digits=1&max_digits=1&operators=["+","-"],tiny', 4)
    assert [p.source for p in mixed][:2] == ["reasoning_gym:basic_arithmetic", "tiny"]
    assert all("*" not in p.question and "/" not in p.question for p in mixed if p.source != "tiny")
    with pytest.raises(ValueError, match="unbalanced bracket"):
        load_problems('mix:rg:basic_arithmetic?operators=["+",tiny', 2)
