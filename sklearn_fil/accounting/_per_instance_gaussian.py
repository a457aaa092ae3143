"""The Gaussian mechanism's ε for many sensitivities at once.

Per-instance accounting of a Gaussian release needs the Gaussian mechanism's
ε once per example, each with the example's own sensitivity. The exact
closed-form curve is inverted for a whole array with a safeguarded Newton
iteration from interpolated starting points, entry by entry in a numba
kernel (:mod:`sklearn_fil.accounting._kernels`, about 0.1 microsecond per
entry); :func:`~sklearn_fil.accounting.gaussian_epsilon` is this for one
sensitivity. The NumPy twin the kernel is measured and tested against lives
with the tests (``tests/accounting/_epsilon_reference.py``).
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from scipy.interpolate import CubicSpline
from scipy.special import erfinv, ndtri

from sklearn_fil.accounting import _kernels
from sklearn_fil.accounting._validation import OPEN_UNIT, POSITIVE, validate_params

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
# Up to this many entries, on the calling thread only (about a millisecond
# of work: less than waking a second thread can cost on a busy machine).
_SERIAL_UPTO = 2**14


def _zero_below(delta):
    """``μ0``: up to it, the mechanism is (0, delta)-DP already.

    ``δ(0) = Φ(μ/2) - Φ(-μ/2) = erf(μ / (2 sqrt 2))`` is at most delta up to
    ``2 sqrt(2) erfinv(delta)``; taken 16 ulps lower (SciPy's ``erfinv`` is
    within 4 of it) so that no μ above the exact threshold is given 0: the
    few just below it go through the iteration, to a tiny positive ε.
    """
    return 2.0 * np.sqrt(2.0) * float(erfinv(delta)) * (1.0 - 16.0 * _DBL_EPSILON / 2)


def _upper_quantile(delta):
    """``Φ⁻¹(1 - delta)``, as ``-Φ⁻¹(delta)``: ``1 - delta`` rounds to 1 for
    ``delta`` below 2^-54 (``ndtri`` gives inf) and loses ``delta``'s digits
    above (``z`` 1.5e-3 low at 1e-16, the bracket then below the root)."""
    return -float(ndtri(delta))


def _kernel(mu, mu0, z, delta, start, knots, coef, polish, out):
    """The serial or the parallel kernel, by the size of ``mu``."""
    if mu.size <= _SERIAL_UPTO:
        kernel = _kernels.gaussian_epsilons_serial
    else:
        kernel = _kernels.gaussian_epsilons
    kernel(mu, mu0, z, delta, start, knots, coef, polish, out)


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

    The starting points as in the NumPy reference of the tests: from each entry's upper
    bound up to ``_GRID`` entries (or more when ``mu`` takes one value to
    within ``_NARROW``: from that value's ε); otherwise from a cubic spline of
    ``log eps`` in ``log mu`` through the exact ε of ``_GRID`` points
    (``_FINE_GRID`` above ``_FINE_ABOVE`` entries).
    """
    mu = np.ascontiguousarray(mu, dtype=np.float64)
    epsilon = np.empty(mu.size)
    mu0 = _zero_below(delta)
    # the privacy loss is N(μ²/2, μ²), so ε = μ²/2 + μ Φ⁻¹(1 - δ) bounds δ
    z = _upper_quantile(delta)
    count, low_mu, high_mu = _kernels.range_above(mu, mu0)
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

    See Also
    --------
    gaussian_epsilon : The same ε for one sensitivity.

    Notes
    -----
    The exact curve ``δ(ε) = Φ(μ/2 - ε/μ) - e^ε Φ(-μ/2 - ε/μ)``, ``μ =
    sensitivity / sigma``, decreases in ε; it is inverted by Newton's method
    on ``log δ(ε)``, safeguarded by bisection, from starting points
    interpolated on the exact ε of a few sensitivities. As in
    :func:`gaussian_epsilon`, ε is then nudged upwards until ``δ(ε) <=
    delta`` holds as computed, so the answer never falls short of the root of
    the computed curve. The curve is computed in forms that do not cancel
    (for small μ with ``Φ(μ/2 - ε/μ) - Φ(-μ/2 - ε/μ)`` by its series, for
    large ε without ``e^ε``), to within about ``1e-13`` of its root, and
    ε is nudged until ``δ(ε)`` is below delta by twice its rounding: the
    answer is never below the exact ε, and at most about ``2e-12`` above
    it (checked in 60-digit arithmetic for μ from ``1e-8`` to ``1e15``), or
    about ``1e-14`` above it in absolute terms where ε is near 0 (μ near the
    threshold below which ε = 0). It is ``inf`` where ε is above every
    double (μ from about ``1.9e154``). :func:`gaussian_epsilon` is this
    function for one sensitivity.

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
    sigma, delta = float(sigma), float(delta)
    try:
        sens = np.array(sensitivity, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"sensitivity must be an array of real numbers, got {sensitivity!r}."
        ) from exc
    bad = np.isnan(sens) | (sens < 0)
    if np.any(bad):
        raise ValueError(
            f"sensitivity must be >= 0 (and not NaN), got {sens[bad].flat[0]!r}."
        )
    mu = (sens / sigma).ravel()
    return _epsilon(mu, delta).reshape(sens.shape)
