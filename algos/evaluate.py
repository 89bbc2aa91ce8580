"""Kept for imports of earlier releases: ``rsim eval`` lives in the package :mod:`algos.evaluation`."""

from .evaluation import *  # noqa: F401,F403
from .evaluation import __all__  # noqa: F401

if __name__ == "__main__":
    from .evaluation import main

    main()
