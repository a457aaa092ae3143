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

Certified interval. Where the exact refits cost too much (the logistic loss,
``O(n^2 d)``), :func:`~sklearn_fil._leave_one_out.leave_one_out_interval`
brackets every ``Delta_i`` in ``O(n d^2)``: ``lower_i <= Delta_i <= upper_i``
and ``||w - w_-i|| <= reach_i`` from the released centre ``w`` (see that
module). The report's ``loo_sensitivity_bound`` is then the upper end, made
an upper bound on the released mechanism's own per-instance sensitivity too:
with a guarantee the fit on ``D_-i`` stops within ``c = CERTIFIED_FRACTION
Delta`` (``Delta`` the global sensitivity) of ``w_-i``, so the two released
centres are at most ``min(reach_i, b_i + e_0) + c`` apart (``e_0`` bounds
``||w - w*||``), and the column is the larger of that and ``min(upper_i,
b_i)``. ``loo_sensitivity_lower`` is ``lower_i``; ``epsilon`` is computed
from the upper end, an upper bound on the per-instance ε, and
``epsilon_replace_one`` from it plus ``b_i`` as with the exact value.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from dataclasses import dataclass

import numpy as np

from sklearn_fil._losses import get_family
from sklearn_fil.accounting import default_delta, per_instance_gaussian_epsilon
from sklearn_fil.linear_model._base import CERTIFIED_FRACTION
from sklearn_fil.utils._dask import is_dask, map_rows

# The report columns, in order. Without the leave-one-out refits the first
# column holds the strong-convexity bound and says so in its name.
PER_INSTANCE_COLUMNS = ("loo_sensitivity", "epsilon", "epsilon_replace_one")
BOUND_COLUMN = "loo_sensitivity_bound"
# With a certified interval, its lower end follows the upper (BOUND_COLUMN).
LOWER_COLUMN = "loo_sensitivity_lower"


def _epsilon(sensitivity, sigma, delta):
    """Per-instance ε; NaN where the sensitivity is NaN (did not converge)."""
    eps = np.full(sensitivity.shape, np.nan)
    known = ~np.isnan(sensitivity)
    eps[known] = per_instance_gaussian_epsilon(
        sensitivity[known], sigma=sigma, delta=delta
    )
    return eps


@dataclass(frozen=True)
class _Accounting:
    """What turns ``Delta_i`` into the ε columns, shared by every row.

    ``global_sensitivity`` is the guarantee's sensitivity before
    certification (None without a guarantee), ``guarantee_epsilon`` its ε.
    """

    sigma: float
    delta: float
    global_sensitivity: float | None
    guarantee_epsilon: float | None
    exact: bool

    def columns(self, sensitivity, omega, interval=None):
        """The report's columns of rows with weights ``omega``.

        ``sensitivity`` is their exact ``Delta_i``, or None when not
        ``exact``: then the upper end of the certified ``interval``
        (a :class:`~sklearn_fil._glm.LeaveOneOutInterval`) if
        given, else the strong-convexity bound (or ``inf``), is reported.
        """
        gs = self.global_sensitivity
        # 2 L max(omega) / (sum(omega) lam) with max(omega) = 1, so b_i =
        # omega_i L / (sum(omega) lam)
        bound = None if gs is None else 0.5 * omega * gs
        lower = None
        if interval is not None:
            sensitivity, lower = _interval_upper(interval, bound, gs), interval.lower
        if sensitivity is None:
            sensitivity = np.full(omega.shape, np.inf) if bound is None else bound
        if bound is None:
            # no bound on the replacement of an example, except one of weight
            # 0, whose terms the objective multiplies by 0 (the fit is bitwise
            # the same)
            replace_one = np.where(omega == 0, 0.0, np.inf)
        else:
            # the released centres are certified within CERTIFIED_FRACTION of
            # the global sensitivity of the exact minimisers, on either data set
            moved = np.fmin(sensitivity, bound) + bound
            moved += 2.0 * CERTIFIED_FRACTION * gs
            replace_one = np.minimum(
                per_instance_gaussian_epsilon(
                    moved, sigma=self.sigma, delta=self.delta
                ),
                self.guarantee_epsilon,
            )
        first = PER_INSTANCE_COLUMNS[0] if self.exact else BOUND_COLUMN
        columns = {first: sensitivity}
        if lower is not None:
            columns[LOWER_COLUMN] = lower
        return columns | {
            "epsilon": _epsilon(sensitivity, self.sigma, self.delta),
            "epsilon_replace_one": replace_one,
        }


def _interval_upper(interval, bound, gs):
    """Upper bound on ``Delta_i`` and on the released centres' distance.

    Module docstring: ``max(min(upper_i, b_i), min(reach_i, b_i + e_0) +
    CERTIFIED_FRACTION gs)``; without a guarantee (``gs`` None) no fit is
    certified and the bound is ``upper_i``, on ``Delta_i``.
    """
    if gs is None:
        return interval.upper
    released = np.fmin(interval.reach, bound + interval.fit_error)
    released += CERTIFIED_FRACTION * gs
    released[bound == 0] = 0.0  # weight 0: the fits are bitwise the same
    return np.fmax(np.fmin(interval.upper, bound), released)


