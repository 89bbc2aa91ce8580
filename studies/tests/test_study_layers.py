"""studies/ imports in no circle (the check of tests/test_layers.py, on the studies)."""

from tests.test_layers import KNOWN_CYCLES, import_cycles, module_graph


def test_no_import_cycles_in_the_studies():
    cycles = [" -> ".join(c) for c in import_cycles(module_graph("studies")) if frozenset(c) not in KNOWN_CYCLES]
    assert cycles == [], f"import circles in studies/ (break each by moving what is shared down): {cycles}"
