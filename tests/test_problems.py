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


BAD_LINES = {
    "not-an-object": (b'[1, 2]\n', "p.jsonl:2 is a JSON array, not an object"),
    "string-line": (b'"what is 2+2?"\n', "p.jsonl:2 is a JSON string, not an object"),
    "non-utf8": (b'{"question": "caf\xe9?", "answer": "1"}\n', "p.jsonl:2 is not UTF-8 \\(bad byte at column 18\\)"),
    "metadata-not-object": (b'{"question": "q", "answer": "1", "metadata": [1]}\n', "p.jsonl:2: 'metadata' must be an object, got array"),
    "null-question": (b'{"question": null, "answer": "1"}\n', "p.jsonl:2: 'question' must be a string, got null"),
    "null-answer": (b'{"question": "q", "answer": null}\n', "p.jsonl:2: 'answer' must be a string, got null"),
    "number-answer": (b'{"question": "q", "answer": 4}\n', "p.jsonl:2: 'answer' must be a string, got number"),
    "choices-string": (b'{"question": "q", "answer": "A", "choices": "abcd"}\n', "p.jsonl:2: 'choices' must be a list of strings"),
    "null-id": (b'{"id": null, "question": "q", "answer": "1"}\n', "p.jsonl:2: 'id' must be a string or an integer, got null"),
    "bad-answer-type": (b'{"question": "q", "answer": "1", "answer_type": "weird"}\n', "p.jsonl:2: Problem.answer_type='weird'"),
    "empty-question": (b'{"question": " ", "answer": "1"}\n', "p.jsonl:2: Problem .* has an empty question"),
    "code-tests-not-string": (b'{"question": "q", "answer": "", "kind": "code", "tests": ["assert f()"]}\n',
                              "p.jsonl:2: 'tests' must be a string, got array"),
}


@pytest.mark.parametrize("line,msg", list(BAD_LINES.values()), ids=list(BAD_LINES))
def test_jsonl_bad_line_names_file_and_line(tmp_path, line, msg):
    f = tmp_path / "p.jsonl"
    f.write_bytes(b'{"question": "1+1?", "answer": "2"}\n' + line)
    with pytest.raises(ValueError, match=msg):
        load_jsonl(f)


def test_jsonl_accepts_bom_and_integer_ids(tmp_path):
    f = tmp_path / "p.jsonl"
    f.write_bytes('\ufeff{"id": 7, "question": "caf\u00e9?", "answer": "1", "metadata": {"k": 1}}\n'.encode())
    (p,) = load_jsonl(f)
    assert p.id == "7" and p.question == "caf\u00e9?" and p.metadata == {"k": 1}
