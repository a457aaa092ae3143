"""The command's input: the ``--dataset`` registry, the CSV checks, the model.

A check fails with ``_InputError`` before the fit: a CSV file that cannot
be read, a missing or constant target, an unknown column, a model that does
not fit the target.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral
from typing import NamedTuple

import numpy as np
import pandas as pd
from pandas.api.types import is_numeric_dtype

from sklearn_fil._losses import get_family
from sklearn_fil.linear_model import (
    OutputPerturbedLinearRegression,
    OutputPerturbedLogisticRegression,
)
from sklearn_fil.tabular import TablePreparer, read_raw_csv
from sklearn_fil.utils._text import joined as _joined
from sklearn_fil.utils._text import plain as _plain
from sklearn_fil.utils._text import preview as _preview

PROG = "sklearn-fil"


class _InputError(Exception):
    """A problem with the command's input: one line on stderr, exit code 2."""


class _Model(NamedTuple):
    """A ``--model`` choice: its name, what it fits, and its loss family."""

    name: str
    estimator: type
    title: str

    @property
    def family(self):
        return get_family(self.estimator._loss)


_LINEAR = _Model("linear", OutputPerturbedLinearRegression, "ridge regression")
_LOGISTIC = _Model("logistic", OutputPerturbedLogisticRegression, "logistic regression")
_MODELS = {model.name: model for model in (_LINEAR, _LOGISTIC)}


def _class_names(y, target_names):
    """``{class: name}`` when the classes are 0..k-1 indexing ``target_names``."""
    names, classes = np.asarray(target_names), np.unique(np.asarray(y))
    if names.dtype.kind not in "OUS" or not np.issubdtype(classes.dtype, np.integer):
        return None
    if classes.min() < 0 or classes.max() >= names.size:
        return None
    return {int(value): str(names[value]) for value in classes}


