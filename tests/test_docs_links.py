"""The README's and the documentation's relative links lead to files of the repository.

The docs pages are Markdown, read on the repository's web page as well as in the built site:
a page moved or renamed must not leave a link behind. (Links to pages Sphinx generates at
build time, the tutorials under ``docs/auto_examples/``, are checked by the build itself.)
"""
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
PAGES = [p for p in PAGES if not {"_build", "_generated"} & set(p.relative_to(ROOT).parts)]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file(page):
    text = page.read_text(encoding="utf-8")
    targets = [t for t in LINK.findall(text) if "://" not in t and not t.startswith("mailto:")]
    missing = [t for t in targets if "auto_examples/" not in t
               and not (page.parent / t).exists()]
    assert not missing, f"{page.relative_to(ROOT)} links to missing files: {missing}"


def test_the_readme_stays_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"the README has {len(lines)} lines; the docs hold the rest"
