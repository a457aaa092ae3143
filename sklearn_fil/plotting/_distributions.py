"""Distributions of per-example privacy numbers: FIL, MSE bounds, epsilon."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

from sklearn_fil.plotting._base import (
    _attribute_column,
    _check_groups,
    _check_positive_scalar,
    _check_values,
    _column_label,
    _Display,
    _final_estimator,
    _fitted_report,
    _group_keys,
    _histograms,
    _report_column,
    _shown,
)
from sklearn_fil.utils._pipeline import attribute_labels


def _artist_color(bars):
    """The RGB colour of a histogram's first patch (face, or edge if unfilled)."""
    patches = getattr(bars, "patches", bars)
    if not len(patches):
        return None
    patch = patches[0]
    color = patch.get_facecolor() if patch.get_fill() else patch.get_edgecolor()
    return tuple(color[:3])


class FILHistogramDisplay(_Display):
    """Histogram of a per-example privacy number, by class or group.

    The per-example FIL of a released model is spread unevenly: a few
    examples leak far more than the rest (Hannun et al., 2021, Figure 2).
    Groups share the bin edges; their histograms are densities, so that a
    small group shows beside a large one. Create it with
    :meth:`from_estimator` or :meth:`from_report`. Non-finite values (and
    non-positive ones on a log scale) are left out, with a warning.

    Parameters
    ----------
    values : array-like of shape (n_samples,)
        The per-example values.
    groups : array-like of shape (n_samples,), default=None
        Class or group of each example, e.g. the training labels; one
        histogram per distinct value.
    column : str, default="fil"
        Name of the values, for the axis label.

    Attributes
    ----------
    ax_ : matplotlib Axes
        Axes with the histograms.
    figure_ : matplotlib Figure
        Figure of ``ax_``.
    bars_ : dict
        The artists of each histogram (a ``BarContainer`` for the default
        ``histtype``), keyed by group (``"all"`` without groups).
    bin_edges_ : ndarray of shape (n_bins + 1,)
        The shared bin edges.
    mean_lines_ : dict or None
        The vertical line at each group's mean, keyed like ``bars_``; None
        unless ``show_mean=True``.

    See Also
    --------
    PerInstanceEpsilonDisplay : The per-instance epsilon of DP-SGD by class.
    MSEBoundDisplay : The FIL reconstruction bounds against the RDP bound.

    References
    ----------
    Hannun, Guo & van der Maaten (2021), *Measuring data leakage in
    machine-learning models with Fisher information*, UAI, Figure 2.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_fil import OutputPerturbedLogisticRegression
    >>> from sklearn_fil.plotting import FILHistogramDisplay
    >>> X, y = make_classification(n_samples=100, n_features=4, random_state=0)
    >>> clf = OutputPerturbedLogisticRegression(sigma=0.5, random_state=0).fit(X, y)
    >>> display = FILHistogramDisplay.from_estimator(clf, groups=y, bins=20)
    >>> sorted(display.bars_), display.bin_edges_.shape
    ([0, 1], (21,))
    >>> display.ax_.get_ylabel()  # one density per class
    'density'

    A fitted Pipeline draws its final step's report, with the attributes
    named by the original columns:

    >>> import pandas as pd
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> frame = pd.DataFrame(X, columns=["age", "income", "height", "weight"])
    >>> pipe = make_pipeline(
    ...     StandardScaler(), OutputPerturbedLogisticRegression(random_state=0)
    ... ).fit(frame, y)
    >>> display = FILHistogramDisplay.from_estimator(pipe, column="fil[income]")
    >>> display.ax_.get_xlabel()
    'fil[income]'
    """

    def __init__(self, *, values, groups=None, column="fil"):
        self.values = values
        self.groups = groups
        self.column = column

    def plot(self, ax=None, *, bins=30, log_scale=False, show_mean=False, **kwargs):
        """Draw the histograms.

        Parameters
        ----------
        bins : int, str or sequence of float, default=30
            Number of bins (spaced evenly, in log space on a log scale), a
            numpy bin rule such as ``"auto"``, or the bin edges.
        log_scale : bool, default=False
            Logarithmic bins and x axis.
        show_mean : bool, default=False
            Draw a dashed vertical line at each group's mean.
        **kwargs : dict
            Passed to ``matplotlib.axes.Axes.hist``; ``density`` defaults to
            True with groups, False without.
        %(parameters)s
        """
        values = _check_values(self.values, self.column)
        groups = _check_groups(self.groups, values.size)
        ax, figure = self._canvas(ax)
        self.bin_edges_, self.bars_, density = _histograms(
            ax, values, groups, bins, log_scale, repr(self.column), kwargs
        )
        self.mean_lines_ = None
        if show_mean:
            mask = np.isfinite(values) & ((values > 0) | (not log_scale))
            self.mean_lines_ = {}
            for key, bars in self.bars_.items():
                rows = mask if groups is None else mask & (groups == key)
                color = _artist_color(bars)
                self.mean_lines_[key] = ax.axvline(
                    values[rows].mean(), linestyle="--", color=color
                )
        ax.set_xlabel(_column_label(self.column))
        ax.set_ylabel("density" if density else "examples")
        return self._drawn(ax, figure)

    @classmethod
    def from_estimator(
        cls,
        estimator,
        *,
        column="fil",
        groups=None,
        ax=None,
        bins=30,
        log_scale=False,
        show_mean=False,
        **kwargs,
    ):
        """Histogram of a column of a fitted estimator's privacy report.

        Parameters
        ----------
        estimator : estimator or Pipeline
            Fitted estimator with a ``privacy_report_`` (not a released
            copy), or a fitted Pipeline whose final step is one.
        column : str, default="fil"
            Column of the report, e.g. ``"fil"``, ``"dfil"``, ``"mse_bound"``
            or ``"fil[<feature>]"``. For a Pipeline an attribute may be named
            by its original column (``"fil[race]"`` for the one-hot group an
            encoder made of ``race``, measured as one attribute with
            ``onehot_groups="auto"``), and the axis is labelled so.
        %(parameters)s
        """
        caller = f"{cls.__name__}.from_estimator"
        report = _fitted_report(estimator, caller)
        column, label = _attribute_column(report, column, attribute_labels(estimator))
        values = _report_column(report, column, caller)
        display = cls(values=values, groups=groups, column=label)
        return display.plot(
            ax=ax, bins=bins, log_scale=log_scale, show_mean=show_mean, **kwargs
        )

    @classmethod
    def from_report(
        cls,
        report,
        *,
        column="fil",
        groups=None,
        ax=None,
        bins=30,
        log_scale=False,
        show_mean=False,
        **kwargs,
    ):
        """Histogram of a column of a privacy report.

        Parameters
        ----------
        report : pandas.DataFrame
            One row per example, e.g. an estimator's ``privacy_report_``.
        column : str, default="fil"
            Column to draw.
        %(parameters)s
        """
        values = _report_column(report, column, f"{cls.__name__}.from_report")
        display = cls(values=values, groups=groups, column=column)
        return display.plot(
            ax=ax, bins=bins, log_scale=log_scale, show_mean=show_mean, **kwargs
        )


