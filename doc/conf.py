"""Sphinx configuration for the sklearn-fil documentation."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import os
import sys
from importlib import metadata

# Make the package importable when the docs are built from a source checkout
# without installing it first.
sys.path.insert(0, os.path.abspath(".."))

# -- Project information -----------------------------------------------------

project = "sklearn-fil"
author = "The sklearn-fil developers"
copyright = "2026, The sklearn-fil developers"

try:
    release = metadata.version("sklearn-fil")
except metadata.PackageNotFoundError:
    release = "0.1.0.dev0"
version = ".".join(release.split(".")[:2])

# -- General configuration ---------------------------------------------------

extensions = [
    "numpydoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
]

exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
root_doc = "index"
default_role = "literal"

autosummary_generate = True
autodoc_default_options = {"members": True, "inherited-members": True}

numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

# The gallery and the bibliography are used only when their extensions are
# installed; the rest of the documentation builds without them.
try:
    import sphinx_gallery  # noqa: F401
except ImportError:
    pass
else:
    extensions.append("sphinx_gallery.gen_gallery")
    sphinx_gallery_conf = {
        "examples_dirs": "../examples",
        "gallery_dirs": "auto_examples",
        "doc_module": ("sklearn_fil",),
        "backreferences_dir": "generated",
        "reference_url": {"sklearn_fil": None},
    }

try:
    import sphinxcontrib.bibtex  # noqa: F401
except ImportError:
    pass
else:
    if os.path.exists(os.path.join(os.path.dirname(__file__), "references.bib")):
        extensions.append("sphinxcontrib.bibtex")
        bibtex_bibfiles = ["references.bib"]

intersphinx_mapping = {
    "python": ("https://docs.python.org/3", None),
    "sklearn": ("https://scikit-learn.org/stable", None),
    "numpy": ("https://numpy.org/doc/stable", None),
    "scipy": ("https://docs.scipy.org/doc/scipy", None),
    "pandas": ("https://pandas.pydata.org/docs", None),
}

# -- Options for HTML output -------------------------------------------------

html_theme = "alabaster"
html_title = f"sklearn-fil {release}"


def _skip_metadata_request(app, what, name, obj, skip, options):
    """Hide the ``set_*_request`` methods that scikit-learn generates."""
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return skip


def setup(app):
    app.connect("autodoc-skip-member", _skip_metadata_request)