def _block_columns(X, y, omega, accounting, refits):
    """The per-instance columns of one block of rows, side by side."""
    sensitivity = None if refits is None else refits.sensitivity(X, y, omega)
    return np.column_stack(list(accounting.columns(sensitivity, omega).values()))


def estimator_accounting(estimator, n_samples, omega, delta, exact):
    """The :class:`_Accounting` of a fitted output-perturbed ``estimator``.

    ``delta`` None means ``default_delta(n_samples)``; the noise is the release's
    ``sigma_`` (set before the fit).
    """
    delta = default_delta(n_samples) if delta is None else delta
    global_sensitivity = estimator._sensitivity(omega)
    return _Accounting(
        sigma=estimator.sigma_,
        delta=delta,
        global_sensitivity=global_sensitivity,
        guarantee_epsilon=(
            None
            if global_sensitivity is None
            else estimator._guarantee(omega, delta).epsilon
        ),
        exact=exact,
    )


def per_instance_columns(
    estimator,
    X,
    y,
    w,
    omega,
    delta,
    *,
    exact=True,
    interval=False,
    hessian=None,
    gradient=None,
):
    """``loo_sensitivity`` (or its bound), ``epsilon`` and ``epsilon_replace_one``.

    Parameters
    ----------
    estimator : output-perturbed estimator
        Being fitted: its loss, penalty, noise and guarantee hooks are read.
    X : ndarray of shape (n_samples, n_features) or dask.array
        Rows as fitted (after clipping). On a row-chunked Dask array the
        columns are lazy Dask arrays mapped over its blocks; the exact
        ``Delta_i`` is then available for the squared loss only.
    y : ndarray of shape (n_samples,) or dask.array
        Encoded targets (in the row chunks of a Dask ``X``).
    w : ndarray of shape (n_params,)
        The fitted minimiser, intercept last.
    omega : ndarray of shape (n_samples,) or dask.array
        Example weights, scaled to a largest weight of 1.
    delta : float or None
        δ of the guarantee; None: :func:`~sklearn_fil.accounting.default_delta`.
    exact : bool, default=True
        Whether to compute ``Delta_i`` (by leave-one-out refits, see
        :mod:`sklearn_fil._leave_one_out`) or to report its strong-convexity
        bound ``b_i`` (``inf`` where there is none).
    interval : bool, default=False
        When not ``exact``, whether to certify an interval of every
        ``Delta_i`` (:func:`~sklearn_fil._leave_one_out.leave_one_out_interval`,
        ``O(n d^2)``; in memory only) and report its ends instead of ``b_i``.
    hessian : ndarray of shape (n_params, n_params), default=None
        The penalised Hessian at ``w``, if known: the refits then skip its
        Gram (required on Dask).
    gradient : ndarray of shape (n_params,), default=None
        The gradient of the penalised objective at ``w``, if known: the
        in-memory refits then skip a pass over the rows.

    Returns
    -------
    columns : dict of str to ndarray of shape (n_samples,)
        In report order; the first is ``loo_sensitivity_bound`` when not
        ``exact``, so a bound is never read as the exact distance, followed
        by ``loo_sensitivity_lower`` with an ``interval``.
    """
    from sklearn_fil._leave_one_out import (
        leave_one_out,
        leave_one_out_interval,
        squared_refits,
    )

    accounting = estimator_accounting(estimator, X.shape[0], omega, delta, exact)
    args = (
        estimator.lam_,
        estimator.fit_intercept,
        estimator.penalize_intercept_,
    )
    if is_dask(X):
        if exact and not get_family(estimator._loss).constant_curvature:
            raise ValueError(
                "The exact leave-one-out sensitivity of the logistic loss needs "
                "every example's refit over all rows; on Dask only its bound is "
                "reported."
            )
        refits = squared_refits(X, y, w, omega, *args, hessian) if exact else None
        names = (PER_INSTANCE_COLUMNS[0] if exact else BOUND_COLUMN,)
        names += PER_INSTANCE_COLUMNS[1:]
        table = map_rows(_block_columns, X, (y, omega), 3, accounting, refits)
        return {name: table[:, k] for k, name in enumerate(names)}
    if interval and not exact:
        bracket = leave_one_out_interval(
            X,
            y,
            w,
            omega,
            estimator._loss,
            *args,
            hessian=hessian,
            gradient=gradient,
        )
        return accounting.columns(None, omega, bracket)
    sensitivity = None
    if exact:
        sensitivity = leave_one_out(
            X,
            y,
            w,
            omega,
            estimator._loss,
            *args,
            hessian=hessian,
            gradient=gradient,
        ).sensitivity
    return accounting.columns(sensitivity, omega)
