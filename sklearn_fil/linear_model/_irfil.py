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
    """Refit with weights ``omega_i ~ omega_i / eta_i`` until the FIL is level.

    The sibling of the output-perturbed estimators: its ``_solve`` is the
    reweighting loop of Hannun et al. (2021), Algorithm 1. The weights depend
    on all the data, so there is no DP guarantee.
    """

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
            hint = (
                " An unpenalised intercept can run away under reweighting: set "
                "penalize_intercept=True."
                if runaway and not self.penalize_intercept
                else ""
            )
            warnings.warn(
                f"IRFIL did not level the FIL to tol={self.tol} in n_iter="
                f"{self.n_iter} reweightings: its coefficient of variation is "
                f"{cv:.3g}. Raise n_iter.{hint}",
                ConvergenceWarning,
                stacklevel=2,
            )
        return self

    # -- target ------------------------------------------------------------

    def _feature_index(self, col):
        """Column index of a feature given by index or name (None: not one)."""
        if _is_index(col):
            return int(col) if 0 <= col < self.n_features_in_ else None
        names = list(getattr(self, "feature_names_in_", []))
        if isinstance(col, str) and col in names:
            return names.index(col)
        return None

    def _target_columns(self, groups):
        """The target as column indices, checked against the one-hot groups.

        Returns ``(columns, new_group)``: ``columns`` is None (whole example)
        or a tuple of column indices; ``new_group`` says whether ``columns``
        is a list target that is not one of ``onehot_groups``.
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

    # -- the reweighting loop ----------------------------------------------

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


_PARAMETERS_DOC = """\
    sigma : float, default=1.0
        Standard deviation of the Gaussian noise added once, to the final
        minimiser (coefficients and intercept).
    lam : float, default=1e-2
        L2 strength; the penalty is ``(n lam / 2) ||w||^2``. The weights are
        kept summing to ``n``, so the balance of loss and penalty is the same
        at every iteration.
    n_iter : int, default=10
        Maximum number of reweightings; ``0`` is the plain output-perturbed
        estimator."""

_COMMON_DOC = """\
    target : str, int, list or None, default=None
        What to level. None: the whole-example FIL ``eta_i`` (column ``fil``
        of the report). A feature name or column index: the FIL of that
        attribute, ``eta_ij``. A key of ``onehot_groups``, or a list of
        columns (names or indices) of a one-hot encoding: the FIL of that
        constrained categorical attribute (a list that is not already a group
        becomes one, named by its columns joined with ``|``).
    tol : float, default=1e-3
        Stop once the coefficient of variation (std / mean) of the levelled
        FIL falls below ``tol``; a :class:`~sklearn.exceptions.ConvergenceWarning`
        says when ``n_iter`` reweightings did not get there. ``0`` runs all
        ``n_iter`` reweightings, without warning.
    fit_intercept : bool, default=True
        Whether to fit an intercept (a constant, non-private feature)."""

_LABEL_DOC = """\
    private_label : bool, default=True
        Whether the label is a private coordinate of each example."""

_ONEHOT_DOC = """\
    onehot_groups : dict or "auto", default=None
        ``{name: [columns]}`` of constrained one-hot attributes (columns by
        name or index, all levels present, exactly one 1 per row), or
        ``"auto"`` to find them (see
        :class:`~sklearn_fil.linear_model.OutputPerturbedLinearRegression`).
    verbose : int, default=0
        Print the mean, std and coefficient of variation of the levelled FIL
        at every iteration.
    random_state : int, RandomState instance or None, default=None
        Seed of the output noise. ``None`` draws fresh OS entropy; a fixed
        seed makes the noise reproducible, so the release is not private."""

_ATTRIBUTES_DOC = """\
    weights_ : ndarray of shape (n_samples,)
        Sample weights of the released fit, summing to ``n_samples``.
        Sensitive: they are a function of every example's FIL.
    n_iter_ : int
        Reweightings performed (the released model is the fit after the
        last one).
    fil_history_ : pandas.DataFrame
        One row per fit (``n_iter_ + 1`` rows): ``iteration`` and the
        ``mean``, ``std`` (population), ``min`` and ``max`` of the levelled
        FIL. Sensitive: do not publish.
    privacy_report_ : pandas.DataFrame
        One row per training example: ``fil``, ``dfil``, ``mse_bound``,
        ``fil[<attribute>]`` per private attribute, ``rel_mse_bound`` (in
        the units of the caller's data and weights, not of the reweighting)
        and ``weight`` (see :class:`OutputPerturbedLinearRegression`).
        Sensitive: do not publish.
    attribute_fil_ : pandas.Series
        FIL of each attribute over all training examples.
    attribute_fil_sd_ : pandas.Series
        ``attribute_fil_`` in units of each attribute's training standard
        deviation (see :class:`OutputPerturbedLinearRegression`).
    dataset_fil_ : float
        FIL of the whole training set.
    sigma_ : float
        Standard deviation of the noise of the release (``sigma``).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when X has string column names."""

_NOTES_DOC = """\
    Each iteration fits ``w*(omega)`` exactly (Newton to ``1e-10`` for the
    logistic loss, warm-started at the previous minimiser), computes the
    per-example FIL of the output-perturbed release at those weights and
    sets ``omega_i <- n (omega_i / eta_i) / sum_j (omega_j / eta_j)``. The
    loop stops after ``n_iter`` reweightings or once the coefficient of
    variation is below ``tol``. Noise is drawn once, for the final fit;
    intermediate minimisers are never exposed.

    The FIL in the report is that of the released weighted minimiser with
    the weights held fixed (the weights enter the Hessian and each example's
    own term), as in the paper. The weights themselves depend on all the
    data, a dependence the FIL does not measure and which voids the
    sensitivity argument of output perturbation: IRFIL estimators report no
    differential-privacy guarantee (``epsilon_`` is None, with a
    :class:`~sklearn_fil.exceptions.PrivacyLeakWarning`).

    The privacy report, ``weights_`` and ``fil_history_`` are computed from
    each example's data and must not be published; publish :meth:`release`
    only."""

_REFERENCES_DOC = """\
    Hannun, Guo & van der Maaten (2021), *Measuring data leakage in
    machine-learning models with Fisher information*, UAI, Algorithm 1."""


class IRFILRegressor(SquaredLossMixin, _IRFIL):
    __doc__ = f"""Ridge regression reweighted so every example leaks alike.

    Iteratively reweighted Fisher information loss (IRFIL): refits ridge
    regression with per-example weights inversely proportional to each
    example's Fisher information loss until the FIL is (nearly) the same for
    every training example, then releases the final minimiser with Gaussian
    output noise and its privacy report.

    Parameters
    ----------
{_PARAMETERS_DOC}
{_COMMON_DOC}
    penalize_intercept : bool, default=False
        Whether the penalty includes the intercept.
{_LABEL_DOC}
{_ONEHOT_DOC}

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Released (noised) coefficients.
    intercept_ : float
        Released (noised) intercept; 0.0 when ``fit_intercept=False``.
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
{_REFERENCES_DOC}

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

    Iteratively reweighted Fisher information loss (IRFIL): refits logistic
    regression with per-example weights inversely proportional to each
    example's Fisher information loss until the FIL is (nearly) the same for
    every training example, then releases the final minimiser with Gaussian
    output noise and its privacy report.

    Parameters
    ----------
{_PARAMETERS_DOC}
{_COMMON_DOC}
    penalize_intercept : bool, default=True
        Whether the penalty includes the intercept. Unlike
        :class:`OutputPerturbedLogisticRegression`, penalised by default:
        levelling an attribute's FIL upweights the examples the model already
        fits well (their residuals, and so their leakage, are small), and a
        free intercept follows them towards one class, shrinking those
        residuals further; the loop then drifts instead of levelling.
{_LABEL_DOC}
    classes : array-like of shape (2,), default=None
        The two labels the task has, fixed before seeing the data; a training
        label outside them is an error. ``classes_``, published by
        :meth:`release`, is read from the training labels when None.
    max_iter : int, default=100
        Maximum Newton iterations of each fit; not converging is an error.
{_ONEHOT_DOC}

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Released (noised) coefficients.
    intercept_ : float
        Released (noised) intercept; 0.0 when ``fit_intercept=False``.
    classes_ : ndarray of shape (2,)
        Class labels; ``classes_[1]`` is the positive class.
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
{_REFERENCES_DOC}

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
