"""Write the local intersphinx inventories that let the docs build offline.

Intersphinx normally downloads each linked project's ``objects.inv``; the
documentation of sklearn-fil must build without a network (and CI has
none). This script writes, for every project we link to, a small inventory in
Sphinx's own format (version 2) that lists only the objects and labels our
pages and docstrings refer to, each with the address of its page in the
upstream documentation. ``doc/conf.py`` points ``intersphinx_mapping`` at these
files, so a reference such as :class:`pandas.DataFrame` becomes a link to
``https://pandas.pydata.org/docs/reference/api/pandas.DataFrame.html``.

The build is nitpicky: a reference that no inventory resolves is a warning,
and the build runs with ``-W``. To link to a new object, add it to the lists
below and run (from the repository root)::

    python doc/sphinxext/make_inventories.py

which rewrites ``doc/_intersphinx/*.inv`` and checks that Sphinx reads them
back. The addresses follow each project's page layout: scikit-learn's
``modules/generated/<name>.html``, NumPy's and SciPy's
``reference/generated/<name>.html``, pandas' ``reference/api/<name>.html``,
matplotlib's ``api/_as_gen/<name>.html``, joblib's ``generated/<name>.html`` and the
Python library pages.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import io
import posixpath
import sys
import zlib
from pathlib import Path

OUT_DIR = Path(__file__).resolve().parents[1] / "_intersphinx"


def _generated(prefix, names, role="class"):
    """Objects with one page each, ``<prefix><name>.html#<name>``.

    Methods and attributes (``Class.method``) live on their class's page.
    """
    entries = []
    for name in names:
        kind = role
        page = name
        if ":" in name:  # "method:sklearn.base.BaseEstimator.get_params"
            kind, name = name.split(":", 1)
            page = name.rsplit(".", 1)[0]
        entries.append((name, f"py:{kind}", f"{prefix}{page}.html#{name}"))
    return entries


def _labels(entries):
    """``std:label`` entries: (label, page#anchor, title)."""
    return [(label, "std:label", uri, title) for label, uri, title in entries]


# Each inventory: the project's base address (where the links point), its
# name and version (shown in tooltips), and its objects as
# (name, domain:role, address relative to the base[, display name]).
INVENTORIES = {
    "python": {
        "project": "Python",
        "version": "3",
        "url": "https://docs.python.org/3/",
        "objects": [
            *[
                (name, "py:class", f"library/functions.html#{name}")
                for name in ("bool", "float", "int", "str")
            ],
            ("callable", "py:function", "library/functions.html#callable"),
            (
                "dataclasses.replace",
                "py:function",
                "library/dataclasses.html#dataclasses.replace",
            ),
            *[
                (name, "py:class", f"library/stdtypes.html#{name}")
                for name in ("dict", "list", "tuple")
            ],
            *[
                (name, "py:exception", f"library/exceptions.html#{name}")
                for name in (
                    "ImportError",
                    "RuntimeWarning",
                    "TypeError",
                    "UserWarning",
                    "ValueError",
                )
            ],
            *[
                (name, "py:data", f"library/constants.html#{name}")
                for name in ("None", "True", "False")
            ],
            # Used by numpydoc's links for the types bool and sequence.
            (
                "bltin-boolean-values",
                "std:label",
                "library/stdtypes.html#bltin-boolean-values",
                "Boolean Type - bool",
            ),
            ("sequence", "std:term", "glossary.html#term-sequence"),
        ],
    },
    "numpy": {
        "project": "NumPy",
        "version": "2",
        "url": "https://numpy.org/doc/stable/",
        "objects": [
            *_generated("reference/generated/", ["numpy.ndarray"]),
            *_generated(
                "reference/generated/", ["numpy.linalg.lstsq"], role="function"
            ),
            (
                "numpy.random.Generator",
                "py:class",
                "reference/random/generator.html#numpy.random.Generator",
            ),
            (
                "numpy.random.RandomState",
                "py:class",
                "reference/random/legacy.html#numpy.random.RandomState",
            ),
            (
                "numpy.random.SeedSequence",
                "py:class",
                "reference/random/bit_generators/generated/"
                "numpy.random.SeedSequence.html#numpy.random.SeedSequence",
            ),
            # Used by numpydoc's link for the type array_like.
            ("array_like", "std:term", "glossary.html#term-array_like"),
        ],
    },
    "scipy": {
        "project": "SciPy",
        "version": "1",
        "url": "https://docs.scipy.org/doc/scipy/",
        "objects": _generated(
            "reference/generated/", ["scipy.optimize.brentq"], role="function"
        ),
    },
    "pandas": {
        "project": "pandas",
        "version": "2",
        "url": "https://pandas.pydata.org/docs/",
        "objects": _generated(
            "reference/api/",
            ["pandas.DataFrame", "pandas.Series"],
        ),
    },
    "sklearn": {
        "project": "scikit-learn",
        "version": "1",
        "url": "https://scikit-learn.org/stable/",
        "objects": [
            *_generated(
                "modules/generated/",
                [
                    "sklearn.compose.ColumnTransformer",
                    "sklearn.compose.TransformedTargetRegressor",
                    "sklearn.decomposition.PCA",
                    "sklearn.exceptions.ConvergenceWarning",
                    "sklearn.frozen.FrozenEstimator",
                    "sklearn.linear_model.Ridge",
                    "sklearn.linear_model.SGDClassifier",
                    "sklearn.metrics.RocCurveDisplay",
                    "sklearn.model_selection.GridSearchCV",
                    "sklearn.model_selection.RandomizedSearchCV",
                    "sklearn.multioutput.MultiOutputRegressor",
                    "sklearn.neural_network.MLPClassifier",
                    "sklearn.pipeline.Pipeline",
                    "sklearn.preprocessing.OneHotEncoder",
                    "sklearn.preprocessing.StandardScaler",
                    "sklearn.utils.Bunch",
                    "sklearn.utils.metadata_routing.MetadataRequest",
                ],
            ),
            *_generated(
                "modules/generated/",
                [
                    "sklearn.base.clone",
                    "sklearn.datasets.load_digits",
                    "sklearn.metrics.r2_score",
                    "sklearn.metrics.roc_auc_score",
                    "sklearn.metrics.roc_curve",
                    "sklearn.model_selection.train_test_split",
                    "sklearn.utils.estimator_checks.check_estimator",
                    "sklearn.utils.estimator_checks.parametrize_with_checks",
                ],
                role="function",
            ),
            (
                "sklearn.metrics",
                "py:module",
                "api/sklearn.metrics.html#module-sklearn.metrics",
            ),
            # Labels that scikit-learn's own docstrings (inherited methods such
            # as score, set_output, get_metadata_routing) refer to.
            *_labels(
                [
                    (
                        "accuracy_score",
                        "modules/model_evaluation.html#accuracy-score",
                        "Accuracy score",
                    ),
                    (
                        "df_output_transform",
                        "modules/df_output_transform.html#df-output-transform",
                        "Pandas/Polars Output for Transformers with set_output",
                    ),
                    (
                        "metadata_routing",
                        "metadata_routing.html#metadata-routing",
                        "Metadata Routing",
                    ),
                    (
                        "r2_score",
                        "modules/model_evaluation.html#r2-score",
                        "R² score, the coefficient of determination",
                    ),
                    (
                        "sphx_glr_auto_examples_miscellaneous_plot_set_output.py",
                        "auto_examples/miscellaneous/plot_set_output.html"
                        "#sphx-glr-auto-examples-miscellaneous-plot-set-output-py",
                        "Introducing the set_output API",
                    ),
                ]
            ),
        ],
    },
    "joblib": {
        "project": "joblib",
        "version": "1",
        "url": "https://joblib.readthedocs.io/en/stable/",
        "objects": [
            *_generated("generated/", ["joblib.Parallel"]),
            *_generated("generated/", ["joblib.parallel_config"], role="function"),
        ],
    },
    "matplotlib": {
        "project": "Matplotlib",
        "version": "3",
        "url": "https://matplotlib.org/stable/",
        "objects": [
            *_generated(
                "api/_as_gen/",
                [
                    "matplotlib.axes.Axes",
                    "matplotlib.colors.Colormap",
                    "matplotlib.figure.Figure",
                    "matplotlib.lines.Line2D",
                ],
            ),
            (
                "matplotlib.image.AxesImage",
                "py:class",
                "api/image_api.html#matplotlib.image.AxesImage",
            ),
            *[
                (name, "py:class", f"api/container_api.html#{name}")
                for name in (
                    "matplotlib.container.BarContainer",
                    "matplotlib.container.ErrorbarContainer",
                )
            ],
        ],
    },
}


def _inventory_bytes(project, version, objects):
    """An inventory in Sphinx's version-2 format (zlib-compressed body)."""
    header = (
        "# Sphinx inventory version 2\n"
        f"# Project: {project}\n"
        f"# Version: {version}\n"
        "# The remainder of this file is compressed using zlib.\n"
    )
    lines = []
    for entry in sorted(set(objects)):
        name, role, uri = entry[:3]
        display = entry[3] if len(entry) > 3 else "-"
        if uri.endswith("#" + name):  # Sphinx's shorthand for "#<name>"
            uri = uri[: -len(name)] + "$"
        lines.append(f"{name} {role} 1 {uri} {display}\n")
    body = zlib.compress("".join(lines).encode("utf-8"), 9)
    return header.encode("utf-8") + body


def write_inventories(out_dir=OUT_DIR):
    """Write every inventory and check that Sphinx reads it back."""
    from sphinx.util.inventory import InventoryFile

    out_dir.mkdir(parents=True, exist_ok=True)
    for name, inv in INVENTORIES.items():
        data = _inventory_bytes(inv["project"], inv["version"], inv["objects"])
        path = out_dir / f"{name}.inv"
        path.write_bytes(data)
        loaded = InventoryFile.load(io.BytesIO(data), inv["url"], posixpath.join)
        n_read = sum(len(items) for items in loaded.values())
        if n_read != len(set(inv["objects"])):
            raise RuntimeError(f"{path}: wrote {len(inv['objects'])}, read {n_read}")
        print(f"{path.relative_to(out_dir.parent.parent)}: {n_read} objects")


if __name__ == "__main__":
    write_inventories(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT_DIR)
