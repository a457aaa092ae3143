"""The ``sklearn-fil`` command: privacy reports of output-perturbed models."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import csv
import hashlib
import math
import re
import sys
import textwrap
import warnings
from dataclasses import asdict, dataclass, field
from numbers import Integral
from pathlib import Path

import numpy as np
import pandas as pd
from pandas.api.types import (
    infer_dtype,
    is_bool_dtype,
    is_float_dtype,
    is_numeric_dtype,
)
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

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

PROG = "sklearn-fil"

_BUNDLED_TARGET = "target"
_BUNDLED_DATA_NORM = 1.0
_N_TOP_ATTRIBUTES = 10
_N_LISTED = 30  # feature names printed per kind; the sidecar JSON has them all
_KEEP_TOGETHER = "\x00"  # a space that _wrapped does not break lines at
_QUANTILES = (("min", 0.0), ("25%", 0.25), ("median", 0.5), ("75%", 0.75))
_QUANTILES += (("95%", 0.95), ("max", 1.0))

# reading raw tables
_SNIFF_CHARS = 65536  # csv.Sniffer reads the first lines, up to this many characters
_SEPARATORS = ",;\t|"
_CHUNK_BYTES = 1 << 20  # read at a time when scanning a file for NUL bytes
_UNNAMED = re.compile(r"Unnamed: \d+")  # pandas' name for an empty header cell
_ID_WORDS = frozenset({"id", "ids", "idx", "index", "key", "uuid", "guid", "rowid"})
_MIN_ROWS_PER_LEVEL = 5  # fewer rows per distinct string: free text, not categories
_DATE_SAMPLE = 500  # distinct values tried as dates
_DATE_SHARE = 0.95  # share that must parse (and show a year or a time)
_DATE_HINT = r"\d{4}|\d:\d\d"
_NUMERIC_TEXT_SHARE = 0.9  # share of numbers that makes a text column numeric
_LEAK_SHARE = 0.9  # share of the gap to perfect accuracy one column must close
_THRESHOLD_LEAK_SHARE = 0.95  # the same for a threshold (real features reach 0.9)

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
others one-hot encoded, each categorical column one attribute of the report.
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
    _add_table_arguments(report)
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
        help="CSV file with a header row, one row per training example, read raw "
        "and preprocessed as described above (default: the bundled "
        "breast-cancer data)",
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


def _separator(text):
    """``--sep``: one delimiter; ``\t`` or ``tab`` for a tab."""
    if text in ("\\t", "tab"):
        return "\t"
    if not text:
        raise argparse.ArgumentTypeError("must not be empty")
    return text


def _at_least_two(text):
    value = _non_negative_int(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"must be >= 2, got {text!r}")
    return value


def _add_table_arguments(parser):
    """Add the arguments that shape a raw CSV table into model inputs."""
    group = parser.add_argument_group(
        "CSV tables", "(put the CSV file before --drop, --keep and --categorical)"
    )
    group.add_argument(
        "--sep",
        type=_separator,
        metavar="SEP",
        help="the CSV delimiter, e.g. ';' or '\\t' (default: sniffed from the "
        "first lines among , ; tab |)",
    )
    columns = {"nargs": "+", "action": "extend", "default": [], "metavar": "COL"}
    group.add_argument("--drop", **columns, help="also drop these columns")
    group.add_argument(
        "--keep",
        **columns,
        help="keep these columns although they look like identifiers, free "
        "text, dates or duplicates (empty and constant columns are always dropped)",
    )
    group.add_argument(
        "--categorical",
        **columns,
        help="one-hot encode these numeric columns (integer codes) instead of "
        "standardising them; text and true/false columns always are",
    )
    group.add_argument(
        "--max-levels",
        type=_at_least_two,
        default=20,
        metavar="K",
        help="one-hot inputs per categorical column: the K - 1 most frequent "
        "values and one 'other' for the rest (default: %(default)s)",
    )
    group.add_argument(
        "--dropna-target",
        action="store_true",
        help="drop the rows whose target is missing (default: refuse them)",
    )


def _add_model_arguments(parser):
    """Add the model arguments: ``--model``, ``--sigma``, ``--lam``, the label."""
    parser.add_argument(
        "--model",
        choices=("linear", "logistic"),
        help="linear: ridge regression (squared loss); logistic: binary logistic "
        "regression (default: logistic for the bundled data; for a CSV, linear "
        "when the target is numeric with more than 2 distinct values, else "
        "logistic, and the choice is printed)",
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
        "(default: sklearn_fil.accounting.default_delta(n) = min(1e-5, 1/(10 n)), "
        "n the number of examples)",
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
        "example, and beside it (same name, .json) the settings, features, "
        "dropped columns and epsilon; both are sensitive, keep them private "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the report, its .json and the --plot image when they exist "
        "(default: refuse, before any work)",
    )


# --------------------------------------------------------------------------------------
# data


def _plain(value):
    """A NumPy scalar as the Python value it holds (for readable reprs)."""
    return value.item() if isinstance(value, np.generic) else value


def _preview(names, limit=8):
    """Comma-separated names, truncated after ``limit``."""
    names = [repr(str(name)) for name in names]
    shown = ", ".join(names[:limit])
    if len(names) > limit:
        shown += f", ... ({len(names) - limit} more)"
    return shown


def _load_bundled():
    """Breast-cancer data, standardised, rows scaled into the unit ball.

    Returns the features, the target and the names of its classes.
    """
    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import StandardScaler

    bunch = load_breast_cancer(as_frame=True)
    Z = StandardScaler().fit_transform(bunch.data)
    Z /= np.linalg.norm(Z, axis=1).max()
    X = pd.DataFrame(Z, index=bunch.data.index, columns=bunch.data.columns)
    y = bunch.frame[_BUNDLED_TARGET]
    return X, y, _class_names(y, bunch.target_names)


def _class_names(y, target_names):
    """``{class: name}`` when the classes are 0..k-1 indexing ``target_names``."""
    names = np.asarray(target_names)
    classes = np.unique(np.asarray(y))
    if names.dtype.kind not in "OUS" or not np.issubdtype(classes.dtype, np.integer):
        return None
    if classes.min() < 0 or classes.max() >= names.size:
        return None
    return {int(value): str(names[value]) for value in classes}


def _bundled_dataset(sym):
    """The ``breast_cancer`` choice of ``--dataset``, the default input."""
    X, y, class_names = _load_bundled()
    data = {
        "name": "breast cancer (bundled with scikit-learn; standardised, rows "
        f"scaled to norm {sym['le']} 1)",
        "target": _BUNDLED_TARGET,
        "model": "logistic",
        "data_norm": _BUNDLED_DATA_NORM,
        "dp_scope": "the preprocessed rows (not the raw data: the preprocessing "
        "uses every example)",
        "class_names": class_names,
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
            "class_names": _class_names(y, getattr(bunch, "target_names", [])),
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


def _check_plot_target():
    """Fail before the fit when matplotlib, needed for ``--plot``, is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise _InputError(
            "--plot needs matplotlib: pip install sklearn-fil[plot]"
        ) from None


