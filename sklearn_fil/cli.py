"""The ``sklearn-fil`` command: privacy reports of output-perturbed models.

Argument parsing and orchestration only: a CSV file is read and prepared by
:mod:`sklearn_fil.tabular`, the model is an sklearn-fil estimator, and the
summary is printed from the fitted estimator's report and guarantee.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import math
import sys
import textwrap
from numbers import Integral
from pathlib import Path

import numpy as np
import pandas as pd
from pandas.api.types import is_float_dtype, is_numeric_dtype

from sklearn_fil import (
    OutputPerturbedLinearRegression,
    OutputPerturbedLogisticRegression,
    __version__,
)
from sklearn_fil.report_io import (
    privacy_report_metadata,
    sidecar_path,
    to_jsonable,
    write_csv,
    write_json,
)
from sklearn_fil.tabular import TablePreparer, read_raw_csv

PROG = "sklearn-fil"
_N_TOP_ATTRIBUTES = 10
_N_LISTED = 30  # feature names printed per kind; the sidecar JSON has them all
_KEEP_TOGETHER = "\x00"  # a space that _wrapped does not break lines at
_QUANTILES = {"min": 0.0, "25%": 0.25, "median": 0.5, "75%": 0.75, "95%": 0.95}
_QUANTILES["max"] = 1.0
_RELATIONS = {
    "replace_one": "replace-one neighbours (data sets of the same, public size "
    "that differ in one example)",
    "add_remove": "add/remove-one neighbours (data sets that differ by adding or "
    "removing one example)",
}

_DESCRIPTION = """\
Fit an output-perturbed model (Gaussian noise of scale sigma added to its fitted
weights) and report how much the released weights leak about each training
example and each attribute.

Fisher information loss (FIL) measures how much information the released
weights carry about the values of one training example: eta (column fil) is the
square root of the Fisher information in the example's most exposed direction,
and eta-bar (column dfil) its root mean square over the example's coordinates.
By the Cramer-Rao bound, any unbiased reconstruction of an example from the
weights has a mean squared error per coordinate of at least 1/dfil^2 (column
mse_bound): the larger the FIL, the more exposed the example.

Without CSV the command uses scikit-learn's bundled breast-cancer data (569
examples, 30 features): features standardised, then every row divided by the
largest row norm so that all rows have norm <= 1, label column 'target', a
logistic model with --data-norm 1.0 and a penalised intercept, so that an
(epsilon, delta)-DP guarantee holds and is reported. That guarantee is about the
preprocessed rows: the standardisation and the scaling use every example and
are not accounted for.

A CSV file is read raw: its delimiter is sniffed (or given with --sep); row
identifiers, free text, dates, empty, constant and duplicated columns are
dropped and listed with the reason (--drop drops more, --keep overrides a
detection); missing values are imputed (the median of a numeric column, the
most frequent value of another); numeric columns are standardised and the
others one-hot encoded, each categorical column one attribute of the report
(in Python: sklearn_fil.tabular.TablePreparer, the same preparation).
The preprocessing is fitted on every row, so it too depends on each example;
the FIL and epsilon cover the model fitted to the preprocessed rows only. The
summary gives the model's training accuracy (or R^2) beside the majority (or
mean) baseline, and a JSON file beside the report records the settings."""

_EPILOG = """\
examples:
  sklearn-fil report
      bundled breast-cancer data, logistic model, epsilon reported
  sklearn-fil report patients.csv --target outcome --model logistic \\
      --data-norm 5 --sigma 0.5 --lam 0.1 --out patients_fil.csv
      your own raw table, rows clipped to norm 5 so that epsilon is reported
      (patients_fil.json records the settings)
  sklearn-fil report compas.csv --target two_year_recid --drop is_recid
      drop a column the command would keep (here one recorded after the outcome)
  sklearn-fil report --dataset adult --plot adult_fil.png
      UCI Adult (needs the data packages), with the FIL histogram by class

warning: the written report is itself sensitive. Every row is computed from
one example's data and shows which examples are unusual: treat the file like
the training data and never publish it. A fixed --random-state makes the noise
reproducible and therefore not private. This is a measurement and research
tool; its noise sampler is not hardened for production DP releases."""


class _InputError(Exception):
    """A problem with the command's input: one line on stderr, exit code 2."""


# --------------------------------------------------------------------------------------
# argument parsing


def _checked(convert, test, rule):
    """An argparse type: ``convert(text)``, refused unless ``test(value)``."""
    kind = "an integer" if convert is int else "a number"

    def parse(text):
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {kind}: {text!r}") from None
        if not test(value):
            raise argparse.ArgumentTypeError(f"must be {rule}, got {text!r}")
        return value

    return parse


