"""Hugging Face datasets and Arrow/Parquet files as problem sources, with column mappings."""

import pytest

from rsim_env.sources.data import check_spec, load_problems

datasets = pytest.importorskip("datasets", reason="datasets is part of the 'train' extra")
pa = pytest.importorskip("pyarrow")

ROWS = [{"problem": "What is 2 + 2?", "solution": "4", "type": "number"},
        {"problem": "What is 3 * 3?", "solution": "9", "type": "number"}]
MAP = {"question": "problem", "answer": "solution", "answer_type": "type"}


def test_dataset_with_a_column_mapping():
    ds = datasets.Dataset.from_list(ROWS)
    ps = load_problems(ds, columns=MAP)
    assert [(p.question, p.answer, p.answer_type) for p in ps] == [("What is 2 + 2?", "4", "number"),
                                                                   ("What is 3 * 3?", "9", "number")]
    assert load_problems(ds, limit=1, columns=MAP)[0].answer == "4"
    with pytest.raises(ValueError, match="lacks \\['question', 'answer'\\]"):
        load_problems(ds)
    with pytest.raises(ValueError, match="no column 'answer_text'"):
        load_problems(ds, columns={"question": "problem", "answer": "answer_text"})
    with pytest.raises(ValueError, match="keys must be Problem fields"):
        load_problems(ds, columns={"prompt": "problem"})


def test_parquet_and_arrow_files_with_a_query_mapping(tmp_path):
    ds = datasets.Dataset.from_list(ROWS)
    ds.to_parquet(str(tmp_path / "d.parquet"))
    with pa.OSFile(str(tmp_path / "d.arrow"), "wb") as sink:  # Arrow IPC *file* format
        table = pa.Table.from_pylist(ROWS)
        with pa.ipc.new_file(sink, table.schema) as w:
            w.write_table(table)
    ds.save_to_disk(str(tmp_path / "saved"))  # datasets' own .arrow files (IPC *stream* format)
    saved = next((tmp_path / "saved").glob("*.arrow"))
    for path in (tmp_path / "d.parquet", tmp_path / "d.arrow", saved):
        spec = f"{path}?question=problem&answer=solution"
        check_spec(spec)
        ps = load_problems(spec)
        assert [p.answer for p in ps] == ["4", "9"], path
    assert load_problems(str(tmp_path / "d.arrow"), columns=MAP)[0].answer_type == "number"
    with pytest.raises(ValueError, match="field=column pairs"):
        load_problems(f"{tmp_path / 'd.parquet'}?question")


def test_eval_reads_a_parquet_file_with_a_mapping(tmp_path, capsys):
    from algos.evaluation import main as evaluate

    datasets.Dataset.from_list(ROWS).to_parquet(str(tmp_path / "d.parquet"))
    out = evaluate(["--reasoner", "template:1.0", "--data", f"{tmp_path / 'd.parquet'}?question=problem&answer=solution",
                    "--modes", "fixed:8", "--limit", "2", "--no-plots"])
    assert out["modes"]["fixed:8"]["accuracy"] == 1.0 and out["modes"]["fixed:8"]["samples"] == 2


def test_train_reads_a_parquet_file_with_a_mapping(tmp_path):
    from algos.cli import main as cli

    rows = [{"problem": f"What is {i} + 1?", "solution": str(i + 1)} for i in range(8)]
    datasets.Dataset.from_list(rows).to_parquet(str(tmp_path / "d.parquet"))
    out = cli(["train", "--preset", "tiny", "--set", f"data.source={tmp_path / 'd.parquet'}?question=problem&answer=solution",
               "--out", str(tmp_path / "run"), "--steps", "1"])
    assert out["steps"] == 1
    sample = (tmp_path / "run" / "samples.jsonl").read_text().splitlines()[0]
    assert '"problem_id": "d/' in sample
