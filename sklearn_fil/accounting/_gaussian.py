"""Privacy accounting for the Gaussian mechanism.

The Gaussian mechanism releases ``f(D) + N(0, sigma**2 I)`` for a function ``f`` whose
L2 sensitivity is ``sensitivity``. Its exact (ε, δ) curve and its Rényi divergence only
depend on the ratio ``sensitivity / sigma``.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import math
from functools import lru_cache

import numpy as np
from scipy.optimize import brentq
from scipy.stats import norm

from sklearn_fil.accounting._per_instance_gaussian import per_instance_gaussian_epsilon
from sklearn_fil.accounting._validation import (
    OPEN_UNIT,
    POSITIVE,
    check_entries,
    count,
    nonnegative_array,
    real_array,
    validate_params,
)

# Tolerances of the root finder in ``gaussian_sigma``: the bracket is shrunk to a
# few ulps of the root, whatever its magnitude.
_EPSILON_RTOL = 4 * np.finfo(np.float64).eps
_EPSILON_XTOL = np.finfo(np.float64).tiny
# Upper limit on the bracket doubling and on the upward nudges; both converge in a
# handful of steps, the limits only guard against an endless loop.
_MAX_BRACKET_DOUBLINGS = 2_000
_MAX_NUDGES = 200


def _gaussian_privacy_loss(sigma, sensitivity):
    """dp-accounting's exact Gaussian privacy loss (dp-accounting is imported
    on first use everywhere: it would slow ``import sklearn_fil`` by seconds)."""
    from dp_accounting.pld.privacy_loss_mechanism import GaussianPrivacyLoss

    return GaussianPrivacyLoss(standard_deviation=sigma, sensitivity=sensitivity)


def _delta_for_epsilon(epsilon, sigma, sensitivity):
    """Exact δ(ε) for a validated float64 array ``epsilon`` (0 at ε = inf)."""
    delta = np.zeros(epsilon.shape, dtype=np.float64)
    finite = np.isfinite(epsilon)
    if np.any(finite):
        loss = _gaussian_privacy_loss(sigma, sensitivity)
        delta[finite] = loss.get_delta_for_epsilon(epsilon[finite].ravel())
    return delta


@validate_params(
    {"sigma": [POSITIVE], "sensitivity": [POSITIVE]},
    prefer_skip_nested_validation=True,
)
def gaussian_delta(epsilon, *, sigma, sensitivity):
    """Exact δ(ε) of the Gaussian mechanism.

    The smallest δ for which releasing a query of L2 sensitivity ``sensitivity``
    with Gaussian noise of standard deviation ``sigma`` is (ε, δ)-DP: the tight
    curve of Balle & Wang (2018), evaluated by ``dp_accounting``'s
    ``GaussianPrivacyLoss``.

    Parameters
    ----------
    epsilon : float or array-like of float
        Privacy parameter(s) ε >= 0. ``np.inf`` gives δ = 0.
    sigma : float
        Standard deviation of the Gaussian noise, > 0.
    sensitivity : float
        L2 sensitivity of the released query, > 0.

    Returns
    -------
    delta : float or ndarray
        The exact δ(ε), a float when ``epsilon`` is a scalar, else an array of
        the same shape as ``epsilon``.

    See Also
    --------
    gaussian_epsilon : The inverse, ε for a target δ.
    gaussian_rdp : Rényi differential privacy of the same mechanism.

    Notes
    -----
    With ``a = sensitivity / (2 sigma)`` and ``b = epsilon sigma / sensitivity``,
    ``delta = Phi(a - b) - exp(epsilon) Phi(-a - b)``, with Φ the standard normal
    CDF. The curve only depends on ``sensitivity / sigma``, and is the same in both
    directions, so it holds for whichever neighbouring relation ``sensitivity`` was
    computed under (e.g. replace-one for :func:`output_perturbation_sensitivity`).

    References
    ----------
    Balle, B. and Wang, Y.-X. "Improving the Gaussian mechanism for differential
    privacy: analytical calibration and optimal denoising." ICML 2018, Theorem 8.

    Examples
    --------
    >>> from sklearn_fil.accounting import gaussian_delta
    >>> round(gaussian_delta(1.0, sigma=1.0, sensitivity=1.0), 4)
    0.1269
    >>> gaussian_delta([0.0, 0.5, 1.0], sigma=2.0, sensitivity=1.0).round(4)
    array([0.1974, 0.0524, 0.0068])
    """
    eps = nonnegative_array(epsilon, "epsilon")
    delta = _delta_for_epsilon(eps.reshape(-1), float(sigma), float(sensitivity))
    delta = delta.reshape(eps.shape)
    if eps.ndim == 0:
        return float(delta)
    return delta


@validate_params(
    {"sigma": [POSITIVE], "sensitivity": [POSITIVE], "delta": [OPEN_UNIT]},
    prefer_skip_nested_validation=True,
)
def gaussian_epsilon(*, sigma, sensitivity, delta):
    """Smallest ε such that the Gaussian mechanism is (ε, δ)-DP.

    Inverts the exact curve :func:`gaussian_delta`, which is strictly decreasing
    in ε: :func:`per_instance_gaussian_epsilon` for one sensitivity.

    Parameters
    ----------
    sigma : float
        Standard deviation of the Gaussian noise, > 0.
    sensitivity : float
        L2 sensitivity of the released query, > 0.
    delta : float
        Target δ, in the open interval (0, 1).

    Returns
    -------
    epsilon : float
        The smallest ε >= 0 with ``gaussian_delta(epsilon, ...) <= delta``; 0.0 when
        the mechanism is already (0, δ)-DP.

    Notes
    -----
    The result is a guarantee, never below the root of the exact curve (see
    :func:`per_instance_gaussian_epsilon`): the curve's textbook form, as
    dp-accounting evaluates it, cancels and loses up to 1e-7 of ε for
    ``sensitivity / sigma`` near 1e-8 and from about 1e8. The classical
    ``sqrt(2 log(1.25/delta)) sensitivity / sigma`` (Dwork & Roth 2014,
    Theorem A.1) holds only below 1, and is larger.

    References
    ----------
    Balle, B. and Wang, Y.-X. "Improving the Gaussian mechanism for differential
    privacy: analytical calibration and optimal denoising." ICML 2018.

    Examples
    --------
    >>> from sklearn_fil.accounting import gaussian_epsilon
    >>> round(gaussian_epsilon(sigma=1.0, sensitivity=1.0, delta=1e-5), 3)
    4.377
    >>> gaussian_epsilon(sigma=1e3, sensitivity=1e-3, delta=1e-5)
    0.0
    """
    return _gaussian_epsilon(float(sigma), float(sensitivity), float(delta))


def _gaussian_epsilon(sigma, sensitivity, delta):
    """:func:`gaussian_epsilon` of validated floats."""
    epsilon = per_instance_gaussian_epsilon(
        np.array([sensitivity]), sigma=sigma, delta=delta
    )
    return float(epsilon[0])


@validate_params(
    {"epsilon": [POSITIVE], "delta": [OPEN_UNIT], "sensitivity": [POSITIVE]},
    prefer_skip_nested_validation=True,
)
def gaussian_sigma(*, epsilon, delta, sensitivity):
    """Smallest noise for which the Gaussian mechanism is (ε, δ)-DP.

    The analytic Gaussian mechanism of Balle & Wang (2018): the exact curve of
    :func:`gaussian_delta` is inverted in ``sigma`` (:func:`scipy.optimize.brentq`).

    Parameters
    ----------
    epsilon : float
        Target ε, > 0.
    delta : float
        Target δ, in the open interval (0, 1).
    sensitivity : float
        L2 sensitivity of the released query, > 0.

    Returns
    -------
    sigma : float
        A noise standard deviation with ``gaussian_epsilon(sigma=sigma,
        sensitivity=sensitivity, delta=delta) <= epsilon`` exactly as computed,
        and within a few ulps of the smallest such value.

    Notes
    -----
    δ(ε) decreases as ``sigma`` grows, so the root is unique. The root finder
    may stop on either side of it; ``sigma`` is then nudged upwards until the ε
    that :func:`gaussian_epsilon` reports for it is at most ``epsilon``.

    References
    ----------
    Balle, B. and Wang, Y.-X. "Improving the Gaussian mechanism for differential
    privacy: analytical calibration and optimal denoising." ICML 2018, Algorithm 1.

    Examples
    --------
    >>> from sklearn_fil.accounting import gaussian_epsilon, gaussian_sigma
    >>> sigma = gaussian_sigma(epsilon=1.0, delta=1e-5, sensitivity=1.0)
    >>> round(sigma, 4)
    3.7306
    >>> gaussian_epsilon(sigma=sigma, sensitivity=1.0, delta=1e-5) <= 1.0
    True
    """
    return _gaussian_sigma(float(epsilon), float(delta), float(sensitivity))


# A pure function of three floats, a few hundred evaluations of the exact
# curve: refits on the same data (an audit's thousands of releases, a grid
# search's folds of equal size) calibrate once.
@lru_cache(maxsize=1024)
def _gaussian_sigma(epsilon, delta, sensitivity):
    """:func:`gaussian_sigma` of validated floats."""

    def excess(log_sigma):
        # δ(ε) at noise exp(log_sigma), minus the target: decreasing
        loss = _gaussian_privacy_loss(math.exp(log_sigma), sensitivity)
        return loss.get_delta_for_epsilon(epsilon) - delta

    # Upper bracket: the privacy loss is N(μ, 2μ) with μ = Δ²/(2 sigma²), and
    # δ(ε) <= P(L > ε), which is δ when sqrt(μ) = a solves a² + sqrt(2) z a = ε
    # (z = Φ⁻¹(1 - δ)). Then widen by doubling until the signs differ.
    z = float(norm.isf(delta))
    a = 0.5 * (-math.sqrt(2.0) * z + math.sqrt(2.0 * z * z + 4.0 * epsilon))
    high = math.log(sensitivity / (math.sqrt(2.0) * a))
    for _ in range(_MAX_BRACKET_DOUBLINGS):
        if excess(high) <= 0.0:
            break
        high += math.log(2.0)
    else:  # pragma: no cover - δ(ε) -> 0 as sigma grows
        raise RuntimeError("Could not bracket sigma for the Gaussian mechanism.")
    low = high - math.log(2.0)
    for _ in range(_MAX_BRACKET_DOUBLINGS):
        if excess(low) > 0.0:
            break
        low -= math.log(2.0)
    else:  # pragma: no cover - δ(ε) -> 1 as sigma shrinks
        raise RuntimeError("Could not bracket sigma for the Gaussian mechanism.")
    log_sigma = brentq(
        excess, low, high, xtol=_EPSILON_XTOL, rtol=_EPSILON_RTOL, maxiter=500
    )

    # Nudge upwards until the reported ε is within the target, as computed.
    sigma = math.exp(log_sigma)
    step = 4.0 * math.ulp(sigma)
    for _ in range(_MAX_NUDGES):
        if _gaussian_epsilon(sigma, sensitivity, delta) <= epsilon:
            return float(sigma)
        sigma += step
        step *= 2.0
    return float(math.exp(high))  # pragma: no cover - checked by the bracket


@validate_params(
    {"sigma": [POSITIVE], "sensitivity": [POSITIVE]},
    prefer_skip_nested_validation=True,
)
def gaussian_rdp(alpha, *, sigma, sensitivity):
    """Rényi differential privacy of the Gaussian mechanism.

    ``alpha * sensitivity**2 / (2 sigma**2)``, the Rényi divergence of order
    alpha between ``N(0, sigma**2 I)`` and ``N(v, sigma**2 I)``, ``||v|| =
    sensitivity``: the mechanism is (alpha, ε)-RDP with that ε.

    Parameters
    ----------
    alpha : float or array-like of float
        Rényi order(s), > 1. ``np.inf`` gives ``inf``.
    sigma : float
        Standard deviation of the Gaussian noise, > 0.
    sensitivity : float
        L2 sensitivity of the released query, > 0.

    Returns
    -------
    epsilon : float or ndarray
        The RDP ε at each order, a float when ``alpha`` is a scalar.

    See Also
    --------
    gaussian_delta : Exact (ε, δ) curve of the same mechanism.
    output_perturbation_sensitivity : Sensitivity of L2-regularised logistic
        regression, to plug in here.

    References
    ----------
    Mironov, I. "Rényi differential privacy." IEEE CSF 2017, Proposition 7.

    Examples
    --------
    >>> from sklearn_fil.accounting import gaussian_rdp
    >>> gaussian_rdp(2, sigma=1.0, sensitivity=1.0)
    1.0
    >>> gaussian_rdp([2, 4, 8], sigma=2.0, sensitivity=1.0)
    array([0.25, 0.5 , 1.  ])
    """
    orders = real_array(alpha, "alpha", "a real number > 1 or an array of them")
    rule = "alpha must be > 1 (and not NaN), got alpha={!r}."
    check_entries(orders, np.isnan(orders) | (orders <= 1.0), rule)
    rdp = orders * (float(sensitivity) ** 2 / (2.0 * float(sigma) ** 2))
    if rdp.ndim == 0:
        return float(rdp)
    return rdp


@validate_params(
    {
        "n_samples": [count(1)],
        "lam": [POSITIVE],
        "row_norm": [POSITIVE],
        "label_bound": [None, POSITIVE],
    },
    prefer_skip_nested_validation=True,
)
def output_perturbation_sensitivity(*, n_samples, lam, row_norm, label_bound=None):
    """L2 sensitivity of an L2-regularised GLM's minimiser, for output perturbation.

    Let ``w*`` minimise ``sum_i loss(w^T x_i, y_i) + (n_samples lam / 2)
    ||w||^2``, every row ``x_i`` -- including the constant column when an
    intercept is fitted -- of norm ``||x_i|| <= row_norm`` (``L``). Replacing
    one example by any other changes ``w*`` by at most ``2 G L / (n_samples
    lam)`` in L2 norm, where ``G`` bounds ``|loss'|`` (the derivative in the
    margin ``w^T x``) wherever the minimiser can lie:

    * ``label_bound=None``: a loss that is 1-Lipschitz in the margin (the
      logistic loss, for labels in {0, 1} or {-1, +1}), ``G = 1``;
    * ``label_bound=B``: the squared loss ``(w^T x - y)^2 / 2`` of ridge
      regression with labels ``|y_i| <= B``. The first-order condition
      ``sum_i (m_i - y_i) x_i + n lam w* = 0``, with ``m_i = w*^T x_i``,
      times ``w*`` gives ``n lam ||w*||^2 = sum_i (y_i m_i - m_i^2) <= sum_i
      y_i^2 / 4 <= n B^2 / 4``, so ``||w*|| <= B / (2 sqrt(lam))`` on every
      data set, and there ``|w^T x - y| <= L B / (2 sqrt(lam)) + B = G``.

    Parameters
    ----------
    n_samples : int
        Number of training examples n, >= 1.
    lam : float
        Regularisation strength λ > 0, as in the objective above. It must penalise
        every coordinate of ``w``, the intercept included, for the bound to hold.
    row_norm : float
        Bound on the L2 norm of every (augmented) training row, > 0.
    label_bound : float, default=None
        Bound ``B`` on ``|y_i|`` of ridge regression; None for a 1-Lipschitz
        loss.

    Returns
    -------
    sensitivity : float
        ``2 G row_norm / (n_samples lam)``.

    See Also
    --------
    gaussian_rdp : RDP of the released ``w* + N(0, sigma**2 I)``.
    gaussian_epsilon : (ε, δ) of the released ``w* + N(0, sigma**2 I)``.

    Notes
    -----
    The objective is ``n lam``-strongly convex and two replace-one neighbours'
    objectives differ by a function whose gradient at either minimiser is
    bounded by ``2 G row_norm`` (Chaudhuri, Monteleoni & Sarwate 2011,
    Corollary 8, for bounded domains); the number of examples is public. The
    bound assumes the exact minimiser is released. Guo et al. (2022, §7.1)
    use it with ``row_norm = 1`` and :func:`gaussian_rdp` at order 2.

    References
    ----------
    Chaudhuri, K., Monteleoni, C. and Sarwate, A. D. "Differentially private
    empirical risk minimization." JMLR 12, 2011.

    Guo, C., Karrer, B., Chaudhuri, K. and van der Maaten, L. "Bounding training data
    reconstruction in private (deep) learning." ICML 2022.

    Examples
    --------
    >>> from sklearn_fil.accounting import gaussian_rdp, output_perturbation_sensitivity
    >>> sens = output_perturbation_sensitivity(n_samples=1000, lam=1e-2, row_norm=1.0)
    >>> round(sens, 6)
    0.2
    >>> round(gaussian_rdp(2, sigma=0.1, sensitivity=sens), 6)
    4.0

    Ridge regression with labels in [-1, 1]: ``G = 1 / (2 sqrt(0.01)) + 1 = 6``.

    >>> output_perturbation_sensitivity(
    ...     n_samples=1000, lam=1e-2, row_norm=1.0, label_bound=1.0)
    1.2
    """
    row_norm, lam = float(row_norm), float(lam)
    gradient = 1.0
    if label_bound is not None:
        gradient = float(label_bound) * (0.5 * row_norm / math.sqrt(lam) + 1.0)
    return 2.0 * gradient * row_norm / (int(n_samples) * lam)