_POSITIVE = _checked(float, lambda v: math.isfinite(v) and v > 0, "a finite number > 0")
_NON_NEGATIVE = _checked(
    float, lambda v: math.isfinite(v) and v >= 0, "a finite number >= 0"
)
_PROBABILITY = _checked(float, lambda v: 0 < v < 1, "in (0, 1)")
_COUNT = _checked(int, lambda v: v >= 0, ">= 0")
_SEED = _checked(int, lambda v: 0 <= v < 2**32, "in [0, 2**32)")
_AT_LEAST_TWO = _checked(int, lambda v: v >= 2, ">= 2")


def _separator(text):
    """``--sep``: one delimiter; ``\t`` or ``tab`` for a tab."""
    if not text:
        raise argparse.ArgumentTypeError("must not be empty")
    return "\t" if text in ("\\t", "tab") else text


_HELP = {
    "csv": "CSV file with a header row, one row per training example, read raw and "
    "preprocessed as described above (default: the bundled breast-cancer data)",
    "--dataset": "a real data set instead of a CSV: breast_cancer (bundled with "
    "scikit-learn, the default), adult (UCI Adult, logistic, marital status as a "
    "one-hot attribute), mnist01 (MNIST digits 0 and 1, 784 pixels scaled to the unit "
    "ball, logistic with --data-norm 1), iwpc (warfarin dose, linear, VKORC1 as a "
    "one-hot attribute); the last three need the data packages of sklearn_fil.datasets",
    "--target": "name of the label column; required with a CSV (default: 'target' "
    "for the bundled data)",
    "--sep": "the CSV delimiter, e.g. ';' or '\\t' (default: sniffed from the first "
    "lines among , ; tab |)",
    "--drop": "also drop these columns",
    "--keep": "keep these columns although they look like identifiers, free text, "
    "dates or duplicates (empty and constant columns are always dropped)",
    "--categorical": "one-hot encode these numeric columns (integer codes) instead of "
    "standardising them; text and true/false columns always are",
    "--max-levels": "one-hot inputs per categorical column: the K - 1 most frequent "
    "values and one 'other' for the rest (default: %(default)s)",
    "--dropna-target": "drop the rows whose target is missing (default: refuse them)",
    "--model": "linear: ridge regression (squared loss); logistic: binary logistic "
    "regression (default: logistic for the bundled data; for a CSV, linear when the "
    "target is numeric with more than 2 distinct values, else logistic, and the "
    "choice is printed)",
    "--sigma": "standard deviation of the Gaussian noise added to every weight; FIL "
    "scales as 1/S (default: %(default)s)",
    "--lam": "L2 strength: the model minimises sum_i loss_i + (n L / 2) ||w||^2 "
    "(default: %(default)s)",
    "--no-private-label": "treat the label as public: only the features are private "
    "and the report has no fil[<target>] column (default: the label is private)",
    "--data-norm": "logistic only: clip every row to L2 norm NORM before fitting and "
    "penalise the intercept; the release is then (epsilon, delta)-DP and epsilon is "
    "reported (default: 1.0 for the bundled data; none for a CSV, so no epsilon)",
    "--delta": "delta of the reported (epsilon, delta) guarantee; needs --data-norm "
    "(default: sklearn_fil.accounting.default_delta(n) = min(1e-5, 1/(10 n)), n the "
    "number of examples)",
    "--random-state": "seed of the output noise (default: None, fresh OS entropy). A "
    "fixed seed makes the noise reproducible and therefore NOT private; the report "
    "itself does not depend on the noise",
    "--top": "number of most exposed examples to list (default: %(default)s)",
    "--plot": "also write the histogram of the per-example FIL (by class for a "
    "logistic model) to this image file; needs matplotlib",
    "--out": "where to write the privacy report, a CSV file with one row per example, "
    "and beside it (same name, .json) the settings, features, dropped columns and "
    "epsilon; both are sensitive, keep them private (default: %(default)s)",
    "--overwrite": "replace the report, its .json and the --plot image when they "
    "exist (default: refuse, before any work)",
}


