"""rSIM studies: one-off experiments that each answered one past question (not installed with the wheel).

Each stays runnable from a checkout (``python -m studies.NAME``) and tested; its committed results live
in ``docs/*_results/``. The reusable instruments a user runs on their own models and data are in
``benchmarks/`` (shipped).
"""

from rsim_env.install import guard_heavy_imports

guard_heavy_imports(__name__)
