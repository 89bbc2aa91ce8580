"""studies/decoding_identity.py: the committed before/after decoding check covers every route, and the doc shows it."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_before_after_check_covers_every_route_and_the_doc_shows_it():
    """docs/decoding_results/: every route's greedy episodes before and after the decoding layer (>= 40 problems)."""
    import json

    from studies.decoding_identity import compare, read, table

    root = ROOT / "docs" / "decoding_results"
    summary = compare(read(root / "before.jsonl.gz"), read(root / "after.jsonl.gz"))
    assert summary == json.loads((root / "identity.json").read_text(encoding="utf-8"))
    assert {"default", "llamacpp", "replay", "replay_readback", "served_llamacpp", "served_torch"} <= set(summary)
    problems = {r["problem_id"] for r in read(root / "after.jsonl.gz")}
    assert len(problems) >= 40
    for route, s in summary.items():
        assert s["episodes"] >= 80 and s["only_before"] == s["only_after"] == 0, route
        assert s["same_steps"] == s["episodes"], (route, s["differences"][:1])
    assert table(summary) in (ROOT / "docs" / "decoding.md").read_text(encoding="utf-8")
