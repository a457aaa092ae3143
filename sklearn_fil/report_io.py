"""Privacy reports with their context: settings and guarantee, kept on export.

A CSV does not keep ``privacy_report_.attrs``, so the report is written as CSV
with the metadata in a JSON file beside it, the layout ``sklearn-fil report``
writes. :func:`privacy_report` and :func:`attribute_fil` name a Pipeline's
report by the user's original columns.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import copy
import json
import math
import re
import reprlib
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.utils.validation import check_is_fitted

# The metadata is built with the report, one layer down (estimators set it at
# fit); re-exported here, its public home, with what the CLI reuses.
from sklearn_fil._report import (  # noqa: F401
    SENSITIVE_NOTE,
    privacy_report_metadata,
    to_jsonable,
)
from sklearn_fil.utils._dask import is_dask
from sklearn_fil.utils._pipeline import attribute_labels, split_pipeline

__all__ = [
    "attribute_fil",
    "privacy_report",
    "privacy_report_metadata",
    "read_privacy_report",
    "sidecar_path",
    "write_privacy_report",
]


def sidecar_path(path):
    """The JSON file beside the report CSV ``path``: same name, ``.json``.

    Parameters
    ----------
    path : str or path-like
        The report's CSV file.

    Returns
    -------
    sidecar : pathlib.Path
        ``path`` with the suffix ``.json``.

    Examples
    --------
    >>> from sklearn_fil.report_io import sidecar_path
    >>> sidecar_path("out/report.csv").name
    'report.json'
    """
    return Path(path).with_suffix(".json")


def write_csv(report, path):
    """Write ``report`` as CSV, its index column named (``sample`` if unnamed).

    A Dask report is written partition after partition into the one file.
    """
    label = report.index.name or "sample"
    if is_dask(report):
        report.to_csv(path, single_file=True, index_label=label)
    else:
        report.rename_axis(label).to_csv(path)


def write_json(metadata, path):
    """Write ``metadata`` as strict JSON (no NaN) to ``path``."""
    text = json.dumps(metadata, indent=2, ensure_ascii=False, allow_nan=False)
    Path(path).write_text(text + "\n", encoding="utf-8")


def write_privacy_report(estimator, path):
    """Write a fitted estimator's privacy report as CSV, its context as JSON.

    The CSV holds ``privacy_report_`` (index column first); the JSON file
    beside it (:func:`sidecar_path`) holds ``privacy_report_.attrs``, i.e.
    :func:`privacy_report_metadata`, which a CSV cannot keep. Both are
    sensitive: they are computed from every training example. The lazy
    report of a fit on a Dask array is written partition by partition,
    never whole in memory (``report.to_parquet`` is the faster way to keep
    it; its files carry the ``attrs``).

    Parameters
    ----------
    estimator : fitted estimator
        An estimator of sklearn-fil with a ``privacy_report_``.
    path : str or path-like
        The CSV file; it must not end in ``.json``.

    Returns
    -------
    paths : tuple of pathlib.Path
        The CSV and the JSON file written.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from sklearn.datasets import make_regression
    >>> from sklearn_fil.linear_model import OutputPerturbedLinearRegression
    >>> from sklearn_fil.report_io import read_privacy_report, write_privacy_report
    >>> X, y = make_regression(n_samples=30, n_features=2, random_state=0)
    >>> reg = OutputPerturbedLinearRegression(random_state=0).fit(X, y)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     csv, meta = write_privacy_report(reg, pathlib.Path(tmp) / "report.csv")
    ...     report = read_privacy_report(csv)
    >>> meta.name, report.attrs["n"], report.attrs["estimator"]
    ('report.json', 30, 'OutputPerturbedLinearRegression')
    """
    path = Path(path)
    sidecar = sidecar_path(path)
    if path.suffix.lower() == ".json":
        raise ValueError(
            f"{path} ends in .json, the name of the report's sidecar JSON; "
            "give the CSV file a name ending in .csv."
        )
    report = estimator.privacy_report_
    metadata = report.attrs or privacy_report_metadata(estimator)
    write_csv(report, path)
    write_json(to_jsonable(metadata), sidecar)
    return path, sidecar


def read_privacy_report(path):
    """Read a report written by :func:`write_privacy_report`, context in ``attrs``.

    Both files are checked, as they may come from elsewhere: the CSV must
    hold the columns ``fil``, ``dfil`` and ``mse_bound`` and numbers only;
    the sidecar JSON, strict UTF-8 JSON (no ``NaN``, no key twice in an
    object), must be an object whose known fields have the types
    :func:`privacy_report_metadata` gives them.

    Parameters
    ----------
    path : str or path-like
        The CSV file; its sidecar JSON, when present, fills ``attrs``.

    Returns
    -------
    report : pandas.DataFrame
        The report, indexed by its first column, float64 columns.

    Raises
    ------
    ValueError
        When either file is not what :func:`write_privacy_report` writes;
        the message names the file and what is wrong.

    Examples
    --------
    See :func:`write_privacy_report`.
    """
    report = _read_report_csv(Path(path))
    sidecar = sidecar_path(path)
    if sidecar.exists():
        report.attrs = _read_sidecar(sidecar)
    return report


# Columns every privacy report has (all its columns are float64).
_REQUIRED_COLUMNS = ("fil", "dfil", "mse_bound")

_REWRITE = (
    "Read files that write_privacy_report or `sklearn-fil report` wrote, "
    "or write them again."
)


def _read_report_csv(path):
    """The report CSV ``path``, its columns float64, checked."""
    try:
        report = pd.read_csv(path, index_col=0)
    except ValueError as exc:  # not UTF-8, ragged rows, empty
        raise ValueError(
            f"{path} is not a privacy report CSV: {exc}. {_REWRITE}"
        ) from None
    missing = [column for column in _REQUIRED_COLUMNS if column not in report]
    if missing:
        raise ValueError(
            f"{path} is not a privacy report CSV: it has no column "
            f"{', '.join(missing)} (a report has {', '.join(_REQUIRED_COLUMNS)} "
            f"after its index column). {_REWRITE}"
        )
    for column in report.columns[report.dtypes != np.float64]:
        report[column] = _float_column(report[column], column, path)
    return report


def _float_column(values, column, path):
    """The column ``values`` of the CSV ``path`` as float64, or a ValueError."""
    try:
        if not pd.api.types.is_bool_dtype(values):
            return pd.to_numeric(values).astype(np.float64)
        problem = "it holds True/False"
    except (TypeError, ValueError) as exc:
        problem = str(exc)
    raise ValueError(
        f"Column {column!r} of {path} is not numbers ({problem}); the columns "
        f"of a privacy report are float64. {_REWRITE}"
    )


def _unique_keys(pairs):
    """A JSON object as a dict; a ValueError if a key repeats."""
    seen = set()
    for key, _ in pairs:
        if key in seen:
            raise ValueError(f"the key {key!r} appears twice in one object")
        seen.add(key)
    return dict(pairs)


def _no_constant(name):
    """Refuse ``NaN``, ``Infinity``, ``-Infinity``: not JSON, never written."""
    raise ValueError(
        f"{name} is no JSON number (the writer stores a missing number as null)"
    )


def _finite_float(text):
    """A JSON number as a float; a ValueError if it overflows (``1e400``)."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text} is out of range")
    return value


