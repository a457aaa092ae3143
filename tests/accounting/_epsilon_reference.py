"""NumPy twin of the per-instance Gaussian epsilon's numba kernel (test support).

The steps of :func:`sklearn_fil.accounting._kernels.gaussian_epsilons` on whole
arrays, with SciPy's ``ndtr``: the implementation before the numba kernel,
kept as the reference that the kernel is tested against
(``tests/accounting/test_per_instance_gaussian.py``) and timed against
(``benchmarks/bench_epsilon.py``). Moved here from
``sklearn_fil/accounting/_per_instance_gaussian.py``, unchanged.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from scipy.interpolate import CubicSpline
from scipy.special import erfcx, ndtr

from sklearn_fil.accounting._kernels import EXP_SAFE as _EXP_SAFE
from sklearn_fil.accounting._kernels import MAX_ITER as _MAX_ITER
from sklearn_fil.accounting._kernels import MAX_NUDGES as _MAX_NUDGES
from sklearn_fil.accounting._kernels import NUDGE_RTOL as _NUDGE_RTOL
from sklearn_fil.accounting._kernels import ROUNDING as _ROUNDING
from sklearn_fil.accounting._kernels import SERIES_BELOW as _SERIES_BELOW
from sklearn_fil.accounting._kernels import STEP_RTOL as _STEP_RTOL
from sklearn_fil.accounting._per_instance_gaussian import (
    _GRID,
    _NARROW,
    _upper_quantile,
    _zero_below,
)

__all__ = ["_epsilon_numpy", "_phi_difference"]

_TINY = np.finfo(np.float64).tiny
_DBL_EPSILON = np.finfo(np.float64).eps
_SERIES_TERMS = 40


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


def _epsilon_numpy(mu, delta):
    """ε for a flat array ``mu = sensitivity / sigma``: the NumPy reference.

    The same steps as :func:`~sklearn_fil.accounting._kernels.gaussian_epsilons`
    on whole arrays (SciPy's ``ndtr``).
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