def _build_parser():
    """The ``sklearn-fil`` parser: global options and the ``report`` command."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Private scikit-learn models and reports of how much they leak "
        "about each training example, measured by Fisher information loss (FIL).",
        epilog=f"Run '{PROG} report --help' for the options of the report command.",
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {__version__}"
    )
    commands = parser.add_subparsers(
        dest="command", title="commands", metavar="COMMAND"
    )
    commands.required = True
    report = commands.add_parser(
        "report",
        help="fit an output-perturbed model and write its privacy report",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    table = report.add_argument_group(
        "CSV tables", "(put the CSV file before --drop, --keep and --categorical)"
    )
    columns = {"nargs": "+", "action": "extend", "default": [], "metavar": "COL"}
    for group, name, options in [
        (report, "csv", {"nargs": "?", "metavar": "CSV"}),
        (report, "--dataset", {"choices": tuple(_DATASETS)}),
        (report, "--target", {"metavar": "COL"}),
        (table, "--sep", {"type": _separator, "metavar": "SEP"}),
        (table, "--drop", columns),
        (table, "--keep", columns),
        (table, "--categorical", columns),
        (table, "--max-levels", {"type": _AT_LEAST_TWO, "default": 20, "metavar": "K"}),
        (table, "--dropna-target", {"action": "store_true"}),
        (report, "--model", {"choices": ("linear", "logistic")}),
        (report, "--sigma", {"type": _POSITIVE, "default": 0.1, "metavar": "S"}),
        (report, "--lam", {"type": _NON_NEGATIVE, "default": 0.01, "metavar": "L"}),
        (
            report,
            "--no-private-label",
            {"dest": "private_label", "action": "store_false"},
        ),
        (report, "--data-norm", {"type": _POSITIVE, "metavar": "NORM"}),
        (report, "--delta", {"type": _PROBABILITY, "metavar": "D"}),
        (report, "--random-state", {"type": _SEED, "metavar": "SEED"}),
        (report, "--top", {"type": _COUNT, "default": 10, "metavar": "K"}),
        (report, "--plot", {"metavar": "PNG"}),
        (report, "--out", {"default": "report.csv", "metavar": "PATH"}),
        (report, "--overwrite", {"action": "store_true"}),
    ]:
        group.add_argument(name, help=_HELP[name], **options)
    return parser


# --------------------------------------------------------------------------------------
# data


def _plain(value):
    """A NumPy scalar as the Python value it holds (for readable reprs)."""
    return value.item() if isinstance(value, np.generic) else value


def _preview(names, limit=8):
    """Comma-separated names, truncated after ``limit``."""
    names = [repr(str(name)) for name in names]
    more = f", ... ({len(names) - limit} more)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


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
        "model": "logistic",
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
        "logistic",
    ),
    "mnist01": _real_dataset(
        "load_mnist",
        "MNIST digits 0 and 1 (training part, rows in the unit ball)",
        "digit",
        "logistic",
        data_norm=1.0,
        digits=(0, 1),
    ),
    "iwpc": _real_dataset(
        "load_iwpc", "IWPC warfarin (standardised weekly dose)", "dose", "linear"
    ),
}


def _load_data(args, sym):
    """Features, target, data description and one-hot groups of the chosen input.

    The features of a CSV file are its raw columns, checked but not yet
    prepared (:func:`_prepare_table` does that once the model is chosen).
    """
    if args.csv is not None and args.dataset is not None:
        raise _InputError("give either a CSV file or --dataset, not both")
    options = {"--sep": args.sep, "--drop": args.drop, "--keep": args.keep}
    options.update({"--categorical": args.categorical})
    used = [name for name, value in options.items() if value]
    used += ["--dropna-target"] * args.dropna_target
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
    options = {"--drop": args.drop, "--keep": args.keep}
    for option, names in {**options, "--categorical": args.categorical}.items():
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


# --------------------------------------------------------------------------------------
# the model


def _choose_model(model, y, from_csv):
    """The model to fit and, when it was inferred, why."""
    n_values, numeric = int(y.nunique()), is_numeric_dtype(y)
    note = None
    if model is None and from_csv:
        model = "logistic" if n_values == 2 or not numeric else "linear"
        note = f"inferred: the target has {n_values} distinct values"
    model = model or "logistic"
    logistic = (
        "--model logistic fits binary targets only (output perturbation of "
        "multiclass models is planned)"
    )
    fix = "binarise the target (one class against the others) or keep the rows of "
    fix += "two classes"
    if model == "logistic" and n_values != 2:
        if numeric:
            fix += ", or fit it as a number with --model linear"
        else:
            logistic += " and --model linear numeric ones"
        raise _InputError(f"{_target_text(y)}; {logistic}: {fix}")
    if model == "linear" and not numeric:
        fix = "use --model logistic" if n_values == 2 else f"{logistic}: {fix}"
        raise _InputError(
            f"--model linear needs a numeric target, but {_target_text(y)}; {fix}"
        )
    return model, note


def _target_text(y, limit=8):
    """``the target 'y' has 3 classes: 'u' (40 rows), 'v' (1 row), ...``."""
    counts = y.value_counts()
    kind = "distinct values" if is_numeric_dtype(y) else "classes"
    shown = [f"{_plain(v)!r} ({c} row{'s' * (c != 1)})" for v, c in counts.items()]
    more = f", ... ({len(shown) - limit} more)" if len(shown) > limit else ""
    return (
        f"the target {y.name!r} has {len(counts)} {kind}: "
        + ", ".join(shown[:limit])
        + more
    )


def _resolve_data_norm(args, model, data):
    """The row-norm bound to clip to (None for none), checked against the model."""
    data_norm = args.data_norm
    if model == "linear" and data_norm is not None:
        raise _InputError(
            "--data-norm applies only to --model logistic: output perturbation of "
            "linear regression has no DP guarantee"
        )
    if model == "logistic" and data_norm is None and args.csv is None:
        data_norm = data.get("data_norm")
    if args.delta is not None and data_norm is None:
        raise _InputError(
            "--delta sets the delta of the epsilon guarantee, which needs "
            "--model logistic with --data-norm"
        )
    return data_norm


def _fit(args, model, data_norm, onehot_groups, X, y):
    """The output-perturbed estimator of ``model``, fitted to ``X`` and ``y``."""
    common = {"sigma": args.sigma, "lam": args.lam, "fit_intercept": True}
    common.update(private_label=args.private_label, onehot_groups=onehot_groups)
    common.update(random_state=args.random_state)
    if model == "logistic":
        estimator = OutputPerturbedLogisticRegression(
            # the DP guarantee with an intercept needs a strongly convex objective
            penalize_intercept=data_norm is not None,
            data_norm=data_norm,
            delta=args.delta,
            **common,
        )
    else:
        estimator = OutputPerturbedLinearRegression(**common)
    try:
        return estimator.fit(X, y)
    except ValueError as exc:
        raise _InputError(f"fitting the {model} model failed: {exc}") from None


def _fit_quality(estimator, X, y, model):
    """Training score of the released model beside the baseline, and the verdict.

    A classifier is useful when its accuracy exceeds the majority rate by more
    than two binomial standard errors; a regressor when its R^2 exceeds what
    ``d`` uninformative inputs reach on the training rows by chance (about
    ``d / n``, plus two standard deviations ``sqrt(2 d) / n``).
    """
    n, d = len(y), X.shape[1]
    score = float(estimator.score(X, y))
    if model == "logistic":
        counts = y.value_counts()
        baseline = float(counts.iloc[0] / n)
        margin = 2 * math.sqrt(baseline * (1 - baseline) / n)
        majority, metric = _plain(counts.index[0]), "accuracy"
    else:
        baseline, margin = 0.0, (d + 2 * math.sqrt(2 * d)) / n
        majority, metric = None, "R^2"
    return {
        "metric": metric,
        "score": score,
        "baseline": baseline,
        "majority_class": majority,
        "margin": margin,
        "useful": score > baseline + margin,
    }


# --------------------------------------------------------------------------------------
# outputs


def _same_file(a, b):
    """Whether paths ``a`` and ``b`` name the same file (links followed)."""
    a, b = Path(a), Path(b)
    try:
        if a.exists() and b.exists():
            return a.samefile(b)
    except OSError:
        pass
    return a.resolve() == b.resolve()


def _check_outputs(args):
    """The report's path, after checking before any work that outputs can be written.

    Each output (the report, its sidecar JSON, the plot) must be a regular
    file in an existing directory, not the input, and new unless ``--overwrite``.
    """
    out = Path(args.out)
    if out.suffix.lower() == ".json":
        raise _InputError(
            f"--out {out} ends in .json, the name of the report's sidecar JSON "
            "file; give the report a .csv name"
        )
    written = {"--out": out, "its sidecar JSON": sidecar_path(out)}
    if args.plot is not None:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise _InputError(
                "--plot needs matplotlib: pip install sklearn-fil[plot]"
            ) from None
        if any(_same_file(args.plot, path) for path in written.values()):
            raise _InputError(f"--plot {args.plot} would overwrite the report")
        written["--plot"] = Path(args.plot)
    for what, path in written.items():
        option = "--plot" if what == "--plot" else "--out"
        if args.csv is not None and _same_file(path, args.csv):
            raise _InputError(
                f"refusing to overwrite the input {args.csv} with {what} ({path}); "
                f"choose another {option}"
            )
        if not path.parent.is_dir():
            raise _InputError(
                f"cannot write {path}: the directory {path.parent} does not exist"
            )
        if path.exists() and not path.is_file():
            kind = "a directory" if path.is_dir() else "a device, pipe or socket"
            raise _InputError(
                f"cannot write {path} ({what}): it is {kind}, not a regular file; "
                f"give {option} the path of a file"
            )
        if path.exists() and not args.overwrite:
            raise _InputError(
                f"refusing to overwrite the existing {path} ({what}); choose "
                f"another {option}, or pass --overwrite to replace it"
            )
    return out


def _write(write, content, path):
    """``write(content, path)``, an unwritable path an input error."""
    try:
        write(content, path)
    except OSError as exc:
        raise _InputError(f"cannot write {path}: {exc.strerror or exc}") from None


def _sidecar(estimator, data, model, args):
    """The run's context: settings, data, guarantee, for the JSON beside the report.

    The estimator's part is :func:`~sklearn_fil.report_io.privacy_report_metadata`
    (what ``privacy_report_.attrs`` holds); the command adds the data and its
    arguments.
    """
    meta, table = privacy_report_metadata(estimator), data["table"]
    features = [
        {
            "name": name,
            "kind": row.kind,
            "inputs": list(row.inputs),
            "n_levels": None if pd.isna(row.n_levels) else int(row.n_levels),
            "n_missing": int(row.n_missing),
        }
        for name, row in table["features"].iterrows()
    ]
    sidecar = {
        "sklearn_fil_version": meta["sklearn_fil_version"],
        "command": f"{PROG} {args.command}",
        "data": data.get("source", data["name"]),
        "separator": data.get("sep"),
        "target": data["target"],
        "n": meta["n"],
        "model": model,
        **{key: meta[key] for key in ("sigma", "epsilon", "delta")},
        **{key: meta[key] for key in ("neighboring_relation", "public")},
        "dp_scope": data["dp_scope"] if meta["epsilon"] is not None else None,
        **{key: meta[key] for key in ("no_guarantee_reason", "n_clipped")},
        "dataset_fil": meta["dataset_fil"],
        "fit": data["fit"],
        "features": features,
        "dropped": [{"column": c, "why": w} for c, w in table["dropped"].items()],
        "notes": table["notes"],
        "possible_target_leaks": [
            {"column": c, "share": s} for c, s in table["leaks"].items()
        ],
        "settings": {
            "arguments": vars(args),
            "estimator": meta["estimator"],
            "estimator_params": meta["estimator_params"],
        },
        "sensitive": meta["sensitive"],
    }
    return to_jsonable(sidecar)


def _plot_histogram(estimator, y, model, class_names, path):
    """The FIL histogram (by class, named where the data set names them) as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sklearn_fil.plotting import FILHistogramDisplay

    groups = None
    if model == "logistic":
        names = class_names or {}
        groups = np.array([str(names.get(value, value)) for value in y])
    fig, ax = plt.subplots(figsize=(7, 4))
    display = FILHistogramDisplay.from_estimator(
        estimator, groups=groups, bins=40, log_scale=True, ax=ax
    )
    by = f", by {y.name}" if groups is not None else ""
    ax.set_title(
        f"Per-example FIL of the released {model} model ({y.size} examples){by}"
    )
    keys = list(display.bars_)
    if groups is None:
        labels = [f"all examples (n = {y.size})"]
    else:
        counts = pd.Series(groups).value_counts()
        labels = [f"{key} (n = {counts[key]})" for key in keys]
    ax.legend([display.bars_[key] for key in keys], labels, title=str(y.name))
    try:
        fig.savefig(path, dpi=100, bbox_inches="tight")
    except (OSError, ValueError) as exc:
        raise _InputError(f"cannot write the plot {path}: {exc}") from None
    finally:
        plt.close(fig)


