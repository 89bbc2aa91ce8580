"""Dataset loaders on fixture files in each hub dataset's exact column layout (no network)."""

from pathlib import Path

import pytest

from rsim_env.sources.data import load_problems
from rsim_env.answers import check

FIX = Path(__file__).parent / "fixtures" / "datasets"

CASES = [
    # kind, file, expected (answer, answer_type) of each row, choices of row 0
    ("gsm8k", "gsm8k.jsonl", [("72", "number"), ("7425000", "number")], ()),
    ("math", "math.jsonl", [("\\frac{3}{4}", "auto"), ("\\{-2, 2\\}", "auto")], ()),
    ("math500", "math500.jsonl", [("\\left( 3, \\frac{\\pi}{2} \\right)", "auto"), ("[2,5)", "auto")], ()),
    ("aime2024", "aime2024.json", [("204", "number"), ("33", "number")], ()),
    ("mmlu_pro", "mmlu_pro.parquet", [("B", "choice"), ("B", "choice")],
     ("Safe practices, Fear, Jealousy, Trivial", "Unsafe practices, Distress, Joy, Trivial",
      "Safe practices, Wants, Jealousy, Trivial")),
    ("theoremqa", "theoremqa.jsonl",
     [("6", "number"), ("True", "bool"), ("[1, 2, 3]", "list"), ("C", "choice"), ("0.0067", "number")], ()),
]


@pytest.mark.parametrize("kind,fname,expected,choices", CASES, ids=[c[0] for c in CASES])
def test_loader_reads_hub_layout(kind, fname, expected, choices):
    problems = load_problems(str(FIX / fname), kind=kind)
    assert [(p.answer, p.answer_type) for p in problems] == expected
    assert len({p.id for p in problems}) == len(problems)
    assert problems[0].choices == choices
    assert all(p.question.strip() for p in problems)


@pytest.mark.parametrize("kind,fname,expected,choices", CASES, ids=[c[0] for c in CASES])
def test_loaded_gold_checks_as_its_own_boxed_answer(kind, fname, expected, choices):
    for p in load_problems(str(FIX / fname), kind=kind):
        result = check(f"So the final answer is \\boxed{{{p.answer}}}.", p.answer, p.answer_type)
        assert result.correct, (p.id, result)


def test_limit_and_mmlu_pro_question_lists_options():
    (p,) = load_problems(str(FIX / "mmlu_pro.parquet"), kind="mmlu_pro", limit=1)
    assert "(B) Unsafe practices" in p.question


@pytest.mark.parametrize("name,kwargs,match", [
    ("nope", {}, "valid names"),
    (str(FIX / "math.jsonl"), {}, "lacks"),  # a hub layout without kind= is read as generic jsonl
    ("gsm8k", {"limit": 0}, "limit"),
    (str(FIX / "math.jsonl"), {"kind": "mathh"}, "kind"),
], ids=["unknown-name", "layout-needs-kind", "bad-limit", "bad-kind"])
def test_load_problems_errors(name, kwargs, match):
    with pytest.raises(ValueError, match=match):
        load_problems(name, **kwargs)


def test_missing_column_is_named(tmp_path):
    bad = tmp_path / "x.jsonl"
    bad.write_text('{"question": "q", "solution": "s"}\n')
    with pytest.raises(ValueError, match="answer"):
        load_problems(str(bad), kind="gsm8k")


def test_missing_file_is_reported(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_problems(str(tmp_path / "absent.jsonl"), kind="gsm8k")
