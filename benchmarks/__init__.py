"""rSIM benchmark scripts: each prints a table and writes JSON."""

RSIM_PACKAGE = "benchmarks"  # marker: rsim_env.install checks it to detect a clashing distribution; keep this line

from rsim_env.install import guard_heavy_imports  # noqa: E402

guard_heavy_imports(__name__)
