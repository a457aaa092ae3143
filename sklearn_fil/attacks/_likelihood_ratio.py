"""The optimal (Neyman-Pearson) membership test against an output-perturbed GLM."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Real
from typing import ClassVar

import numpy as np
import pandas as pd
from scipy.stats import norm
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from sklearn_fil._glm import fit_glm
from sklearn_fil.accounting import check_delta, per_instance_gaussian_epsilon
from sklearn_fil.attacks._base import adversary_weights, target_glm, training_rows
from sklearn_fil.attacks._contract import deprecation, keyword_fit_params, require
from sklearn_fil.fisher import fisher_information_loss
from sklearn_fil.linear_model import (
    OutputPerturbedLinearRegression,
    OutputPerturbedLogisticRegression,
)
from sklearn_fil.utils._fitted import fit_or_clear
from sklearn_fil.utils._onehot import onehot_columns
from sklearn_fil.utils._pipeline import split_pipeline
from sklearn_fil.utils._release import fitted_params
from sklearn_fil.utils._sklearn_compat import Interval, _fit_context

_REPORT_COLUMNS = ["loo_sensitivity", "epsilon", "fil", "tpr"]
# Private fitted state (not ending in "_"), cleared at each fit.
_PRIVATE = ("_directions", "_p")


def _tpr_at_fpr(sensitivity, sigma, fpr):
    """TPR of the Neyman-Pearson test: ``Phi(sensitivity / sigma + Phi^-1(fpr))``."""
    return norm.cdf(np.asarray(sensitivity) / sigma + norm.ppf(fpr))


def _check_target(model, attack):
    """Refuse every model but the output-perturbed GLMs, with the reason."""
    if not isinstance(
        model, OutputPerturbedLinearRegression | OutputPerturbedLogisticRegression
    ):
        raise TypeError(
            f"{attack} attacks OutputPerturbedLinearRegression and "
            "OutputPerturbedLogisticRegression models (fitted or released); got "
            f"{type(model).__name__}. IRFIL models are refused: their example "
            "weights depend on all the data, so the model without an example "
            "is fitted with other weights."
        )


def _fil(model, params, recipe, X, y, w, omega, sigma):
    """Per-example FIL of the release about the rows ``X`` it was fitted on."""
    d = X.shape[1]
    groups = onehot_columns(
        params["onehot_groups"], getattr(model, "feature_names_in_", None), d
    )
    return fisher_information_loss(
        X,
        y,
        w[:d],
        float(w[d]) if recipe.fit_intercept else None,
        loss=recipe.loss,
        lam=recipe.lam,
        sigma=sigma,
        sample_weight=omega,
        penalize_intercept=recipe.penalize_intercept,
        private_label=params["private_label"],
        onehot_groups=list(groups.values()) or None,
    ).fil


class LikelihoodRatioMembershipInference(BaseEstimator):
    """Optimal likelihood-ratio membership attack on an output-perturbed GLM.

    The informed adversary knows the whole training set, the training recipe
    and the released weights ``w' = w*(D) + N(0, sigma^2 I)``, and tests for
    each example ``i`` whether the release came from the training set ``D``
    or from ``D_-i``, the same set without the example (its loss term
    removed, the penalty ``(n lam / 2) ||w||^2`` and ``n`` kept, as ``n`` is
    public). :meth:`fit` refits ``w* = w*(D)`` and every leave-one-out
    minimiser ``w_-i`` (see
    :class:`~sklearn_fil.OutputPerturbedLinearRegression`'s
    ``loo_sensitivity``); :meth:`decision_function` returns the statistic of
    the Neyman-Pearson test,

    ``z_i = (w' - w_-i)^T (w* - w_-i) / (sigma Delta_i)``,

    standard normal when the release came from ``D_-i`` and normal with mean
    ``Delta_i / sigma`` and unit variance when it came from ``D``, with
    ``Delta_i = ||w* - w_-i||``. The likelihood ratio of the two hypotheses
    increases with ``z_i``, so thresholding it at ``Phi^-1(1 - fpr)`` is the
    most powerful test at false-positive rate ``fpr``, and its true-positive
    rate is exactly

    ``tpr_i = Phi(Delta_i / sigma - Phi^-1(1 - fpr))``.

    No membership attack on example ``i`` does better at that false-positive
    rate; ``report_`` puts it beside the example's per-instance ε and FIL.

    Read more in :ref:`the user guide <per_instance_epsilon>`.

    Parameters
    ----------
    model : OutputPerturbedLinearRegression or OutputPerturbedLogisticRegression
        The fitted or released target model. Only its released weights, its
        noise ``sigma_`` and its constructor parameters (the training recipe)
        are used.
    fpr : float, default=0.01
        False-positive rate ``alpha`` of the test, in (0, 1): :meth:`predict`
        thresholds at it and ``tpr_`` is the true-positive rate there.
    delta : float, default=None
        δ of the per-instance ε in ``report_``; None means
        :func:`~sklearn_fil.accounting.default_delta` of the training-set size.

    Attributes
    ----------
    model_ : estimator
        The target model (a Pipeline is attacked through its final step, on
        rows transformed by its prefix, which the adversary knows).
    sigma_ : float
        Standard deviation of the release's noise.
    baseline_ : float
        The true-positive rate of guessing at random at false-positive rate
        ``fpr`` (equal to ``fpr``), to read ``report_["tpr"]`` against.
    minimiser_ : ndarray of shape (n_params,)
        ``w*``, the adversary's refit on the training set (intercept last).
    leave_one_out_ : ndarray of shape (n_samples, n_params)
        ``w_-i`` for every example; NaN rows where removing the example
        leaves no unique minimiser (``Delta_i = inf``).
    loo_sensitivity_ : ndarray of shape (n_samples,)
        ``Delta_i = ||w* - w_-i||``.
    tpr_ : ndarray of shape (n_samples,)
        True-positive rate of the optimal test on each example at ``fpr``.
    delta_ : float
        δ of the ``epsilon`` column.
    report_ : pandas.DataFrame
        One row per training example, indexed like ``X``: ``loo_sensitivity``,
        ``epsilon`` (the per-instance ε of telling ``D`` from ``D_-i``, at
        ``delta_``), ``fil`` (the spectral Fisher information loss of the
        release about the example, as in the model's privacy report) and
        ``tpr`` (``tpr_``). Computed from every example: sensitive.
    n_features_in_ : int
        Number of features.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Feature names, when X was a DataFrame with string column names.

    See Also
    --------
    LossThresholdMembershipInference : A black-box membership attack that
        needs only the model's losses.

    Notes
    -----
    The test is optimal for the pair ``(D, D_-i)`` it is built for: the
    adversary knows every other example exactly. Its true-positive rate at
    any false-positive rate is what the per-instance ε at δ bounds:
    ``tpr <= e^epsilon fpr + delta``.

    An IRFIL model is refused: its example weights depend on all the data,
    so ``D_-i`` would be fitted with other weights, which the test does not
    model.

    References
    ----------
    Neyman, J. and Pearson, E. S. "On the problem of the most efficient tests
    of statistical hypotheses." Phil. Trans. R. Soc. A 231, 1933.

    Carlini, N., Chien, S., Nasr, M., Song, S., Terzis, A. and Tramèr, F.
    "Membership inference attacks from first principles." IEEE S&P 2022.

    Wang, Y.-X. "Per-instance differential privacy." Journal of Privacy and
    Confidentiality 9(1), 2019.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_fil import OutputPerturbedLogisticRegression
    >>> from sklearn_fil.attacks import LikelihoodRatioMembershipInference
    >>> X, y = make_classification(n_samples=60, n_features=3, n_informative=2,
    ...                            n_redundant=0, random_state=0)
    >>> model = OutputPerturbedLogisticRegression(
    ...     sigma=0.05, lam=0.1, data_norm=2.0, penalize_intercept=True,
    ...     random_state=0).fit(X, y)
    >>> attack = LikelihoodRatioMembershipInference(model.release()).fit(X, y)
    >>> attack.report_.columns.tolist()
    ['loo_sensitivity', 'epsilon', 'fil', 'tpr']
    >>> bool(np.all(attack.tpr_ >= attack.fpr))
    True
    >>> z = attack.decision_function()  # the attacked release
    >>> z.shape
    (60,)
    """

    _parameter_constraints: ClassVar[dict] = {
        "model": [object],
        "fpr": [Interval(Real, 0, 1, closed="neither")],
        "delta": [None, Interval(Real, 0, 1, closed="neither")],
    }

    def __init__(self, model, *, fpr=0.01, delta=None):
        self.model = model
        self.fpr = fpr
        self.delta = delta

    @keyword_fit_params
    def fit(self, X, y=None, *, sample_weight=None):
        """Refit the training set and every leave-one-out problem.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            The training set, in training order (the adversary knows it all).
        y : array-like of shape (n_samples,)
            Training targets; classes of the model for a classifier. Required.
        sample_weight : array-like of shape (n_samples,), default=None
            The adversary's knowledge of the example weights the target was
            trained with; None means unit weights. Required when the target
            was fitted with non-uniform ``sample_weight``.

        Returns
        -------
        self : object
            The fitted attack.

        Raises
        ------
        TypeError
            When the model is not an output-perturbed linear or logistic
            regression.
        ValueError
            When y is None, X does not have the model's features, y has labels
            that are not classes of the model, or the target was trained with sample
            weights and ``sample_weight`` is None.
        """
        return fit_or_clear(self, self._fit, X, y, sample_weight, private=_PRIVATE)

    @_fit_context(prefer_skip_nested_validation=True)
    def _fit(self, X, y, sample_weight):
        require(y, "y", self)
        prefix, model = split_pipeline(self.model)
        _check_target(model, type(self).__name__)
        recipe = target_glm(
            model, type(self).__name__, informed=sample_weight is not None
        )
        index = X.index.copy() if isinstance(X, pd.DataFrame) else None
        X, y = training_rows(self, prefix, model, recipe, X, y)
        omega = adversary_weights(sample_weight, X)
        omega = omega / omega.max()  # as training scales them
        params = fitted_params(model)
        sigma = float(model.sigma_)  # the noise of the release (fitted or released)
        X = recipe.clip(X)
        y = recipe.encode(y)
        glm = (recipe.lam, recipe.fit_intercept, recipe.penalize_intercept)
        from sklearn_fil._leave_one_out import LOO_TOL, leave_one_out

        w, _ = fit_glm(X, y, omega, recipe.loss, *glm, tol=LOO_TOL, max_iter=100)
        loo = leave_one_out(X, y, w, omega, recipe.loss, *glm, return_shifts=True)
        w = loo.minimiser
        sensitivity = loo.sensitivity
        delta = check_delta(self.delta, X.shape[0])
        fil = _fil(model, params, recipe, X, y, w, omega, sigma)
        epsilon = per_instance_gaussian_epsilon(
            np.nan_to_num(sensitivity, nan=np.inf), sigma=sigma, delta=delta
        )
        tpr = _tpr_at_fpr(sensitivity, sigma, self.fpr)
        if index is None:
            index = pd.RangeIndex(X.shape[0], name="sample")
        with np.errstate(invalid="ignore", divide="ignore"):
            # unit directions w* - w_-i (0 where the example moves nothing)
            directions = (
                -loo.shifts / np.where(sensitivity > 0, sensitivity, 1.0)[:, None]
            )
        self.model_ = self.model
        self.sigma_ = sigma
        self.baseline_ = float(self.fpr)  # the TPR of guessing at random
        self.minimiser_ = w
        self.leave_one_out_ = w + loo.shifts
        self.loo_sensitivity_ = sensitivity
        self.tpr_ = tpr
        self.delta_ = delta
        self.report_ = pd.DataFrame(
            dict(zip(_REPORT_COLUMNS, (sensitivity, epsilon, fil, tpr), strict=True)),
            index=index,
        )
        self._directions = directions
        self._p = w.size
        return self

    def _released_weights(self, released):
        """Released weight vectors ``[coef, intercept]`` as rows of a matrix."""
        released = split_pipeline(released)[1]
        if hasattr(released, "coef_"):
            check_is_fitted(released, "coef_")
            W = np.append(np.ravel(released.coef_), released.intercept_)
            W = W[: self._p][None, :]
            return W, False
        W = np.asarray(released, dtype=np.float64)
        single = W.ndim == 1
        W = np.atleast_2d(W)
        if W.ndim != 2 or W.shape[1] != self._p:
            raise ValueError(
                f"released must be a fitted model or weight vectors of length "
                f"{self._p} ([coef, intercept] with an intercept); got shape "
                f"{np.shape(released)}."
            )
        return W, single

    def decision_function(self, X=None, y=None, **kwargs):
        """Neyman-Pearson statistic ``z_i`` of every example for each release.

        Parameters
        ----------
        X : estimator or array-like of shape (n_params,) or \
(n_releases, n_params), default=None
            The releases to test: a fitted or released model of the same
            recipe, or released weight vectors ``[coef, intercept]``
            (intercept last, when there is one). None tests the release of
            ``model_``, the attacked one.
        y : None
            Ignored.
        **kwargs : dict
            ``released``, the former name of ``X`` (deprecated).

        Returns
        -------
        z : ndarray of shape (n_samples,) or (n_releases, n_samples)
            ``(w' - w_-i)^T (w* - w_-i) / (sigma Delta_i)``: standard normal if
            the release came from ``D_-i``, mean ``Delta_i / sigma`` if from
            ``D``; 0 where ``Delta_i`` is 0 (nothing to tell apart).
        """
        check_is_fitted(self)
        released = split_pipeline(self._releases(X, kwargs, "decision_function"))[1]
        W, single = self._released_weights(released)
        model_like = not single and W.shape[0] == 1 and hasattr(released, "coef_")
        # (w' - w_-i)^T u_i = (w' - w*)^T u_i + Delta_i, u_i the unit direction
        z = (W - self.minimiser_) @ self._directions.T
        z += self.loo_sensitivity_
        z /= self.sigma_
        z[:, self.loo_sensitivity_ == 0] = 0.0
        return z[0] if single or model_like else z

    def _releases(self, X, kwargs, method):
        """``X``, or the deprecated ``released``; None means ``model_``."""
        if kwargs:
            if set(kwargs) != {"released"} or X is not None:
                raise TypeError(f"{method} takes X (formerly released) and y.")
            deprecation(f"The keyword released of {type(self).__name__}.{method}")
            X = kwargs["released"]
        return self.model_ if X is None else X

    def predict(self, X=None, y=None, **kwargs):
        """Membership guesses at false-positive rate ``fpr``.

        Parameters
        ----------
        X : estimator or array-like of shape (n_params,) or \
(n_releases, n_params), default=None
            See :meth:`decision_function`.
        y : None
            Ignored.
        **kwargs : dict
            ``released``, the former name of ``X`` (deprecated).

        Returns
        -------
        membership : ndarray of int, shape (n_samples,) or (n_releases, n_samples)
            1 where ``z_i > Phi^-1(1 - fpr)``: the release is judged to come
            from the training set with example ``i`` in it.
        """
        check_is_fitted(self)
        z = self.decision_function(self._releases(X, kwargs, "predict"))
        return (z > norm.isf(self.fpr)).astype(np.int64)
