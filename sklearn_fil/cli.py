"""The ``sklearn-fil`` command: privacy reports of output-perturbed models."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from pandas.api.types import is_numeric_dtype

from sklearn_fil import (
    OutputPerturbedLinearRegression,
    OutputPerturbedLogisticRegression,
    __version__,
)

PROG = "sklearn-fil"

_BUNDLED_TARGET = "target"
_BUNDLED_DATA_NORM = 1.0
_N_TOP_ATTRIBUTES = 10
_QUANTILES = (("min", 0.0), ("25%", 0.25), ("median", 0.5), ("75%", 0.75))
_QUANTILES += (("95%", 0.95), ("max", 1.0))

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
are not accounted for."""

_EPILOG = """\
examples:
  sklearn-fil report
      bundled breast-cancer data, logistic model, epsilon reported
  sklearn-fil report patients.csv --target outcome --model logistic \\
      --data-norm 1 --sigma 0.5 --lam 0.1 --out patients_fil.csv
      your own data, rows clipped to norm 1 so that epsilon is reported
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


def _float(text):
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def _positive_float(text):
    value = _float(text)
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return value


def _non_negative_float(text):
    value = _float(text)
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return value


def _probability(text):
    value = _positive_float(text)
    if not value < 1:
        raise argparse.ArgumentTypeError(f"must lie in (0, 1), got {text!r}")
    return value


def _non_negative_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return value


def _seed(text):
    value = _non_negative_int(text)
    if value >= 2**32:
        raise argparse.ArgumentTypeError(f"must be < 2**32, got {text!r}")
    return value


def _build_parser():
    """The ``sklearn-fil`` parser: global options and one sub-parser per command."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "Private scikit-learn models and reports of how much they leak about "
            "each training example, measured by Fisher information loss (FIL)."
        ),
        epilog=f"Run '{PROG} report --help' for the options of the report command.",
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {__version__}"
    )
    commands = parser.add_subparsers(
        dest="command", title="commands", metavar="COMMAND"
    )
    commands.required = True
    _add_report_parser(commands)
    return parser


