"""The Gaussian mechanism's ε for many sensitivities at once.

The exact curve is inverted for a whole array by the numba kernel of
:mod:`sklearn_fil.accounting._kernels`, from starting points interpolated on
a few exact values; its NumPy twin lives with the tests
(``tests/accounting/_epsilon_reference.py``).
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from scipy.interpolate import CubicSpline
from scipy.special import erfinv, ndtri

from sklearn_fil._threads import row_parallel
from sklearn_fil.accounting._validation import (
    OPEN_UNIT,
    POSITIVE,
    nonnegative_array,
    validate_params,
)

# Points of the exact ε(μ) on which the starting points are interpolated.
_GRID = 256
# From this many entries, a finer grid: its spline starts within the
# rounding of the root (1e-13 over a few decades of μ, against 1e-10), so
# that one evaluation of the curve usually confirms the start as the answer.
# Its points cost one evaluation each from the coarse spline (about 0.2 ms).
_FINE_ABOVE = 2**13
_FINE_GRID = 2048
# Relative spread of μ below which every entry starts from one exact ε.
_NARROW = 1e-6
_NO_SPLINE = np.empty((4, 0))
_DBL_EPSILON = np.finfo(np.float64).eps
# μ²/2 overflows from about 1.9e154 (ε is then above every double): the
# starting splines stop here
_MU_MAX = 1e154


def _zero_below(delta):
    """``μ0``: up to it, the mechanism is (0, delta)-DP already.

    ``δ(0) = Φ(μ/2) - Φ(-μ/2) = erf(μ / (2 sqrt 2))`` is at most delta up to
    ``2 sqrt(2) erfinv(delta)``; taken 16 ulps lower (SciPy's ``erfinv`` is
    within 4 of it) so that no μ above the exact threshold is given 0: the
    few just below it go through the iteration, to a tiny positive ε.
    """
    return 2.0 * np.sqrt(2.0) * float(erfinv(delta)) * (1.0 - 16.0 * _DBL_EPSILON / 2)


def _upper_quantile(delta):
    """``Φ⁻¹(1 - delta)`` as ``-Φ⁻¹(delta)``: ``1 - delta`` would lose ``delta``'s
    digits (and round to 1 below 2^-54)."""
    return -float(ndtri(delta))


def _kernel(mu, mu0, z, delta, start, knots, coef, polish, out):
    """The kernel over ``mu``'s segments (in threads beyond one segment)."""
    from sklearn_fil._compiled import compiled
    from sklearn_fil.accounting._kernels import gaussian_epsilons

    kernel = compiled(gaussian_epsilons)

    def segment(rows):
        kernel(mu[rows], mu0, z, delta, start, knots, coef, polish, out[rows])

    row_parallel(segment, mu.size)


def _spline(low_mu, high_mu, size, mu0, z, delta, knots, coef):
    """Knots and coefficients of the spline of ``log eps`` in ``log mu`` on
    ``size`` points, solved from the spline ``knots, coef`` (if it has any
    interval, else from each point's upper bound)."""
    grid = np.geomspace(low_mu, high_mu, size)
    grid_eps = np.empty(size)
    _kernel(grid, mu0, z, delta, np.nan, knots, coef, False, grid_eps)
    knots = np.log(grid)
    return knots, np.ascontiguousarray(CubicSpline(knots, np.log(grid_eps)).c)