# --------------------------------------------------------------------------------------
# the printed summary


def _symbols(stream):
    """Greek letters where ``stream`` can print them, ASCII names otherwise."""
    greek = {"eps": "ε", "delta": "δ", "sigma": "\N{GREEK SMALL LETTER SIGMA}"}
    greek.update(lam="λ", eta="η", etabar="η̄", le="≤", sq="²")
    try:
        "".join(greek.values()).encode(getattr(stream, "encoding", None) or "ascii")
    except (UnicodeEncodeError, LookupError):
        ascii_names = ("epsilon", "delta", "sigma", "lambda", "eta", "eta-bar")
        return dict(zip(greek, (*ascii_names, "<=", "^2"), strict=True))
    return greek


def _num(value):
    return f"{value:.4g}"


def _wrapped(text, indent="        ", first=None):
    """``text`` wrapped to 88 columns, continuation lines indented."""
    lines = textwrap.wrap(
        text,
        88,
        initial_indent=indent if first is None else first,
        subsequent_indent=indent,
        break_on_hyphens=False,
        break_long_words=False,  # paths stay whole
    )
    return [line.replace(_KEEP_TOGETHER, " ") for line in lines]


def _text_table(frame):
    """Lines of ``frame`` aligned: text to the left, numbers to the right.

    Floats print with 4 significant digits, everything else as ``str``.
    """
    columns = []
    for name, values in frame.items():
        right = is_numeric_dtype(values)
        text = [_num(v) if is_float_dtype(values) else str(v) for v in values]
        width = max(len(cell) for cell in [str(name), *text])
        columns.append(
            [c.rjust(width) if right else c.ljust(width) for c in [name, *text]]
        )
    return [("  " + "  ".join(row)).rstrip() for row in zip(*columns, strict=True)]


