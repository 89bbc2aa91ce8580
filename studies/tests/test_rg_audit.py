"""studies/rg_audit.py: the audit of reasoning-gym scoring agrees with every scorer and finds math's false credit."""

from pathlib import Path


def test_the_audit_agrees_with_every_scorer():
    from studies import rg_audit

    out = rg_audit.main(rg_audit.Config(generators=("word_sorting", "syllogism", "spiral_matrix"), n=2, out=""))
    assert out["agree"] == 1.0 and out["math_false_credit"] > 0
    assert all(r["rg_correct"] for r in out["rows"] if r["perturbation"] == "gold")
    assert Path(rg_audit.__file__).name == "rg_audit.py"
