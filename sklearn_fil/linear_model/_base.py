"""The base of every released GLM: fit, noise, report; and the loss mixins.

:class:`BaseReleasedGLM` validates the data, calls the one extension point
``_solve`` (the minimiser, the example weights it was fitted with and their
FIL) and then releases ``w* + N(0, sigma^2 I)`` with its privacy report. Its
two siblings differ only there: output perturbation fits once, IRFIL reweights
until the FIL is level. The loss is a mixin, :class:`SquaredLossMixin` or
:class:`LogisticLossMixin`, which owns the targets and the predictions.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Real
from typing import ClassVar

import numpy as np
import pandas as pd
from scipy.special import expit
from sklearn import config_context
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from sklearn_fil._glm import fit_glm
from sklearn_fil._report import (
    attribute_fil_sd,
    attribute_sizes,
    attribute_variances,
    make_privacy_report,
    relative_mse_bound,
    target_label,
)
from sklearn_fil.accounting import Guarantee, gaussian_rdp, mse_bound_rdp
from sklearn_fil.fisher import fisher_information_loss
from sklearn_fil.report_io import privacy_report_metadata
from sklearn_fil.utils._fitted import fit_or_clear
from sklearn_fil.utils._guarantee import GuaranteeMixin
from sklearn_fil.utils._onehot import (
    check_onehot_groups,
    detect_onehot_groups,
    onehot_columns,
)
from sklearn_fil.utils._random import noise_rng
from sklearn_fil.utils._release import (
    FITTED_PARAMS,
    record_fitted_params,
    released_copy,
)
from sklearn_fil.utils._sklearn_compat import (
    Interval,
    StrOptions,
    _check_sample_weight,
    _fit_context,
)
from sklearn_fil.utils._sparse import as_csr, issparse

# Private fitted state, cleared with the public attributes at each fit.
# ``_weighted``: whether the fit used non-uniform example weights (part of the
# training recipe that attacks re-run, so release() keeps it).
_PRIVATE_STATE = ("_weighted", "_onehot_groups", FITTED_PARAMS)
_PUBLIC = (
    "coef_",
    "intercept_",
    "sigma_",
    "classes_",
    "n_features_in_",
    "feature_names_in_",
)
MECHANISM = "Gaussian output perturbation of the minimiser"
# The DP path certifies that the released centre is within this fraction of
# the sensitivity of the exact minimiser (strong convexity turns the final
# gradient into a distance); the sensitivity grows by twice as much, once for
# each of two neighbouring data sets. Far above the rounding of the gradient
# (about n * 1e-16 of the sensitivity), far below anything that moves epsilon.
CERTIFIED_FRACTION = 1e-6
# Newton's tolerance where it is not a parameter (see
# OutputPerturbedLogisticRegression's ``tol``).
NEWTON_TOL = 1e-10


class BaseReleasedGLM(GuaranteeMixin, BaseEstimator):
    """Fit a weighted GLM, release ``w* + N(0, sigma^2 I)`` and report its FIL.

    Subclasses implement ``_solve``, where the siblings differ. An estimator
    with a DP guarantee also overrides the hooks ``_delta``, ``_preprocess``,
    ``_sensitivity``, ``_guarantee`` and ``_noise_std`` (a calibrated sigma),
    whose defaults give none, for the reason in ``_no_guarantee_reason``;
    ``_per_instance_columns`` adds each example's own leakage to the report.
    """

    _loss: ClassVar[str]
    _no_guarantee_reason: ClassVar[str]

    _parameter_constraints: ClassVar[dict] = {
        "sigma": [Interval(Real, 0, None, closed="neither")],
        "lam": [Interval(Real, 0, None, closed="left")],
        "fit_intercept": ["boolean"],
        "penalize_intercept": ["boolean"],
        "private_label": ["boolean"],
        "onehot_groups": [None, dict, StrOptions({"auto"})],
        "random_state": ["random_state"],
    }

    # -- the extension point ----------------------------------------------

    def _solve(self, X, y, omega, groups):
        """``(w, omega, result)``: the minimiser, its weights and its FIL.

        ``omega`` are the example weights scaled to a largest weight of 1,
        ``groups`` the one-hot groups by name; ``result`` is the engine's
        :class:`~sklearn_fil.fisher.FisherInformationLoss` at ``w``.
        """
        raise NotImplementedError

    # -- the guarantee (none by default) ------------------------------------

    def _delta(self, n_samples):
        """δ of the guarantee (checked before any work), or None."""
        return None

    def _preprocess(self, X, groups):
        """The rows as the model is fitted on them."""
        return X

    def _sensitivity(self, omega):
        """L2 sensitivity of the exact minimiser under the guarantee, or None.

        With a sensitivity, Newton runs until it certifies the released
        centre within ``CERTIFIED_FRACTION`` of it.
        """
        return None

    def _guarantee(self, omega, delta):
        """The DP guarantee of the release, or why there is none."""
        return Guarantee.none(self._no_guarantee_reason, mechanism=MECHANISM)

    def _noise_std(self, omega, delta):
        """Noise std of the release (before the fit); ``sigma`` by default."""
        return float(self.sigma)

    def _per_instance_columns(self, X, y, w, omega, delta, hessian):
        """Report columns of each example's own leakage (none by default).

        Called with the rows as fitted, the encoded targets, the minimiser,
        the scaled example weights, the guarantee's δ (or None) and the
        penalised Hessian at the minimiser.
        """
        return {}

    # -- fitting ------------------------------------------------------------

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
            accept_sparse="csr",
            dtype=np.float64,
            ensure_min_samples=2,
            y_numeric=self._loss == "squared",
        )
        if issparse(X):
            X = as_csr(X)  # never densified: see sklearn_fil.utils._sparse
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
        # the noise of the release, before the fit (the report scales by it)
        self.sigma_ = self._noise_std(omega, delta)
        if isinstance(self.onehot_groups, str):  # "auto"
            self._onehot_groups = detect_onehot_groups(
                X, getattr(self, "feature_names_in_", None)
            )
            # what attacks and audits read as the fit's groups
            getattr(self, FITTED_PARAMS)["onehot_groups"] = self._onehot_groups
        else:
            self._onehot_groups = self.onehot_groups
        groups = self._onehot_indices()
        # one-hot groups are checked before the (possibly long) fit
        check_onehot_groups(list(groups.values()), X, names=list(groups))
        X = self._preprocess(X, groups)
        _check_gram_finite(X, hint_data_norm=hasattr(self, "data_norm"))
        fit_weight = omega  # the caller's weights (IRFIL's may change)
        w, omega, result = self._solve(X, y, omega, groups)

        attribute_names = self._attribute_names(result, groups, target_name)
        # in units of each attribute's std (weighted, of the rows as fitted)
        variance = attribute_variances(X, y, result.attributes, fit_weight)
        sizes = attribute_sizes(result.attributes)
        self.privacy_report_ = make_privacy_report(
            result,
            attribute_names,
            index,
            rel_mse_bound=relative_mse_bound(result.attribute_fil, variance, sizes),
            **self._per_instance_columns(X, y, w, omega, delta, result.hessian),
        )
        self.attribute_fil_ = pd.Series(
            result.total_attribute_fil, index=attribute_names, name="fil"
        )
        self.attribute_fil_sd_ = pd.Series(
            attribute_fil_sd(result.total_attribute_fil, variance, sizes),
            index=attribute_names,
            name="fil_sd",
        )
        self.dataset_fil_ = result.dataset_fil
        self.guarantee_ = self._guarantee(omega, delta)
        released = w + noise_rng(self.random_state).normal(0.0, self.sigma_, w.shape)
        d = X.shape[1]
        self.coef_ = released[:d]
        self.intercept_ = float(released[d]) if self.fit_intercept else 0.0
        if classes is not None:
            self.classes_ = classes
        # Constant weights give the unweighted minimiser (the penalty scales
        # with their sum); only non-uniform ones change the recipe.
        self._weighted = bool(np.ptp(omega) > 0)
        # the report's context, which write_privacy_report keeps beside its CSV
        self.privacy_report_.attrs = privacy_report_metadata(self)
        return self

    def _onehot_indices(self):
        """Column indices of each constrained one-hot group, by group name."""
        return onehot_columns(
            self._onehot_groups,
            getattr(self, "feature_names_in_", None),
            self.n_features_in_,
        )

    def _attribute_names(self, result, groups, target_name):
        """Report name of each attribute of ``result``, in its order."""
        feature_names = (
            list(self.feature_names_in_)
            if hasattr(self, "feature_names_in_")
            else [f"x{j}" for j in range(self.n_features_in_)]
        )
        group_names = {tuple(cols): name for name, cols in groups.items()}
        target_name = target_label(target_name, feature_names)
        names = []
        for att in result.attributes:
            if att == "label":
                names.append(str(target_name))
            elif len(att) == 1:
                names.append(str(feature_names[att[0]]))
            else:
                names.append(str(group_names[att]))
        return names

    def _newton_options(self):
        """Newton's ``(tol, max_iter)``; the squared loss solves exactly."""
        return None, 1

    def _minimise(self, X, y, omega, w0=None):
        """The weighted minimiser, certified when there is a guarantee.

        Returns ``(w, n_iter, loss_hessian)``, the last as
        :func:`~sklearn_fil._glm.fit_glm` gives it (None when the fit did not
        compute it at ``w``).
        """
        sensitivity = self._sensitivity(omega)
        gtol = None
        if sensitivity is not None:
            # strong convexity sum(omega) lam turns the gradient into a distance
            gtol = CERTIFIED_FRACTION * sensitivity * float(omega.sum()) * self.lam
        tol, max_iter = self._newton_options()
        return fit_glm(
            X,
            y,
            omega,
            self._loss,
            self.lam,
            self.fit_intercept,
            self.penalize_intercept,
            tol,
            max_iter,
            w0=w0,
            gtol=gtol,
            return_loss_hessian=True,
        )

    def _fil(self, X, y, w, omega, groups, loss_hessian=None):
        """The engine's FIL of the release centred at ``w``.

        ``X``, ``y`` and ``omega`` were validated by the fit, so the engine
        does not check their values again.
        """
        d = X.shape[1]
        with config_context(assume_finite=True):
            return fisher_information_loss(
                X,
                y,
                w[:d],
                float(w[d]) if self.fit_intercept else None,
                loss=self._loss,
                lam=self.lam,
                sigma=self.sigma_,
                sample_weight=omega,
                penalize_intercept=self.penalize_intercept,
                private_label=self.private_label,
                onehot_groups=list(groups.values()) or None,
                loss_hessian=loss_hessian,
            )

    # -- what the fitted model offers -----------------------------------------

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

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # scipy sparse X (any format, taken as CSR) is fitted without a dense copy
        tags.input_tags.sparse = True
        return tags

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
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        return X @ self.coef_ + self.intercept_


