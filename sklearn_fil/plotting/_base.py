"""Shared helpers of the Display objects: lazy matplotlib, input checks, bins.

A display given a fitted :class:`~sklearn.pipeline.Pipeline` draws its final
step (the private model, whose report it reads) and names the attributes by
the Pipeline's original columns where the prefix says which transformed
columns each one became (see
:func:`~sklearn_fil.utils._pipeline.attribute_labels`).
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import inspect
import re
import warnings
from numbers import Integral

import numpy as np
import pandas as pd
from sklearn.utils.validation import check_is_fitted

from sklearn_fil.utils._pipeline import split_pipeline

_INSTALL = "pip install sklearn-fil[plot]"

# Axis labels of the report columns (mathtext is fine in labels).
_COLUMN_LABELS = {
    "fil": r"per-example FIL $\eta_i$",
    "dfil": r"diagonal FIL $\bar{\eta}_i$",
    "mse_bound": "FIL bound on the per-coordinate MSE",
    "epsilon": r"per-instance $\varepsilon_i$",
    "grad_norm": "clipped gradient norm / C",
    "weight": "IRFIL weight",
}


# Docstring entries the displays share (numpydoc, dedented); see _Display.
_ENTRIES = {
    "ax": "ax : matplotlib Axes, default=None\n"
    "    Axes to draw on; None creates a figure.",
    "name": "name : str, default=None\n"
    "    Name for the legend; None uses the display's ``name``.",
    "ax_": "ax_ : matplotlib Axes\n    Axes of the plot.",
    "figure_": "figure_ : matplotlib Figure\n    Figure of ``ax_``.",
}


def _entries(doc):
    """The Parameters entries of a numpydoc docstring, ``{name: text}``, dedented."""
    lines = (doc or "").splitlines()
    start = next((i for i, x in enumerate(lines) if x.strip() == "Parameters"), None)
    entries = {}
    for line in [] if start is None else lines[start + 2 :]:
        if not line.strip():
            break
        text = line[len(lines[start]) - len(lines[start].lstrip()) :]
        if not text.startswith(" "):
            name = text.split(" : ")[0].lstrip("*")
            entries[name] = text
        else:
            entries[name] += "\n" + text
    return entries


def _indent(text, pad):
    return "\n".join(pad + line for line in text.splitlines())


class _Display:
    """Base of the displays; it completes their docstrings.

    A line ``%(parameters)s`` in the Parameters of ``plot`` or a ``from_*``
    method becomes the entries of all the method's parameters, in the order of
    its signature: those documented in the method itself, else those of the
    class (for a ``from_*`` method), else of ``plot`` (likewise), else of
    ``_ENTRIES``. A line such as ``%(ax_, figure_)s`` becomes those entries of
    ``_ENTRIES``. ``plot`` and the ``from_*`` methods return the drawn
    display; the Returns section that says so is appended here.
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.__doc__ is None:  # python -OO
            return
        cls.__doc__ = re.sub(
            r"^( *)%\(([\w, ]+)\)s$",
            lambda m: _indent("\n".join(_ENTRIES[k] for k in m[2].split(", ")), m[1]),
            cls.__doc__,
            flags=re.M,
        )
        for attr, method in vars(cls).items():
            function = getattr(method, "__func__", method)
            doc = getattr(function, "__doc__", None)
            if not (attr == "plot" or attr.startswith("from_")) or not doc:
                continue
            pad = " " * (len(doc) - len(doc.rstrip(" ")))
            if f"\n{pad}%(parameters)s\n" in doc:
                sources = [_entries(doc)]
                if attr != "plot":
                    sources += [_entries(cls.__doc__), _entries(cls.plot.__doc__)]
                names = list(inspect.signature(function).parameters)[1:]
                block = "\n".join(
                    next(s[n] for s in [*sources, _ENTRIES] if n in s) for n in names
                )
                head, _, tail = doc.partition(f"{pad}----------\n")
                tail = tail[tail.find("\n\n") :] if "\n\n" in tail else ""
                doc = f"{head}{pad}----------\n{_indent(block, pad)}{tail}"
            function.__doc__ = (
                f"{doc.rstrip()}\n\n{pad}Returns\n{pad}-------\n{pad}display : "
                f"{cls.__name__}\n{pad}    The display, with its artists.\n{pad}"
            )

    def _canvas(self, ax):
        """``(ax, figure)`` to draw on: ``ax``, or a new figure's single axes."""
        if ax is None:
            _, ax = _pyplot(f"{type(self).__name__}.plot").subplots()
        return ax, ax.figure

    def _drawn(self, ax, figure):
        self.ax_, self.figure_ = ax, figure
        return self


