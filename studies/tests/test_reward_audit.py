"""The reward audit study (studies/reward_audit.py) reproduces its committed figures (docs/rewards_results/audit.json)."""


def test_the_reward_audit_reproduces_its_committed_figures():
    import json
    from pathlib import Path

    from studies import reward_audit

    f = "docs/interaction_results/proto_lead.json.gz"
    out = reward_audit.main(reward_audit.Config(files=(f,), out="", curriculum_size=0))
    committed = json.loads((Path(__file__).resolve().parents[2] / "docs/rewards_results/audit.json").read_text())
    assert out["files"][f] == committed["files"][f]
    assert out["files"][f]["follow_new"] < out["files"][f]["follow_old"]
