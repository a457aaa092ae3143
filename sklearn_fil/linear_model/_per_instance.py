"""Each example's own leakage under output perturbation: ``Delta_i`` and its ε.

The release ``w' = w*(D) + N(0, sigma^2 I)`` is a Gaussian mechanism. For
example ``i`` the optimal adversary who knows every other example and must
tell ``D`` from ``D_-i`` (the example's loss term removed, the penalty and
``n`` kept: ``n`` is public) faces the Gaussian mechanism with sensitivity
``Delta_i = ||w*(D) - w*(D_-i)||``, so its exact per-instance ε at δ is
``gaussian_epsilon(sigma=sigma, sensitivity=Delta_i, delta=delta)`` (Wang
2019). :func:`per_instance_columns` computes the report's columns.

Replace-one. Replacing example ``i`` by any row ``z`` that the guarantee
allows (clipped, ``|psi'| <= 1``) moves the minimiser by at most ``Delta_i +
b_i`` with ``b_i = omega_i L / (sum(omega) lam)``: ``F_-i`` is ``sum(omega)
lam``-strongly convex and adding ``z``'s term moves its minimiser by at most
the norm of that term's gradient over the modulus. The same argument bounds
``Delta_i <= b_i``, so ``Delta_i + b_i <= 2 b_i``, at most the global
sensitivity ``2 L max(omega) / (sum(omega) lam)``: the per-instance
replace-one ε never exceeds the guarantee's.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

from sklearn_fil._leave_one_out import leave_one_out
from sklearn_fil.accounting import default_delta, per_instance_gaussian_epsilon
from sklearn_fil.linear_model._base import CERTIFIED_FRACTION

# The report columns, in order. Without the leave-one-out refits the first
# column holds the strong-convexity bound and says so in its name.
PER_INSTANCE_COLUMNS = ("loo_sensitivity", "epsilon", "epsilon_replace_one")
BOUND_COLUMN = "loo_sensitivity_bound"


def _epsilon(sensitivity, sigma, delta):
    """Per-instance ε; NaN where the sensitivity is NaN (did not converge)."""
    eps = np.full(sensitivity.shape, np.nan)
    known = ~np.isnan(sensitivity)
    eps[known] = per_instance_gaussian_epsilon(
        sensitivity[known], sigma=sigma, delta=delta
    )
    return eps


def per_instance_columns(estimator, X, y, w, omega, delta, *, exact=True, hessian=None):
    """``loo_sensitivity`` (or its bound), ``epsilon`` and ``epsilon_replace_one``.

    Parameters
    ----------
    estimator : output-perturbed estimator
        Being fitted: its loss, penalty, noise and guarantee hooks are read.
    X : ndarray of shape (n_samples, n_features)
        Rows as fitted (after clipping).
    y : ndarray of shape (n_samples,)
        Encoded targets.
    w : ndarray of shape (n_params,)
        The fitted minimiser, intercept last.
    omega : ndarray of shape (n_samples,)
        Example weights, scaled to a largest weight of 1.
    delta : float or None
        δ of the guarantee; None: :func:`~sklearn_fil.accounting.default_delta`.
    exact : bool, default=True
        Whether to compute ``Delta_i`` (by leave-one-out refits, see
        :mod:`sklearn_fil._leave_one_out`) or to report its strong-convexity
        bound ``b_i`` (``inf`` where there is none).
    hessian : ndarray of shape (n_params, n_params), default=None
        The penalised Hessian at ``w``, if known: the refits then skip its
        Gram.

    Returns
    -------
    columns : dict of str to ndarray of shape (n_samples,)
        In report order; the first is ``loo_sensitivity_bound`` when not
        ``exact``, so a bound is never read as the exact distance.
    """
    n = X.shape[0]
    delta = default_delta(n) if delta is None else delta
    sigma = estimator.sigma_  # the noise of the release (set before the fit)
    # the guarantee's sensitivity before certification: 2 L max(omega) /
    # (sum(omega) lam), max(omega) = 1, so b_i = omega_i L / (sum(omega) lam)
    global_sensitivity = estimator._sensitivity(omega)
    bound = None if global_sensitivity is None else 0.5 * omega * global_sensitivity
    if exact:
        sensitivity = leave_one_out(
            X,
            y,
            w,
            omega,
            estimator._loss,
            estimator.lam,
            estimator.fit_intercept,
            estimator.penalize_intercept,
            hessian=hessian,
        ).sensitivity
    else:
        sensitivity = np.full(n, np.inf) if bound is None else bound.copy()
    if bound is None:
        # no bound on the replacement of an example, except one of weight 0,
        # whose terms the objective multiplies by 0 (the fit is bitwise the same)
        replace_one = np.where(omega == 0, 0.0, np.inf)
    else:
        # the released centres are certified within CERTIFIED_FRACTION of the
        # global sensitivity of the exact minimisers, on either data set
        moved = np.fmin(sensitivity, bound) + bound
        moved += 2.0 * CERTIFIED_FRACTION * global_sensitivity
        guarantee = estimator._guarantee(omega, delta)
        replace_one = np.minimum(
            per_instance_gaussian_epsilon(moved, sigma=sigma, delta=delta),
            guarantee.epsilon,
        )
    first = PER_INSTANCE_COLUMNS[0] if exact else BOUND_COLUMN
    return {
        first: sensitivity,
        "epsilon": _epsilon(sensitivity, sigma, delta),
        "epsilon_replace_one": replace_one,
    }