def _plot_histogram(estimator, y, model, class_names, path):
    """The FIL histogram (by class for a classifier) as an image file.

    The legend names each class (by ``class_names`` where the data set has
    them) with its number of examples, under the target's name.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sklearn_fil.plotting import FILHistogramDisplay

    groups = _plot_groups(y, model, class_names)
    fig, ax = plt.subplots(figsize=(7, 4))
    display = FILHistogramDisplay.from_estimator(
        estimator, groups=groups, bins=40, log_scale=True, ax=ax
    )
    kind = "logistic" if model == "logistic" else "linear"
    ax.set_title(
        f"Per-example FIL of the released {kind} model ({y.size} examples)"
        + (f", by {y.name}" if groups is not None else "")
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


def _read_csv(path, sep=None):
    """The table in ``path`` and its delimiter (``sep``, or sniffed)."""
    try:
        _check_no_nul(path)
        sep = sep or _sniff_separator(path)
        engine = "c" if len(sep) == 1 else "python"
        return pd.read_csv(path, sep=sep, engine=engine, encoding="utf-8-sig"), sep
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


def _check_no_nul(path):
    """Fail on a NUL byte, which no text CSV holds (pandas keeps it in names)."""
    line = 1
    with open(path, "rb") as stream:
        while chunk := stream.read(_CHUNK_BYTES):
            at = chunk.find(b"\0")
            if at >= 0:
                line += chunk.count(b"\n", 0, at)
                raise _InputError(
                    f"{path} is not a CSV text file: it holds a NUL byte (line "
                    f"{line}), as UTF-16 and binary files do; save it as UTF-8 "
                    "text, or remove the NUL bytes"
                )
            line += chunk.count(b"\n")


def _sniff_separator(path):
    """The delimiter :class:`csv.Sniffer` finds in the first lines; ``,`` if none."""
    with open(path, encoding="utf-8-sig", newline="") as stream:
        sample = stream.read(_SNIFF_CHARS)
    if len(sample) == _SNIFF_CHARS and "\n" in sample:
        sample = sample[: sample.rindex("\n")]  # no partial last line
    try:
        sep = csv.Sniffer().sniff(sample, delimiters=_SEPARATORS).delimiter
    except csv.Error:  # one column, or no consistent delimiter
        return ","
    return sep if sep in _SEPARATORS else ","


def _check_target(frame, path, args):
    """The rows to use, after checking the target column before any work."""
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
    missing = int(frame[target].isna().sum())
    notes = []
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


# --------------------------------------------------------------------------------------
# raw tables: columns to drop, types, preprocessing


@dataclass
class _Feature:
    """An original column the model uses, and the model inputs it became."""

    name: str
    kind: str  # "numeric" or "categorical"
    inputs: list
    n_levels: int | None = None  # distinct values of a categorical column
    n_missing: int = 0


@dataclass
class _Table:
    """What became of a table's columns, for the summary and the sidecar."""

    features: list
    dropped: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    leaks: list = field(default_factory=list)
    preprocessed: bool = False


