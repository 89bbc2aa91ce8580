"""docs/layout.md is generated from the tree and lists every module; the README links it instead of a copy."""

from pathlib import Path

from tools import layout

ROOT = Path(__file__).resolve().parent.parent


def test_generated_layout_page_is_up_to_date():
    assert layout.main([]) == 0, "run: python -m tools.layout --write"


def test_every_module_is_listed_on_the_page():
    page = layout.layout_md()
    for pkg in layout.PACKAGES:
        for p in layout.modules(pkg):
            assert f"`{pkg}/{p.relative_to(ROOT / pkg)}`" in page, p


def test_the_readme_links_the_page_and_holds_no_module_list():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "(docs/layout.md)" in readme
    assert "layout:begin" not in readme and "rsim_env/    " not in readme
