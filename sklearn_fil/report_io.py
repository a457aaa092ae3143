"""Privacy reports with their context: settings and guarantee, kept on export.

``privacy_report_.attrs`` holds :func:`privacy_report_metadata`; a CSV does
not keep ``attrs``, so :func:`write_privacy_report` writes the report as CSV
with the metadata in a JSON file beside it (same name, ``.json``), the layout
``sklearn-fil report`` writes, and :func:`read_privacy_report` reads both back.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import json
import math
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = [
    "privacy_report_metadata",
    "read_privacy_report",
    "sidecar_path",
    "write_privacy_report",
]

SENSITIVE_NOTE = "computed from every example's data: keep it private"


def _version():
    try:
        return version("sklearn-fil")
    except PackageNotFoundError:  # pragma: no cover - source checkout
        return "0.0.0+unknown"


def to_jsonable(value):
    """``value`` with NumPy scalars, paths and non-finite floats made JSON-safe.

    Dicts and sequences are converted item by item; non-finite floats become
    None; anything else that JSON cannot hold becomes its ``str``.
    """
    if isinstance(value, dict):
        return {str(key): to_jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple | np.ndarray | pd.Index):
        return [to_jsonable(item) for item in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def privacy_report_metadata(estimator):
    """The context of a fitted estimator's privacy report, JSON-safe.

    What ``privacy_report_.attrs`` holds and what :func:`write_privacy_report`
    writes beside the CSV: the package version, the estimator and its
    parameters, the number of examples, the noise, and the guarantee (ε, δ,
    neighbouring relation, what is public) or the reason there is none.

    Parameters
    ----------
    estimator : fitted estimator
        An estimator of sklearn-fil with a ``privacy_report_``.

    Returns
    -------
    metadata : dict
        Keys ``sklearn_fil_version``, ``estimator``, ``estimator_params``,
        ``n``, ``sigma``, ``epsilon``, ``delta``, ``neighboring_relation``,
        ``public``, ``no_guarantee_reason``, ``n_clipped``, ``dataset_fil``,
        ``sensitive``; ``epsilon`` and the two after it are None without a
        guarantee.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_fil.linear_model import OutputPerturbedLogisticRegression
    >>> from sklearn_fil.report_io import privacy_report_metadata
    >>> X, y = make_classification(n_samples=100, n_features=4, random_state=0)
    >>> clf = OutputPerturbedLogisticRegression(
    ...     data_norm=3.0, penalize_intercept=True, random_state=0
    ... ).fit(X, y)
    >>> meta = privacy_report_metadata(clf)
    >>> meta["n"], meta["neighboring_relation"]
    (100, 'replace_one')
    >>> meta == clf.privacy_report_.attrs
    True
    """
    guarantee = getattr(estimator, "guarantee_", None)
    holds = guarantee is not None and guarantee.epsilon is not None
    params = getattr(estimator, "_fitted_params", None) or estimator.get_params(
        deep=False
    )
    if holds:
        reason = None
    elif guarantee is not None:
        reason = guarantee.reason
    else:
        reason = "the estimator reports no differential-privacy guarantee"
    metadata = {
        "sklearn_fil_version": _version(),
        "estimator": type(estimator).__name__,
        "estimator_params": params,
        "n": int(estimator.privacy_report_.shape[0]),
        "sigma": getattr(estimator, "sigma_", None),
        "epsilon": guarantee.epsilon if holds else None,
        "delta": guarantee.delta if holds else None,
        "neighboring_relation": guarantee.neighboring_relation if holds else None,
        "public": list(guarantee.public) if holds else None,
        "no_guarantee_reason": reason,
        "n_clipped": int(getattr(estimator, "n_clipped_", 0)),
        "dataset_fil": getattr(estimator, "dataset_fil_", None),
        "sensitive": SENSITIVE_NOTE,
    }
    return to_jsonable(metadata)


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
    """Write ``report`` as CSV, its index column named (``sample`` if unnamed)."""
    report.rename_axis(report.index.name or "sample").to_csv(path)


def write_json(metadata, path):
    """Write ``metadata`` as strict JSON (no NaN) to ``path``."""
    text = json.dumps(metadata, indent=2, ensure_ascii=False, allow_nan=False)
    Path(path).write_text(text + "\n", encoding="utf-8")


def write_privacy_report(estimator, path):
    """Write a fitted estimator's privacy report as CSV, its context as JSON.

    The CSV holds ``privacy_report_`` (index column first); the JSON file
    beside it (:func:`sidecar_path`) holds ``privacy_report_.attrs``, i.e.
    :func:`privacy_report_metadata`, which a CSV cannot keep. Both are
    sensitive: they are computed from every training example.

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

    Parameters
    ----------
    path : str or path-like
        The CSV file; its sidecar JSON, when present, fills ``attrs``.

    Returns
    -------
    report : pandas.DataFrame
        The report, indexed by its first column, float64 columns.

    Examples
    --------
    See :func:`write_privacy_report`.
    """
    report = pd.read_csv(path, index_col=0)
    sidecar = sidecar_path(path)
    if sidecar.exists():
        report.attrs = json.loads(sidecar.read_text(encoding="utf-8"))
    return report