class MSEBoundDisplay(_Display):
    """Per-example FIL bounds on reconstruction error next to the RDP bound.

    Guo et al. (2022) bound the per-coordinate MSE of any unbiased
    reconstruction of a training example from a (2, epsilon)-RDP guarantee
    (Theorem 1), one number for every example, and from the example's own
    FIL (Theorem 2, the ``mse_bound`` column of a privacy report). The
    examples beyond the RDP line are better protected than the worst case
    says (their Figure 2). Create it with :meth:`from_estimator` or
    :meth:`from_report`. Non-finite bounds (zero FIL) and non-positive ones
    are left out, with a warning.

    Parameters
    ----------
    mse_bound : array-like of shape (n_samples,)
        Per-example FIL bounds on the per-coordinate MSE.
    rdp_bound : float, default=None
        The RDP bound (Theorem 1) on the same scale; None draws no line.

    Attributes
    ----------
    %(ax_, figure_)s
    bars_ : BarContainer or None
        The histogram (``kind="hist"``).
    bin_edges_ : ndarray or None
        Its bin edges (``kind="hist"``).
    line_ : matplotlib Line2D or None
        The sorted bounds against their rank, from 1 (``kind="sorted"``).
    rdp_line_ : matplotlib Line2D or None
        The RDP bound; None without one.

    See Also
    --------
    sklearn_fil.accounting.mse_bound_rdp : The bound of Theorem 1.
    sklearn_fil.accounting.mse_bound_fil : The bound of Theorem 2.

    References
    ----------
    Guo, Karrer, Chaudhuri & van der Maaten (2022), *Bounding training data
    reconstruction in private (deep) learning*, ICML, Figure 2.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_fil import OutputPerturbedLogisticRegression
    >>> from sklearn_fil.plotting import MSEBoundDisplay
    >>> X, y = make_classification(n_samples=100, n_features=4, random_state=0)
    >>> X = X / np.linalg.norm(X, axis=1).max()
    >>> clf = OutputPerturbedLogisticRegression(
    ...     sigma=1.0, lam=0.1, fit_intercept=False, data_norm=1.0, random_state=0
    ... ).fit(X, y)
    >>> display = MSEBoundDisplay.from_estimator(clf, diameter=2.0, kind="sorted")
    >>> display.line_.get_ydata().shape
    (100,)
    """

    def __init__(self, *, mse_bound, rdp_bound=None):
        self.mse_bound = mse_bound
        self.rdp_bound = rdp_bound

    def plot(self, ax=None, *, kind="hist", bins=30, **kwargs):
        """Draw the per-example bounds and the RDP bound.

        Parameters
        ----------
        kind : {"hist", "sorted"}, default="hist"
            A histogram of the bounds on log bins (the RDP bound a vertical
            line), or the bounds sorted in increasing order against their
            rank on a log y axis (the RDP bound a horizontal line).
        bins : int, str or sequence of float, default=30
            Bins of the histogram (see :meth:`FILHistogramDisplay.plot`).
        **kwargs : dict
            Passed to ``Axes.hist`` or ``Axes.plot``.
        %(parameters)s
        """
        if kind not in ("hist", "sorted"):
            raise ValueError(f'kind must be "hist" or "sorted", got {kind!r}.')
        bounds = _check_values(self.mse_bound, "mse_bound")
        rdp = _check_positive_scalar(self.rdp_bound, "rdp_bound")
        ax, figure = self._canvas(ax)
        self.bars_ = self.bin_edges_ = self.line_ = self.rdp_line_ = None
        label = "FIL bound (Guo et al. Thm 2)"
        rdp_label = None if rdp is None else f"RDP bound (Thm 1): {rdp:.3g}"
        if kind == "hist":
            edges, bars, density = _histograms(
                ax, bounds, None, bins, True, "mse_bound", {"label": label, **kwargs}
            )
            self.bin_edges_, self.bars_ = edges, bars["all"]
            if rdp is not None:
                self.rdp_line_ = ax.axvline(rdp, color="C3", label=rdp_label)
            ax.set_xlabel("lower bound on the per-coordinate MSE")
            ax.set_ylabel("density" if density else "examples")
        else:
            shown = np.sort(bounds[_shown(bounds, True, "'mse_bound'")])
            ranks = np.arange(1, shown.size + 1)
            (self.line_,) = ax.plot(ranks, shown, label=label, **kwargs)
            ax.set_yscale("log")
            if rdp is not None:
                self.rdp_line_ = ax.axhline(rdp, color="C3", label=rdp_label)
            ax.set_xlabel("examples, by increasing bound")
            ax.set_ylabel("lower bound on the per-coordinate MSE")
        ax.legend()
        return self._drawn(ax, figure)

    @classmethod
    def from_estimator(
        cls,
        estimator,
        *,
        diameter=None,
        rdp_bound=None,
        column="mse_bound",
        kind="hist",
        ax=None,
        bins=30,
        **kwargs,
    ):
        """The bounds of a fitted estimator and its RDP bound.

        Parameters
        ----------
        estimator : estimator or Pipeline
            Fitted estimator with a ``privacy_report_``, or a fitted Pipeline
            whose final step is one.
        diameter : float or array-like of shape (n_private,), default=None
            Diameter of the data domain per private coordinate (of the
            final step's input, for a Pipeline): the RDP bound is then
            ``estimator.mse_bound_rdp(diameter)`` (an output-perturbed
            logistic regression with ``data_norm``). Where
            the estimator holds no RDP guarantee, that method warns with
            :class:`~sklearn_fil.exceptions.PrivacyLeakWarning` and no line
            is drawn.
        rdp_bound : float, default=None
            The RDP bound itself, instead of ``diameter``.
        column : str, default="mse_bound"
            Column of the report with the per-example bounds.
        %(parameters)s
        """
        report = _fitted_report(estimator, f"{cls.__name__}.from_estimator")
        estimator = _final_estimator(estimator)
        if diameter is not None:
            if rdp_bound is not None:
                raise ValueError("Give diameter or rdp_bound, not both.")
            if not hasattr(estimator, "mse_bound_rdp"):
                raise ValueError(
                    f"{type(estimator).__name__} has no mse_bound_rdp method: "
                    "compute the RDP bound and pass it as rdp_bound."
                )
            rdp_bound = estimator.mse_bound_rdp(diameter)
        return cls.from_report(
            report,
            rdp_bound=rdp_bound,
            column=column,
            kind=kind,
            ax=ax,
            bins=bins,
            **kwargs,
        )

    @classmethod
    def from_report(
        cls,
        report,
        *,
        rdp_bound=None,
        column="mse_bound",
        kind="hist",
        ax=None,
        bins=30,
        **kwargs,
    ):
        """The bounds of a privacy report next to a given RDP bound.

        Parameters
        ----------
        report : pandas.DataFrame
            One row per example, e.g. a ``privacy_report_``.
        column : str, default="mse_bound"
            Column with the per-example bounds.
        %(parameters)s
        """
        bounds = _report_column(report, column, f"{cls.__name__}.from_report")
        rdp_bound = _check_positive_scalar(rdp_bound, "rdp_bound")
        display = cls(mse_bound=bounds, rdp_bound=rdp_bound)
        return display.plot(ax=ax, kind=kind, bins=bins, **kwargs)