def _add_report_parser(commands):
    """Add the ``report`` command and its arguments to ``commands``."""
    report = commands.add_parser(
        "report",
        help="fit an output-perturbed model and write its privacy report",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_data_arguments(report)
    _add_model_arguments(report)
    _add_privacy_arguments(report)
    _add_output_arguments(report)
    return report


def _add_data_arguments(parser):
    """Add the input arguments: a CSV file or ``--dataset``, and ``--target``."""
    parser.add_argument(
        "csv",
        nargs="?",
        metavar="CSV",
        help="CSV file with a header row, one row per training example; every "
        "column except --target is a feature and must be numeric (default: the "
        "bundled breast-cancer data, preprocessed as described above)",
    )
    parser.add_argument(
        "--dataset",
        choices=tuple(_DATASETS),
        help="a real data set instead of a CSV: breast_cancer (bundled with "
        "scikit-learn, the default), adult (UCI Adult, logistic, marital status "
        "as a one-hot attribute), mnist01 (MNIST digits 0 and 1, 784 pixels "
        "scaled to the unit ball, logistic with --data-norm 1), iwpc (warfarin "
        "dose, linear, VKORC1 as a one-hot attribute); the last three need the "
        "data packages of sklearn_fil.datasets",
    )
    parser.add_argument(
        "--target",
        metavar="COL",
        help="name of the label column; required with a CSV (default: 'target' "
        "for the bundled data)",
    )


def _add_model_arguments(parser):
    """Add the model arguments: ``--model``, ``--sigma``, ``--lam``, the label."""
    parser.add_argument(
        "--model",
        choices=("linear", "logistic"),
        help="linear: ridge regression (squared loss); logistic: binary logistic "
        "regression (default: logistic for the bundled data; for a CSV, logistic "
        "when the target has exactly 2 distinct values, else linear, and the "
        "choice is printed)",
    )
    parser.add_argument(
        "--sigma",
        type=_positive_float,
        default=0.1,
        metavar="S",
        help="standard deviation of the Gaussian noise added to every weight; FIL "
        "scales as 1/S (default: %(default)s)",
    )
    parser.add_argument(
        "--lam",
        type=_non_negative_float,
        default=0.01,
        metavar="L",
        help="L2 strength: the model minimises sum_i loss_i + (n L / 2) ||w||^2 "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--no-private-label",
        dest="private_label",
        action="store_false",
        help="treat the label as public: only the features are private and the "
        "report has no fil[<target>] column (default: the label is private)",
    )


def _add_privacy_arguments(parser):
    """Add the DP arguments: ``--data-norm``, ``--delta``, ``--random-state``."""
    parser.add_argument(
        "--data-norm",
        type=_positive_float,
        metavar="NORM",
        help="logistic only: clip every row to L2 norm NORM before fitting and "
        "penalise the intercept; the release is then (epsilon, delta)-DP and "
        "epsilon is reported (default: 1.0 for the bundled data; none for a CSV, "
        "so no epsilon)",
    )
    parser.add_argument(
        "--delta",
        type=_probability,
        metavar="D",
        help="delta of the reported (epsilon, delta) guarantee; needs --data-norm "
        "(default: 1/n, n the number of examples)",
    )
    parser.add_argument(
        "--random-state",
        type=_seed,
        metavar="SEED",
        help="seed of the output noise (default: None, fresh OS entropy). A fixed "
        "seed makes the noise reproducible and therefore NOT private; the report "
        "itself does not depend on the noise",
    )


def _add_output_arguments(parser):
    """Add the output arguments: ``--top``, ``--plot``, ``--out``."""
    parser.add_argument(
        "--top",
        type=_non_negative_int,
        default=10,
        metavar="K",
        help="number of most exposed examples to list (default: %(default)s)",
    )
    parser.add_argument(
        "--plot",
        metavar="PNG",
        help="also write the histogram of the per-example FIL (by class for a "
        "logistic model) to this image file; needs matplotlib",
    )
    parser.add_argument(
        "--out",
        default="report.csv",
        metavar="PATH",
        help="where to write the privacy report, a CSV file with one row per "
        "example; it is sensitive, keep it private (default: %(default)s)",
    )


# --------------------------------------------------------------------------------------
# data


def _preview(names, limit=8):
    """Comma-separated names, truncated after ``limit``."""
    names = [repr(str(name)) for name in names]
    shown = ", ".join(names[:limit])
    if len(names) > limit:
        shown += f", ... ({len(names) - limit} more)"
    return shown


def _load_bundled():
    """Breast-cancer data, standardised, rows scaled into the unit ball."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import StandardScaler

    bunch = load_breast_cancer(as_frame=True)
    Z = StandardScaler().fit_transform(bunch.data)
    Z /= np.linalg.norm(Z, axis=1).max()
    X = pd.DataFrame(Z, index=bunch.data.index, columns=bunch.data.columns)
    return X, bunch.frame[_BUNDLED_TARGET]


def _bundled_dataset(sym):
    """The ``breast_cancer`` choice of ``--dataset``, the default input."""
    X, y = _load_bundled()
    data = {
        "name": "breast cancer (bundled with scikit-learn; standardised, rows "
        f"scaled to norm {sym['le']} 1)",
        "target": _BUNDLED_TARGET,
        "model": "logistic",
        "data_norm": _BUNDLED_DATA_NORM,
        "dp_scope": "the preprocessed rows (not the raw data: the preprocessing "
        "uses every example)",
    }
    return X, y, data, None


def _real_dataset(loader, name, target, model, data_norm=None, **kwargs):
    """A loader of sklearn_fil.datasets as a ``--dataset`` choice."""

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
        }
        return bunch.data, y, data, getattr(bunch, "onehot_groups", None)

    return load


_DATASETS = {
    "breast_cancer": _bundled_dataset,
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


def _check_plot_target(path):
    """Fail before the fit when the plot cannot be written."""
    if not path.parent.is_dir():
        raise _InputError(
            f"cannot write {path}: the directory {path.parent} does not exist"
        )
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise _InputError(
            "--plot needs matplotlib: pip install sklearn-fil[plot]"
        ) from None


def _plot_histogram(estimator, groups, path):
    """The FIL histogram (by class for a classifier) as an image file."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sklearn_fil.plotting import FILHistogramDisplay

    fig, ax = plt.subplots(figsize=(7, 4))
    groups = None if groups is None else np.asarray(groups)
    FILHistogramDisplay.from_estimator(
        estimator, groups=groups, bins=40, log_scale=True, ax=ax
    )
    try:
        fig.savefig(path, dpi=100, bbox_inches="tight")
    except (OSError, ValueError) as exc:
        raise _InputError(f"cannot write the plot {path}: {exc}") from None
    finally:
        plt.close(fig)


def _read_csv(path):
    try:
        return pd.read_csv(path)
    except FileNotFoundError:
        raise _InputError(f"file not found: {path}") from None
    except IsADirectoryError:
        raise _InputError(f"cannot read {path}: it is a directory") from None
    except PermissionError:
        raise _InputError(f"cannot read {path}: permission denied") from None
    except OSError as exc:
        raise _InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise _InputError(f"{path} is not a CSV file: it is not UTF-8 text") from None
    except pd.errors.EmptyDataError:
        raise _InputError(
            f"{path} is not a CSV file: it is empty (no header row)"
        ) from None
    except (pd.errors.ParserError, ValueError) as exc:
        raise _InputError(f"{path} is not a valid CSV file: {exc}") from None


def _split_csv(frame, path, target):
    """Features and target of a CSV table, after the checks a fit needs."""
    columns = list(frame.columns)
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
    features = [col for col in columns if col != target]
    if not features:
        raise _InputError(
            f"no feature columns: {path} has only the target column {target!r}"
        )
    if len(frame) < 2:
        raise _InputError(
            f"{path} has {len(frame)} data row(s); at least 2 examples are needed"
        )
    with_nan = [col for col in columns if frame[col].isna().any()]
    if with_nan:
        raise _InputError(
            f"missing values (NaN or empty cells) in column(s) {_preview(with_nan)}; "
            "drop or impute them first"
        )
    non_numeric = [col for col in features if not is_numeric_dtype(frame[col])]
    if non_numeric:
        raise _InputError(
            f"non-numeric feature column(s) {_preview(non_numeric)}; encode them as "
            "numbers first, e.g. with one-hot encoding (pandas.get_dummies)"
        )
    return frame[features], frame[target]


def _choose_model(model, y, from_csv):
    """The model to fit and, when it was inferred, why."""
    n_values = int(y.nunique())
    note = None
    if model is None:
        if from_csv:
            model = "logistic" if n_values == 2 else "linear"
            note = f"inferred: the target has {n_values} distinct values"
        else:
            model = "logistic"
    if model == "logistic" and n_values != 2:
        raise _InputError(
            f"--model logistic needs a binary target, but {y.name!r} has "
            f"{n_values} distinct values; use --model linear for a numeric target"
        )
    if model == "linear" and not is_numeric_dtype(y):
        raise _InputError(
            f"--model linear needs a numeric target, but {y.name!r} is not numeric"
        )
    return model, note


# --------------------------------------------------------------------------------------
# output


def _symbols(stream):
    """Greek letters where ``stream`` can print them, ASCII names otherwise."""
    greek = {
        "eps": "ε",
        "delta": "δ",
        "sigma": "\N{GREEK SMALL LETTER SIGMA}",
        "lam": "λ",
        "eta": "η",
    }
    greek.update(etabar="η̄", le="≤")
    encoding = getattr(stream, "encoding", None) or "ascii"
    try:
        "".join(greek.values()).encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return {
            "eps": "epsilon",
            "delta": "delta",
            "sigma": "sigma",
            "lam": "lambda",
            "eta": "eta",
            "etabar": "eta-bar",
            "le": "<=",
        }
    return greek


def _num(value):
    return f"{value:.4g}"


def _table(header, rows, align):
    """Lines of an aligned table; ``align`` has one ``l`` or ``r`` per column."""
    widths = [max(len(row[j]) for row in [header, *rows]) for j in range(len(header))]

    def line(row):
        cells = [
            cell.ljust(width) if how == "l" else cell.rjust(width)
            for cell, width, how in zip(row, widths, align, strict=True)
        ]
        return ("  " + "  ".join(cells)).rstrip()

    return [line(header), *(line(row) for row in rows)]


def _guarantee(estimator, model, data_norm):
    """``(epsilon, delta, None)`` when a DP guarantee holds, else the reason."""
    guarantee = estimator.guarantee_
    if guarantee.holds:
        return guarantee.epsilon, guarantee.delta, None
    reason = guarantee.reason.removeprefix("No differential-privacy guarantee: ")
    reason = reason.split(", so ")[0].rstrip(".")
    if model == "logistic" and data_norm is None:
        reason += "; pass --data-norm to clip the rows and get one"
    return None, None, reason


def _summary(estimator, data, model, args, data_norm, sym):
    """Lines of the printed summary, from the data set to the DP guarantee."""
    report = estimator.privacy_report_
    lines = [f"{PROG} report: Fisher information loss (FIL) of a released model", ""]
    lines += _setup_lines(estimator, data, model, args, data_norm, sym)
    lines += _quantile_lines(report, sym)
    lines += _top_example_lines(report, min(args.top, report.shape[0]))
    lines += _attribute_lines(estimator.attribute_fil_)
    lines += [
        "",
        f"Dataset FIL (all examples together): {_num(estimator.dataset_fil_)}",
    ]
    lines += _guarantee_lines(estimator, data, model, args, data_norm, sym)
    return lines


def _setup_lines(estimator, data, model, args, data_norm, sym):
    """Lines describing the data set and the fitted model."""
    n, d = estimator.privacy_report_.shape[0], estimator.n_features_in_
    label = "private" if args.private_label else "public"
    lines = [
        f"Data:   {data['name']}",
        f"        {n} examples, {d} features, target {data['target']!r} ({label})",
    ]
    kind = "logistic regression" if model == "logistic" else "ridge regression"
    model_text = f"Model:  {kind}, {sym['lam']} = {args.lam:g}, Gaussian output "
    model_text += f"noise {sym['sigma']} = {args.sigma:g}"
    if data_norm is not None:
        model_text += f", rows clipped to norm {sym['le']} {data_norm:g}"
    lines.append(model_text)
    if data_norm is not None:
        lines.append(
            f"        clipping rescaled {estimator.n_clipped_} of {n} rows"
            + (
                " (most of them: see the warning above)"
                if 2 * estimator.n_clipped_ > n
                else ""
            )
        )
    if data.get("model_note"):
        lines.append(f"        ({data['model_note']})")
    return lines


def _quantile_lines(report, sym):
    """Lines of the table of quantiles of the per-example FIL."""
    lines = [
        "",
        f"Per-example FIL: fil = {sym['eta']} (most exposed direction), "
        f"dfil = {sym['etabar']} (RMS over coordinates)",
    ]
    rows = []
    for column in ("fil", "dfil"):
        values = report[column].to_numpy()
        rows.append([column, *(_num(np.quantile(values, q)) for _, q in _QUANTILES)])
    return lines + _table(["", *(name for name, _ in _QUANTILES)], rows, "lrrrrrr")


def _top_example_lines(report, k):
    """Lines of the table of the ``k`` most exposed examples (none when k is 0)."""
    if k <= 0:
        return []
    n = report.shape[0]
    lines = [
        "",
        f"Most exposed examples (top {k} of {n} by fil; mse_bound = 1/dfil^2 "
        "is the least",
        "per-coordinate MSE of any unbiased reconstruction of the example)",
    ]
    attribute_columns = [c for c in report.columns if c.startswith("fil[")]
    top = report.nlargest(k, "fil")
    top_attribute = top[attribute_columns].idxmax(axis=1).to_list()
    rows = [
        [
            str(index),
            _num(row["fil"]),
            _num(row["dfil"]),
            _num(row["mse_bound"]),
            f"{column[4:-1]} ({_num(row[column])})",
        ]
        for index, row, column in zip(
            top.index, top.to_dict("records"), top_attribute, strict=True
        )
    ]
    header = [report.index.name or "sample", "fil", "dfil", "mse_bound"]
    return lines + _table([*header, "top attribute (its fil)"], rows, "rrrrl")


def _attribute_lines(attribute_fil):
    """Lines of the table of the attributes with the largest FIL."""
    attribute_fil = attribute_fil.sort_values(ascending=False)
    shown = attribute_fil.head(_N_TOP_ATTRIBUTES)
    lines = [
        "",
        f"Attributes by FIL over all examples (top {len(shown)} of "
        f"{len(attribute_fil)})",
    ]
    rows = [[str(name), _num(value)] for name, value in shown.items()]
    return lines + _table(["attribute", "fil"], rows, "lr")


def _guarantee_lines(estimator, data, model, args, data_norm, sym):
    """Lines stating the (epsilon, delta) guarantee, or why there is none."""
    epsilon, delta, reason = _guarantee(estimator, model, data_norm)
    if epsilon is None:
        return [f"{sym['eps']}: not defined (no DP guarantee: {reason})"]
    default = " (the default, below 1/n)" if args.delta is None else ""
    return [
        f"{sym['eps']} = {_num(epsilon)} at {sym['delta']} = {delta:.4g}{default}: "
        f"the released weights are ({sym['eps']}, {sym['delta']})-DP",
        f"  for {data['dp_scope']},",
        "  under replace-one neighbours (data sets of the same, public size",
        "  that differ in one example)",
    ]


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
    estimator = _build_estimator(args, model, data_norm, onehot_groups)
    _fit(estimator, X, y, model)
    _write_report(estimator.privacy_report_, out)
    if args.plot is not None:
        _plot_histogram(estimator, y if model == "logistic" else None, args.plot)
    lines = _summary(estimator, data, model, args, data_norm, sym)
    lines += _written_lines(estimator.privacy_report_, out, args.plot)
    print("\n".join(lines), file=stdout)
    return 0


def _check_outputs(args):
    """The report's path, after checking before the fit that outputs can be written."""
    out = Path(args.out)
    if not out.parent.is_dir():
        raise _InputError(
            f"cannot write {out}: the directory {out.parent} does not exist"
        )
    if args.plot is not None:
        _check_plot_target(Path(args.plot))
    return out


def _load_data(args, sym):
    """Features, target, data description and one-hot groups of the chosen input."""
    if args.csv is not None and args.dataset is not None:
        raise _InputError("give either a CSV file or --dataset, not both")
    if args.csv is None:
        name = args.dataset or "breast_cancer"
        X, y, data, onehot_groups = _DATASETS[name](sym)
        if args.target not in (None, data["target"]):
            raise _InputError(
                f"--target {args.target!r} needs a CSV file; the {name} data's "
                f"target is {data['target']!r}"
            )
        return X, y, data, onehot_groups
    frame = _read_csv(args.csv)
    X, y = _split_csv(frame, args.csv, args.target)
    data = {
        "name": str(args.csv),
        "target": args.target,
        "dp_scope": f"the rows of {args.csv}",
    }
    return X, y, data, None


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


def _build_estimator(args, model, data_norm, onehot_groups):
    """The unfitted output-perturbed estimator of ``model``."""
    if model == "logistic":
        return OutputPerturbedLogisticRegression(
            sigma=args.sigma,
            lam=args.lam,
            fit_intercept=True,
            # the DP guarantee with an intercept needs a strongly convex objective
            penalize_intercept=data_norm is not None,
            private_label=args.private_label,
            data_norm=data_norm,
            delta=args.delta,
            onehot_groups=onehot_groups,
            random_state=args.random_state,
        )
    return OutputPerturbedLinearRegression(
        sigma=args.sigma,
        lam=args.lam,
        fit_intercept=True,
        private_label=args.private_label,
        onehot_groups=onehot_groups,
        random_state=args.random_state,
    )


def _fit(estimator, X, y, model):
    """Fit ``estimator``, turning a failed fit into an input error."""
    try:
        estimator.fit(X, y)
    except ValueError as exc:
        raise _InputError(f"fitting the {model} model failed: {exc}") from None


def _write_report(report, out):
    """Write the privacy report to the CSV file ``out``."""
    try:
        report.rename_axis(report.index.name or "sample").to_csv(out)
    except OSError as exc:
        raise _InputError(f"cannot write {out}: {exc.strerror or exc}") from None


def _written_lines(report, out, plot):
    """Closing lines: the files written, and the warning that the report is private."""
    n_attributes = len(report.columns) - 3
    return [
        "",
        f"Wrote the privacy report ({report.shape[0]} rows; fil, dfil, mse_bound and "
        f"{n_attributes} fil[<attribute>] columns) to {out}",
        *([f"Wrote the FIL histogram to {plot}"] if plot else []),
        f"Keep {out} private: it is computed from every example's data, so it is "
        "itself sensitive.",
    ]


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
