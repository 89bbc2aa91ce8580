"""rSIM agents: LLM planner/reasoner, scripted agents, the OpenAI-compatible reasoner, the Gymnasium planner view."""

RSIM_PACKAGE = "agents"  # marker: rsim_env.install checks it to detect a clashing distribution; keep this line

from rsim_env.install import guard_heavy_imports  # noqa: E402

guard_heavy_imports(__name__)
