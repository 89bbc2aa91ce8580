"""The studies' tests share the library tests' fakes and fixtures (tests/conftest.py), imported here by name.

``make test-studies`` runs this folder; ``make test`` (pytest's ``testpaths``) runs tests/ only, which imports
nothing from studies/ (tests/test_no_studies.py).
"""

from tests.conftest import _ledgers_kept_apart, _torch_threads_restored, gguf, scripted_lm, single_thread  # noqa: F401