def _summary(estimator, data, model, args, data_norm, sym):
    """Lines of the printed summary, from the data set to the DP guarantee."""
    report = estimator.privacy_report_
    lines = [f"{PROG} report: Fisher information loss (FIL) of a released model", ""]
    lines += _data_lines(estimator, data, args, sym)
    lines += _model_lines(estimator, data, model, args, data_norm, sym)
    lines += _quality_lines(data["fit"], data, data_norm, sym)
    lines += _report_lines(report, min(args.top, report.shape[0]), sym)
    lines += _attribute_lines(estimator)
    lines += [
        "",
        f"Dataset FIL (all examples together): {_num(estimator.dataset_fil_)}",
    ]
    lines += _guarantee_lines(estimator.guarantee_, data, model, args, data_norm, sym)
    return lines


def _data_lines(estimator, data, args, sym):
    """Lines on the data: its size, notes and dropped columns, then its features."""
    n, d = estimator.privacy_report_.shape[0], estimator.n_features_in_
    table, n_features = data["table"], len(data["table"]["features"])
    width = f"{n_features} features"
    width += f" ({d} model inputs)" if n_features != d else ""
    label = "private" if args.private_label else "public"
    lines = [f"Data:   {data['name']}"]
    lines += [f"        {n} examples, {width}, target {data['target']!r} ({label})"]
    for note in table["notes"]:
        lines += _wrapped(f"Note: {note}", first="        ")
    dropped = pd.DataFrame(table["dropped"].items(), columns=["column", "why"])
    if len(dropped):
        head = f"Dropped {len(dropped)} column(s) (--keep COL keeps a detected one):"
        lines += ["", head, *_text_table(dropped.astype(str))]
    if dropped["why"].str.startswith("dates").any():
        lines += ["  (to use a date, turn it into a number, e.g. days since an event)"]
    return lines + _feature_lines(table, sym)