def _check_gram_finite(X, hint_data_norm):
    """Refuse entries whose squares overflow the Hessian's sums."""
    # max and min, not abs(X).max(): no n x d temporary (dense or sparse)
    largest = max(abs(float(X.max())), abs(float(X.min())))
    if not np.isfinite(largest * largest * X.shape[0] * X.shape[1]):
        raise ValueError(
            f"X has entries up to {largest:.3g} in magnitude: the sums of their "
            "squares in the Hessian overflow float64. Rescale the features "
            "(e.g. with StandardScaler)"
            + (" or set data_norm." if hint_data_norm else ".")
        )


class SquaredLossMixin(RegressorMixin):
    """Ridge regression: real targets, predictions ``X @ coef_ + intercept_``."""

    _loss = "squared"

    def _encode_y(self, y):
        """Targets as the loss needs them, and ``classes_`` (None: regression)."""
        return y, None

    def predict(self, X):
        """Predict with the released weights.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
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


class LogisticLossMixin(ClassifierMixin):
    """Binary logistic regression: two classes, margins and probabilities."""

    _loss = "logistic"

    def _encode_y(self, y):
        """0/1 targets (1 for ``classes_[1]``) and ``classes_``."""
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

    def _newton_options(self):
        return NEWTON_TOL, self.max_iter

    def decision_function(self, X):
        """Margin of the released model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
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
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
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
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
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