def _number(value):
    return isinstance(value, int | float) and not isinstance(value, bool)


def _count(value):
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _non_negative_or_null(value):
    return value is None or (_number(value) and value >= 0)


def _probability_or_null(value):
    return value is None or (_number(value) and 0 <= value < 1)


def _string_or_null(value):
    return value is None or isinstance(value, str)


def _strings_or_null(value):
    return value is None or (
        isinstance(value, list) and all(isinstance(item, str) for item in value)
    )


# The sidecar's known fields, privacy_report_metadata's keys: a check and
# what it wants. Other keys (those `sklearn-fil report` adds) are kept as read.
_SIDECAR_FIELDS = {
    "sklearn_fil_version": (lambda value: isinstance(value, str), "a string"),
    "estimator": (lambda value: isinstance(value, str), "a string"),
    "estimator_params": (lambda value: isinstance(value, dict), "an object"),
    "n": (_count, "a non-negative integer"),
    "sigma": (_non_negative_or_null, "a non-negative number or null"),
    "epsilon": (_non_negative_or_null, "a non-negative number or null"),
    "delta": (_probability_or_null, "a number in [0, 1) or null"),
    "neighboring_relation": (
        lambda value: value in (None, "replace_one", "add_remove"),
        '"replace_one", "add_remove" or null',
    ),
    "public": (_strings_or_null, "a list of strings or null"),
    "no_guarantee_reason": (_string_or_null, "a string or null"),
    "n_clipped": (_count, "a non-negative integer"),
    "dataset_fil": (_non_negative_or_null, "a non-negative number or null"),
    "sensitive": (lambda value: isinstance(value, str), "a string"),
}


