"""The multinomial path of :class:`~sklearn_fil.OutputPerturbedLogisticRegression`.

A target of ``K >= 3`` classes is fitted as softmax regression, ``W`` of
shape ``(K, p)`` (numerics: :mod:`sklearn_fil._multinomial`), and released
as ``W + N(0, sigma^2 I)``; two classes keep the binary model.

Sensitivity (replace-one). ``F`` is ``sum(omega) lam``-strongly convex in
``W`` (Frobenius norm) when every column is penalised, and replacing one
example changes ``grad F`` by ``omega_i (g x~^T - g' x~'^T)``, of norm at
most ``2 max(omega) sqrt(2) L`` (``||softmax(z) - e_y|| <= sqrt(2)``, ``||x~||
<= L``). The minimisers of the two objectives are therefore within ``Delta
= 2 sqrt(2) L max(omega) / (sum(omega) lam)`` (Chaudhuri, Monteleoni &
Sarwate 2011, Corollary 8, with the Lipschitz constant ``sqrt(2) L`` in place
of ``L``): the binary bound times ``sqrt(2)``.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

from sklearn_fil._multinomial import (
    MultinomialProblem,
    fit_multinomial,
    leave_one_out_interval,
    leave_one_out_sensitivity,
    multinomial_fil,
)
from sklearn_fil._report import attribute_sizes, attribute_variances
from sklearn_fil.fisher import FisherInformationLoss
from sklearn_fil.linear_model._base import CERTIFIED_FRACTION, NEWTON_TOL
from sklearn_fil.linear_model._per_instance import estimator_accounting


def is_multinomial(estimator):
    """Whether the fit in progress (or done) has three classes or more."""
    return getattr(estimator, "_n_classes", 2) > 2


def encode_classes(y, classes):
    """Class codes ``0 .. K - 1`` of ``y`` in the sorted ``classes``."""
    return np.searchsorted(classes, y).astype(np.intp)


def _problem(estimator, X, y, omega):
    return MultinomialProblem(
        X,
        np.asarray(y, dtype=np.intp),
        omega,
        estimator._n_classes,
        float(estimator.lam_),
        bool(estimator.fit_intercept),
        bool(estimator.penalize_intercept_),
    )


def solve(estimator, X, y, omega, groups):
    """``(W, omega, result)`` of the estimator's ``_solve``, multinomial."""
    problem = _problem(estimator, X, y, omega)
    counts = np.bincount(problem.y, weights=omega, minlength=problem.n_classes)
    unpenalised = estimator.lam_ == 0 or (
        estimator.fit_intercept and not estimator.penalize_intercept_
    )
    if unpenalised and not np.all(counts > 0):
        raise ValueError(
            f"The class(es) at position {np.flatnonzero(counts == 0).tolist()} "
            "of the sorted label set have no "
            "training example of positive weight: without a penalty on every "
            "weight (lam > 0 and penalize_intercept=True) their logits decrease "
            "without bound and the objective has no minimiser."
        )
    sensitivity = estimator._sensitivity(omega)
    gtol = None
    if sensitivity is not None:
        # strong convexity sum(omega) lam turns the gradient into a distance
        gtol = CERTIFIED_FRACTION * sensitivity * float(omega.sum()) * estimator.lam_
    W, estimator.n_iter_ = fit_multinomial(
        problem, NEWTON_TOL, estimator.max_iter, gtol=gtol
    )
    fields = multinomial_fil(
        problem,
        W,
        estimator.sigma_,
        private_label=estimator.private_label,
        onehot=list(groups.values()),
    )
    return W, omega, FisherInformationLoss(**fields)


def attribute_scales(X, y, attributes, sample_weight, n_classes):
    """``(variance, sizes)`` of the report's attributes, the label a group.

    The label's variance is that of its ``K`` indicators summed, ``1 -
    sum_k pi_k^2`` (``pi`` the weighted class frequencies), over ``K - 1``
    coordinates, as for a one-hot group (see :mod:`sklearn_fil._report`).
    """
    features = [att for att in attributes if att != "label"]
    variance = list(attribute_variances(X, None, features, sample_weight))
    sizes = list(attribute_sizes(features))
    if "label" in attributes:
        weight = np.ones(X.shape[0]) if sample_weight is None else sample_weight
        pi = np.bincount(y.astype(np.intp), weights=weight, minlength=n_classes)
        pi = pi / pi.sum()
        variance.append(max(1.0 - float(pi @ pi), 0.0))
        sizes.append(n_classes - 1)
    return np.array(variance), np.array(sizes, dtype=np.int64)


def per_instance_columns(estimator, X, y, W, omega, delta, exact):
    """``loo_sensitivity`` (or its bound), ``epsilon``, ``epsilon_replace_one``.

    As :func:`sklearn_fil.linear_model._per_instance.per_instance_columns`:
    the exact ``Delta_i`` by refits (``exact``); else, where the estimator
    certifies intervals (``per_instance_accounting="auto"``), the ends of the
    certified interval of every ``Delta_i``
    (:func:`sklearn_fil._multinomial.leave_one_out_interval`, ``O(n (K
    p)^2)``), the upper one intersected with the strong-convexity bound
    ``omega_i sqrt(2) L / (sum(omega) lam)``; else that bound (``inf``
    without a guarantee).
    """
    accounting = estimator_accounting(estimator, X.shape[0], omega, delta, exact)
    sensitivity = None
    if exact:
        problem = _problem(estimator, X, y, omega)
        sensitivity = leave_one_out_sensitivity(problem, W)
    elif estimator._per_instance_interval(X.shape[0]):
        bracket = leave_one_out_interval(_problem(estimator, X, y, omega), W)
        return accounting.columns(None, omega, bracket)
    return accounting.columns(sensitivity, omega)
