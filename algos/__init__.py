"""rSIM learners: GRPO / Stackelberg GRPO, rollouts, trainer, evaluation, the rollout viewer."""

RSIM_PACKAGE = "algos"  # marker: rsim_env.install checks it to detect a clashing distribution; keep this line

from rsim_env.install import guard_heavy_imports  # noqa: E402

guard_heavy_imports(__name__)