def _feature_lines(table, sym):
    """Lines naming the numeric and categorical features, and the values imputed."""
    features, prepared = table["features"], table.get("preprocessed", False)
    numeric = features.index[features["kind"] == "numeric"]
    categorical = [
        f"{name} ({row.n_levels})"
        if len(row.inputs) >= row.n_levels
        else f"{name} ({row.n_levels}: top {len(row.inputs) - 1} + other)"
        for name, row in features[features["kind"] != "numeric"].iterrows()
    ]
    how = (", standardised", ", one-hot encoded") if prepared else ("", "")
    texts = [
        f"{len(numeric)} numeric{how[0]}: {_listing(numeric)}" * bool(len(numeric)),
        f"{len(categorical)} categorical{how[1]}, each one attribute (distinct "
        f"values): {_listing(categorical)}" * bool(categorical),
    ]
    missing = features["n_missing"][features["n_missing"] > 0]
    if prepared and len(missing):
        listed = ", ".join(f"{name} {count}" for name, count in missing.items())
        texts.append(
            "Missing values, imputed (median of a numeric column, most frequent "
            f"value of another) in {len(missing)} column(s): {listed}"
        )
    lines = ["", f"Features used ({len(features)} columns of the data):"]
    for text in filter(None, texts):
        lines += _wrapped(text, indent="    ", first="  ")
    if not prepared:
        return lines
    return lines + _wrapped(
        "The imputation, the standardisation and the one-hot levels are fitted on "
        f"every row, so they too depend on each example: the FIL and {sym['eps']} "
        "below cover the model fitted to the preprocessed rows, not the "
        "preprocessing.",
        indent="  ",
    )


def _listing(names, limit=_N_LISTED):
    """``names`` joined by commas (spaces inside kept together), past ``limit`` cut."""
    names = [str(name).replace(" ", _KEEP_TOGETHER) for name in names]
    more = f", ... ({len(names) - limit} more)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def _model_lines(estimator, data, model, args, data_norm, sym):
    """Lines describing the fitted model: its noise, penalty and clipping."""
    kind = "logistic regression" if model == "logistic" else "ridge regression"
    text = f"Model:  {kind}, {sym['lam']} = {args.lam:g}, Gaussian output noise "
    text += f"{sym['sigma']} = {args.sigma:g}"
    lines = ["", text]
    if data_norm is not None:
        n, n_clipped = estimator.privacy_report_.shape[0], estimator.n_clipped_
        lines[-1] += f", rows clipped to norm {sym['le']} {data_norm:g}"
        most = " (most of them: see the warning above)" if 2 * n_clipped > n else ""
        lines.append(f"        clipping rescaled {n_clipped} of {n} rows{most}")
    if data.get("model_note"):
        lines.append(f"        ({data['model_note']})")
    return lines