def _breast_cancer(sym):
    """Breast-cancer data, standardised, rows scaled into the unit ball."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import StandardScaler

    bunch = load_breast_cancer(as_frame=True)
    Z = StandardScaler().fit_transform(bunch.data)
    Z /= np.linalg.norm(Z, axis=1).max()
    X = pd.DataFrame(Z, index=bunch.data.index, columns=bunch.data.columns)
    y = bunch.frame["target"]
    data = {
        "name": "breast cancer (bundled with scikit-learn; standardised, rows "
        f"scaled to norm {sym['le']} 1)",
        "target": "target",
        "model": _LOGISTIC,
        "data_norm": 1.0,
        "dp_scope": "the preprocessed rows (not the raw data: the preprocessing "
        "uses every example)",
        "class_names": _class_names(y, bunch.target_names),
    }
    return X, y, data, None


def _real_dataset(loader, name, target, model, data_norm=None, **kwargs):
    """A loader of :mod:`sklearn_fil.datasets` as a ``--dataset`` choice."""

    def load(sym):
        from sklearn_fil import datasets

        try:
            bunch = getattr(datasets, loader)(as_frame=True, **kwargs)
        except ImportError as exc:
            raise _InputError(str(exc)) from None
        y = pd.Series(bunch.target, index=bunch.data.index, name=target)
        data = {
            "name": name,
            "target": target,
            "model": model,
            "data_norm": data_norm,
            "dp_scope": "the preprocessed rows (the preprocessing uses every example)",
            "class_names": _class_names(y, getattr(bunch, "target_names", [])),
        }
        return bunch.data, y, data, getattr(bunch, "onehot_groups", None)

    return load


_DATASETS = {
    "breast_cancer": _breast_cancer,
    "adult": _real_dataset(
        "load_adult",
        "UCI Adult (training part; Hannun et al.'s preprocessing)",
        "income",
        _LOGISTIC,
    ),
    "mnist01": _real_dataset(
        "load_mnist",
        "MNIST digits 0 and 1 (training part, rows in the unit ball)",
        "digit",
        _LOGISTIC,
        data_norm=1.0,
        digits=(0, 1),
    ),
    "iwpc": _real_dataset(
        "load_iwpc", "IWPC warfarin (standardised weekly dose)", "dose", _LINEAR
    ),
}


def _dataset_table(X, onehot_groups):
    """The table record of a ready-made data set: its columns as they are."""
    groups = {
        name: [X.columns[j] if isinstance(j, Integral) else j for j in columns]
        for name, columns in (onehot_groups or {}).items()
    }
    grouped = {column for columns in groups.values() for column in columns}
    rows = [(str(c), "numeric", [c], None) for c in X.columns if c not in grouped]
    rows += [(str(n), "categorical", cols, len(cols)) for n, cols in groups.items()]
    features = pd.DataFrame(rows, columns=["column", "kind", "inputs", "n_levels"])
    features["n_levels"] = features["n_levels"].astype("Int64")
    features = features.assign(n_missing=0).set_index("column")
    return {"features": features, "dropped": {}, "notes": [], "leaks": {}}


def _load_data(args, sym):
    """Features, target, data description and one-hot groups of the chosen input.

    The features of a CSV file are its raw columns, checked but not yet
    prepared (:func:`_prepare_table` does that once the model is chosen).
    """
    if args.csv is not None and args.dataset is not None:
        raise _InputError("give either a CSV file or --dataset, not both")
    options = {
        "--sep": args.sep,
        "--drop": args.drop,
        "--keep": args.keep,
        "--categorical": args.categorical,
        "--dropna-target": args.dropna_target,
    }
    used = [name for name, value in options.items() if value]
    if used and args.csv is None:
        raise _InputError(
            f"{', '.join(used)} applies only to a CSV file (give the CSV file "
            "before --drop, --keep or --categorical, which read every following "
            "word as a column name)"
        )
    if args.csv is None:
        name = args.dataset or "breast_cancer"
        X, y, data, groups = _DATASETS[name](sym)
        if args.target not in (None, data["target"]):
            raise _InputError(
                f"--target {args.target!r} needs a CSV file; the {name} data's "
                f"target is {data['target']!r}"
            )
        return X, y, data, groups
    frame, sep = _read_csv(args.csv, args.sep)
    n_rows, n_columns = frame.shape
    frame, notes = _check_target(frame, args.csv, args)
    _check_column_options(frame, args.csv, args)
    data = {
        "name": f"{args.csv} ({n_rows} rows, {n_columns} columns, delimiter {sep!r})",
        "source": str(args.csv),
        "sep": sep,
        "target": args.target,
        "notes": notes,
        "dp_scope": f"the preprocessed rows of {args.csv} (not the preprocessing, "
        "which is fitted on every row)",
    }
    return frame.drop(columns=args.target), frame[args.target], data, None


def _read_csv(path, sep=None):
    """The table in ``path`` and its delimiter, or the reason it cannot be read."""
    try:
        return read_raw_csv(path, sep=sep)
    except FileNotFoundError:
        raise _InputError(f"file not found: {path}") from None
    except IsADirectoryError:
        raise _InputError(f"cannot read {path}: it is a directory") from None
    except PermissionError:
        raise _InputError(f"cannot read {path}: permission denied") from None
    except OSError as exc:
        raise _InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise _InputError(str(exc)) from None


def _check_target(frame, path, args):
    """The rows to use and a note on those dropped, after checking the target."""
    target, columns = args.target, list(frame.columns)
    if target is None:
        raise _InputError(
            f"--target is required with a CSV file: name the label column "
            f"(columns of {path}: {_preview(columns)})"
        )
    if target not in frame.columns:
        raise _InputError(
            f"target column {target!r} not found in {path}; available columns: "
            f"{_preview(columns)}"
        )
    if len(columns) < 2:
        raise _InputError(
            f"no feature columns: {path} has only the target column {target!r}"
        )
    _check_n_rows(len(frame), path)
    missing, notes = int(frame[target].isna().sum()), []
    if missing and not args.dropna_target:
        raise _InputError(
            f"the target {target!r} is missing (empty or NaN) in {missing} of "
            f"{len(frame)} rows; drop those rows with --dropna-target"
        )
    if missing:
        frame = frame[frame[target].notna()]
        _check_n_rows(len(frame), f"{path} (rows with a target)")
        notes.append(
            f"dropped {missing} of {missing + len(frame)} rows whose {target!r} "
            "is missing (--dropna-target); the report keeps the others' row numbers"
        )
    values = frame[target].unique()
    if len(values) < 2:
        raise _InputError(
            f"the target {target!r} has the single value {_plain(values[0])!r} in all "
            f"{len(frame)} rows: there is nothing to learn"
        )
    return frame, notes


def _check_n_rows(n_rows, where):
    if n_rows < 2:
        raise _InputError(
            f"{where} has {n_rows} data row(s); at least 2 examples are needed"
        )


def _check_column_options(frame, path, args):
    """Fail before any work on ``--drop``/``--keep``/``--categorical`` names."""
    options = {
        "--drop": args.drop,
        "--keep": args.keep,
        "--categorical": args.categorical,
    }
    for option, names in options.items():
        unknown = [name for name in names if name not in frame.columns]
        if unknown:
            raise _InputError(
                f"{option}: no column {_preview(unknown)} in {path}; available "
                f"columns: {_preview(list(frame.columns))}"
            )
        if args.target in names:
            raise _InputError(f"{option} names the target column {args.target!r}")
    both = [name for name in args.drop if name in args.keep]
    if both:
        raise _InputError(f"{_preview(both)} given to both --drop and --keep")


def _prepare_table(features, y, args, notes):
    """The model inputs, one-hot groups and table record of a CSV's raw columns."""
    preparer = TablePreparer(
        drop=args.drop,
        keep=args.keep,
        categorical=args.categorical,
        max_levels=args.max_levels,
    )
    try:
        X = preparer.fit_transform(features, y)
    except ValueError as exc:
        raise _InputError(f"preparing the features failed: {exc}") from None
    table = {
        "features": preparer.features_,
        "dropped": preparer.dropped_columns_,
        "notes": [*notes, *preparer.notes_.values()],
        "leaks": preparer.target_leaks_,
        "preprocessed": True,
    }
    return X, preparer.onehot_groups_, table


