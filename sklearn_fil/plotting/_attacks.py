"""What attacks achieve against what the FIL predicts."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score, roc_curve
from sklearn.utils.validation import check_is_fitted

from sklearn_fil.attacks import attack_report
from sklearn_fil.plotting._base import (
    _check_frame,
    _check_values,
    _Display,
    _report_column,
    _require_columns,
    _shown,
)
from sklearn_fil.utils._membership import membership_array


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
    _require_columns(report, needed, "the attack report", caller)
    return report


class AttackSuccessDisplay(_Display):
    """Attack success by FIL bin, one line with error bars per group.

    An attack whose per-example success rises with the FIL confirms that the
    FIL ranks examples by how much they leak (Hannun et al., 2021, Figure 7).
    Create it with :meth:`from_report` or :meth:`from_predictions`; draw
    several attacks on one axes with the same ``ax`` and a ``name`` for each.

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
    %(ax_, figure_)s
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
        show_groups : list, default=None
            Groups of the report to draw, in order; None draws them all.
        x : {"fil_bin", "fil_mean"}, default="fil_bin"
            The x axis: the bin number (1: least exposed), or the mean FIL
            of the bin (log scale).
        **kwargs : dict
            Passed to ``Axes.errorbar``.
        %(parameters)s
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
        ax, figure = self._canvas(ax)
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
        return self._drawn(ax, figure)

    @classmethod
    def from_report(
        cls, report, *, show_groups=None, x="fil_bin", name=None, ax=None, **kwargs
    ):
        """Draw an :func:`~sklearn_fil.attacks.attack_report` table.

        Parameters
        ----------
        report : pandas.DataFrame
            The table :func:`~sklearn_fil.attacks.attack_report` returns.
        %(parameters)s
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
        %(parameters)s
        """
        report = attack_report(fil, success, groups=groups, n_bins=n_bins)
        return cls.from_report(
            report, show_groups=show_groups, x=x, name=name, ax=ax, **kwargs
        )


class ReconstructionBoundDisplay(_Display):
    """Realised reconstruction error against the FIL bound, log-log.

    Guo et al. (2022, Theorem 2) bound the expected per-coordinate MSE of
    any unbiased reconstruction of a training example by ``d / Tr(I)``.
    Points below the line MSE = bound (highlighted) beat it, which an
    unbiased attack can do by chance in one release but not on average over
    many (their Figure 3). Create it with :meth:`from_estimator` or
    :meth:`from_report`, or from arrays, e.g. MSEs averaged over releases.
    Points with a non-finite or non-positive coordinate are left out, with a
    warning.

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
    %(ax_, figure_)s
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
        highlight_below : bool, default=True
            Draw the points below the bound apart, in red.
        **kwargs : dict
            Passed to ``Axes.scatter``.
        %(parameters)s
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
        ax, figure = self._canvas(ax)
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
        return self._drawn(ax, figure)

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
        %(parameters)s
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
            result.report, name=name, highlight_below=highlight_below, ax=ax, **kwargs
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
        %(parameters)s
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


class MembershipROCDisplay(_Display):
    """ROC curve of a membership attack, with the chance diagonal.

    By default both axes are logarithmic, as in Carlini et al. (2022): what
    matters for privacy is the TPR at a low FPR (a few members identified
    with near certainty), which a linear plot squeezes into its corner; the
    curve runs off the axes where a rate is zero. Create it with
    :meth:`from_estimator` or :meth:`from_predictions`; draw several attacks
    on one axes with the same ``ax`` and a ``name`` for each.

    Parameters
    ----------
    fpr : array-like of shape (n_points,)
        False-positive rates, in [0, 1] and non-decreasing.
    tpr : array-like of shape (n_points,)
        True-positive rates, in [0, 1] and non-decreasing.
    roc_auc : float, default=None
        Area under the curve, shown in the legend; None shows none.
    name : str, default=None
        Name of the attack, for the legend.

    Attributes
    ----------
    %(ax_, figure_)s
    line_ : matplotlib Line2D
        The ROC curve.
    chance_level_ : matplotlib Line2D or None
        The diagonal TPR = FPR; None with ``plot_chance_level=False``.

    See Also
    --------
    sklearn_fil.attacks.LossThresholdMembershipInference : The attack, with
        ``roc_``, ``auc_`` and ``tpr_at_fpr_``.
    sklearn_fil.attacks.LiRAMembershipInference : The shadow-model attack,
        with the same attributes.
    sklearn.metrics.RocCurveDisplay : scikit-learn's ROC display, on linear
        axes.

    References
    ----------
    Carlini, Chien, Nasr, Song, Terzis & Tramer (2022), *Membership
    inference attacks from first principles*, IEEE S&P.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.neighbors import KNeighborsClassifier
    >>> from sklearn_fil.attacks import LossThresholdMembershipInference
    >>> from sklearn_fil.plotting import MembershipROCDisplay
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3))
    >>> y = rng.integers(0, 2, size=200)
    >>> member = np.arange(200) < 100
    >>> model = KNeighborsClassifier(n_neighbors=1).fit(X[member], y[member])
    >>> attack = LossThresholdMembershipInference(model, random_state=0)
    >>> attack = attack.fit(X, y, membership=member)
    >>> display = MembershipROCDisplay.from_estimator(attack)
    >>> display.line_.get_label()
    'AUC = 0.73'
    >>> display.chance_level_.get_label()
    'chance (AUC = 0.5)'
    """

    def __init__(self, *, fpr, tpr, roc_auc=None, name=None):
        self.fpr = fpr
        self.tpr = tpr
        self.roc_auc = roc_auc
        self.name = name

    def plot(
        self,
        ax=None,
        *,
        name=None,
        log_scale=True,
        plot_chance_level=True,
        chance_level_kw=None,
        **kwargs,
    ):
        """Draw the ROC curve and the chance diagonal.

        Parameters
        ----------
        log_scale : bool, default=True
            Logarithmic axes, to read the TPR at low FPR; False draws the
            linear unit square.
        plot_chance_level : bool, default=True
            Draw the diagonal TPR = FPR of a random guess.
        chance_level_kw : dict, default=None
            Passed to ``Axes.plot`` for the diagonal.
        **kwargs : dict
            Passed to ``Axes.plot`` for the curve.
        %(parameters)s
        """
        fpr = _check_values(self.fpr, "fpr")
        tpr = _check_values(self.tpr, "tpr")
        if fpr.shape != tpr.shape:
            raise ValueError(
                f"fpr and tpr must have the same length, got {fpr.size} and {tpr.size}."
            )
        for values, label in ((fpr, "fpr"), (tpr, "tpr")):
            if not ((values >= 0) & (values <= 1)).all():
                raise ValueError(f"{label} must lie in [0, 1].")
            if (np.diff(values) < 0).any():
                raise ValueError(f"{label} must be non-decreasing along the curve.")
        name = self.name if name is None else name
        if self.roc_auc is None:
            label = name
        elif name is None:
            label = f"AUC = {self.roc_auc:.2f}"
        else:
            label = f"{name} (AUC = {self.roc_auc:.2f})"
        ax, figure = self._canvas(ax)
        line_kw = kwargs if label is None else {"label": label, **kwargs}
        (self.line_,) = ax.plot(fpr, tpr, **line_kw)
        self.chance_level_ = None
        if plot_chance_level:
            if log_scale:
                positive = np.concatenate([fpr[fpr > 0], tpr[tpr > 0]])
                low = positive.min() if positive.size else 1e-3
            else:
                low = 0.0
            chance_kw = {
                "color": "k",
                "linestyle": "--",
                "linewidth": 1,
                "label": "chance (AUC = 0.5)",
                **(chance_level_kw or {}),
            }
            (self.chance_level_,) = ax.plot([low, 1.0], [low, 1.0], **chance_kw)
        if log_scale:
            ax.set_xscale("log")
            ax.set_yscale("log")
        else:
            ax.set(xlim=(-0.01, 1.01), ylim=(-0.01, 1.01), aspect="equal")
        ax.set_xlabel("false-positive rate (non-members called members)")
        ax.set_ylabel("true-positive rate (members called members)")
        if ax.get_legend_handles_labels()[1]:
            ax.legend(loc="lower right")
        return self._drawn(ax, figure)

    @classmethod
    def from_estimator(
        cls,
        attack,
        *,
        name=None,
        log_scale=True,
        plot_chance_level=True,
        chance_level_kw=None,
        ax=None,
        **kwargs,
    ):
        """Draw the held-out ROC curve of a fitted membership attack.

        Parameters
        ----------
        attack : LossThresholdMembershipInference, LiRAMembershipInference or \