def _read_sidecar(path):
    """The metadata in the sidecar JSON ``path``, checked."""
    try:
        metadata = json.loads(
            path.read_bytes().decode("utf-8"),
            object_pairs_hook=_unique_keys,
            parse_constant=_no_constant,
            parse_float=_finite_float,
        )
    except RecursionError:
        problem = "its JSON is nested too deeply to read"
    except ValueError as exc:  # not UTF-8, not JSON, or refused by a hook
        problem = str(exc)
    else:
        if not isinstance(metadata, dict):
            problem = f"it holds {reprlib.repr(metadata)}, not a JSON object"
        else:
            problem = next(
                (
                    f"its {key!r} is {reprlib.repr(metadata[key])}; it must be {wanted}"
                    for key, (check, wanted) in _SIDECAR_FIELDS.items()
                    if key in metadata and not check(metadata[key])
                ),
                None,
            )
    if problem is not None:
        raise ValueError(
            f"{path} is not the sidecar JSON of a privacy report: {problem}. "
            f"{_REWRITE} To read the CSV without it, remove {path.name}."
        )
    return metadata


# A per-attribute column of a report: ``fil[<attribute>]`` (any stem).
_ATTRIBUTE_COLUMN = re.compile(r"([^\[\]]+)\[(.+)\]")


def _final_attribute(model, attribute, caller):
    """The fitted attribute ``attribute`` of ``model``'s final step, checked."""
    _, final = split_pipeline(model)
    check_is_fitted(final)
    value = getattr(final, attribute, None)
    if value is None:
        raise ValueError(
            f"{caller} reads the {attribute} of a fitted estimator (or of a "
            f"Pipeline's final step); {type(final).__name__} has none (a "
            "released copy carries no report: the report is sensitive). Pass "
            "the fitted estimator or Pipeline."
        )
    return value


def _renamed(index, names, what):
    """``names`` as an Index named as ``index``; an error if a name repeats."""
    index = pd.Index(names, name=index.name)
    if index.has_duplicates:
        twice = sorted({str(name) for name in index[index.duplicated()]})
        raise ValueError(
            f"Naming the {what} by the original columns gives the same name "
            f"twice ({twice}): an original column has the name of another "
            "attribute (the label?). Read the final step's report instead."
        )
    return index


def _original_column_name(column, labels):
    match = _ATTRIBUTE_COLUMN.fullmatch(str(column))
    if match is None or match.group(2) not in labels:
        return column
    return f"{match.group(1)}[{labels[match.group(2)]}]"


