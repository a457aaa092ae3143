"""Iteratively reweighted Fisher information loss (IRFIL)."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import warnings
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import pandas as pd
from sklearn.exceptions import ConvergenceWarning

from sklearn_fil._losses import get_family
from sklearn_fil.linear_model._base import (
    BaseReleasedGLM,
    Doc,
    LogisticLossMixin,
    SquaredLossMixin,
)
from sklearn_fil.utils._sklearn_compat import Interval

_NO_DP_IRFIL_MSG = (
    "No differential-privacy guarantee: IRFIL computes its sample weights from "
    "the training data, so replacing one example changes every weight and the "
    "sensitivity bound of output perturbation does not hold."
)

_HISTORY_COLUMNS = ["iteration", "mean", "std", "min", "max"]


def _cv(mean, std):
    """Coefficient of variation; infinite when the mean is zero."""
    return std / mean if mean > 0 else np.inf


def _is_index(value):
    return isinstance(value, Integral | np.integer) and not isinstance(value, bool)


class _IRFIL(BaseReleasedGLM):
    """Refit with weights ``omega_i ~ omega_i / eta_i`` until the FIL is level."""

    _no_guarantee_reason = _NO_DP_IRFIL_MSG

    _parameter_constraints: ClassVar[dict] = {
        **BaseReleasedGLM._parameter_constraints,
        "n_iter": [Interval(Integral, 0, None, closed="left")],
        "target": [None, str, Integral, list, tuple],
        "tol": [Interval(Real, 0, None, closed="left")],
        "verbose": ["verbose"],
    }

    def fit(self, X, y):
        """Reweight, refit, add Gaussian noise once and report the FIL.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
            Training data, the private features. Sparse input (any scipy
            format, fitted as CSR, e.g. a OneHotEncoder's output) is never
            densified and gives the dense fit's numbers to rounding.
        y : array-like of shape (n_samples,)
            Targets.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        self._fit_clean(X, y, None)
        self.privacy_report_["weight"] = self.weights_
        last = self.fil_history_.iloc[-1]
        cv = _cv(last["mean"], last["std"])
        if self.n_iter and self.tol > 0 and not cv < self.tol:
            runaway = get_family(self._loss).unbounded_margin and self.fit_intercept
            hint = ""
            if runaway and not self.penalize_intercept:
                hint = " An unpenalised intercept can run away under reweighting: "
                hint += "set penalize_intercept=True."
            warnings.warn(
                f"IRFIL did not level the FIL to tol={self.tol} in n_iter="
                f"{self.n_iter} reweightings: its coefficient of variation is "
                f"{cv:.3g}. Raise n_iter.{hint}",
                ConvergenceWarning,
                stacklevel=2,
            )
        return self

    def _feature_index(self, col):
        """Column index of a feature given by index or name (None: not one)."""
        if _is_index(col):
            return int(col) if 0 <= col < self.n_features_in_ else None
        names = list(getattr(self, "feature_names_in_", []))
        if isinstance(col, str) and col in names:
            return names.index(col)
        return None

    def _target_columns(self, groups):
        """``(columns, new_group)``: the target's columns (None: whole example).

        ``new_group``: whether they are a list target that is no one-hot group.
        """
        target = self.target
        if target is None:
            return None, False
        if isinstance(target, str) and target in groups:
            return tuple(groups[target]), False
        if isinstance(target, list | tuple):
            cols = [self._feature_index(col) for col in target]
            missing = [col for col, j in zip(target, cols, strict=True) if j is None]
            if missing:
                raise ValueError(
                    f"target names {missing!r}, which are not features of X."
                )
            if len(cols) < 2 or len(set(cols)) != len(cols):
                raise ValueError(
                    "A list target names a one-hot group: at least two distinct "
                    f"columns; got {list(target)!r}."
                )
            for name, group in groups.items():
                if set(cols) == set(group):
                    return tuple(group), False
                if set(cols) & set(group):
                    raise ValueError(
                        f"target {list(target)!r} overlaps the one-hot group "
                        f"{name!r} without being it."
                    )
            return tuple(cols), True
        j = self._feature_index(target)
        if j is None:
            raise ValueError(
                f"target={target!r} names no feature of X (nor a one-hot group); "
                "give a feature name, a column index or a list of one-hot columns."
            )
        for name, group in groups.items():
            if j in group:
                raise ValueError(
                    f"target={target!r} is a column of the one-hot group {name!r}, "
                    f"which is one attribute: set target={name!r}."
                )
        return (j,), False

    def _onehot_indices(self):
        groups = super()._onehot_indices()
        cols, new_group = self._target_columns(groups)
        if new_group:
            names = list(getattr(self, "feature_names_in_", []))
            label = "|".join(str(names[j]) if names else f"x{j}" for j in cols)
            if label in groups:
                raise ValueError(
                    f"The target group's name {label!r} is already a one-hot group."
                )
            groups[label] = list(cols)
        return groups

    def _solve(self, X, y, omega, groups):
        key, _ = self._target_columns(groups)
        target_name = "fil" if key is None else f"FIL of target {self.target!r}"
        n = X.shape[0]
        history = []
        w = None
        for it in range(self.n_iter + 1):
            # warm start: successive weights are close, so are the minimisers
            w, _, loss_hessian = self._minimise(X, y, omega, w0=w)
            result = self._fil(X, y, w, omega, groups, loss_hessian)
            eta = (
                result.fil
                if key is None
                else result.attribute_fil[:, result.attributes.index(key)]
            )
            mean, std = float(eta.mean()), float(eta.std())
            history.append((it, mean, std, float(eta.min()), float(eta.max())))
            if self.verbose:
                print(
                    f"[{type(self).__name__}] iteration {it}/{self.n_iter}: "
                    f"mean {mean:.6g}, std {std:.3g}, cv {_cv(mean, std):.3g}"
                )
            if it == self.n_iter or _cv(mean, std) < self.tol:
                break
            if not np.all(eta > 0):
                zero = np.flatnonzero(~(eta > 0))
                raise ValueError(
                    f"{target_name} is zero for {zero.size} example(s) (first: "
                    f"{zero[0]}): they leak nothing, so their weight 1/eta is "
                    "unbounded and IRFIL cannot level them with the others."
                )
            inv = omega / eta
            omega = n * inv / inv.sum()

        self.n_iter_ = it
        self.weights_ = omega
        self.fil_history_ = pd.DataFrame(history, columns=_HISTORY_COLUMNS)
        return w, omega, result


_PARAMETERS_DOC = f"""\
    sigma : float, default=1.0
        Standard deviation of the Gaussian noise added once, to the final
        minimiser (coefficients and intercept).
    lam : float, default=1e-2
        L2 strength; the penalty is ``(n lam / 2) ||w||^2`` (the weights keep
        summing to ``n``).
    n_iter : int, default=10
        Maximum number of reweightings; ``0`` is the plain output-perturbed
        estimator.
    target : str, int, list or None, default=None
        What to level: None, the whole-example FIL (column ``fil``); a
        feature name or index, that attribute's FIL; a key of
        ``onehot_groups``, or a list of one-hot columns (a new group named by
        its columns joined with ``|``), that categorical attribute's FIL.
    tol : float, default=1e-3
        Stop once the coefficient of variation (std / mean) of the levelled
        FIL is below ``tol``, else warn with a
        :class:`~sklearn.exceptions.ConvergenceWarning`; ``0`` runs all
        ``n_iter`` reweightings, without warning.
{Doc.fit_intercept}"""

_LAST_PARAMETERS_DOC = f"""\
{Doc.onehot_groups}
    verbose : int, default=0
        Print the mean, std and coefficient of variation of the levelled FIL
        at every iteration.
{Doc.random_state}"""

_ATTRIBUTES_DOC = f"""\
    weights_ : ndarray of shape (n_samples,)
        Sample weights of the released fit, summing to ``n_samples``.
        Sensitive: they are a function of every example's FIL.
    n_iter_ : int
        Reweightings performed.
    fil_history_ : pandas.DataFrame
        One row per fit: ``iteration`` and the ``mean``, ``std``
        (population), ``min`` and ``max`` of the levelled FIL. Sensitive.
    privacy_report_ : pandas.DataFrame
        The FIL columns of :class:`OutputPerturbedLinearRegression`'s report
        (``rel_mse_bound`` in the units of the caller's data and weights) and
        ``weight``. Sensitive: do not publish.
{Doc.fil}
    sigma_ : float
        Standard deviation of the noise of the release (``sigma``)."""

_NOTES_DOC = f"""\
    Each iteration fits ``w*(omega)`` exactly (warm-started Newton for the
    logistic loss), computes the per-example FIL at those weights and sets
    ``omega_i <- n (omega_i / eta_i) / sum_j (omega_j / eta_j)`` (Hannun et
    al., 2021, Algorithm 1). Noise is drawn once, for the final fit.

    The report's FIL holds the weights fixed, as in the paper. The weights
    depend on all the data, which voids the sensitivity argument of output
    perturbation: there is no differential-privacy guarantee (``epsilon_``
    is None, with a :class:`~sklearn_fil.exceptions.PrivacyLeakWarning`).

{Doc.sensitive}"""


def _summary(model):
    return f"""\
    Iteratively reweighted Fisher information loss (IRFIL): refits {model}
    with weights inversely proportional to each example's FIL until the FIL
    is (nearly) level, then releases the minimiser with Gaussian noise."""


class IRFILRegressor(SquaredLossMixin, _IRFIL):
    __doc__ = f"""Ridge regression reweighted so every example leaks alike.

{_summary("ridge regression")}

    Parameters
    ----------
{_PARAMETERS_DOC}
    penalize_intercept : bool, default=False
        Whether the penalty includes the intercept.
{Doc.private_label}
{_LAST_PARAMETERS_DOC}

    Attributes
    ----------
{Doc.coef}
{_ATTRIBUTES_DOC}

    See Also
    --------
    IRFILClassifier : The logistic counterpart.
    OutputPerturbedLinearRegression : The same release without reweighting.

    Notes
    -----
{_NOTES_DOC}

    References
    ----------
{Doc.hannun}

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn_fil import IRFILRegressor
    >>> X, y = make_regression(n_samples=200, n_features=5, noise=10, random_state=0)
    >>> reg = IRFILRegressor(sigma=0.1, random_state=0).fit(X, y)
    >>> hist = reg.fil_history_
    >>> reg.n_iter_, (hist["std"] / hist["mean"]).round(4).tolist()
    (5, [0.2606, 0.0347, 0.0098, 0.0035, 0.0013, 0.0005])
    >>> reg.privacy_report_.columns[-1]
    'weight'
    """

    def __init__(
        self,
        *,
        sigma=1.0,
        lam=1e-2,
        n_iter=10,
        target=None,
        tol=1e-3,
        fit_intercept=True,
        penalize_intercept=False,
        private_label=True,
        onehot_groups=None,
        verbose=0,
        random_state=None,
    ):
        self.sigma = sigma
        self.lam = lam
        self.n_iter = n_iter
        self.target = target
        self.tol = tol
        self.fit_intercept = fit_intercept
        self.penalize_intercept = penalize_intercept
        self.private_label = private_label
        self.onehot_groups = onehot_groups
        self.verbose = verbose
        self.random_state = random_state


class IRFILClassifier(LogisticLossMixin, _IRFIL):
    __doc__ = f"""Binary logistic regression reweighted so every example leaks alike.

{_summary("logistic regression")}

    Parameters
    ----------
{_PARAMETERS_DOC}
    penalize_intercept : bool, default=True
        Whether the penalty includes the intercept; by default, since
        levelling upweights the examples the model fits well (small
        residuals, small leakage), and a free intercept follows them towards
        one class, so the loop drifts instead of levelling.
{Doc.private_label}
{Doc.classes}
    max_iter : int, default=100
        Maximum Newton iterations of each fit; not converging is an error.
{_LAST_PARAMETERS_DOC}

    Attributes
    ----------
{Doc.coef}
{Doc.classes_}
{_ATTRIBUTES_DOC}

    See Also
    --------
    IRFILRegressor : The squared-loss counterpart.
    OutputPerturbedLogisticRegression : The same release without reweighting.

    Notes
    -----
{_NOTES_DOC}

    References
    ----------
{Doc.hannun}

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_fil import IRFILClassifier
    >>> X, y = make_classification(n_samples=200, n_features=4, random_state=0)
    >>> X = X / np.linalg.norm(X, axis=1).max()
    >>> clf = IRFILClassifier(sigma=0.1, tol=0, random_state=0).fit(X, y)
    >>> hist = clf.fil_history_
    >>> bool(hist["std"].iloc[-1] < 1e-2 * hist["std"].iloc[0])
    True
    >>> round(float(clf.weights_.sum()))
    200
    """

    _parameter_constraints: ClassVar[dict] = {
        **_IRFIL._parameter_constraints,
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "classes": [None, "array-like"],
    }

    def __init__(
        self,
        *,
        sigma=1.0,
        lam=1e-2,
        n_iter=10,
        target=None,
        tol=1e-3,
        fit_intercept=True,
        penalize_intercept=True,
        private_label=True,
        classes=None,
        max_iter=100,
        onehot_groups=None,
        verbose=0,
        random_state=None,
    ):
        self.sigma = sigma
        self.lam = lam
        self.n_iter = n_iter
        self.target = target
        self.tol = tol
        self.fit_intercept = fit_intercept
        self.penalize_intercept = penalize_intercept
        self.private_label = private_label
        self.classes = classes
        self.max_iter = max_iter
        self.onehot_groups = onehot_groups
        self.verbose = verbose
        self.random_state = random_state
