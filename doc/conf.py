"""Sphinx configuration for the sklearn-fil documentation.

Build the site with (from the repository root)::

    python -m sphinx -W --keep-going -b html doc doc/_build/html

The build needs no network, and neither does reading the site: the inventories of
the projects we link to (Python, NumPy, SciPy, pandas, scikit-learn, joblib,
matplotlib) are small local files in ``doc/_intersphinx``, written by
``doc/sphinxext/make_inventories.py``, and the math is rendered by a copy of MathJax
from the ``sphinx-mathjax-offline`` package (``doc/sphinxext/offline_math.py``) placed
in ``_static``.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import sys
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent

# Make the package importable when the docs are built from a source checkout
# without installing it first, and make the local extensions importable.
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE / "sphinxext"))

from make_inventories import INVENTORIES  # noqa: E402

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
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    # sphinx.ext.mathjax with a local MathJax (no CDN): doc/sphinxext/offline_math.py
    "offline_math",
    "sphinx_gallery.gen_gallery",
    "sklearn_fil_api",
]

templates_path = ["_templates"]
exclude_patterns = [
    "_build",
    "_intersphinx",
    "_templates",
    "sphinxext",
    "Thumbs.db",
    ".DS_Store",
]
root_doc = "index"
default_role = "literal"

# Every cross-reference must resolve: an unresolved one is a warning, and the
# build runs with -W. Only names that are not objects are exempt.
nitpicky = True
nitpick_ignore_regex = [
    # Types written in prose by scikit-learn's inherited docstrings.
    ("py:class", r"estimator instance|array-like|.* of shape .*"),
    # dp-accounting publishes no Sphinx inventory to link to.
    ("py:.*", r"dp_accounting\..*"),
]

autosummary_generate = True
autodoc_typehints = "none"

numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
# Link the types of parameters, returns and attributes. Only the names below
# become links (every other word of a type stays plain text), so an unknown
# type is never a broken reference.
numpydoc_xref_param_type = True
numpydoc_xref_ignore = "all"
numpydoc_xref_aliases = {
    "DataFrame": "pandas.DataFrame",
    "pandas.DataFrame": "pandas.DataFrame",
    "Series": "pandas.Series",
    "pandas.Series": "pandas.Series",
    "ndarray": "numpy.ndarray",
    "RandomState": "numpy.random.RandomState",
    "Generator": "numpy.random.Generator",
    "Axes": "matplotlib.axes.Axes",
    "Figure": "matplotlib.figure.Figure",
    "Line2D": "matplotlib.lines.Line2D",
    "BarContainer": "matplotlib.container.BarContainer",
    "ErrorbarContainer": "matplotlib.container.ErrorbarContainer",
    "AxesImage": "matplotlib.image.AxesImage",
    "Colormap": "matplotlib.colors.Colormap",
    "Bunch": "sklearn.utils.Bunch",
    "PrivacyLeakWarning": "sklearn_fil.exceptions.PrivacyLeakWarning",
}

# -- sphinx-gallery ----------------------------------------------------------

# The build runs every example at full size. The test suite runs them at
# small sizes with SKLEARN_FIL_EXAMPLE_QUICK=1 (tests/test_examples.py); a value
# already set in the environment is passed on to the examples unchanged, so
# ``SKLEARN_FIL_EXAMPLE_QUICK=1 python -m sphinx ...`` builds a quick preview.

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "within_subsection_order": "FileNameSortKey",
    "doc_module": ("sklearn_fil",),
    "backreferences_dir": "generated",
    "image_scrapers": ("matplotlib",),
    "remove_config_comments": True,
    "show_signature": False,
    "download_all_examples": False,
    "min_reported_time": 1,
    # A failing example fails the build.
    "abort_on_example_error": False,
    "only_warn_on_example_error": False,
}

# -- Intersphinx (offline) ---------------------------------------------------

# Each inventory is a local file; the links it resolves point at the upstream
# documentation. Regenerate the files with
# ``python doc/sphinxext/make_inventories.py`` after adding a reference.
intersphinx_mapping = {
    name: (inv["url"], f"_intersphinx/{name}.inv") for name, inv in INVENTORIES.items()
}

# -- Options for HTML output -------------------------------------------------

html_theme = "pydata_sphinx_theme"
html_title = f"sklearn-fil {release}"
html_short_title = "sklearn-fil"
html_static_path = []
html_show_sourcelink = False
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_context = {"default_mode": "light"}


def _skip_metadata_request(app, what, name, obj, skip, options):
    """Hide the ``set_*_request`` methods that scikit-learn generates."""
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return skip


def setup(app):
    app.connect("autodoc-skip-member", _skip_metadata_request)
