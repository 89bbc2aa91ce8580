import json

import pytest

from rsim_env import Problem, default_source, load_jsonl


def test_default_source_deterministic_and_mixed():
    a, b = default_source(size=20, seed=3), default_source(size=20, seed=3)
    assert a == b and len(a) == 20
    assert {p.source for p in a} == {"reasoning_gym:gsm_symbolic", "reasoning_gym:basic_arithmetic"}
    assert default_source(size=20, seed=4) != a
    assert len({p.id for p in a}) == 20


def test_jsonl_loader(tmp_path):
    f = tmp_path / "probs.jsonl"
    f.write_text(json.dumps({"question": "1+1?", "answer": "2"}) + "\n\n"
                 + json.dumps({"id": "x", "question": "Pick", "answer": "B", "answer_type": "choice",
                               "choices": ["a", "b"]}) + "\n")
    ps = load_jsonl(f)
    assert ps[0].id == "probs/1" and ps[1].choices == ("a", "b") and ps[1].answer_type == "choice"


@pytest.mark.parametrize("content,msg", [("{bad", "not valid JSON"), ('{"question": "q"}', "lacks"), ("", "no problems")],
                         ids=["json", "missing_key", "empty"])
def test_jsonl_errors(tmp_path, content, msg):
    f = tmp_path / "p.jsonl"
    f.write_text(content)
    with pytest.raises(ValueError, match=msg):
        load_jsonl(f)


def test_problem_validation():
    with pytest.raises(ValueError, match="answer_type"):
        Problem(id="a", question="q", answer="1", answer_type="weird")
    with pytest.raises(TypeError, match="answer must be str"):
        Problem(id="a", question="q", answer=1)
