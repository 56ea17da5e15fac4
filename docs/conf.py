"""Sphinx configuration of the AnalySIM documentation site (``analysim docs`` builds it).

Sphinx with the furo theme; MyST-NB reads the Markdown pages (``docs/*.md``, kept as the
sources) and the notebooks of the gallery, which it renders *without executing them*
(``nb_execution_mode = "off"``): the notebooks are committed without outputs, so the gallery
pages are copies of them with the figures each one writes (committed in ``figures/``) shown
after the cell that writes them (``analysim/faces/docsite.py``, called at the start of the build).
The API reference is generated from the docstrings by autodoc; the docstrings keep their own
style (reST roles, ``name: text`` lines for fields and parameters), which
``analysim.faces.docsite.fields_as_field_list`` reads.
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
REPO = DOCS.parent
sys.path.insert(0, str(REPO))  # the analysim of this checkout, even when not installed

from analysim.faces import docsite  # noqa: E402
from analysim.version import VERSION  # noqa: E402

project = "AnalySIM"
author = "the AnalySIM authors"
copyright = "the AnalySIM authors, MIT licence"  # no year: the build is reproducible
version = release = VERSION

extensions = [
    "myst_nb",  # Markdown (MyST) pages and notebooks; it brings myst_parser
    "sphinx.ext.autodoc",
]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
root_doc = "index"
exclude_patterns = ["_build", "**/.ipynb_checkpoints"]
templates_path: list[str] = []

# -- warnings are errors (``analysim docs`` runs sphinx with -W --keep-going) ------------------
# Every cross-reference must resolve (nitpicky); only names of other projects are let through
# (there is no network for intersphinx in CI).
nitpicky = True
nitpick_ignore_regex = docsite.NITPICK_IGNORE

# -- MyST -------------------------------------------------------------------------------------
myst_heading_anchors = 4  # ``semantics.md#the-engines-files`` links work
myst_enable_extensions = ["colon_fence", "deflist"]
nb_execution_mode = "off"  # never re-execute a notebook in the docs build
nb_merge_streams = True

# -- autodoc ----------------------------------------------------------------------------------
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_typehints_format = "short"
autodoc_class_signature = "mixed"
autodoc_default_options = {"members": True, "show-inheritance": False}
add_module_names = False
python_use_unqualified_type_names = True

# -- HTML -------------------------------------------------------------------------------------
html_theme = "furo"
html_title = f"AnalySIM {VERSION}"
html_static_path = ["_static"]
html_css_files = ["analysim.css"]
html_favicon = "_static/favicon.svg"  # (also spares the browser a 404 for /favicon.ico)
html_last_updated_fmt = None
html_show_sourcelink = False
html_copy_source = False
html_theme_options = {
    "navigation_with_keys": True,
    "top_of_page_buttons": [],
}


def setup(app):
    docsite.setup_sphinx(app, REPO)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
