"""The README's layout section and docs/layout.md are generated from the tree and list every module."""

from tools import layout


def test_generated_layout_docs_are_up_to_date():
    assert layout.main([]) == 0, "run: python -m tools.layout --write"


def test_every_module_is_listed_in_the_readme_section():
    section = layout.readme_section()
    for pkg in layout.PACKAGES:
        for p in layout.modules(pkg):
            assert layout._name(pkg, p) in section, p