def privacy_report(model):
    """The privacy report of a fitted model, attributes named by original columns.

    The ``privacy_report_`` of ``model`` or, for a fitted
    :class:`~sklearn.pipeline.Pipeline`, of its final step, with each
    per-attribute column ``fil[<attribute>]`` renamed after the original
    column the attribute is: ``fil[race]`` for the one-hot group of the
    levels of ``race`` (measured as one attribute, ``onehot_groups="auto"``),
    ``fil[age]`` for its scaled column, ``fil[race=Other]`` for a single
    level measured on its own. Columns the prefix does not map (e.g. the
    output of ``PolynomialFeatures``), the label's
    and the per-example columns keep their names; so do all columns of an
    estimator that is no Pipeline. The report is sensitive: it is computed
    from every training example.

    Parameters
    ----------
    model : fitted estimator or Pipeline
        An estimator of sklearn-fil with a ``privacy_report_``, or a Pipeline
        of fitted transformers ending with one.

    Returns
    -------
    report : pandas.DataFrame
        A copy of the report, columns renamed, ``attrs`` (the settings and
        guarantee, :func:`privacy_report_metadata`) kept.

    Raises
    ------
    ValueError
        When the (final) estimator has no ``privacy_report_`` (e.g. a
        released copy), or when two columns would get the same name.

    See Also
    --------
    attribute_fil : The FIL of each attribute over all examples, named so.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from sklearn.compose import ColumnTransformer
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import OneHotEncoder, StandardScaler
    >>> from sklearn_fil.linear_model import OutputPerturbedLogisticRegression
    >>> from sklearn_fil.report_io import privacy_report
    >>> rng = np.random.default_rng(0)
    >>> X = pd.DataFrame(
    ...     {"colour": rng.choice(["red", "green", "blue"], 60),
    ...      "size": rng.normal(size=60)}
    ... )
    >>> y = pd.Series((X["size"] + rng.normal(size=60) > 0).astype(int), name="label")
    >>> columns = ColumnTransformer(
    ...     [("onehot", OneHotEncoder(), ["colour"]),
    ...      ("scale", StandardScaler(), ["size"])]
    ... )
    >>> clf = OutputPerturbedLogisticRegression(
    ...     data_norm=3.0, penalize_intercept=True, onehot_groups="auto",
    ...     random_state=0,
    ... )
    >>> pipe = make_pipeline(columns, clf).fit(X, y)
    >>> [c for c in pipe[-1].privacy_report_.columns if c.startswith("fil[")]
    ['fil[x0|x1|x2]', 'fil[x3]', 'fil[label]']
    >>> report = privacy_report(pipe)
    >>> [c for c in report.columns if c.startswith("fil[")]
    ['fil[colour]', 'fil[size]', 'fil[label]']
    >>> report.attrs["epsilon"] == pipe[-1].epsilon_
    True
    >>> from sklearn_fil.report_io import attribute_fil
    >>> pipe[-1].attribute_fil_.index.tolist()
    ['x0|x1|x2', 'x3', 'label']
    >>> fil = attribute_fil(pipe)
    >>> fil.index.tolist()
    ['colour', 'size', 'label']
    >>> bool(fil["colour"] == pipe[-1].attribute_fil_["x0|x1|x2"])
    True
    """
    report = _final_attribute(model, "privacy_report_", "privacy_report")
    labels = attribute_labels(model)
    renamed = report.copy()
    renamed.columns = _renamed(
        report.columns,
        [_original_column_name(column, labels) for column in report.columns],
        "report's columns",
    )
    renamed.attrs = copy.deepcopy(report.attrs)
    return renamed


def attribute_fil(model, *, sd=False):
    """The FIL of each attribute over all examples, named by original columns.

    The ``attribute_fil_`` of ``model`` or, for a fitted
    :class:`~sklearn.pipeline.Pipeline`, of its final step, re-indexed as
    :func:`privacy_report` renames its columns.

    Parameters
    ----------
    model : fitted estimator or Pipeline
        An estimator of sklearn-fil with an ``attribute_fil_``, or a Pipeline
        of fitted transformers ending with one.
    sd : bool, default=False
        Read ``attribute_fil_sd_`` instead: the FIL in units of each
        attribute's training standard deviation, which ranks attributes
        without mixing units.

    Returns
    -------
    fil : pandas.Series
        A copy of the Series, one entry per attribute, in the same order.

    Raises
    ------
    ValueError
        When the (final) estimator has no such attribute (e.g. a released
        copy), or when two attributes would get the same name.

    See Also
    --------
    privacy_report : The per-example report, named so.

    Examples
    --------
    See :func:`privacy_report`.
    """
    if not isinstance(sd, bool | np.bool_):
        raise TypeError(f"sd must be a bool, got {sd!r}.")
    name = "attribute_fil_sd_" if sd else "attribute_fil_"
    fil = _final_attribute(model, name, "attribute_fil").copy()
    labels = attribute_labels(model)
    fil.index = _renamed(
        fil.index,
        [labels.get(str(attribute), attribute) for attribute in fil.index],
        "attributes",
    )
    return fil
