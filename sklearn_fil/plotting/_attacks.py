"""What attacks achieve against what the FIL predicts."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import pandas as pd
from sklearn.utils.validation import check_is_fitted

from sklearn_fil.attacks import attack_report
from sklearn_fil.plotting._base import (
    _axes,
    _check_frame,
    _check_values,
    _report_column,
    _shown,
)


def _check_attack_report(report, x, caller):
    """An :func:`attack_report` table, checked for what the display reads."""
    _check_frame(report, "the attack report", caller)
    if not (
        isinstance(report.index, pd.MultiIndex)
        and list(report.index.names) == ["group", "fil_bin"]
    ):
        raise ValueError(
            "The attack report must be indexed by (group, fil_bin), as "
            "sklearn_fil.attacks.attack_report returns it; got index levels "
            f"{list(report.index.names)}."
        )
    needed = ["success_mean", "success_sem"] + (["fil_mean"] if x == "fil_mean" else [])
    missing = [c for c in needed if c not in report.columns]
    if missing:
        raise ValueError(
            f"The attack report lacks the columns {missing}; its columns are "
            f"{[str(c) for c in report.columns]}."
        )
    return report


class AttackSuccessDisplay:
    """Attack success by FIL bin, one line with error bars per group.

    An attack whose per-example success rises with the per-example FIL
    confirms that the FIL ranks examples by how much they leak (Hannun et
    al., 2021, Figure 7). This display draws the mean success in each FIL
    bin of an :func:`~sklearn_fil.attacks.attack_report`, with its standard
    error, one line per group (the block ``"all"`` over every example
    included). Draw several attacks on one axes by calling a ``from_*``
    method with the same ``ax`` and a ``name`` for each.

    Create it with :meth:`from_report` or :meth:`from_predictions`.

    Parameters
    ----------
    report : pandas.DataFrame
        The table :func:`~sklearn_fil.attacks.attack_report` returns:
        indexed by (``group``, ``fil_bin``), with columns ``success_mean``,
        ``success_sem`` and ``fil_mean``.
    name : str, default=None
        Name of the attack, for the legend.

    Attributes
    ----------
    ax_ : matplotlib Axes
        Axes of the plot.
    figure_ : matplotlib Figure
        Figure of ``ax_``.
    errorbars_ : dict
        The ``ErrorbarContainer`` of each group drawn, keyed by group.
    lines_ : dict
        The data line (``Line2D``) of each group drawn, keyed by group.

    See Also
    --------
    sklearn_fil.attacks.attack_report : The table this display draws.

    References
    ----------
    Hannun, Guo & van der Maaten (2021), *Measuring data leakage in
    machine-learning models with Fisher information*, UAI, Figure 7.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fil.plotting import AttackSuccessDisplay
    >>> rng = np.random.default_rng(0)
    >>> fil = rng.exponential(size=200)
    >>> success = rng.random(200) < fil / fil.max()
    >>> display = AttackSuccessDisplay.from_predictions(fil, success, n_bins=5)
    >>> display.lines_["all"].get_xdata().tolist()
    [1, 2, 3, 4, 5]
    """

    def __init__(self, *, report, name=None):
        self.report = report
        self.name = name

    def plot(self, ax=None, *, show_groups=None, x="fil_bin", name=None, **kwargs):
        """Draw the success of each group against the FIL bin.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Axes to draw on; None creates a figure.
        show_groups : list, default=None
            Groups of the report to draw, in order; None draws them all.
        x : {"fil_bin", "fil_mean"}, default="fil_bin"
            The x axis: the bin number (1: least exposed), or the mean FIL
            of the bin (log scale).
        name : str, default=None
            Name for the legend; None uses the display's ``name``.
        **kwargs : dict
            Passed to ``Axes.errorbar``.

        Returns
        -------
        display : AttackSuccessDisplay
            The display, with its artists.
        """
        if x not in ("fil_bin", "fil_mean"):
            raise ValueError(f'x must be "fil_bin" or "fil_mean", got {x!r}.')
        report = _check_attack_report(self.report, x, f"{type(self).__name__}.plot")
        groups = list(report.index.get_level_values("group").unique())
        if show_groups is None:
            show_groups = groups
        else:
            show_groups = list(show_groups)
            unknown = [g for g in show_groups if g not in groups]
            if unknown:
                raise ValueError(
                    f"show_groups names {unknown}, which are not groups of the "
                    f"report; its groups are {groups}."
                )
        name = self.name if name is None else name
        ax, figure = _axes(ax, f"{type(self).__name__}.plot")
        errorbar_kwargs = {"marker": "o", "capsize": 3, **kwargs}
        self.errorbars_, self.lines_ = {}, {}
        bins = None
        for group in show_groups:
            block = report.xs(group, level="group")
            bins = block.index.to_numpy()
            xs = bins if x == "fil_bin" else block["fil_mean"].to_numpy()
            if name is None:
                label = str(group)
            elif len(show_groups) == 1:
                label = str(name)
            else:
                label = f"{name}: {group}"
            container = ax.errorbar(
                xs,
                block["success_mean"].to_numpy(dtype=np.float64),
                yerr=block["success_sem"].to_numpy(dtype=np.float64),
                label=label,
                **errorbar_kwargs,
            )
            self.errorbars_[group] = container
            self.lines_[group] = container.lines[0]
        if x == "fil_bin":
            n_bins = len(bins)
            if n_bins <= 20:
                ax.set_xticks(bins)
            what = "decile" if n_bins == 10 else "bin"
            ax.set_xlabel(f"FIL {what} (1: least exposed)")
        else:
            ax.set_xscale("log")
            ax.set_xlabel("mean FIL of the bin")
        ax.set_ylabel("attack success")
        ax.legend()
        self.ax_, self.figure_ = ax, figure
        return self

    @classmethod
    def from_report(
        cls, report, *, show_groups=None, x="fil_bin", name=None, ax=None, **kwargs
    ):
        """Draw an :func:`~sklearn_fil.attacks.attack_report` table.

        Parameters
        ----------
        report : pandas.DataFrame
            The table :func:`~sklearn_fil.attacks.attack_report` returns.
        show_groups : list, default=None
            Groups to draw; None draws them all.
        x : {"fil_bin", "fil_mean"}, default="fil_bin"
            See :meth:`plot`.
        name : str, default=None
            Name of the attack, for the legend.
        ax : matplotlib Axes, default=None
            Axes to draw on; None creates a figure.
        **kwargs : dict
            Passed to ``Axes.errorbar``.

        Returns
        -------
        display : AttackSuccessDisplay
            The drawn display.
        """
        _check_attack_report(report, x, f"{cls.__name__}.from_report")
        display = cls(report=report, name=name)
        return display.plot(ax=ax, show_groups=show_groups, x=x, **kwargs)

    @classmethod
    def from_predictions(
        cls,
        fil,
        success,
        *,
        groups=None,
        n_bins=10,
        show_groups=None,
        x="fil_bin",
        name=None,
        ax=None,
        **kwargs,
    ):
        """Tabulate per-example attack success by FIL bin and draw it.

        Parameters
        ----------
        fil : array-like of shape (n_samples,)
            Per-example FIL, e.g. a column of a ``privacy_report_``.
        success : array-like of shape (n_samples,)
            Per-example success of the attack (booleans or scores).
        groups : array-like of shape (n_samples,), default=None
            Group of each example: one line per group besides ``"all"``.
        n_bins : int, default=10
            Number of equal-count FIL bins.
        show_groups : list, default=None
            Groups to draw; None draws them all.
        x : {"fil_bin", "fil_mean"}, default="fil_bin"
            See :meth:`plot`.
        name : str, default=None
            Name of the attack, for the legend.
        ax : matplotlib Axes, default=None
            Axes to draw on; None creates a figure.
        **kwargs : dict
            Passed to ``Axes.errorbar``.

        Returns
        -------
        display : AttackSuccessDisplay
            The drawn display.
        """
        report = attack_report(fil, success, groups=groups, n_bins=n_bins)
        return cls.from_report(
            report, show_groups=show_groups, x=x, name=name, ax=ax, **kwargs
        )


class ReconstructionBoundDisplay:
    """Realised reconstruction error against the FIL bound, log-log.

    Guo et al. (2022, Theorem 2) bound the expected per-coordinate MSE of
    any unbiased reconstruction of a training example by ``d / Tr(I)``. This
    display puts every example at (bound, realised MSE) of an attack, with
    the line MSE = bound: points above it respect the bound, points below it
    (highlighted) beat it, which an unbiased attack can do by chance in one
    release but not on average over many (their Figure 3).

    Create it with :meth:`from_estimator` (a fitted
    :class:`~sklearn_fil.attacks.GLMReconstructionAttack`) or
    :meth:`from_report` (the ``report`` of its ``check_bound``); the
    constructor takes arrays, e.g. MSEs averaged over releases. Points with
    a non-finite or non-positive coordinate are left out, with a warning.

    Parameters
    ----------
    mse : array-like of shape (n_samples,)
        Realised per-coordinate squared error of each example.
    mse_bound : array-like of shape (n_samples,)
        FIL bound of each example.
    name : str, default=None
        Name for the legend.

    Attributes
    ----------
    ax_ : matplotlib Axes
        Axes of the plot.
    figure_ : matplotlib Figure
        Figure of ``ax_``.
    scatter_ : matplotlib PathCollection
        The points at (bound, MSE): those respecting the bound (``mse >=
        mse_bound``), or all of them with ``highlight_below=False``.
    scatter_below_ : matplotlib PathCollection or None
        The points below the bound, in red; None with
        ``highlight_below=False``.
    line_ : matplotlib Line2D
        The line MSE = bound.

    See Also
    --------
    sklearn_fil.attacks.GLMReconstructionAttack : The attack, and its
        ``check_bound``.
    MSEBoundDisplay : The FIL bounds next to the RDP bound.

    References
    ----------
    Guo, Karrer, Chaudhuri & van der Maaten (2022), *Bounding training data
    reconstruction in private (deep) learning*, ICML, Figure 3.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_fil import OutputPerturbedLogisticRegression
    >>> from sklearn_fil.attacks import GLMReconstructionAttack
    >>> from sklearn_fil.plotting import ReconstructionBoundDisplay
    >>> X, y = make_classification(n_samples=100, n_features=4, random_state=0)
    >>> X = X / np.linalg.norm(X, axis=1).max()
    >>> model = OutputPerturbedLogisticRegression(sigma=1e-3, random_state=0)
    >>> attack = GLMReconstructionAttack(model.fit(X, y)).fit(X, y)
    >>> display = ReconstructionBoundDisplay.from_estimator(attack, X)
    >>> len(display.scatter_.get_offsets()) + len(display.scatter_below_.get_offsets())
    100
    """

    def __init__(self, *, mse, mse_bound, name=None):
        self.mse = mse
        self.mse_bound = mse_bound
        self.name = name

    def plot(self, ax=None, *, name=None, highlight_below=True, **kwargs):
        """Draw the points and the line MSE = bound.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Axes to draw on; None creates a figure.
        name : str, default=None
            Name for the legend; None uses the display's ``name``.
        highlight_below : bool, default=True
            Draw the points below the bound apart, in red.
        **kwargs : dict
            Passed to ``Axes.scatter``.

        Returns
        -------
        display : ReconstructionBoundDisplay
            The display, with its artists.
        """
        mse = _check_values(self.mse, "mse")
        bound = _check_values(self.mse_bound, "mse_bound")
        if mse.shape != bound.shape:
            raise ValueError(
                f"mse and mse_bound must have the same length, got {mse.size} and "
                f"{bound.size}."
            )
        both = np.where(np.isfinite(bound) & (bound > 0), mse, np.nan)
        mask = _shown(both, True, "(mse_bound, mse)")
        mse, bound = mse[mask], bound[mask]
        name = self.name if name is None else name
        prefix = "" if name is None else f"{name}: "
        ax, figure = _axes(ax, f"{type(self).__name__}.plot")
        scatter_kwargs = {"s": 12, "alpha": 0.6, **kwargs}
        n = mse.size
        self.scatter_below_ = None
        if highlight_below:
            held = mse >= bound
            self.scatter_ = ax.scatter(
                bound[held],
                mse[held],
                label=f"{prefix}respects the bound ({held.sum()} of {n})",
                **scatter_kwargs,
            )
            below_kwargs = {
                k: v for k, v in scatter_kwargs.items() if k not in ("c", "color")
            }
            self.scatter_below_ = ax.scatter(
                bound[~held],
                mse[~held],
                color="C3",
                label=f"{prefix}below the bound ({n - held.sum()} of {n})",
                **below_kwargs,
            )
        else:
            self.scatter_ = ax.scatter(bound, mse, label=name, **scatter_kwargs)
        lims = [min(bound.min(), mse.min()), max(bound.max(), mse.max())]
        (self.line_,) = ax.plot(lims, lims, color="k", linewidth=1, label="MSE = bound")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("FIL bound on the per-coordinate MSE")
        ax.set_ylabel("realised reconstruction MSE")
        ax.legend()
        self.ax_, self.figure_ = ax, figure
        return self

    @classmethod
    def from_estimator(
        cls, attack, X, *, name=None, highlight_below=True, ax=None, **kwargs
    ):
        """Run ``attack.check_bound(X)`` and draw its report.

        Parameters
        ----------
        attack : GLMReconstructionAttack
            Fitted attack on a fitted (not released) target model.
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            The true training examples, in the order given to ``fit``.
        name : str, default=None
            Name for the legend.
        highlight_below : bool, default=True
            Draw the points below the bound apart, in red.
        ax : matplotlib Axes, default=None
            Axes to draw on; None creates a figure.
        **kwargs : dict
            Passed to ``Axes.scatter``.

        Returns
        -------
        display : ReconstructionBoundDisplay
            The drawn display.
        """
        if not hasattr(attack, "check_bound"):
            raise TypeError(
                f"{cls.__name__}.from_estimator needs a reconstruction attack with "
                f"a check_bound method (GLMReconstructionAttack); got "
                f"{type(attack).__name__}."
            )
        check_is_fitted(attack)
        result = attack.check_bound(X)
        return cls.from_report(
            result.report,
            name=name,
            highlight_below=highlight_below,
            ax=ax,
            **kwargs,
        )

    @classmethod
    def from_report(cls, report, *, name=None, highlight_below=True, ax=None, **kwargs):
        """Draw a table with columns ``mse`` and ``mse_bound``.

        Parameters
        ----------
        report : pandas.DataFrame or Bunch
            The ``report`` of
            :meth:`GLMReconstructionAttack.check_bound
            <sklearn_fil.attacks.GLMReconstructionAttack.check_bound>`, or
            the Bunch it returns.
        name : str, default=None
            Name for the legend.
        highlight_below : bool, default=True
            Draw the points below the bound apart, in red.
        ax : matplotlib Axes, default=None
            Axes to draw on; None creates a figure.
        **kwargs : dict
            Passed to ``Axes.scatter``.

        Returns
        -------
        display : ReconstructionBoundDisplay
            The drawn display.
        """
        if not isinstance(report, pd.DataFrame) and hasattr(report, "report"):
            report = report.report  # the Bunch of check_bound
        caller = f"{cls.__name__}.from_report"
        display = cls(
            mse=_report_column(report, "mse", caller),
            mse_bound=_report_column(report, "mse_bound", caller),
            name=name,
        )
        return display.plot(ax=ax, highlight_below=highlight_below, **kwargs)