def _name_tokens(name):
    """Lower-case words of a column name: ``PatientID`` -> ``['patient', 'id']``."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", str(name))
    return [word.lower() for word in re.split(r"[^0-9A-Za-z]+", spaced) if word]


def _identifier_reason(name, column):
    """Why ``column`` is a row identifier, or None."""
    if not (column.notna().all() and column.is_unique):
        return None
    if _UNNAMED.fullmatch(str(name)):
        return "no name in the header and distinct in every row (a saved row index)"
    words = _name_tokens(name)
    if words and (words[0] in _ID_WORDS or words[-1] in _ID_WORDS):
        return "named like an identifier and distinct in every row"
    return None


def _uninformative_reason(column):
    """Why ``column`` carries no information (empty or constant), or None."""
    values = column.dropna()
    if values.empty:
        return "empty: every value is missing"
    if values.nunique() > 1:
        return None
    missing = len(column) - len(values)
    where = f" ({missing} missing)" if missing else ""
    return f"constant: {_plain(values.iloc[0])!r} in every row{where}"


def _looks_like_dates(values):
    """Whether nearly all the (distinct) strings in ``values`` are dates or times."""
    sample = values.astype(str).drop_duplicates().head(_DATE_SAMPLE)
    if sample.str.contains(_DATE_HINT).mean() < _DATE_SHARE:
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pandas' "could not infer format"
        parsed = pd.to_datetime(sample, errors="coerce", format="mixed")
    return parsed.notna().mean() >= _DATE_SHARE


def _text_reason(column, max_levels):
    """Why a string column is dates or free text rather than categories, or None."""
    if is_numeric_dtype(column):
        return None
    values = column.dropna()
    if _looks_like_dates(values):
        return f"dates or times (e.g. {str(values.iloc[0])!r})"
    n_levels = values.nunique()
    if n_levels > max_levels and len(values) < _MIN_ROWS_PER_LEVEL * n_levels:
        return (
            f"free text or an identifier: {n_levels} distinct values in "
            f"{len(values)} rows"
        )
    return None


def _duplicate_reason(name, column, seen):
    """``Duplicate of ...`` when an earlier kept column is identical; else record it."""
    digest = pd.util.hash_pandas_object(column, index=False).to_numpy()
    key = (str(column.dtype), hashlib.sha1(digest.tobytes()).hexdigest())
    if key in seen and column.equals(seen[key][1]):
        return f"duplicate of {seen[key][0]!r} (the same value in every row)"
    seen.setdefault(key, (name, column))
    return None


def _columns_to_drop(features, args):
    """``{column: reason}`` of the feature columns to leave out, in table order."""
    dropped, seen = {}, {}
    for name in features.columns:
        column = features[name]
        if name in args.drop:
            reason = "--drop"
        else:
            reason = _uninformative_reason(column)
        if reason is None and name not in args.keep:
            reason = (
                _identifier_reason(name, column)
                or _text_reason(column, args.max_levels)
                or _duplicate_reason(name, column, seen)
            )
        if reason is not None:
            dropped[name] = reason
    return dropped


def _numbers_in_text(features):
    """Text columns that are nearly all numbers, as numbers; and a note for each."""
    notes = []
    for name in features.columns:
        column = features[name]
        if is_numeric_dtype(column) or column.isna().all():
            continue
        values = column.dropna()
        if infer_dtype(values) == "boolean":  # True/False with gaps: categorical
            continue
        numbers = pd.to_numeric(values, errors="coerce")
        if numbers.notna().mean() < _NUMERIC_TEXT_SHARE:
            continue
        bad = values[numbers.isna()].unique()
        features[name] = pd.to_numeric(column, errors="coerce")
        notes.append(
            f"{name!r} is numeric: {int(numbers.isna().sum())} non-numeric "
            f"entries ({_preview(bad, 3)}) read as missing"
        )
    return notes


def _category_text(column):
    """A categorical column as strings (whole floats without ``.0``), NaN kept."""
    values = column.dropna()
    if is_float_dtype(values) and (values % 1 == 0).all():
        values = values.astype("int64")
    return values.astype(str).reindex(column.index).astype(object)


def _level_name(column, level):
    """The name of a one-hot input: ``column=level``."""
    return f"{column}={'(other)' if level == 'infrequent_sklearn' else level}"


def _make_transformer(numeric, categorical, max_levels):
    """Impute (median) and standardise ``numeric``; impute and one-hot the others."""
    steps = []
    if numeric:
        scale = make_pipeline(SimpleImputer(strategy="median"), StandardScaler())
        steps.append(("numeric", scale, numeric))
    for j, name in enumerate(categorical):
        encoder = OneHotEncoder(
            handle_unknown="ignore",
            sparse_output=False,
            max_categories=max_levels,
            feature_name_combiner=_level_name,
        )
        impute = SimpleImputer(strategy="most_frequent")
        steps.append((f"categorical{j}", make_pipeline(impute, encoder), [name]))
    transformer = ColumnTransformer(steps, verbose_feature_names_out=False)
    return transformer.set_output(transform="pandas")


def _encode(features, numeric, categorical, max_levels):
    """The model inputs, the one-hot groups and one :class:`_Feature` per column."""
    transformer = _make_transformer(numeric, categorical, max_levels)
    try:
        X = transformer.fit_transform(features)
    except ValueError as exc:
        raise _InputError(f"preprocessing the features failed: {exc}") from None
    missing = features.isna().sum()
    described = [
        _Feature(name, "numeric", [name], n_missing=int(missing[name]))
        for name in numeric
    ]
    groups = {}
    for j, name in enumerate(categorical):
        inputs = list(X.columns[transformer.output_indices_[f"categorical{j}"]])
        groups[name] = inputs
        n_levels = int(features[name].nunique())
        described.append(
            _Feature(name, "categorical", inputs, n_levels, int(missing[name]))
        )
    return X, groups, described


def _target_leaks(features, y, max_levels):
    """``(column, share)`` of the columns that alone (nearly) determine binary ``y``.

    A column with few values "predicts" the target for the rows whose value
    (missing counts as a value) is mostly found with that row's class; a
    numeric column with many values, for the rows on the right side of its
    best threshold (``affairs > 0``). It is reported when it closes
    ``_LEAK_SHARE`` of the gap between the majority rate and 1 (a threshold,
    picked among n - 1 cuts, ``_THRESHOLD_LEAK_SHARE``).
    """
    n, counts = len(y), y.value_counts()
    baseline = counts.max() / n
    is_first = (y == counts.index[0]).to_numpy()
    leaks = []
    for name in features.columns:
        column = features[name]
        codes, levels = pd.factorize(column, use_na_sentinel=False)
        if len(levels) <= min(max_levels, n / _MIN_ROWS_PER_LEVEL):
            share = pd.crosstab(codes, is_first).max(axis=1).sum() / n
            bar = _LEAK_SHARE
        elif is_numeric_dtype(column) and counts.min() >= _MIN_ROWS_PER_LEVEL:
            share, bar = _threshold_share(column, is_first), _THRESHOLD_LEAK_SHARE
        else:
            continue  # too many values, or a class too rare, to tell a leak
        if share - baseline >= bar * (1 - baseline) and share > baseline:
            leaks.append((name, float(share)))
    return leaks


def _threshold_share(column, is_first):
    """Share of rows that the best rule ``column > t`` (or ``<=``) classifies right.

    Missing values are one more group, predicted by its majority. One sort:
    O(n log n).
    """
    values = pd.to_numeric(column).to_numpy(dtype=float, na_value=np.nan)
    missing = np.isnan(values)
    right = max(is_first[missing].sum(), (~is_first[missing]).sum())
    order = np.argsort(values[~missing], kind="stable")
    values, labels = values[~missing][order], is_first[~missing][order]
    cuts = np.r_[0, np.flatnonzero(values[1:] > values[:-1]) + 1, values.size]
    first_below = np.r_[0, np.cumsum(labels)][cuts]
    other_below = cuts - first_below
    first_above = first_below[-1] - first_below
    other_above = other_below[-1] - other_below
    right += np.maximum(first_below + other_above, other_below + first_above).max()
    return right / len(is_first)


def _prepare_table(features, y, args, data):
    """Raw feature columns as model inputs, with a record of what was done."""
    features = features.copy()
    notes = data.pop("notes") + _numbers_in_text(features)
    dropped = _columns_to_drop(features, args)
    features = features.drop(columns=list(dropped))
    if features.shape[1] == 0:
        raise _InputError(
            f"no feature columns left: every column but the target was dropped "
            f"({_preview(dropped)}); keep one with --keep COL"
        )
    leaks = _target_leaks(features, y, args.max_levels) if y.nunique() == 2 else []
    categorical = [
        name
        for name in features.columns
        if name in args.categorical
        or is_bool_dtype(features[name])
        or not is_numeric_dtype(features[name])
    ]
    for name in categorical:
        features[name] = _category_text(features[name])
    numeric = [name for name in features.columns if name not in categorical]
    X, groups, described = _encode(features, numeric, categorical, args.max_levels)
    return X, groups, _Table(described, dropped, notes, leaks, preprocessed=True)


def _choose_model(model, y, from_csv):
    """The model to fit and, when it was inferred, why."""
    n_values, numeric = int(y.nunique()), is_numeric_dtype(y)
    note = None
    if model is None:
        if from_csv:
            model = "logistic" if n_values == 2 or not numeric else "linear"
            note = f"inferred: the target has {n_values} distinct values"
        else:
            model = "logistic"
    logistic = (
        "--model logistic fits binary targets only (output perturbation of "
        "multiclass models is planned)"
    )
    fix = (
        "binarise the target (one class against the others) or keep the rows of "
        "two classes"
    )
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
    shown = [
        f"{_plain(value)!r} ({count} row{'s' * (count != 1)})"
        for value, count in counts.items()
    ]
    more = f", ... ({len(shown) - limit} more)" if len(shown) > limit else ""
    return (
        f"the target {y.name!r} has {len(counts)} {kind}: "
        f"{', '.join(shown[:limit])}{more}"
    )


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
    greek.update(etabar="η̄", le="≤", sq="²")
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
            "sq": "^2",
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
    lines += _quality_lines(data["fit"], data, data_norm, sym)
    lines += _quantile_lines(report, sym)
    lines += _top_example_lines(report, min(args.top, report.shape[0]))
    lines += _attribute_lines(estimator)
    lines += [
        "",
        f"Dataset FIL (all examples together): {_num(estimator.dataset_fil_)}",
    ]
    lines += _guarantee_lines(estimator, data, model, args, data_norm, sym)
    return lines


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


def _setup_lines(estimator, data, model, args, data_norm, sym):
    """Lines describing the data set, its columns and the fitted model."""
    n, d = estimator.privacy_report_.shape[0], estimator.n_features_in_
    table = data["table"]
    label = "private" if args.private_label else "public"
    width = f"{len(table.features)} features"
    if len(table.features) != d:
        width += f" ({d} model inputs)"
    lines = [
        f"Data:   {data['name']}",
        f"        {n} examples, {width}, target {data['target']!r} ({label})",
    ]
    lines += _table_lines(table, sym)
    kind = "logistic regression" if model == "logistic" else "ridge regression"
    model_text = f"Model:  {kind}, {sym['lam']} = {args.lam:g}, Gaussian output "
    model_text += f"noise {sym['sigma']} = {args.sigma:g}"
    if data_norm is not None:
        model_text += f", rows clipped to norm {sym['le']} {data_norm:g}"
    lines += ["", model_text]
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


def _table_lines(table, sym):
    """Lines listing the dropped columns, the features used and missing values."""
    lines = []
    for note in table.notes:
        lines += _wrapped(f"Note: {note}", first="        ")
    if table.dropped:
        lines += [
            "",
            f"Dropped {len(table.dropped)} column(s) (--keep COL keeps a detected "
            "one):",
        ]
        rows = [[str(name), reason] for name, reason in table.dropped.items()]
        lines += _table(["column", "why"], rows, "ll")
        if any(why.startswith("dates") for why in table.dropped.values()):
            lines.append(
                "  (to use a date, turn it into a number, e.g. days since an event)"
            )
    lines += _feature_lines(table)
    if table.preprocessed:
        lines += _missing_lines(table.features, sym)
    return lines


def _levels_text(feature):
    """``name (k)``, or ``name (k: top m + other)`` when rare values were pooled."""
    if len(feature.inputs) >= feature.n_levels:
        return f"{feature.name} ({feature.n_levels})"
    return f"{feature.name} ({feature.n_levels}: top {len(feature.inputs) - 1} + other)"


def _feature_lines(table):
    """Lines naming the numeric and the categorical features."""
    numeric = [f.name for f in table.features if f.kind == "numeric"]
    categorical = [_levels_text(f) for f in table.features if f.kind != "numeric"]
    how = (", standardised", ", one-hot encoded") if table.preprocessed else ("", "")
    lines = ["", f"Features used ({len(table.features)} columns of the data):"]
    if numeric:
        text = f"{len(numeric)} numeric{how[0]}: {_listing(numeric)}"
        lines += _wrapped(text, indent="    ", first="  ")
    if categorical:
        text = (
            f"{len(categorical)} categorical{how[1]}, each one attribute "
            f"(distinct values): {_listing(categorical)}"
        )
        lines += _wrapped(text, indent="    ", first="  ")
    return lines


def _listing(names, limit=_N_LISTED):
    """``names`` joined by commas, the tail summarised past ``limit``.

    Spaces inside a name become ``_KEEP_TOGETHER`` so that :func:`_wrapped`
    never breaks a line inside one.
    """
    names = [name.replace(" ", _KEEP_TOGETHER) for name in names]
    if len(names) <= limit:
        return ", ".join(names)
    return ", ".join(names[:limit]) + f", ... ({len(names) - limit} more)"


def _missing_lines(features, sym):
    """Lines flagging imputed values and what the preprocessing leaks."""
    missing = [f for f in features if f.n_missing]
    lines = []
    if missing:
        listed = ", ".join(f"{f.name} {f.n_missing}" for f in missing)
        lines += _wrapped(
            f"Missing values, imputed (median of a numeric column, most frequent "
            f"value of another) in {len(missing)} column(s): {listed}",
            indent="    ",
            first="  ",
        )
    lines += _wrapped(
        "The imputation, the standardisation and the one-hot levels are fitted "
        "on every row, so they too depend on each example: the FIL and "
        f"{sym['eps']} below cover the model fitted to the preprocessed rows, "
        "not the preprocessing.",
        indent="  ",
    )
    return lines


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
        majority = _plain(counts.index[0])
        metric = "accuracy"
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


def _verdict(fit, data_norm, sym):
    """One sentence judging the released model against its baseline."""
    if fit["useful"] and fit["metric"] == "accuracy":
        gain = 100 * (fit["score"] - fit["baseline"])
        return f"the released model beats the majority baseline by {gain:.1f} points."
    if fit["useful"]:
        return (
            f"the released model explains {fit['score']:.1%} of the target's "
            "variance on its training rows."
        )
    fixes = f"lower {sym['sigma']} or {sym['lam']}"
    fixes += ", or raise --data-norm" if data_norm is not None else ""
    if fit["metric"] == "accuracy":
        within = "within 2 standard errors of the majority rate"
        useless = f"no better than always predicting {fit['majority_class']!r}"
    else:
        within = "no more than uninformative inputs reach by chance"
        useless = "no better than always predicting the mean"
    return (
        f"the released model is {useless} ({within}): its FIL and {sym['eps']} "
        f"describe a model that learned nothing useful; {fixes} before relying "
        "on them."
    )


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
    ]
    lines += _wrapped("Verdict: " + _verdict(fit, data_norm, sym), first="")
    leaks = data["table"].leaks
    if leaks:
        shown = ", ".join(f"{name!r} ({share:.1%} of rows)" for name, share in leaks)
        lines += _wrapped(
            f"Possible target leak: {shown} alone predict {data['target']!r} "
            f"(majority baseline {fit['baseline']:.1%}). A column recorded after, "
            "or derived from, the outcome flatters the model: --drop it if so.",
            first="",
        )
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


def _attribute_lines(estimator):
    """Lines of the table of the attributes with the largest FIL.

    Ranked in standard deviations (``attribute_fil_sd_``), so that attributes
    in different units compare, beside the raw FIL.
    """
    table = pd.DataFrame(
        {"fil": estimator.attribute_fil_, "fil_sd": estimator.attribute_fil_sd_}
    ).sort_values("fil_sd", ascending=False, na_position="last")
    shown = table.head(_N_TOP_ATTRIBUTES)
    lines = [
        "",
        *_wrapped(
            f"Attributes by FIL over all examples (top {len(shown)} of "
            f"{len(table)}), ranked by fil_sd, the FIL in units of the attribute's "
            "standard deviation: 1/fil_sd^2 bounds the MSE/variance of any "
            "unbiased reconstruction of the attribute, and guessing its mean "
            "scores 1",
            indent="  ",
            first="",
        ),
    ]
    rows = [
        [str(name), _num(row["fil"]), _num(row["fil_sd"])]
        for name, row in shown.iterrows()
    ]
    return lines + _table(["attribute", "fil", "fil_sd"], rows, "lrr")


def _guarantee_lines(estimator, data, model, args, data_norm, sym):
    """Lines stating the (epsilon, delta) guarantee, or why there is none."""
    epsilon, delta, reason = _guarantee(estimator, model, data_norm)
    if epsilon is None:
        return [f"{sym['eps']}: not defined (no DP guarantee: {reason})"]
    default = " (the default, below 1/n)" if args.delta is None else ""
    return [
        f"{sym['eps']} = {_num(epsilon)} at {sym['delta']} = {delta:.4g}{default}: "
        f"the released weights are ({sym['eps']}, {sym['delta']})-DP",
        *_wrapped(f"for {data['dp_scope']},", indent="  "),
        "  under replace-one neighbours (data sets of the same, public size",
        "  that differ in one example)",
    ]


# --------------------------------------------------------------------------------------
# the command


def _report(args, stdout):
    """Run ``sklearn-fil report``: load, fit, write the outputs, print a summary."""
    sym = _symbols(stdout)
    out = _check_outputs(args)
    features, y, data, onehot_groups = _load_data(args, sym)
    model, data["model_note"] = _choose_model(
        args.model or data.get("model"), y, args.csv is not None
    )
    data_norm = _resolve_data_norm(args, model, data)
    if args.csv is None:
        X, data["table"] = features, _dataset_table(features, onehot_groups)
    else:
        X, onehot_groups, data["table"] = _prepare_table(features, y, args, data)
    estimator = _build_estimator(args, model, data_norm, onehot_groups)
    _fit(estimator, X, y, model)
    data["fit"] = _fit_quality(estimator, X, y, model)
    _write_report(estimator.privacy_report_, out)
    _write_sidecar(_sidecar(estimator, data, model, args, data_norm), out)
    if args.plot is not None:
        _plot_histogram(estimator, y, model, data.get("class_names"), args.plot)
    lines = _summary(estimator, data, model, args, data_norm, sym)
    lines += _written_lines(estimator.privacy_report_, out, args.plot)
    print("\n".join(lines), file=stdout)
    return 0


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
        _check_plot_target()
        if any(_same_file(args.plot, path) for path in written.values()):
            raise _InputError(f"--plot {args.plot} would overwrite the report")
        written["--plot"] = Path(args.plot)
    for what, path in written.items():
        _check_output_path(what, path, args)
    return out


def _check_output_path(what, path, args):
    """Fail unless ``what`` can be written to ``path`` by the rules above."""
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
            f"refusing to overwrite the existing {path} ({what}); choose another "
            f"{option}, or pass --overwrite to replace it"
        )


def _check_csv_options(args):
    """Fail when options that shape a CSV table come without a CSV file."""
    used = [
        option
        for option, value in (
            ("--sep", args.sep),
            ("--drop", args.drop),
            ("--keep", args.keep),
            ("--categorical", args.categorical),
            ("--dropna-target", args.dropna_target),
        )
        if value
    ]
    if used and args.csv is None:
        raise _InputError(
            f"{', '.join(used)} applies only to a CSV file (give the CSV file "
            "before --drop, --keep or --categorical, which read every following "
            "word as a column name)"
        )


def _load_data(args, sym):
    """Features, target, data description and one-hot groups of the chosen input.

    The features of a CSV file are its raw columns, checked but not yet
    preprocessed (:func:`_prepare_table` does that once the model is chosen).
    """
    if args.csv is not None and args.dataset is not None:
        raise _InputError("give either a CSV file or --dataset, not both")
    _check_csv_options(args)
    if args.csv is None:
        name = args.dataset or "breast_cancer"
        X, y, data, onehot_groups = _DATASETS[name](sym)
        if args.target not in (None, data["target"]):
            raise _InputError(
                f"--target {args.target!r} needs a CSV file; the {name} data's "
                f"target is {data['target']!r}"
            )
        return X, y, data, onehot_groups
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


def _dataset_table(X, onehot_groups):
    """The :class:`_Table` of a ready-made data set: its columns as they are."""
    groups = {
        name: [X.columns[j] if isinstance(j, Integral) else j for j in columns]
        for name, columns in (onehot_groups or {}).items()
    }
    grouped = {column for columns in groups.values() for column in columns}
    features = [
        _Feature(str(name), "numeric", [name])
        for name in X.columns
        if name not in grouped
    ]
    features += [
        _Feature(str(name), "categorical", columns, len(columns))
        for name, columns in groups.items()
    ]
    return _Table(features)


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
        write_csv(report, out)
    except OSError as exc:
        raise _InputError(f"cannot write {out}: {exc.strerror or exc}") from None


def _sidecar(estimator, data, model, args, data_norm):
    """The run's context: settings, data, guarantee, for the JSON beside the report.

    The estimator's part is :func:`~sklearn_fil.report_io.privacy_report_metadata`
    (what ``privacy_report_.attrs`` holds); the command adds the data and its
    arguments.
    """
    meta, table = privacy_report_metadata(estimator), data["table"]
    guaranteed = meta["epsilon"] is not None
    sidecar = {
        "sklearn_fil_version": meta["sklearn_fil_version"],
        "command": f"{PROG} {args.command}",
        "data": data.get("source", data["name"]),
        "separator": data.get("sep"),
        "target": data["target"],
        "n": meta["n"],
        "model": model,
        "sigma": meta["sigma"],
        "epsilon": meta["epsilon"],
        "delta": meta["delta"],
        "neighboring_relation": meta["neighboring_relation"],
        "public": meta["public"],
        "dp_scope": data["dp_scope"] if guaranteed else None,
        "no_guarantee_reason": meta["no_guarantee_reason"],
        "n_clipped": meta["n_clipped"],
        "dataset_fil": meta["dataset_fil"],
        "fit": data["fit"],
        "features": [asdict(feature) for feature in table.features],
        "dropped": [{"column": c, "why": why} for c, why in table.dropped.items()],
        "notes": table.notes,
        "possible_target_leaks": [{"column": c, "share": s} for c, s in table.leaks],
        "settings": {
            "arguments": vars(args),
            "estimator": meta["estimator"],
            "estimator_params": meta["estimator_params"],
        },
        "sensitive": meta["sensitive"],
    }
    return to_jsonable(sidecar)


def _write_sidecar(sidecar, out):
    """Write ``sidecar`` as JSON beside the report ``out``."""
    path = sidecar_path(out)
    try:
        write_json(sidecar, path)
    except OSError as exc:
        raise _InputError(f"cannot write {path}: {exc.strerror or exc}") from None


def _plot_groups(y, model, class_names=None):
    """Histogram groups: each example's class name, or None for a regression.

    ``class_names`` maps a class (its value in ``y``) to its name, where the
    data set has names (the breast-cancer data's 0 is ``malignant``).
    """
    if model != "logistic":
        return None
    names = class_names or {}
    return np.array([str(names.get(value, value)) for value in y])


def _written_lines(report, out, plot):
    """Closing lines: the files written, and the warning that they are private."""
    n_attributes = sum(column.startswith("fil[") for column in report.columns)
    others = [column for column in report.columns[3:] if not column.startswith("fil[")]
    also = f" and {', '.join(others)}" if others else ""
    return [
        "",
        *_wrapped(
            f"Wrote the privacy report ({report.shape[0]} rows; fil, dfil, "
            f"mse_bound, {n_attributes} fil[<attribute>] columns{also}) to {out}",
            indent="  ",
            first="",
        ),
        *_wrapped(
            "Wrote the settings, features, dropped columns and guarantee to "
            f"{sidecar_path(out)}",
            indent="  ",
            first="",
        ),
        *([f"Wrote the FIL histogram to {plot}"] if plot else []),
        *_wrapped(
            f"Keep {out} private: it is computed from every example's data, so "
            "it is itself sensitive.",
            indent="  ",
            first="",
        ),
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
