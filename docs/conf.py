"""Sphinx configuration of fastsd's documentation (built with ``-W``: a warning fails the build).

Build: ``pip install -e ".[docs]" && sphinx-build -W -b html docs docs/_build/html``.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "_ext"))

import fastsd  # noqa: E402

project = "fastsd"
author = "fastsd developers"
release = version = fastsd.__version__
copyright = "2026, fastsd developers"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",       # MathJax copied into the build: equations render offline
    "numpydoc",
    "sphinxarg.ext",
    "sphinx_gallery.gen_gallery",
    "bench_results",
    "plain_docstrings",
]
templates_path = ["_templates"]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "_generated", "auto_examples/*.ipynb", "auto_examples/*.py",
                    "auto_examples/*.zip", "auto_examples/*.json", "auto_examples/*.md5"]
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_heading_anchors = 3
smartquotes = False              # `--quick` stays two hyphens, as typed at the terminal

autosummary_generate = True
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

html_theme = "furo"
html_title = f"fastsd {release}"
html_static_path = []

# The examples, executed at every build (quick settings, `examples_argv.ARGV`): a tutorial
# that no longer runs fails the build.
sphinx_gallery_conf = {
    "examples_dirs": os.path.join(ROOT, "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r".*\.py$",
    "reset_argv": "examples_argv.reset_argv",
    "download_all_examples": False,
    "show_memory": False,
    "plot_gallery": "True",
    "abort_on_example_error": True,
    "capture_repr": (),
    "min_reported_time": 1,
}
