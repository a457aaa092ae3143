"""Convergence of IRFIL: the spread of the FIL over the reweightings."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from sklearn.utils.validation import check_is_fitted

from sklearn_fil.plotting._base import (
    _check_values,
    _Display,
    _final_estimator,
    _require_columns,
)


class IRFILConvergenceDisplay(_Display):
    """Standard deviation (and mean) of the per-example FIL over IRFIL iterations.

    IRFIL refits with weights inversely proportional to each example's FIL
    until every example leaks alike; the standard deviation of the FIL falls
    at every reweighting while the mean barely moves (Hannun et al., 2021,
    Figure 5). Create it with :meth:`from_estimator` or :meth:`from_history`;
    draw several estimators on one axes with the same ``ax`` and a ``name``
    for each.

    Parameters
    ----------
    iteration : array-like of shape (n_fits,)
        Iteration numbers (0: the fit before any reweighting).
    std : array-like of shape (n_fits,)
        Standard deviation of the levelled FIL at each iteration.
    mean : array-like of shape (n_fits,), default=None
        Its mean; None draws no mean.
    name : str, default=None
        Name of the estimator, for the legend.

    Attributes
    ----------
    %(ax_, figure_)s
    line_ : matplotlib Line2D
        The standard deviation against the iteration.
    mean_line_ : matplotlib Line2D or None
        The mean (dashed, same colour); None without it.

    See Also
    --------
    sklearn_fil.IRFILClassifier : IRFIL for logistic regression.
    sklearn_fil.IRFILRegressor : IRFIL for ridge regression.

    References
    ----------
    Hannun, Guo & van der Maaten (2021), *Measuring data leakage in
    machine-learning models with Fisher information*, UAI, Figure 5.

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn_fil import IRFILRegressor
    >>> from sklearn_fil.plotting import IRFILConvergenceDisplay
    >>> X, y = make_regression(n_samples=100, n_features=4, random_state=0)
    >>> reg = IRFILRegressor(sigma=0.1, n_iter=3, tol=0, random_state=0).fit(X, y)
    >>> display = IRFILConvergenceDisplay.from_estimator(reg)
    >>> display.line_.get_xdata().tolist()
    [0, 1, 2, 3]
    """

    def __init__(self, *, iteration, std, mean=None, name=None):
        self.iteration = iteration
        self.std = std
        self.mean = mean
        self.name = name

    def plot(self, ax=None, *, name=None, show_mean=True, log_scale=True, **kwargs):
        """Draw the standard deviation, and the mean, against the iteration.

        Parameters
        ----------
        show_mean : bool, default=True
            Also draw the mean, dashed, when the display has one.
        log_scale : bool, default=True
            Logarithmic y axis.
        **kwargs : dict
            Passed to ``Axes.plot`` for both lines.
        %(parameters)s
        """
        iteration = _check_values(self.iteration, "iteration")
        x = np.asarray(self.iteration)  # as given: integers stay integers
        std = _check_values(self.std, "std")
        mean = None if self.mean is None else _check_values(self.mean, "mean")
        for values, label in ((std, "std"), (mean, "mean")):
            if values is not None and values.shape != iteration.shape:
                raise ValueError(
                    f"{label} must have one value per iteration ({iteration.size}), "
                    f"got {values.size}."
                )
        name = self.name if name is None else name
        prefix = "" if name is None else f"{name}: "
        ax, figure = self._canvas(ax)
        plot_kwargs = {"marker": "o", **kwargs}
        (self.line_,) = ax.plot(x, std, label=f"{prefix}std of FIL", **plot_kwargs)
        self.mean_line_ = None
        if show_mean and mean is not None:
            mean_kwargs = {
                **plot_kwargs,
                "color": self.line_.get_color(),
                "linestyle": "--",
            }
            (self.mean_line_,) = ax.plot(
                x, mean, label=f"{prefix}mean FIL", **mean_kwargs
            )
        if log_scale:
            ax.set_yscale("log")
        if np.all(iteration == np.round(iteration)):
            from matplotlib.ticker import MaxNLocator

            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("IRFIL iteration")
        ax.set_ylabel("FIL across the examples")
        ax.legend()
        return self._drawn(ax, figure)

    @classmethod
    def from_estimator(
        cls, estimator, *, ax=None, name=None, show_mean=True, log_scale=True, **kwargs
    ):
        """The ``fil_history_`` of a fitted IRFIL estimator.

        Parameters
        ----------
        estimator : IRFILClassifier, IRFILRegressor or Pipeline
            Fitted estimator with a ``fil_history_``, or a fitted Pipeline
            whose final step is one.
        name : str, default=None
            Name for the legend; None: the estimator's class name (the final
            step's, for a Pipeline).
        %(parameters)s
        """
        estimator = _final_estimator(estimator)
        check_is_fitted(estimator)
        history = getattr(estimator, "fil_history_", None)
        if history is None:
            raise ValueError(
                f"{cls.__name__}.from_estimator needs an IRFIL estimator with a "
                f"fil_history_; {type(estimator).__name__} has none."
            )
        name = type(estimator).__name__ if name is None else name
        return cls.from_history(
            history,
            ax=ax,
            name=name,
            show_mean=show_mean,
            log_scale=log_scale,
            **kwargs,
        )

    @classmethod
    def from_history(
        cls, history, *, ax=None, name=None, show_mean=True, log_scale=True, **kwargs
    ):
        """A history table with columns ``iteration``, ``std`` and ``mean``.

        Parameters
        ----------
        history : pandas.DataFrame
            One row per fit, e.g. an IRFIL estimator's ``fil_history_``;
            ``mean`` is needed only with ``show_mean=True``.
        %(parameters)s
        """
        _require_columns(
            history,
            ["iteration", "std"] + (["mean"] if show_mean else []),
            "the history",
            f"{cls.__name__}.from_history",
            " (it needs those of an IRFIL estimator's fil_history_)",
        )
        display = cls(
            iteration=history["iteration"].to_numpy(),
            std=history["std"].to_numpy(dtype=np.float64),
            mean=(
                history["mean"].to_numpy(dtype=np.float64)
                if "mean" in history.columns
                else None
            ),
            name=name,
        )
        return display.plot(ax=ax, show_mean=show_mean, log_scale=log_scale, **kwargs)