def _quality_lines(fit, data, data_norm, sym):
    """Lines of the training score, the baseline, the verdict and any leak."""
    if fit["metric"] == "accuracy":
        metric = "accuracy"
        baseline = f"majority baseline (always {fit['majority_class']!r})"
    else:
        metric, baseline = "R" + sym["sq"], "baseline (always the mean)"
    lines = [
        "",
        f"Fit:    training {metric} of the released model {fit['score']:.3f}; "
        f"{baseline} {fit['baseline']:.3f}",
        *_wrapped("Verdict: " + _verdict(fit, data_norm, sym), first=""),
    ]
    leaks = data["table"]["leaks"]
    if leaks:
        shown = [f"{name!r} ({share:.1%} of rows)" for name, share in leaks.items()]
        lines += _wrapped(
            f"Possible target leak: {', '.join(shown)} alone predict "
            f"{data['target']!r} (majority baseline {fit['baseline']:.1%}). A column "
            "recorded after, or derived from, the outcome flatters the model: --drop "
            "it if so.",
            first="",
        )
    return lines


def _verdict(fit, data_norm, sym):
    """One sentence judging the released model against its baseline."""
    accuracy = fit["metric"] == "accuracy"
    if fit["useful"] and accuracy:
        gain = 100 * (fit["score"] - fit["baseline"])
        return f"the released model beats the majority baseline by {gain:.1f} points."
    if fit["useful"]:
        return (
            f"the released model explains {fit['score']:.1%} of the target's "
            "variance on its training rows."
        )
    if accuracy:
        within = "within 2 standard errors of the majority rate"
        useless = f"no better than always predicting {fit['majority_class']!r}"
    else:
        within = "no more than uninformative inputs reach by chance"
        useless = "no better than always predicting the mean"
    fixes = f"lower {sym['sigma']} or {sym['lam']}"
    fixes += ", or raise --data-norm" if data_norm is not None else ""
    return (
        f"the released model is {useless} ({within}): its FIL and {sym['eps']} "
        f"describe a model that learned nothing useful; {fixes} before relying on "
        "them."
    )


def _report_lines(report, k, sym):
    """Lines of the quantiles of the per-example FIL and of the ``k`` most exposed."""
    quantiles = report[["fil", "dfil"]].quantile(list(_QUANTILES.values())).T
    quantiles.columns = list(_QUANTILES)
    lines = [
        "",
        f"Per-example FIL: fil = {sym['eta']} (most exposed direction), "
        f"dfil = {sym['etabar']} (RMS over coordinates)",
        *_text_table(quantiles.rename_axis("").reset_index()),
    ]
    if k <= 0:
        return lines
    top = report.nlargest(k, "fil")
    attributes = top[[c for c in report.columns if c.startswith("fil[")]]
    shown = top[["fil", "dfil", "mse_bound"]].rename_axis(report.index.name or "sample")
    shown["top attribute (its fil)"] = [
        f"{column[4:-1]} ({_num(value)})"
        for column, value in zip(
            attributes.idxmax(axis=1), attributes.max(axis=1), strict=True
        )
    ]
    return [
        *lines,
        "",
        f"Most exposed examples (top {k} of {report.shape[0]} by fil; mse_bound = "
        "1/dfil^2 is the least",
        "per-coordinate MSE of any unbiased reconstruction of the example)",
        *_text_table(shown.reset_index()),
    ]


def _attribute_lines(estimator):
    """Lines of the table of the attributes with the largest FIL.

    Ranked in standard deviations (``attribute_fil_sd_``), so that attributes
    in different units compare, beside the raw FIL.
    """
    table = pd.DataFrame(
        {"fil": estimator.attribute_fil_, "fil_sd": estimator.attribute_fil_sd_}
    ).sort_values("fil_sd", ascending=False, na_position="last")
    shown = table.head(_N_TOP_ATTRIBUTES).rename_axis("attribute").reset_index()
    text = (
        f"Attributes by FIL over all examples (top {len(shown)} of {len(table)}), "
        "ranked by fil_sd, the FIL in units of the attribute's standard deviation: "
        "1/fil_sd^2 bounds the MSE/variance of any unbiased reconstruction of the "
        "attribute, and guessing its mean scores 1"
    )
    shown["attribute"] = shown["attribute"].astype(str)
    return ["", *_wrapped(text, indent="  ", first=""), *_text_table(shown)]