def _choose_model(model, y, from_csv):
    """The :class:`_Model` to fit and, when it was inferred, why."""
    n_values, numeric = int(y.nunique()), is_numeric_dtype(y)
    note = None
    if model is None and from_csv:
        model = _LOGISTIC if n_values == 2 or not numeric else _LINEAR
        note = f"inferred: the target has {n_values} distinct values"
    model = model or _LOGISTIC
    if not model.family.is_classifier and not numeric:
        raise _InputError(
            f"--model linear needs a numeric target, but {_target_text(y)}; use "
            "--model logistic"
        )
    return model, note


def _target_text(y, limit=8):
    """``the target 'y' has 3 classes: 'u' (40 rows), 'v' (1 row), ...``."""
    counts = y.value_counts()
    kind = "distinct values" if is_numeric_dtype(y) else "classes"
    shown = [f"{_plain(v)!r} ({c} row{'s' * (c != 1)})" for v, c in counts.items()]
    return f"the target {y.name!r} has {len(counts)} {kind}: {_joined(shown, limit)}"


def _missing_for_guarantee(model, data_norm, label_bound):
    """The options an (epsilon, delta) guarantee of ``model`` still lacks.

    A logistic model needs ``--data-norm``; a linear one ``--data-norm`` and
    ``--label-bound`` (its squared loss has a bounded gradient only on bounded
    rows and labels).
    """
    missing = ["--data-norm"] * (data_norm is None)
    if not model.family.is_classifier and label_bound is None:
        missing.append("--label-bound")
    return missing


def _guarantee_needs(model, missing):
    """``which a linear model has only with --data-norm and ... (missing: ...)``."""
    needs = "--data-norm"
    if not model.family.is_classifier:
        needs += " and --label-bound"
    return (
        f"which a {model.name} model has only with {needs} (missing: "
        f"{' and '.join(missing)})"
    )


def _resolve_bounds(args, model, data):
    """``(data_norm, label_bound, missing)``: the bounds to clip to, checked.

    None for a bound not applied; ``missing`` lists the options that a
    guarantee still lacks, for the summary to name.

    Fails before any work on an option the model cannot use: ``--label-bound``
    with a logistic model, and ``--target-epsilon`` or ``--delta`` without the
    options of a guarantee (:func:`_missing_for_guarantee`). A ready-made data
    set's own row bound (its rows already lie within it) is the default
    ``--data-norm`` of a logistic model, and of a linear one given
    ``--label-bound``.
    """
    label_bound, classifier = args.label_bound, model.family.is_classifier
    if classifier and label_bound is not None:
        why = f"; {data['model_note']}" if data.get("model_note") else ""
        raise _InputError(
            "--label-bound clips a numeric target: it applies only to --model "
            f"linear, and this run fits a logistic model{why}"
        )
    if args.target_epsilon is not None and args.sigma is not None:
        raise _InputError(
            "give --sigma or --target-epsilon, not both: the target calibrates sigma"
        )
    own = data.get("data_norm") if args.csv is None else None
    data_norm = own if args.data_norm is None else args.data_norm
    missing = _missing_for_guarantee(model, data_norm, label_bound)
    if args.data_norm is None and not classifier and label_bound is None:
        data_norm = None  # no guarantee asked: the rows are not clipped
    if missing and args.target_epsilon is not None:
        raise _InputError(
            "--target-epsilon calibrates the noise to the (epsilon, delta) "
            f"guarantee, {_guarantee_needs(model, missing)}"
        )
    if missing and args.delta is not None:
        raise _InputError(
            "--delta sets the delta of the epsilon guarantee, "
            f"{_guarantee_needs(model, missing)}"
        )
    return data_norm, label_bound, missing