def _epsilon(mu, delta):
    """ε for a flat array ``mu = sensitivity / sigma`` (the numba kernel).

    Starts: each entry's upper bound up to ``_GRID`` entries; one value's ε
    when ``mu`` is one value to within ``_NARROW``; else a cubic spline of
    ``log eps`` in ``log mu`` on ``_GRID`` (``_FINE_GRID``) exact points.
    """
    from sklearn_fil._compiled import compiled
    from sklearn_fil.accounting._kernels import range_above

    mu = np.ascontiguousarray(mu, dtype=np.float64)
    epsilon = np.empty(mu.size)
    mu0 = _zero_below(delta)
    # the privacy loss is N(μ²/2, μ²), so ε = μ²/2 + μ Φ⁻¹(1 - δ) bounds δ
    z = _upper_quantile(delta)
    count, low_mu, high_mu = compiled(range_above)(mu, mu0)
    high_mu = min(high_mu, _MU_MAX)
    start, knots, coef = np.nan, np.empty(0), _NO_SPLINE
    if count <= _GRID or low_mu > _MU_MAX:
        pass  # each entry from its upper bound
    elif high_mu <= low_mu * (1.0 + _NARROW):
        # (nearly) one value, e.g. the same bound for every example: start
        # everyone at its epsilon
        one = np.empty(1)
        _kernel(np.array([low_mu]), mu0, z, delta, np.nan, knots, coef, False, one)
        start = one[0]
    else:
        # log ε is smooth in log μ: a cubic spline on _GRID points starts
        # Newton within about 1e-10, so one step reaches the tolerance
        knots, coef = _spline(low_mu, high_mu, _GRID, mu0, z, delta, knots, coef)
        if count > _FINE_ABOVE:
            # the finer grid, each point one Newton step from the coarse spline
            knots, coef = _spline(
                low_mu, high_mu, _FINE_GRID, mu0, z, delta, knots, coef
            )
    _kernel(mu, mu0, z, delta, start, knots, coef, True, epsilon)
    return epsilon


@validate_params(
    {"sigma": [POSITIVE], "delta": [OPEN_UNIT]}, prefer_skip_nested_validation=True
)
def per_instance_gaussian_epsilon(sensitivity, *, sigma, delta):
    """Smallest ε of the Gaussian mechanism for each of many sensitivities.

    :func:`~sklearn_fil.accounting.gaussian_epsilon` for an array: entry
    ``k`` is the smallest ε for which releasing ``f(D) + N(0, sigma^2 I)``
    is (ε, δ)-DP when ``f`` moves by ``sensitivity[k]`` between the two
    data sets. With each example's own sensitivity (e.g. its leave-one-out
    distance ``||w*(D) - w*(D_-i)||``) this is the per-instance ε of the
    example (Wang 2019).

    Parameters
    ----------
    sensitivity : array-like of float
        L2 sensitivities, ``>= 0``; ``0`` gives ε = 0 and ``inf`` gives
        ε = ``inf``.
    sigma : float
        Standard deviation of the Gaussian noise, > 0.
    delta : float
        Target δ, in the open interval (0, 1).

    Returns
    -------
    epsilon : ndarray
        ε for every sensitivity, same shape.

    Raises
    ------
    ValueError
        On a negative or NaN sensitivity, ``sigma <= 0`` or δ outside (0, 1).

    Notes
    -----
    The exact curve ``δ(ε) = Φ(μ/2 - ε/μ) - e^ε Φ(-μ/2 - ε/μ)``, ``μ =
    sensitivity / sigma``, is inverted by safeguarded Newton on ``log δ(ε)``,
    in forms that do not cancel, then ε is nudged up until ``δ(ε)`` is below
    delta by twice its rounding. The answer is a guarantee: never below the
    exact ε, and at most about ``2e-12`` above it (checked in 60-digit
    arithmetic for μ from ``1e-8`` to ``1e15``); ``inf`` from μ about
    ``1.9e154``, where ε is above every double.

    References
    ----------
    Balle, B. and Wang, Y.-X. "Improving the Gaussian mechanism for differential
    privacy: analytical calibration and optimal denoising." ICML 2018.

    Wang, Y.-X. "Per-instance differential privacy." Journal of Privacy and
    Confidentiality 9(1), 2019.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fil.accounting import gaussian_epsilon
    >>> from sklearn_fil.accounting import per_instance_gaussian_epsilon
    >>> eps = per_instance_gaussian_epsilon([0.0, 0.5, 1.0], sigma=1.0, delta=1e-5)
    >>> eps.round(3)
    array([0.   , 1.993, 4.377])
    >>> one = gaussian_epsilon(sigma=1.0, sensitivity=1.0, delta=1e-5)
    >>> bool(np.isclose(eps[2], one, rtol=1e-10))
    True
    """
    sens = nonnegative_array(sensitivity, "sensitivity", "an array of real numbers")
    mu = (sens / float(sigma)).ravel()
    return _epsilon(mu, float(delta)).reshape(sens.shape)