def _guarantee_lines(guarantee, data, model, args, data_norm, sym):
    """Lines stating the (epsilon, delta) guarantee, or why there is none.

    Read from the typed fields of the estimator's
    :class:`~sklearn_fil.accounting.Guarantee`.
    """
    if not guarantee.holds:
        fix = ""
        if model == "logistic" and data_norm is None:
            fix = "; pass --data-norm to clip the rows and get one"
        first = f"{sym['eps']}: not defined (no DP guarantee{fix})"
        return [first, *_wrapped(guarantee.reason, indent="  ")]
    default = " (the default, below 1/n)" if args.delta is None else ""
    relation = _RELATIONS.get(
        guarantee.neighboring_relation, guarantee.neighboring_relation
    )
    return [
        f"{sym['eps']} = {_num(guarantee.epsilon)} at {sym['delta']} = "
        f"{guarantee.delta:.4g}{default}: the released weights are "
        f"({sym['eps']}, {sym['delta']})-DP",
        *_wrapped(f"for {data['dp_scope']}, under{_KEEP_TOGETHER}{relation}", "  "),
    ]


def _written_lines(report, out, plot):
    """Closing lines: the files written, and the warning that they are private."""
    n_attributes = sum(column.startswith("fil[") for column in report.columns)
    others = [column for column in report.columns[3:] if not column.startswith("fil[")]
    also = f" and {', '.join(others)}" if others else ""
    texts = [
        f"Wrote the privacy report ({report.shape[0]} rows; fil, dfil, mse_bound, "
        f"{n_attributes} fil[<attribute>] columns{also}) to {out}",
        "Wrote the settings, features, dropped columns and guarantee to "
        f"{sidecar_path(out)}",
        *(
            [f"Wrote the FIL histogram to {plot}".replace(" ", _KEEP_TOGETHER)]
            * bool(plot)
        ),
        f"Keep {out} private: it is computed from every example's data, so it is "
        "itself sensitive.",
    ]
    return ["", *(line for text in texts for line in _wrapped(text, "  ", ""))]


# --------------------------------------------------------------------------------------
# the command


def _report(args, stdout):
    """Run ``sklearn-fil report``: load, fit, write the outputs, print a summary."""
    sym = _symbols(stdout)
    out = _check_outputs(args)
    X, y, data, onehot_groups = _load_data(args, sym)
    model, data["model_note"] = _choose_model(
        args.model or data.get("model"), y, args.csv is not None
    )
    data_norm = _resolve_data_norm(args, model, data)
    if args.csv is None:
        data["table"] = _dataset_table(X, onehot_groups)
    else:
        X, onehot_groups, data["table"] = _prepare_table(X, y, args, data["notes"])
    estimator = _fit(args, model, data_norm, onehot_groups, X, y)
    data["fit"] = _fit_quality(estimator, X, y, model)
    _write(write_csv, estimator.privacy_report_, out)
    _write(write_json, _sidecar(estimator, data, model, args), sidecar_path(out))
    if args.plot is not None:
        _plot_histogram(estimator, y, model, data.get("class_names"), args.plot)
    lines = _summary(estimator, data, model, args, data_norm, sym)
    lines += _written_lines(estimator.privacy_report_, out, args.plot)
    print("\n".join(lines), file=stdout)
    return 0


def main(argv=None):
    """Run the ``sklearn-fil`` command.

    Parameters
    ----------
    argv : list of str, default=None
        Command-line arguments without the program name; None reads
        ``sys.argv[1:]``.

    Returns
    -------
    status : int
        0 on success.

    Raises
    ------
    SystemExit
        With code 0 after ``--help`` or ``--version``, and with code 2, as
        :mod:`argparse` does, on a usage error or bad input (missing file,
        unknown target column, non-numeric features, missing values, a failed
        fit...), after a one-line message on stderr.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from sklearn_fil.cli import main
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     status = main(["report", "--top", "3", "--out", str(Path(tmp) / "r.csv")])
    sklearn-fil report: Fisher information loss (FIL) of a released model
    <BLANKLINE>
    Data:   breast cancer (bundled with scikit-learn; ...)
            569 examples, 30 features, target 'target' (private)
    ...
    >>> status
    0
    """
    parser = _build_parser()
    args = parser.parse_args(argv)
    try:
        return _report(args, sys.stdout)
    except _InputError as exc:
        message = " ".join(str(exc).split())
        print(f"{PROG} {args.command}: error: {message}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