def _pyplot(caller):
    """``matplotlib.pyplot``, imported on first use.

    Raises
    ------
    ImportError
        When matplotlib is not installed, naming the extra that installs it.
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            f"{caller} requires matplotlib, an optional dependency of "
            f"sklearn-fil; install it with: {_INSTALL}"
        ) from exc
    return plt


def _column_label(column):
    return _COLUMN_LABELS.get(column, str(column))


def _final_estimator(estimator):
    """The final step of a Pipeline (the model drawn), else ``estimator``."""
    return split_pipeline(estimator)[1]


def _fitted_report(estimator, caller):
    """The ``privacy_report_`` of a fitted estimator (or Pipeline's final step)."""
    estimator = _final_estimator(estimator)
    check_is_fitted(estimator)
    report = getattr(estimator, "privacy_report_", None)
    if report is None:
        raise ValueError(
            f"{caller} needs the privacy_report_ of a fitted estimator; "
            f"{type(estimator).__name__} has none (a released copy carries no "
            "report: the report is sensitive). Pass the fitted estimator."
        )
    return report


def _attribute_column(report, column, labels):
    """``(column of the report, label)`` for a column named either way.

    ``column`` is a report column, e.g. ``"fil[x2|x3]"``, labelled with the
    original name (``"fil[race]"``), or that original name, read from the
    report column it labels. Other columns are returned as they are.
    """
    match = re.fullmatch(r"([^\[\]]+)\[(.+)\]", str(column))
    if not labels or match is None:
        return column, column
    stem, attribute = match.groups()
    if column in report.columns:
        return column, f"{stem}[{labels.get(attribute, attribute)}]"
    inverse = {label: name for name, label in labels.items()}
    if attribute in inverse:
        return f"{stem}[{inverse[attribute]}]", column
    return column, column


def _check_frame(frame, name, caller):
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(
            f"{caller} needs {name} as a pandas DataFrame, got {type(frame).__name__}."
        )
    return frame


def _require_columns(frame, needed, name, caller, hint=""):
    """``frame``, a DataFrame with the columns ``needed`` (else a clear error)."""
    _check_frame(frame, name, caller)
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise ValueError(
            f"{name[0].upper()}{name[1:]} lacks the columns {missing}; its columns "
            f"are {[str(c) for c in frame.columns]}{hint}."
        )
    return frame


def _report_column(report, column, caller):
    """One column of a report as a float64 array, with clear errors."""
    _check_frame(report, "the report", caller)
    if column not in report.columns:
        raise ValueError(
            f"The report has no column {column!r}; its columns are "
            f"{[str(c) for c in report.columns]}."
        )
    try:
        return report[column].to_numpy(dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"Column {column!r} of the report is not numeric.") from exc


def _check_values(values, name):
    """``values`` as a float64 1d array (non-finite values are allowed)."""
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array of real numbers.") from exc
    if array.ndim != 1:
        raise ValueError(f"{name} must be a 1d array, got shape {array.shape}.")
    if array.size == 0:
        raise ValueError(f"{name} must not be empty.")
    return array


def _check_groups(groups, n_samples):
    """``groups`` as a 1d array of length ``n_samples``, or None."""
    if groups is None:
        return None
    groups = groups.to_numpy() if isinstance(groups, pd.Series) else np.asarray(groups)
    if groups.shape != (n_samples,):
        raise ValueError(
            f"groups must be a 1d array with one value per example "
            f"({n_samples}), got shape {groups.shape}."
        )
    return groups


def _group_keys(groups):
    """The distinct groups, sorted when they can be, else in order of appearance."""
    if groups is None:
        return ["all"]
    try:
        keys = np.unique(groups)
    except TypeError:
        keys = pd.unique(pd.Series(groups, dtype=object))
    return [k.item() if isinstance(k, np.generic) else k for k in keys]


def _check_positive_scalar(value, name):
    """A finite, positive float (or None)."""
    if value is None:
        return None
    try:
        value = float(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a real number, got {value!r}.") from exc
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be finite and > 0, got {value!r}.")
    return value


def _check_n(n, name="n"):
    if isinstance(n, bool | np.bool_) or not isinstance(n, Integral | np.integer):
        raise TypeError(f"{name} must be an integer, got {n!r}.")
    if n < 1:
        raise ValueError(f"{name} must be >= 1, got {n}.")
    return int(n)


def _shown(values, log_scale, name):
    """Mask of the values that can be drawn; warns about the others.

    Non-finite values (e.g. an infinite ``mse_bound`` where the FIL is zero)
    have no place on an axis, nor have non-positive values on a log scale.
    """
    mask = np.isfinite(values)
    if log_scale:
        mask &= values > 0
    dropped = int(values.size - mask.sum())
    if not mask.any():
        condition = "finite and positive" if log_scale else "finite"
        raise ValueError(f"No value of {name} is {condition}: nothing to plot.")
    if dropped:
        condition = "not finite"
        if log_scale:
            condition = "not finite or not positive (log scale)"
        warnings.warn(
            f"{dropped} of {values.size} values of {name} are {condition} and "
            "are not shown.",
            UserWarning,
            stacklevel=3,
        )
    return mask


def _bin_edges(values, bins, log_scale):
    """Histogram bin edges over ``values`` (finite, and positive on a log scale).

    An integer or a string ``bins`` is spread evenly (in ``log10`` on a log
    scale) from the smallest to the largest value, both included exactly; a
    sequence is used as it is.
    """
    if not isinstance(bins, Integral | str):
        edges = np.asarray(bins, dtype=np.float64)
        if edges.ndim != 1 or edges.size < 2 or np.any(np.diff(edges) <= 0):
            raise ValueError(
                "bins must be an integer, a numpy bin rule or an increasing "
                "sequence of at least two edges."
            )
        return edges
    if isinstance(bins, Integral):
        _check_n(bins, "bins")  # (rejects booleans)
    if not log_scale:
        return np.histogram_bin_edges(values, bins=bins)
    edges = 10.0 ** np.histogram_bin_edges(np.log10(values), bins=bins)
    lo, hi = values.min(), values.max()
    if lo < hi:  # the rounding of 10 ** log10 must not leave out the extremes
        edges[0], edges[-1] = lo, hi
    return edges


def _histograms(ax, values, groups, bins, log_scale, name, kwargs):
    """Overlaid histograms of ``values`` by group on shared bin edges.

    Grouped histograms are densities (``density=True``: each integrates to 1
    over the bins) so that a small group shows beside a large one, and the
    legend gives each group's number of examples drawn; a ``density`` in
    ``kwargs`` overrides. A single histogram counts examples by default.

    Returns ``(edges, bars, density)`` with ``bars`` a dict from group
    (``"all"`` without groups) to the matplotlib ``BarContainer``, and
    ``density`` whether the heights are densities.
    """
    mask = _shown(values, log_scale, name)
    edges = _bin_edges(values[mask], bins, log_scale)
    keys = _group_keys(groups)
    hist_kwargs = {"alpha": 0.6 if len(keys) > 1 else 1.0, **kwargs}
    density = bool(hist_kwargs.pop("density", groups is not None))
    label = hist_kwargs.pop("label", None)
    bars = {}
    for key in keys:
        rows = mask if groups is None else mask & (groups == key)
        n_rows = int(rows.sum())
        if groups is not None:
            label = f"{key} (n={n_rows})"
        _, _, container = ax.hist(
            values[rows],
            bins=edges,
            label=label,
            # an empty group has no density: its bars stay at zero
            density=density and n_rows > 0,
            **hist_kwargs,
        )
        bars[key] = container
    if log_scale:
        ax.set_xscale("log")
    if groups is not None:
        ax.legend()
    return edges, bars, density
