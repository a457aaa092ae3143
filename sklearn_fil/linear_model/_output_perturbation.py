"""Output-perturbed linear and logistic regression with FIL privacy reports."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import warnings
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import pandas as pd
from scipy.special import expit
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from sklearn_fil._glm import fit_glm
from sklearn_fil._report import make_privacy_report, target_label
from sklearn_fil.accounting import (
    Guarantee,
    check_delta,
    gaussian_epsilon,
    gaussian_rdp,
    mse_bound_rdp,
    output_perturbation_sensitivity,
)
from sklearn_fil.exceptions import ClippingWarning
from sklearn_fil.fisher import fisher_information_loss
from sklearn_fil.utils._clipping import clip_rows, row_norms
from sklearn_fil.utils._fitted import fit_or_clear
from sklearn_fil.utils._guarantee import GuaranteeMixin
from sklearn_fil.utils._onehot import check_onehot_groups, onehot_columns
from sklearn_fil.utils._random import noise_rng
from sklearn_fil.utils._release import (
    FITTED_PARAMS,
    record_fitted_params,
    released_copy,
)
from sklearn_fil.utils._sklearn_compat import (
    Interval,
    _check_sample_weight,
    _fit_context,
)

_NO_DATA_NORM_MSG = (
    "No differential-privacy guarantee: data_norm was not set, so the rows were "
    "not clipped and the sensitivity of the minimiser is unbounded."
)
_NOT_STRONGLY_CONVEX_MSG = (
    "No differential-privacy guarantee: the intercept is not penalised "
    "(penalize_intercept=False), so the objective is not strongly convex in it "
    "and the sensitivity bound 2 L / (n lam) does not hold."
)
_NO_STRONG_CONVEXITY_MSG = (
    "No differential-privacy guarantee: lam=0 gives no strong convexity."
)
_PRIVATE_WEIGHTS_MSG = (
    "No differential-privacy guarantee: the sample weights are not uniform and "
    "were not declared public (public_sample_weight=True). The sensitivity "
    "2 L max(omega) / (sum(omega) lam) depends on them, so it bounds the change "
    "of the minimiser only when every row's weight is a public constant that "
    "stays with its position when the example is replaced."
)
_NO_DP_LINEAR_MSG = (
    "No differential-privacy guarantee: the squared loss has an unbounded "
    "gradient, so output perturbation of linear regression is not DP. Use the "
    "privacy report (FIL) instead."
)


# Private fitted state, cleared with the public attributes at each fit.
# ``_weighted``: whether the fit used non-uniform example weights (part of the
# training recipe that attacks re-run, so release() keeps it).
_PRIVATE_STATE = ("_weighted", FITTED_PARAMS)
_PUBLIC = ("coef_", "intercept_", "classes_", "n_features_in_", "feature_names_in_")
_MECHANISM = "Gaussian output perturbation of the minimiser"
# The DP path certifies that the released centre is within this fraction of
# the sensitivity of the exact minimiser (strong convexity turns the final
# gradient into a distance); the sensitivity grows by twice as much, once for
# each of two neighbouring data sets. Far above the rounding of the gradient
# (about n * 1e-16 of the sensitivity), far below anything that moves epsilon.
_CERTIFIED_FRACTION = 1e-6


def _no_guarantee(reason):
    return Guarantee.none(reason, mechanism=_MECHANISM)


class _BaseOutputPerturbed(GuaranteeMixin, BaseEstimator):
    """Fit, release ``w* + N(0, sigma^2 I)`` and report its FIL."""

    _loss = None

    _parameter_constraints: ClassVar[dict] = {
        "sigma": [Interval(Real, 0, None, closed="neither")],
        "lam": [Interval(Real, 0, None, closed="left")],
        "fit_intercept": ["boolean"],
        "penalize_intercept": ["boolean"],
        "private_label": ["boolean"],
        "onehot_groups": [None, dict],
        "random_state": ["random_state"],
    }

    def _encode_y(self, y):
        """Targets as the loss needs them, and ``classes_`` (None: regression)."""
        return y, None

    def _dp_bound(self, omega):
        """``(sensitivity, None)`` of the exact minimiser, or ``(None, reason)``.

        ``omega``: the example weights, scaled to a largest weight of 1.
        """
        return None, _NO_DP_LINEAR_MSG

    def _delta(self, n_samples):
        """δ of the guarantee (checked before any work)."""
        return None

    def _onehot_indices(self):
        """Column indices of each constrained one-hot group, by group name."""
        return onehot_columns(
            self.onehot_groups,
            getattr(self, "feature_names_in_", None),
            self.n_features_in_,
        )

    def fit(self, X, y, sample_weight=None):
        """Fit the model, add Gaussian noise and compute the privacy report.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            Training data, the private features.
        y : array-like of shape (n_samples,)
            Targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights ``omega_i`` of the examples in the objective.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        return self._fit_clean(X, y, sample_weight)

    def _fit_clean(self, X, y, sample_weight):
        return fit_or_clear(
            self, self._fit, X, y, sample_weight, private=_PRIVATE_STATE
        )

    @_fit_context(prefer_skip_nested_validation=True)
    def _fit(self, X, y, sample_weight):
        record_fitted_params(self)
        index = X.index.copy() if isinstance(X, pd.DataFrame) else None
        target_name = y.name if isinstance(y, pd.Series) and y.name is not None else "y"
        X, y = validate_data(
            self,
            X,
            y,
            dtype=np.float64,
            ensure_min_samples=2,
            y_numeric=self._loss == "squared",
        )
        y, classes = self._encode_y(y)
        omega = _check_sample_weight(
            sample_weight, X, dtype=np.float64, ensure_non_negative=True
        )
        if not omega.max() > 0:
            raise ValueError("sample_weight must have a positive entry.")
        # The minimiser and the FIL are invariant to scaling every weight by
        # one constant (the penalty scales with their sum); a largest weight
        # of 1 keeps tiny or huge weights from under- or overflowing.
        omega = omega / omega.max()
        delta = self._delta(X.shape[0])
        groups = self._onehot_indices()
        # one-hot groups are checked before the (possibly long) fit
        check_onehot_groups(list(groups.values()), X, names=list(groups))
        X = self._preprocess(X, groups)
        largest = float(np.abs(X).max())
        if not np.isfinite(largest * largest * X.shape[0] * X.shape[1]):
            raise ValueError(
                f"X has entries up to {largest:.3g} in magnitude: the sums of their "
                "squares in the Hessian overflow float64. Rescale the features "
                "(e.g. with StandardScaler)"
                + (" or set data_norm." if "data_norm" in self.get_params() else ".")
            )
        w, omega, result = self._solve(X, y, omega, groups)
        d = X.shape[1]

        feature_names = (
            list(self.feature_names_in_)
            if hasattr(self, "feature_names_in_")
            else [f"x{j}" for j in range(d)]
        )
        group_names = {tuple(cols): name for name, cols in groups.items()}
        target_name = target_label(target_name, feature_names)
        attribute_names = []
        for att in result.attributes:
            if att == "label":
                attribute_names.append(str(target_name))
            elif len(att) == 1:
                attribute_names.append(str(feature_names[att[0]]))
            else:
                attribute_names.append(str(group_names[att]))
        report = make_privacy_report(
            result, attribute_names, index=index, **self._report_extra(omega)
        )
        guarantee = self._guarantee(omega, delta)

        rng = noise_rng(self.random_state)
        noise = rng.normal(0.0, self.sigma, size=w.shape[0])
        released = w + noise
        self.coef_ = released[:d]
        self.intercept_ = float(released[d]) if self.fit_intercept else 0.0
        self.privacy_report_ = report
        self.attribute_fil_ = pd.Series(
            result.total_attribute_fil, index=attribute_names, name="fil"
        )
        self.dataset_fil_ = result.dataset_fil
        if classes is not None:
            self.classes_ = classes
        self.guarantee_ = guarantee
        # Constant weights give the unweighted minimiser (the penalty scales
        # with their sum); only non-uniform ones change the recipe.
        self._weighted = bool(np.ptp(omega) > 0)
        return self

    def _solve(self, X, y, omega, groups):
        """The minimiser, the weights it was fitted with and its FIL."""
        w, self.n_iter_ = self._minimise(X, y, omega)
        return w, omega, self._fil(X, y, w, omega, groups)

    def _minimise(self, X, y, omega, w0=None):
        sensitivity, _ = self._dp_bound(omega)
        gtol = None
        if sensitivity is not None:
            # strong convexity sum(omega) lam turns the gradient into a distance
            gtol = _CERTIFIED_FRACTION * sensitivity * float(omega.sum()) * self.lam
        return fit_glm(
            X,
            y,
            omega,
            self._loss,
            self.lam,
            self.fit_intercept,
            self.penalize_intercept,
            self._tol(),
            self._max_iter(),
            w0=w0,
            gtol=gtol,
        )

    def _fil(self, X, y, w, omega, groups):
        d = X.shape[1]
        return fisher_information_loss(
            X,
            y,
            w[:d],
            float(w[d]) if self.fit_intercept else None,
            loss=self._loss,
            lam=self.lam,
            sigma=self.sigma,
            sample_weight=omega,
            penalize_intercept=self.penalize_intercept,
            private_label=self.private_label,
            onehot_groups=list(groups.values()) or None,
        )

    def _report_extra(self, omega):
        """Further columns of the privacy report."""
        return {}

    def _tol(self):
        return None

    def _max_iter(self):
        return 1

    def _preprocess(self, X, groups):
        """The rows as the model is fitted on them."""
        return X

    def _guarantee(self, omega, delta):
        """The DP guarantee of the release, or why there is none."""
        sensitivity, reason = self._dp_bound(omega)
        if sensitivity is None:
            return _no_guarantee(reason)
        # The released centre is certified within _CERTIFIED_FRACTION *
        # sensitivity of the exact minimiser, on either neighbouring data set.
        sensitivity *= 1.0 + 2.0 * _CERTIFIED_FRACTION
        weights_public = bool(self.public_sample_weight)
        return Guarantee(
            epsilon=gaussian_epsilon(
                sigma=self.sigma, sensitivity=sensitivity, delta=delta
            ),
            delta=delta,
            neighboring_relation="replace_one",
            public=("n_samples", "sample_weight") if weights_public else ("n_samples",),
            mechanism=_MECHANISM,
            accountant="analytic Gaussian mechanism (dp-accounting)",
            sensitivity=float(sensitivity),
            noise_std=float(self.sigma),
            weights_public=weights_public,
        )

    @property
    def rdp_epsilon_(self):
        """ε of the (2, ε)-Rényi-DP guarantee, or None (with a warning)."""
        eps = self._guaranteed("epsilon")  # warns when there is no guarantee
        if eps is None:
            return None
        g = self.guarantee_
        return gaussian_rdp(2, sigma=g.noise_std, sensitivity=g.sensitivity)

    def mse_bound_rdp(self, diameter):
        """Guo et al. Theorem 1 MSE bound from the (2, ε)-RDP guarantee.

        Parameters
        ----------
        diameter : float or array-like of shape (n_private,)
            Diameter of the data domain in each private coordinate.

        Returns
        -------
        bound : float or None
            Lower bound on the per-coordinate MSE of any unbiased
            reconstruction of any training example; None (with a
            :class:`~sklearn_fil.exceptions.PrivacyLeakWarning`) when no RDP
            guarantee holds.
        """
        eps = self.rdp_epsilon_
        return None if eps is None else mse_bound_rdp(eps, diameter)

    def release(self):
        """A copy holding only what may be published.

        The copy has the noised ``coef_`` and ``intercept_``, ``classes_``,
        ``n_features_in_``, ``feature_names_in_``, the constructor parameters
        of the fit (not any set later with ``set_params``) except
        ``random_state`` (which would reveal the noise) and ``guarantee_``.
        It has no privacy report, no un-noised minimiser and no training
        data.

        Returns
        -------
        released : estimator
            The publishable copy.
        """
        # _weighted: metadata about the training recipe, not data (attacks need it)
        return released_copy(self, _PUBLIC, metadata=("_weighted",))

    def _decision(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return X @ self.coef_ + self.intercept_


class OutputPerturbedLinearRegression(RegressorMixin, _BaseOutputPerturbed):
    """Ridge regression released with Gaussian output noise, with a FIL report.

    Fits ``w* = argmin_w sum_i omega_i (w^T x_i - y_i)^2 / 2 + (n lam / 2)
    ||w||^2`` exactly (``n`` the sum of the sample weights), releases ``w' =
    w* + N(0, sigma^2 I)`` and reports the Fisher information loss of the
    release about every training example and attribute (Hannun et al., 2021).

    The privacy report is itself sensitive: it is computed from each
    example's data and must not be published; publish :meth:`release` only.
    A fixed ``random_state`` makes the noise reproducible and therefore not
    private; the noise sampler is not hardened against floating-point
    attacks (this is a measurement and research library).

    Parameters
    ----------
    sigma : float, default=1.0
        Standard deviation of the Gaussian noise added to every weight
        (coefficients and intercept).
    lam : float, default=0.0
        L2 strength; the penalty is ``(n lam / 2) ||w||^2``. ``lam=0`` needs a
        non-singular ``X^T X``.
    fit_intercept : bool, default=True
        Whether to fit an intercept: a constant, non-private feature. The data
        are not centred (centring would couple every example to the mean).
    penalize_intercept : bool, default=False
        Whether the penalty includes the intercept.
    private_label : bool, default=True
        Whether the label is a private coordinate of each example.
    onehot_groups : dict, default=None
        ``{name: [columns]}`` of constrained one-hot attributes (columns by
        name or index, all levels present, exactly one 1 per row); each is one
        attribute of the report, measured on the sum-to-one tangent space.
    random_state : int, RandomState instance or None, default=None
        Seed of the output noise. ``None`` draws fresh OS entropy; a fixed
        seed makes the noise reproducible, so the release is not private.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Released (noised) coefficients.
    intercept_ : float
        Released (noised) intercept; 0.0 when ``fit_intercept=False``.
    privacy_report_ : pandas.DataFrame
        One row per training example (index: the training index when X was a
        DataFrame, else ``0..n-1``): ``fil`` (spectral FIL), ``dfil``
        (diagonal FIL), ``mse_bound`` (``1/dfil^2``), ``fil[<feature>]`` per
        private attribute and ``fil[<target>]`` when the label is private.
        Sensitive: do not publish.
    attribute_fil_ : pandas.Series
        FIL of each attribute over all training examples.
    dataset_fil_ : float
        FIL of the whole training set.
    n_iter_ : int
        Solver iterations (1: the exact solve).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when X has string column names.

    See Also
    --------
    OutputPerturbedLogisticRegression : The logistic counterpart, with a DP
        guarantee when rows are clipped.
    sklearn_fil.fisher.fisher_information_loss : The FIL engine.

    References
    ----------
    Hannun, Guo & van der Maaten (2021), *Measuring data leakage in
    machine-learning models with Fisher information*, UAI.

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn_fil import OutputPerturbedLinearRegression
    >>> X, y = make_regression(n_samples=50, n_features=3, random_state=0)
    >>> reg = OutputPerturbedLinearRegression(sigma=0.1, random_state=0).fit(X, y)
    >>> reg.privacy_report_.columns.tolist()
    ['fil', 'dfil', 'mse_bound', 'fil[x0]', 'fil[x1]', 'fil[x2]', 'fil[y]']
    >>> bool((reg.privacy_report_["fil"] >= reg.privacy_report_["dfil"]).all())
    True
    """

    _loss = "squared"

    def __init__(
        self,
        *,
        sigma=1.0,
        lam=0.0,
        fit_intercept=True,
        penalize_intercept=False,
        private_label=True,
        onehot_groups=None,
        random_state=None,
    ):
        self.sigma = sigma
        self.lam = lam
        self.fit_intercept = fit_intercept
        self.penalize_intercept = penalize_intercept
        self.private_label = private_label
        self.onehot_groups = onehot_groups
        self.random_state = random_state

    def predict(self, X):
        """Predict with the released weights.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            ``X @ coef_ + intercept_``.
        """
        return self._decision(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # the default noise (sigma=1) can push R^2 below sklearn's threshold
        tags.regressor_tags.poor_score = True
        return tags


class OutputPerturbedLogisticRegression(ClassifierMixin, _BaseOutputPerturbed):
    """Binary logistic regression released with Gaussian output noise.

    Fits ``w* = argmin_w sum_i omega_i l(w^T x_i, y_i) + (n lam / 2)
    ||w||^2`` with the logistic loss by Newton's method, releases ``w' = w* +
    N(0, sigma^2 I)`` and reports the Fisher information loss of the release
    about every training example and attribute (Hannun et al., 2021).

    With ``data_norm`` set, every row is clipped to that L2 norm before
    fitting; with ``lam > 0`` and the intercept penalised (or absent) the
    release is then (ε, δ)-DP for the Gaussian mechanism, reported in
    ``guarantee_`` (read by ``epsilon_`` and ``delta_``), and (2, ε)-RDP
    with ``ε = Δ^2 / sigma^2`` (``4 / (n lam sigma)^2`` at ``L = 1``, Guo et
    al., 2022). The guarantee is for **replace-one** neighbours (data sets of
    the same, public size that differ in one example, features and label).
    Its L2 sensitivity is ``Δ = (1 + 2e-6) 2 L max(omega) / (sum(omega)
    lam)``, ``L = sqrt(data_norm^2 + 1)`` with an intercept and
    ``data_norm`` without (Chaudhuri et al., 2011): Newton's method runs
    until the final gradient certifies, by strong convexity, that the
    released centre is within ``1e-6 Δ`` of the exact minimiser, whatever
    ``tol``. Non-uniform ``sample_weight`` enters Δ, so it gives an ε only
    with ``public_sample_weight=True``. In every other case no ε is reported
    and asking for one warns with
    :class:`~sklearn_fil.exceptions.PrivacyLeakWarning`.

    One-hot groups and clipping work together: their 0/1 columns are never
    rescaled (a row of ``k`` groups has ``k`` ones), and the other columns
    are clipped to the remaining budget ``sqrt(data_norm^2 - k)``.

    The privacy report is itself sensitive: it is computed from each
    example's data and must not be published; publish :meth:`release` only.
    A fixed ``random_state`` makes the noise reproducible and therefore not
    private; the noise sampler is not hardened against floating-point
    attacks (this is a measurement and research library).

    Parameters
    ----------
    sigma : float, default=1.0
        Standard deviation of the Gaussian noise added to every weight.
    lam : float, default=1e-2
        L2 strength; the penalty is ``(n lam / 2) ||w||^2``.
    fit_intercept : bool, default=True
        Whether to fit an intercept (a constant, non-private feature).
    penalize_intercept : bool, default=False
        Whether the penalty includes the intercept. The DP guarantee with an
        intercept needs ``True``.
    private_label : bool, default=True
        Whether the label is a private coordinate of each example.
    data_norm : float, default=None
        Clip every row to this L2 norm before fitting; enables the DP
        guarantee. The report then concerns the clipped rows. Clipping more
        than half of the rows warns with
        :class:`~sklearn_fil.exceptions.ClippingWarning`.
    delta : float, default=None
        δ of the reported guarantee; None means
        :func:`~sklearn_fil.accounting.default_delta`, ``min(1e-5, 1 / (10
        n))``. A δ of ``1 / n`` or more warns with
        :class:`~sklearn_fil.exceptions.PrivacyLeakWarning`.
    public_sample_weight : bool, default=False
        Whether ``sample_weight`` is public: a constant fixed to each row's
        position, chosen without looking at the data. Only then do
        non-uniform weights give a DP guarantee.
    tol : float, default=1e-10
        Newton stops once its full step is below ``tol * (1 + ||w||)``; by
        quadratic convergence the minimiser then has a relative error of
        order ``tol^2``, far below the ``1e-6`` relative accuracy promised for
        the FIL. With a DP guarantee it also runs until the gradient
        certifies the distance to the exact minimiser (see above).
    max_iter : int, default=100
        Maximum Newton iterations; not converging is an error.
    onehot_groups : dict, default=None
        ``{name: [columns]}`` of constrained one-hot attributes (see
        :class:`OutputPerturbedLinearRegression`).
    random_state : int, RandomState instance or None, default=None
        Seed of the output noise. ``None`` draws fresh OS entropy; a fixed
        seed makes the noise reproducible, so the release is not private.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Released (noised) coefficients.
    intercept_ : float
        Released (noised) intercept; 0.0 when ``fit_intercept=False``.
    classes_ : ndarray of shape (2,)
        Class labels; ``classes_[1]`` is the positive class.
    privacy_report_ : pandas.DataFrame
        One row per training example: ``fil``, ``dfil``, ``mse_bound``,
        ``fil[<feature>]`` and ``fil[<target>]`` (see
        :class:`OutputPerturbedLinearRegression`). Sensitive: do not publish.
    attribute_fil_ : pandas.Series
        FIL of each attribute over all training examples.
    dataset_fil_ : float
        FIL of the whole training set.
    n_iter_ : int
        Newton iterations.
    n_clipped_ : int
        Number of training rows that ``data_norm`` rescaled (0 without it).
    guarantee_ : Guarantee
        The (ε, δ)-DP guarantee: relation, what is public, mechanism,
        sensitivity and noise, or the reason there is none.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when X has string column names.

    See Also
    --------
    OutputPerturbedLinearRegression : The squared-loss counterpart.
    sklearn_fil.audit.EpsilonAudit : Checks ε empirically with many releases.
    sklearn_fil.fisher.fisher_information_loss : The FIL engine.

    References
    ----------
    Chaudhuri, Monteleoni & Sarwate (2011), *Differentially private empirical
    risk minimization*, JMLR.
    Hannun, Guo & van der Maaten (2021), *Measuring data leakage in
    machine-learning models with Fisher information*, UAI.
    Guo, Karrer, Chaudhuri & van der Maaten (2022), *Bounding training data
    reconstruction in private (deep) learning*, ICML.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_fil import OutputPerturbedLogisticRegression
    >>> X, y = make_classification(n_samples=100, n_features=4, random_state=0)
    >>> X = X / np.linalg.norm(X, axis=1).max()
    >>> clf = OutputPerturbedLogisticRegression(
    ...     sigma=0.5, lam=0.1, fit_intercept=False, data_norm=1.0, random_state=0
    ... ).fit(X, y)
    >>> round(clf.epsilon_, 2), clf.delta_
    (1.55, 1e-05)
    >>> clf.guarantee_.neighboring_relation
    'replace_one'
    >>> clf.privacy_report_.shape
    (100, 8)
    """

    _loss = "logistic"

    _parameter_constraints: ClassVar[dict] = {
        **_BaseOutputPerturbed._parameter_constraints,
        "data_norm": [None, Interval(Real, 0, None, closed="neither")],
        "delta": [None, Interval(Real, 0, 1, closed="neither")],
        "public_sample_weight": ["boolean"],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        *,
        sigma=1.0,
        lam=1e-2,
        fit_intercept=True,
        penalize_intercept=False,
        private_label=True,
        data_norm=None,
        delta=None,
        public_sample_weight=False,
        tol=1e-10,
        max_iter=100,
        onehot_groups=None,
        random_state=None,
    ):
        self.sigma = sigma
        self.lam = lam
        self.fit_intercept = fit_intercept
        self.penalize_intercept = penalize_intercept
        self.private_label = private_label
        self.data_norm = data_norm
        self.delta = delta
        self.public_sample_weight = public_sample_weight
        self.tol = tol
        self.max_iter = max_iter
        self.onehot_groups = onehot_groups
        self.random_state = random_state

    def _encode_y(self, y):
        check_classification_targets(y)
        y_type = type_of_target(y, input_name="y")
        classes = np.unique(y)
        if y_type != "binary" or classes.size != 2:
            raise ValueError(
                f"Only binary classification is supported by {type(self).__name__}: "
                f"y must have exactly 2 classes; got {classes.size} class(es) "
                f"(target type {y_type!r})."
            )
        return (y == classes[1]).astype(np.float64), classes

    def _tol(self):
        return self.tol

    def _max_iter(self):
        return self.max_iter

    def _preprocess(self, X, groups):
        self.n_clipped_ = 0
        if self.data_norm is None:
            return X
        exempt = [j for cols in groups.values() for j in cols]
        if len(groups) >= self.data_norm**2:
            raise ValueError(
                f"data_norm={self.data_norm:g} leaves no norm for the numeric "
                f"columns: each of the {len(groups)} one-hot group(s) puts a 1 in "
                f"every row, so data_norm must exceed sqrt({len(groups)})."
            )
        clipped, self.n_clipped_ = clip_rows(X, self.data_norm, exempt=exempt)
        n = X.shape[0]
        if self.n_clipped_ > n / 2:
            free = np.setdiff1d(np.arange(X.shape[1]), exempt)
            median = float(np.median(row_norms(X[:, free])))
            warnings.warn(
                f"data_norm={self.data_norm:g} clipped {self.n_clipped_} of {n} "
                f"rows (median norm {median:.3g}"
                + (" of the numeric columns" if exempt else "")
                + "): the model learns from rescaled data and may be little "
                "better than a constant. Scale the features so that most rows "
                "fit, or raise data_norm (with sigma, to keep epsilon).",
                ClippingWarning,
                stacklevel=7,  # the caller of fit
            )
        return clipped

    def _delta(self, n_samples):
        return check_delta(self.delta, n_samples) if self.data_norm else None

    def _dp_bound(self, omega):
        if self.data_norm is None:
            return None, _NO_DATA_NORM_MSG
        if self.fit_intercept and not self.penalize_intercept:
            return None, _NOT_STRONGLY_CONVEX_MSG
        if self.lam == 0:
            return None, _NO_STRONG_CONVEXITY_MSG
        if np.ptp(omega) > 0 and not self.public_sample_weight:
            return None, _PRIVATE_WEIGHTS_MSG
        row_norm = float(np.hypot(self.data_norm, float(self.fit_intercept)))
        # Strong convexity sum(omega) lam, and replacing one example moves the
        # gradient by at most 2 max(omega) L (omega is scaled to max 1).
        n = omega.size
        sensitivity = output_perturbation_sensitivity(
            n_samples=n, lam=self.lam, row_norm=row_norm
        ) * (n / float(omega.sum()))
        return sensitivity, None

    def decision_function(self, X):
        """Margin of the released model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        scores : ndarray of shape (n_samples,)
            ``X @ coef_ + intercept_``; positive favours ``classes_[1]``.
        """
        return self._decision(X)

    def predict_proba(self, X):
        """Class probabilities of the released model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        proba : ndarray of shape (n_samples, 2)
            Probabilities of ``classes_[0]`` and ``classes_[1]``.
        """
        s = expit(self.decision_function(X))
        return np.column_stack([1.0 - s, s])

    def predict(self, X):
        """Predict class labels with the released model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predicted labels from ``classes_``.
        """
        positive = self.decision_function(X) > 0
        return self.classes_[positive.astype(int)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        # the default noise (sigma=1) can push accuracy below sklearn's threshold
        tags.classifier_tags.poor_score = True
        return tags