class PerInstanceEpsilonDisplay(_Display):
    """Distribution of the per-instance epsilon of DP-SGD, by class.

    DP-SGD's accountant gives one epsilon, the worst case over all training
    examples. The per-instance accounting of Yu et al. (2022) gives each
    example its own, from its gradient norms: most are far below the worst
    case (their Figure 1). Create it with :meth:`from_estimator` or
    :meth:`from_report`. Non-finite values (no noise, no clipping) are left
    out, with a warning.

    Parameters
    ----------
    epsilon : array-like of shape (n_samples,)
        Per-instance epsilon of every example.
    groups : array-like of shape (n_samples,), default=None
        Class or group of each example.
    global_epsilon : float, default=None
        The worst-case epsilon, drawn as a line; None draws none.

    Attributes
    ----------
    %(ax_, figure_)s
    bars_ : dict or None
        The histograms keyed by group (``"all"`` without groups)
        (``kind="hist"``).
    bin_edges_ : ndarray or None
        Their shared bin edges (``kind="hist"``).
    boxplot_ : dict or None
        What ``Axes.boxplot`` returns, one box per group in the order of
        ``groups_`` (``kind="box"``).
    groups_ : list
        The groups drawn, in order (``["all"]`` without groups).
    global_line_ : matplotlib Line2D or None
        The worst-case epsilon; None without one.

    See Also
    --------
    FILHistogramDisplay : Any column of the privacy report by group.

    References
    ----------
    Yu et al. (2022), *Per-instance privacy accounting for differentially
    private stochastic gradient descent*, Figure 1.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_fil.neural import DPSGDClassifier
    >>> from sklearn_fil.plotting import PerInstanceEpsilonDisplay
    >>> X, y = make_classification(n_samples=100, n_features=4, random_state=0)
    >>> clf = DPSGDClassifier(batch_size=20, max_iter=2, random_state=0).fit(X, y)
    >>> display = PerInstanceEpsilonDisplay.from_estimator(clf, groups=y)
    >>> display.groups_, bool(display.global_line_.get_xdata()[0] == clf.epsilon_)
    ([0, 1], True)
    """

    def __init__(self, *, epsilon, groups=None, global_epsilon=None):
        self.epsilon = epsilon
        self.groups = groups
        self.global_epsilon = global_epsilon

    def plot(self, ax=None, *, kind="hist", bins=30, **kwargs):
        """Draw the distributions and the worst-case epsilon.

        Parameters
        ----------
        kind : {"hist", "box"}, default="hist"
            Overlaid histograms (the worst case a vertical line) or one box
            plot per group (the worst case a horizontal line).
        bins : int, str or sequence of float, default=30
            Bins of the histograms (see :meth:`FILHistogramDisplay.plot`).
        **kwargs : dict
            Passed to ``Axes.hist`` or ``Axes.boxplot``; for the histograms
            ``density`` defaults to True with groups, False without.
        %(parameters)s
        """
        if kind not in ("hist", "box"):
            raise ValueError(f'kind must be "hist" or "box", got {kind!r}.')
        epsilon = _check_values(self.epsilon, "epsilon")
        groups = _check_groups(self.groups, epsilon.size)
        global_epsilon = self.global_epsilon
        if global_epsilon is not None:
            global_epsilon = float(global_epsilon)
            if not (np.isfinite(global_epsilon) and global_epsilon >= 0):
                raise ValueError(
                    f"global_epsilon must be finite and >= 0, got {global_epsilon!r}."
                )
        ax, figure = self._canvas(ax)
        self.bars_ = self.bin_edges_ = self.boxplot_ = self.global_line_ = None
        self.groups_ = _group_keys(groups)
        label = None if global_epsilon is None else f"worst case: {global_epsilon:.3g}"
        if kind == "hist":
            self.bin_edges_, self.bars_, density = _histograms(
                ax, epsilon, groups, bins, False, "'epsilon'", kwargs
            )
            if global_epsilon is not None:
                self.global_line_ = ax.axvline(
                    global_epsilon, color="k", linestyle="--", label=label
                )
            ax.set_xlabel(_column_label("epsilon"))
            ax.set_ylabel("density" if density else "examples")
        else:
            mask = _shown(epsilon, False, "'epsilon'")
            data = [
                epsilon[mask if groups is None else mask & (groups == key)]
                for key in self.groups_
            ]
            self.boxplot_ = ax.boxplot(data, **kwargs)
            positions = np.arange(1, len(data) + 1)
            ax.set_xticks(positions, [str(key) for key in self.groups_])
            if groups is not None:
                ax.set_xlabel("class")
            if global_epsilon is not None:
                self.global_line_ = ax.axhline(
                    global_epsilon, color="k", linestyle="--", label=label
                )
            ax.set_ylabel(_column_label("epsilon"))
        if global_epsilon is not None or (kind == "hist" and groups is not None):
            ax.legend()
        return self._drawn(ax, figure)

    @classmethod
    def from_estimator(
        cls, estimator, *, groups=None, kind="hist", ax=None, bins=30, **kwargs
    ):
        """The per-instance epsilon of a fitted DP-SGD estimator.

        Parameters
        ----------
        estimator : DPSGDClassifier or Pipeline
            Fitted estimator whose ``privacy_report_`` has an ``epsilon``
            column, or a fitted Pipeline whose final step is one. Its
            ``epsilon_`` is drawn as the worst case; where it holds no
            guarantee, ``epsilon_`` warns with
            :class:`~sklearn_fil.exceptions.PrivacyLeakWarning` and no line
            is drawn.
        %(parameters)s
        """
        report = _fitted_report(estimator, f"{cls.__name__}.from_estimator")
        _report_column(report, "epsilon", f"{cls.__name__}.from_estimator")
        # without a guarantee, epsilon_ is None and warns why
        global_epsilon = getattr(_final_estimator(estimator), "epsilon_", None)
        return cls.from_report(
            report,
            global_epsilon=global_epsilon,
            groups=groups,
            kind=kind,
            ax=ax,
            bins=bins,
            **kwargs,
        )

    @classmethod
    def from_report(
        cls,
        report,
        *,
        global_epsilon=None,
        groups=None,
        kind="hist",
        ax=None,
        bins=30,
        **kwargs,
    ):
        """The ``epsilon`` column of a privacy report.

        Parameters
        ----------
        report : pandas.DataFrame
            One row per example with an ``epsilon`` column.
        %(parameters)s
        """
        epsilon = _report_column(report, "epsilon", f"{cls.__name__}.from_report")
        display = cls(epsilon=epsilon, groups=groups, global_epsilon=global_epsilon)
        return display.plot(ax=ax, kind=kind, bins=bins, **kwargs)
