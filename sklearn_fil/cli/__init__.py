"""The ``sklearn-fil`` command: privacy reports of output-perturbed models.

A logistic model with ``--data-norm``, or a linear one with ``--data-norm``
and ``--label-bound``, also gets its (epsilon, delta)-DP guarantee.

Argument parsing and orchestration only: ``_inputs`` checks the input and
reads a CSV file, which :mod:`sklearn_fil.tabular` prepares; the model is an
sklearn-fil estimator; ``_outputs`` checks and writes the files and
``_summary`` prints the summary from the fitted estimator's report and
guarantee.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import contextlib
import math
import sys

from numba.core import event

from sklearn_fil import __version__
from sklearn_fil.cli._inputs import (
    _DATASETS,
    _MODELS,
    PROG,
    _choose_model,
    _dataset_table,
    _InputError,
    _load_data,
    _prepare_table,
    _resolve_bounds,
)
from sklearn_fil.cli._outputs import _check_outputs, _plot_histogram, _sidecar, _write
from sklearn_fil.cli._summary import _fit_quality, _summary, _symbols, _written_lines
from sklearn_fil.report_io import sidecar_path, write_csv, write_json
from sklearn_fil.utils._baseline import utility_warnings_ignored

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
mean) baseline, and a JSON file beside the report records the settings.

An epsilon is reported where the release is (epsilon, delta)-DP: for a
logistic model with --data-norm, for a linear model (a numeric target) with
--data-norm and --label-bound, which clip the rows and the labels (the summary
counts both); otherwise the summary names the options that would give one."""

_EPILOG = """\
examples:
  sklearn-fil report
      bundled breast-cancer data, logistic model, epsilon reported
  sklearn-fil report patients.csv --target outcome --model logistic \\
      --data-norm 5 --sigma 0.5 --lam 0.1 --out patients_fil.csv
      your own raw table, rows clipped to norm 5 so that epsilon is reported
      (patients_fil.json records the settings)
  sklearn-fil report patients.csv --target outcome --data-norm 5 \\
      --target-epsilon 1
      noise calibrated to epsilon = 1, and lambda chosen from the public n, d,
      --data-norm and epsilon (shown in the summary)
  sklearn-fil report sales.csv --target change --data-norm 4 --label-bound 2 \\
      --target-epsilon 1
      a numeric target (ridge regression): rows clipped to norm 4 and labels
      to [-2, 2], so that epsilon = 1 holds (the summary counts what was clipped)
  sklearn-fil report compas.csv --target two_year_recid --drop is_recid
      drop a column the command would keep (here one recorded after the outcome)
  sklearn-fil report --dataset adult --plot adult_fil.png
      UCI Adult (needs the data packages), with the FIL histogram by class

warning: the written report is itself sensitive. Every row is computed from
one example's data and shows which examples are unusual: treat the file like
the training data and never publish it. A fixed --random-state makes the noise
reproducible and therefore not private. This is a measurement and research
tool; its noise sampler is not hardened for production DP releases."""


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


_DEFAULT_SIGMA = 0.1
_DEFAULT_LAM = 0.01
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
    f"scales as 1/S (default: {_DEFAULT_SIGMA}; not with --target-epsilon)",
    "--lam": "L2 strength: the model minimises sum_i loss_i + (n L / 2) ||w||^2 "
    "(default: with --target-epsilon the value that minimises the excess-risk bound "
    "of the release, from n, d, --data-norm, epsilon and delta (public numbers; "
    "sklearn_fil.accounting.output_perturbation_lam, for a linear model "
    "output_perturbation_ridge_lam), shown in the summary; "
    f"otherwise {_DEFAULT_LAM})",
    "--target-epsilon": "calibrate the noise so that the release is (E, delta)-DP, "
    "instead of --sigma; needs --data-norm, and for a linear model --label-bound too; "
    "--lam then defaults to the rule above",
    "--no-private-label": "treat the label as public: only the features are private "
    "and the report has no fil[<target>] column (default: the label is private)",
    "--data-norm": "clip every row to L2 norm NORM before fitting (one-hot inputs are "
    "kept whole, the other inputs scaled) and penalise the intercept; the release "
    "is then (epsilon, delta)-DP and epsilon is reported, for a linear model with "
    "--label-bound too (default: 1.0 for the bundled data, for a linear model "
    "with --label-bound; none for a CSV, so no epsilon)",
    "--label-bound": "linear only: clip every label to [-B, B] before fitting (the "
    "target as it is in the file, not standardised; B must be public, chosen "
    "without looking at the labels, and the penalty pulls the intercept towards 0, "
    "so a target centred on a public value fits best); with --data-norm the "
    "release is then (epsilon, delta)-DP and epsilon is reported. The summary "
    "counts the clipped labels (default: none, so no epsilon)",
    "--delta": "delta of the reported (epsilon, delta) guarantee; needs --data-norm, "
    "and for a linear model --label-bound too (default: "
    "sklearn_fil.accounting.default_delta(n) = min(1e-5, 1/(10 n)), n the number "
    "of examples)",
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
        (report, "--model", {"choices": tuple(_MODELS)}),
        (report, "--sigma", {"type": _POSITIVE, "metavar": "S"}),
        (report, "--lam", {"type": _NON_NEGATIVE, "metavar": "L"}),
        (report, "--target-epsilon", {"type": _POSITIVE, "metavar": "E"}),
        (
            report,
            "--no-private-label",
            {"dest": "private_label", "action": "store_false"},
        ),
        (report, "--data-norm", {"type": _POSITIVE, "metavar": "NORM"}),
        (report, "--label-bound", {"type": _POSITIVE, "metavar": "B"}),
        (report, "--delta", {"type": _PROBABILITY, "metavar": "D"}),
        (report, "--random-state", {"type": _SEED, "metavar": "SEED"}),
        (report, "--top", {"type": _COUNT, "default": 10, "metavar": "K"}),
        (report, "--plot", {"metavar": "PNG"}),
        (report, "--out", {"default": "report.csv", "metavar": "PATH"}),
        (report, "--overwrite", {"action": "store_true"}),
    ]:
        group.add_argument(name, help=_HELP[name], **options)
    return parser


