"""Render the site's math with a local copy of MathJax, so it works offline.

``sphinx.ext.mathjax`` loads MathJax from a CDN by default: a reader without
network then sees raw LaTeX. This extension points ``mathjax_path`` at
MathJax 3.2.2 as shipped inside the PyPI package ``sphinx-mathjax-offline``
(installed by the ``docs`` extra) and adds that package's ``static`` folder
to ``html_static_path``, so the build copies MathJax into
``_build/html/_static/mathjax`` and every page loads it from there.

We use the ``tex-svg.js`` component (TeX input, SVG output): it draws glyphs
as SVG paths and needs no web fonts, which browsers may refuse to load from
``file://`` pages. The package's own Sphinx hook is not used: it copies the
files after the build and picks the CommonHTML output, which needs fonts.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from importlib import metadata
from pathlib import Path

from sphinx.errors import ConfigError

DISTRIBUTION = "sphinx-mathjax-offline"
COMPONENT = "mathjax/tex-svg.js"


def mathjax_static_dir():
    """The package's folder that holds ``mathjax/``, checked."""
    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        raise ConfigError(
            f"The documentation renders math offline with MathJax from the "
            f"{DISTRIBUTION!r} package, which is not installed: "
            'python -m pip install -e ".[docs]"'
        ) from None
    static = Path(dist.locate_file("sphinx-mathjax-offline/static"))
    if not (static / COMPONENT).is_file():
        raise ConfigError(f"{DISTRIBUTION} has no {COMPONENT} under {static}.")
    return static


def _configure(app, config):
    static = str(mathjax_static_dir())
    if static not in config.html_static_path:
        config.html_static_path = [*config.html_static_path, static]
    # relative to _static: the local copy, never a URL
    config.mathjax_path = COMPONENT


def setup(app):
    app.setup_extension("sphinx.ext.mathjax")
    app.connect("config-inited", _configure)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