RMIAMembershipInference
            Fitted membership attack, with ``roc_`` and ``auc_``.
        %(parameters)s
        """
        check_is_fitted(attack)
        roc = getattr(attack, "roc_", None)
        if roc is None:
            raise TypeError(
                f"{cls.__name__}.from_estimator needs a fitted membership attack "
                f"with roc_ (LossThresholdMembershipInference, "
                f"LiRAMembershipInference, RMIAMembershipInference); got "
                f"{type(attack).__name__}."
            )
        caller = f"{cls.__name__}.from_estimator"
        display = cls(
            fpr=_report_column(roc, "fpr", caller),
            tpr=_report_column(roc, "tpr", caller),
            roc_auc=getattr(attack, "auc_", None),
            name=name,
        )
        return display.plot(
            ax=ax,
            log_scale=log_scale,
            plot_chance_level=plot_chance_level,
            chance_level_kw=chance_level_kw,
            **kwargs,
        )

    @classmethod
    def from_predictions(
        cls,
        membership,
        scores,
        *,
        name=None,
        log_scale=True,
        plot_chance_level=True,
        chance_level_kw=None,
        ax=None,
        **kwargs,
    ):
        """Compute the ROC curve of membership scores and draw it.

        Parameters
        ----------
        membership : array-like of shape (n_samples,)
            True membership, 1 (True) for members; both values must occur.
        scores : array-like of shape (n_samples,)
            Membership scores, higher for a more likely member, e.g. the
            attack's ``decision_function`` on rows it did not choose its
            threshold on.
        %(parameters)s
        """
        member = membership_array(membership)
        scores = _check_values(scores, "scores")
        if scores.shape != member.shape:
            raise ValueError(
                f"membership and scores must have the same length, got "
                f"{member.size} and {scores.size}."
            )
        if member.all() or not member.any():
            raise ValueError("membership must contain both members and non-members.")
        if not np.isfinite(scores).all():
            raise ValueError("scores must be finite.")
        fpr, tpr, _ = roc_curve(member, scores, drop_intermediate=False)
        display = cls(
            fpr=fpr, tpr=tpr, roc_auc=float(roc_auc_score(member, scores)), name=name
        )
        return display.plot(
            ax=ax,
            log_scale=log_scale,
            plot_chance_level=plot_chance_level,
            chance_level_kw=chance_level_kw,
            **kwargs,
        )