def _fit(args, model, bounds, onehot_groups, X, y):
    """The output-perturbed estimator of ``model`` (a ``_Model``), fitted.

    ``bounds`` is ``(data_norm, label_bound)``, checked against the model.
    """
    data_norm, label_bound = bounds
    lam = args.lam
    if lam is None:  # "auto": the rule with a target, else 0.01 (not least squares)
        auto = model.family.is_classifier or args.target_epsilon is not None
        lam = "auto" if auto else _DEFAULT_LAM
    params = {
        "sigma": _DEFAULT_SIGMA if args.sigma is None else args.sigma,
        "lam": lam,
        "fit_intercept": True,
        "private_label": args.private_label,
        # penalize_intercept="auto": penalised with data_norm, which the
        # guarantee needs (a strongly convex objective)
        "data_norm": data_norm,
        "delta": args.delta,
        "target_epsilon": args.target_epsilon,
        "onehot_groups": onehot_groups,
        "random_state": args.random_state,
    }
    if not model.family.is_classifier:
        params["label_bound"] = label_bound
    estimator = model.estimator(**params)
    try:
        with utility_warnings_ignored():  # the summary's verdict says it
            return estimator.fit(X, y)
    except ValueError as exc:
        raise _InputError(f"fitting the {model.name} model failed: {exc}") from None


def _report(args, model, stdout):
    """Run ``sklearn-fil report``: load, fit, write the outputs, print a summary.

    ``model`` is the ``_Model`` of ``--model``, None when not given.
    """
    sym = _symbols(stdout)
    out = _check_outputs(args)
    X, y, data, onehot_groups = _load_data(args, sym)
    model, data["model_note"] = _choose_model(
        model or data.get("model"), y, args.csv is not None
    )
    data_norm, label_bound, data["missing_for_guarantee"] = _resolve_bounds(
        args, model, data
    )
    if args.csv is None:
        data["table"] = _dataset_table(X, onehot_groups)
    else:
        X, onehot_groups, data["table"] = _prepare_table(X, y, args, data["notes"])
    estimator = _fit(args, model, (data_norm, label_bound), onehot_groups, X, y)
    data["fit"] = _fit_quality(estimator, X, y, model)
    _write(write_csv, estimator.privacy_report_, out)
    _write(write_json, _sidecar(estimator, data, model, args), sidecar_path(out))
    if args.plot is not None:
        _plot_histogram(estimator, y, model, data.get("class_names"), args.plot)
    lines = _summary(estimator, data, model, args, data_norm, sym)
    lines += _written_lines(estimator.privacy_report_, out, args.plot)
    print("\n".join(lines), file=stdout)
    return 0


class _CompileNotice(event.Listener):
    """Says once on ``stream`` that sklearn-fil's kernels compile now.

    numba compiles a kernel on its first use and caches the machine code (in
    ``__pycache__`` beside the sources when writable, else in a per-user
    directory, or in ``NUMBA_CACHE_DIR``); only a run that misses the cache
    compiles, and then tells the user why this run is slow.
    """

    def __init__(self, stream, command):
        self.stream = stream
        self.command = command
        self.said = False

    def on_start(self, ev):
        func = getattr(ev.data["dispatcher"], "py_func", None)
        if self.said or not getattr(func, "__module__", "").startswith("sklearn_fil."):
            return
        self.said = True
        print(
            f"{PROG} {self.command}: compiling the numerical kernels for their first "
            "use (once: later runs load them from numba's cache); this run takes "
            "longer",
            file=self.stream,
            flush=True,
        )

    def on_end(self, ev):
        pass


def _compile_notice(stream, command):
    """Context in which a compile of a sklearn-fil kernel says so once on ``stream``.

    Only on a terminal, as progress messages go: a script's or a test's
    captured stderr is kept for errors.
    """
    if not stream.isatty():
        return contextlib.nullcontext()
    return event.install_listener("numba:compile", _CompileNotice(stream, command))


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

    Notes
    -----
    A run that compiles sklearn-fil's numba kernels (the first after
    installing, or with an empty numba cache) says so in one line on stderr
    when stderr is a terminal.

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
        with _compile_notice(sys.stderr, args.command):
            return _report(args, _MODELS.get(args.model), sys.stdout)
    except _InputError as exc:
        message = " ".join(str(exc).split())
        print(f"{PROG} {args.command}: error: {message}", file=sys.stderr)
        raise SystemExit(2) from None
