"""The Gaussian mechanism's ε for many sensitivities at once.

Per-instance accounting of a Gaussian release needs ``gaussian_epsilon`` once
per example, each with the example's own sensitivity. The scalar function
inverts dp-accounting's curve with a bracketing root finder (milliseconds per
call); here the same closed-form curve is inverted for a whole array with a
safeguarded Newton iteration from interpolated starting points, entry by
entry in a numba kernel (:mod:`sklearn_fil.accounting._kernels`, about 0.1
microsecond per entry). ``_epsilon_numpy`` does the same on whole arrays
with SciPy's ``ndtr``: the reference the kernel is measured and tested
against.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from scipy.interpolate import CubicSpline
from scipy.special import erfcx, erfinv, ndtr, ndtri

from sklearn_fil.accounting import _kernels
from sklearn_fil.accounting._gaussian import _check_scalar
from sklearn_fil.accounting._kernels import EXP_SAFE as _EXP_SAFE
from sklearn_fil.accounting._kernels import MAX_ITER as _MAX_ITER
from sklearn_fil.accounting._kernels import MAX_NUDGES as _MAX_NUDGES
from sklearn_fil.accounting._kernels import NUDGE_RTOL as _NUDGE_RTOL
from sklearn_fil.accounting._kernels import ROUNDING as _ROUNDING
from sklearn_fil.accounting._kernels import SERIES_BELOW as _SERIES_BELOW
from sklearn_fil.accounting._kernels import STEP_RTOL as _STEP_RTOL

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
_TINY = np.finfo(np.float64).tiny
_DBL_EPSILON = np.finfo(np.float64).eps
_SERIES_TERMS = 40
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


def _phi_difference(c, h):
    """``Φ(c + h) - Φ(c - h)`` for ``|c| h < 1/2``, ``h < 1/2``: ``2 φ(c)
    Σ_k He_2k(c) h^(2k+1) / (2k+1)!``, as
    :func:`~sklearn_fil.accounting._kernels.phi_difference` on arrays."""
    even, odd = np.ones_like(c), c.copy()
    power, total = h.copy(), h.copy()
    for k in range(1, _SERIES_TERMS):
        even = c * odd - (2 * k - 1) * even
        odd = c * even - 2 * k * odd
        power *= h * h / ((2 * k) * (2 * k + 1))
        term = even * power
        total += term
        if np.all(np.abs(term) <= 0.25 * _DBL_EPSILON * np.abs(total)):
            break
    return 2.0 * np.exp(-0.5 * c * c) / np.sqrt(2.0 * np.pi) * total


def _delta_curve(eps, mu):
    """δ(ε) of the Gaussian mechanism at ``mu = sensitivity / sigma``, and ``-δ'(ε)``.

    ``δ(ε) = Φ(u) - e^ε Φ(v)``, ``u = μ/2 - ε/μ``, ``v = -μ/2 - ε/μ``
    (Balle & Wang 2018, Thm 8); its derivative is ``-e^ε Φ(v)`` (the density
    terms cancel). Where ``e^ε`` overflows or ``Φ(v)`` underflows (to 0 or
    to a subnormal number), ``e^ε Φ(v) = φ(u) Φ(v) / φ(v) = exp(-u²/2)
    erfcx(-v / sqrt 2) / 2``, with no ``ε`` in it to cancel. Below
    ``SERIES_BELOW`` in ε and μ, ``δ = [Φ(u) - Φ(v)] - (e^ε - 1) Φ(v)``, the
    difference by its series (:func:`_phi_difference`), as in the kernel.
    """
    half = 0.5 * mu
    t = eps / mu
    tail = ndtr(-half - t)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        second = np.exp(eps) * tail
    far = (eps > _EXP_SAFE) | (tail < _TINY)
    if far.any():
        u, v = half[far] - t[far], -half[far] - t[far]
        with np.errstate(over="ignore"):  # u² = inf: exp(-inf) = 0
            second[far] = 0.5 * np.exp(-0.5 * u * u) * erfcx(-v * np.sqrt(0.5))
    value = ndtr(half - t) - second
    series = ~far & (eps < _SERIES_BELOW) & (mu < _SERIES_BELOW)
    if series.any():
        spread = _phi_difference(-t[series], half[series])
        value[series] = spread - np.expm1(eps[series]) * tail[series]
    return value, second


def _curve_rounding(eps, mu, value, slope):
    """How far the computed δ(ε) is off by rounding, about, as
    :func:`~sklearn_fil.accounting._kernels.curve_rounding`."""
    series = (eps < _SERIES_BELOW) & (mu < _SERIES_BELOW)
    weight = np.where(series, -np.expm1(-eps), 1.0)
    return _ROUNDING * (value + 2.0 * weight * slope)


def _nudge(eps, mu, delta):
    """ε nudged upwards until δ(ε) <= delta as computed, by twice its
    rounding, as :func:`~sklearn_fil.accounting._kernels.nudge`: the first
    step one up (the root is as often on either side) and at least the
    rounding of the root; ``inf`` where ``_MAX_NUDGES`` doublings do not do.
    """
    step = np.maximum(4.0 * np.spacing(eps), _NUDGE_RTOL * eps)
    value, slope = _delta_curve(eps, mu)
    with np.errstate(divide="ignore", invalid="ignore"):
        noise = _curve_rounding(eps, mu, value, slope) / slope
    wider = (noise > step) & (noise < np.inf)
    step[wider] = noise[wider]
    eps = eps + step
    rows = np.arange(mu.size)
    for _ in range(_MAX_NUDGES):
        value, slope = _delta_curve(eps[rows], mu[rows])
        margin = 2.0 * _curve_rounding(eps[rows], mu[rows], value, slope)
        rows = rows[~(value + margin <= delta)]
        if not rows.size:
            return eps
        eps[rows] += step[rows]
        step[rows] *= 2.0
    eps[rows] = np.inf
    return eps


def _newton(eps, mu, delta, lo, hi):
    """Safeguarded Newton on ``log δ(ε) = log delta`` from ``eps`` (in place).

    The first step runs on whole arrays; later ones on the few entries that
    have not converged (with the spline's start, usually none).
    """
    active = slice(None)
    log_delta = np.log(delta)
    for _ in range(_MAX_ITER):
        e, m = eps[active], mu[active]
        if not e.size:
            break
        value, slope = _delta_curve(e, m)
        low, high = lo[active], hi[active]
        above = value > delta
        low[above] = e[above]
        high[~above] = e[~above]
        with np.errstate(divide="ignore", invalid="ignore"):
            new = e + (np.log(value) - log_delta) * value / slope
        step = np.abs(new - e)
        outside = ~((new >= low) & (new <= high))  # NaN included
        new[outside] = low[outside] + 0.5 * (high[outside] - low[outside])
        done = ~outside & (step <= _STEP_RTOL * np.minimum(e, m))
        done |= high - low <= 4.0 * np.spacing(high)
        rows = np.arange(mu.size)[active]
        eps[rows], lo[rows], hi[rows] = new, low, high
        active = rows[~done]
    return eps


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

    The starting points as in :func:`_epsilon_numpy`: from each entry's upper
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


def _epsilon_numpy(mu, delta):
    """ε for a flat array ``mu = sensitivity / sigma``: the NumPy reference.

    The same steps as :func:`~sklearn_fil.accounting._kernels.gaussian_epsilons`
    on whole arrays (SciPy's ``ndtr``); kept for the benchmark and the tests.
    """
    epsilon = np.zeros(mu.size)
    mu0 = _zero_below(delta)
    # the privacy loss is N(μ²/2, μ²), so ε = μ²/2 + μ Φ⁻¹(1 - δ) bounds δ
    z = _upper_quantile(delta)
    with np.errstate(over="ignore", invalid="ignore"):
        top = 0.5 * mu * mu + mu * z
    # inf, or ε above every double (μ²/2 overflows)
    epsilon[(mu > mu0) & ~(top < np.inf)] = np.inf
    need = np.flatnonzero((mu > mu0) & (top < np.inf))
    if need.size:
        m = mu[need]
        upper = np.maximum(top[need], 1e-8)
        start = upper.copy()
        low_mu, high_mu = m.min(), m.max()
        if m.size > _GRID and high_mu <= low_mu * (1.0 + _NARROW):
            # (nearly) one value, e.g. the same bound for every example: start
            # everyone at its epsilon
            one = np.array([low_mu])
            top = np.maximum(0.5 * one * one + one * z, 1e-8)
            start = np.full(
                m.size, _newton(top.copy(), one, delta, np.zeros(1), top)[0]
            )
        elif m.size > _GRID:
            grid = np.geomspace(low_mu, high_mu, _GRID)
            grid_upper = np.maximum(0.5 * grid * grid + grid * z, 1e-8)
            grid_eps = _newton(
                grid_upper.copy(), grid, delta, np.zeros(_GRID), grid_upper.copy()
            )
            # log ε is smooth in log μ: a cubic spline starts Newton within
            # about 1e-8, so one step reaches the tolerance
            knots = np.log(grid)
            coef = CubicSpline(knots, np.log(grid_eps)).c  # (4, _GRID - 1)
            # the knots are evenly spaced: the interval by arithmetic, no search
            t = (np.log(m) - knots[0]) * ((_GRID - 1) / (knots[-1] - knots[0]))
            k = np.clip(t.astype(np.intp), 0, _GRID - 2)
            x = np.log(m) - knots[k]
            log_eps = ((coef[0, k] * x + coef[1, k]) * x + coef[2, k]) * x + coef[3, k]
            start = np.minimum(np.exp(log_eps), upper)
        eps = _newton(start, m, delta, np.zeros(m.size), upper)
        epsilon[need] = _nudge(eps, m, delta)
    return epsilon


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
    double (μ from about ``1.9e154``).
    :func:`gaussian_epsilon`, which evaluates the curve as written through
    dp-accounting, agrees to about ``1e-11`` relative for μ from ``1e-4``
    to ``1e8``; outside, its rounding is larger.

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
    sigma = _check_scalar(sigma, "sigma", low=0.0)
    delta = _check_scalar(delta, "delta", low=0.0, high=1.0)
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
