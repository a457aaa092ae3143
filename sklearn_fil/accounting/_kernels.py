"""numba kernels of the accounting: the Gaussian mechanism's ε, entry by entry.

:func:`gaussian_epsilons` inverts the exact curve of the Gaussian mechanism
(Balle & Wang 2018, Thm 8)

.. math::

    \\delta(\\varepsilon) = \\Phi(\\mu/2 - \\varepsilon/\\mu)
        - e^{\\varepsilon} \\Phi(-\\mu/2 - \\varepsilon/\\mu)

for every ``mu`` of an array: the interpolated start, safeguarded Newton on
``log delta(eps)`` and the upward nudge that makes ``delta(eps) <= delta``
hold as computed, entry by entry (so the answers do not depend on the number
of threads). The steps are those of the NumPy reference of the tests
(``tests/accounting/_epsilon_reference.py``), with two shortcuts that save
evaluations of the curve: a start within rounding of the root is first tried
one nudge step up (:func:`newton`'s ``accept``), and the first nudge is at
least the rounding of the computed root (:func:`rounding`).

The curve is evaluated in forms that do not cancel (:func:`delta_curve`), so
the computed root is within about ``1e-13`` of the exact one, and the answer
never below it: checked against 60-digit arithmetic, 0.5e-12 to 2e-12 above
the root for ``mu`` from 1e-8 to 1e15 and δ down to 1e-17. ``Phi`` and
``log Phi`` are evaluated as SciPy's ``ndtr`` and ``log_ndtr`` do, on the C
library's ``erf``, ``erfc``, ``exp`` and ``log`` (each correct to about an ulp).
No scikit-learn or SciPy here; inputs are contiguous float64 arrays and scalars.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import math

import numba
import numpy as np

_SQRT1_2 = math.sqrt(0.5)
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_DBL_EPSILON = float(np.finfo(np.float64).eps)
# Newton on log δ(ε) converges quadratically: a step below this fraction of
# min(ε, μ) (log δ bends on the scale of ε for small μ, of μ for large)
# leaves an error of order its square.
STEP_RTOL = 1e-7
MAX_ITER = 200
# Above this ε, the second term of δ(ε) without e^ε (e^709 overflows).
EXP_SAFE = 700.0
# log of the largest double: e^x overflows above it
_LOG_MAX = math.log(float(np.finfo(np.float64).max))
# the smallest normal double: below it, fewer than 53 significant bits
_TINY = float(np.finfo(np.float64).tiny)
# Below this mu and eps, delta(eps) = [Phi(u) - Phi(v)] - (e^eps - 1) Phi(v),
# the difference by its series (:func:`phi_difference`): Phi(u) - e^eps Phi(v)
# cancels to about 2 eps / mu^2 of its terms (5e-8 of the root at mu = 1e-8),
# this form to about 2 (eps / mu)^2. Above, the direct form is accurate enough.
SERIES_BELOW = 0.1
_SERIES_TERMS = 40
MAX_NUDGES = 200
# First upward nudge, relative: the rounding of the curve moves its computed
# root by up to about 1e-12 of ε, so steps of a few ulps would take many rounds.
NUDGE_RTOL = 1e-12
# Relative error of each term of the computed δ(ε), in units of the
# roundoff 2^-53: a few ulps from erfc, its rounded argument and e^ε.
ROUNDING = 4.0 * 2.0**-53
# above this, 4 ulps are less than NUDGE_RTOL of a number
_NORMAL = 1e-300
# entries per block, whose two passes (starts, then iterations) stay in cache
_BLOCK = 1024
# _block and _solve are inlined by numba (``inline="always"``), as the FIL
# kernel's helpers are (see ``sklearn_fil/fisher/_kernels.py``): a first call
# compiles faster. Inlining newton, nudge or delta_curve as well compiles slower.


@numba.njit(cache=True, nogil=True)
def ndtr(a):
    """Standard normal CDF ``Phi(a)``, as SciPy's ``ndtr`` (Cephes): from ``erf``
    for ``|a| < 1``, else ``erfc`` (relative rounding in the lower tail)."""
    x = a * _SQRT1_2
    z = abs(x)
    if z < _SQRT1_2:
        return 0.5 + 0.5 * math.erf(x)
    y = 0.5 * math.erfc(z)
    if x > 0.0:
        return 1.0 - y
    return y


@numba.njit(cache=True, nogil=True)
def log_ndtr(a):
    """``log Phi(a)`` as SciPy's ``log_ndtr``; below -20 by :func:`tail_series`."""
    if a > 6.0:
        return -ndtr(-a)
    if a > -20.0:
        return math.log(ndtr(a))
    log_lhs = -0.5 * a * a - math.log(-a) - _HALF_LOG_2PI
    return log_lhs + math.log(tail_series(a))


@numba.njit(cache=True, nogil=True)
def tail_series(a):
    """``Phi(a) |a| / phi(a) = 1 - 1/a^2 + 3/a^4 - ...`` for ``a <= -20``, summed
    as SciPy's ``log_ndtr`` does until a term no longer changes the sum."""
    last_total = 0.0
    rhs = 1.0
    numerator = 1.0
    denom_factor = 1.0
    denom_cons = 1.0 / (a * a)
    sign = 1.0
    i = 0
    while abs(last_total - rhs) > _DBL_EPSILON:
        i += 1
        last_total = rhs
        sign = -sign
        denom_factor *= denom_cons
        numerator *= 2 * i - 1
        rhs += sign * numerator * denom_factor
    return rhs


@numba.njit(cache=True, nogil=True, inline="always")
def exp_or_inf(x):
    """``e^x``, ``inf`` where it overflows: compiled, ``math.exp`` gives
    ``inf`` there; as plain Python (``NUMBA_DISABLE_JIT=1``) it raises."""
    if x > _LOG_MAX:
        return np.inf
    return math.exp(x)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def phi_difference(c, h):
    """``Phi(c + h) - Phi(c - h)`` for ``|c| h < 1/2`` and ``h < 1/2``, by
    ``2 phi(c) sum_k He_2k(c) h^(2k+1) / (2k+1)!`` (Taylor at ``c``; ``He``
    the probabilists' Hermite polynomials), summed until a term is below a
    quarter ulp of the sum. No two numbers near ``Phi(c)`` are subtracted.
    """
    even = 1.0  # He_{2k-2}(c)
    odd = c  # He_{2k-1}(c)
    power = h  # h^(2k+1) / (2k+1)!
    total = h
    for k in range(1, _SERIES_TERMS):
        even = c * odd - (2 * k - 1) * even
        odd = c * even - 2 * k * odd
        power *= h * h / ((2 * k) * (2 * k + 1))
        term = even * power
        total += term
        if abs(term) <= 0.25 * _DBL_EPSILON * abs(total):
            break
    return 2.0 * _INV_SQRT_2PI * math.exp(-0.5 * c * c) * total


@numba.njit(cache=True, nogil=True, inline="always")
def series_form(eps, mu):
    """Whether :func:`delta_curve` takes ``Phi(u) - Phi(v)`` by its series."""
    return eps < SERIES_BELOW and mu < SERIES_BELOW


@numba.njit(cache=True, nogil=True, error_model="numpy")
def delta_curve(eps, mu):
    """``delta(eps)`` at ``mu = sensitivity / sigma`` and ``-delta'(eps)``.

    The derivative is ``-e^eps Phi(v)``, ``v = -mu/2 - eps/mu``. Where
    ``e^eps`` overflows or ``Phi(v)`` is subnormal it is ``phi(u) Phi(v) /
    phi(v)``, ``u = mu/2 - eps/mu`` (``e^eps phi(v) = phi(u)`` exactly, the
    ratio by :func:`tail_series`): ``exp(eps + log Phi(v))`` would lose
    ``eps`` times the rounding. Below ``SERIES_BELOW`` the series form.
    """
    half = 0.5 * mu
    t = eps / mu
    if eps <= EXP_SAFE:
        tail = ndtr(-half - t)
        if tail >= _TINY:
            second = math.exp(eps) * tail
            if series_form(eps, mu):
                spread = phi_difference(-t, half)
                return spread - math.expm1(eps) * tail, second
            return ndtr(half - t) - second, second
    u = half - t
    v = -half - t
    second = math.exp(-0.5 * u * u) * (_INV_SQRT_2PI * tail_series(v) / -v)
    return ndtr(u) - second, second


@numba.njit(cache=True, nogil=True, error_model="numpy")
def newton(eps, mu, delta, log_delta, lo, hi, accept):
    """Safeguarded Newton on ``log delta(eps) = log delta`` from ``eps``.

    ``[lo, hi]`` brackets the root; a step that leaves it, or is NaN, is
    replaced by bisection. Stops after a step below ``STEP_RTOL min(eps,
    mu)`` or once the bracket is a few ulps wide. With ``accept > 0`` (``eps``
    is one nudge step ``accept`` above an estimate of the root), ``eps`` is
    the answer when ``delta(eps) <= delta`` (by twice :func:`curve_rounding`)
    and the root lies ``accept`` below it, to within ``max(accept / 2, 2
    noise)``: where Newton's step and the first nudge would have ended.

    Returns
    -------
    eps : float
        The last iterate.
    value, slope : float
        ``delta`` and ``-delta'`` at the last point evaluated.
    done : bool
        Whether ``eps`` was accepted as the answer.
    """
    value = slope = np.nan
    for it in range(MAX_ITER):
        value, slope = delta_curve(eps, mu)
        if value > delta:
            lo = eps
        else:
            hi = eps
        noise = curve_rounding(eps, mu, value, slope)
        if it == 0 and accept > 0.0 and value + 2.0 * noise <= delta:
            # eps - root within max(accept / 2, 2 noise) of accept, to first
            # order in eps - root (no logarithm, no division)
            off = abs(delta - value - accept * slope)
            if off <= max(0.5 * accept * slope, 2.0 * noise):
                return eps, value, slope, True
        if value > 0.0 and slope > 0.0:
            new = eps + (math.log(value) - log_delta) * value / slope
        else:
            # delta(eps) or its slope underflowed (or is NaN): no Newton
            # step, bisection below; written out, as log(0) and x / 0 raise
            # in plain Python
            new = np.nan
        step = abs(new - eps)
        inside = new >= lo and new <= hi
        if not inside:
            new = lo + 0.5 * (hi - lo)
        done = inside and step <= STEP_RTOL * min(eps, mu)
        done = done or hi - lo <= 4.0 * np.spacing(hi)
        eps = new
        if done:
            break
    return eps, value, slope, False


@numba.njit(cache=True, nogil=True, inline="always")
def curve_rounding(eps, mu, value, slope):
    """About how far the computed ``delta(eps)`` is off by rounding:
    ``ROUNDING`` times the sum of its two terms, ``value + 2 slope`` (series
    form: ``value + 2 (1 - e^-eps) slope``)."""
    if series_form(eps, mu):
        return ROUNDING * (value - 2.0 * math.expm1(-eps) * slope)
    return ROUNDING * (value + 2.0 * slope)


@numba.njit(cache=True, nogil=True, inline="always")
def rounding(eps, mu, value, slope):
    """About how far rounding moves the computed root: :func:`curve_rounding`
    over the slope (``inf`` where the slope is 0 or NaN)."""
    if not slope > 0.0:
        return np.inf
    return curve_rounding(eps, mu, value, slope) / slope


@numba.njit(cache=True, nogil=True, error_model="numpy")
def nudge(eps, mu, delta, value, slope):
    """First of ``eps + s, eps + 3s, eps + 7s, ...`` with ``delta(.) <= delta``
    by twice :func:`curve_rounding` (``inf`` if none within ``MAX_NUDGES``);
    ``s = max(4 ulp(eps), NUDGE_RTOL eps, rounding(eps, ...))``."""
    step = first_step(eps)
    noise = rounding(eps, mu, value, slope)
    if noise > step and noise < np.inf:  # a zero or NaN slope says nothing
        step = noise
    eps += step
    for _ in range(MAX_NUDGES):
        value, slope = delta_curve(eps, mu)
        if value + 2.0 * curve_rounding(eps, mu, value, slope) <= delta:
            return eps
        eps += step
        step *= 2.0
    return np.inf


@numba.njit(cache=True, nogil=True)
def _spline_start(mu, upper, knots, coef, scale):
    """``min(exp(s(log mu)), upper)``, ``s`` the cubic spline of ``coef``
    (SciPy's ``PPoly`` layout) on the evenly spaced ``knots``."""
    log_mu = math.log(mu)
    t = (log_mu - knots[0]) * scale
    # truncation toward zero, as NumPy's astype(intp), then clipped
    k = min(max(int(t), 0), knots.shape[0] - 2)
    x = log_mu - knots[k]
    log_eps = ((coef[0, k] * x + coef[1, k]) * x + coef[2, k]) * x + coef[3, k]
    return min(exp_or_inf(log_eps), upper)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def gaussian_epsilons(mu, mu0, z, delta, start, knots, coef, polish, out):
    """ε of the Gaussian mechanism for every ``mu = sensitivity / sigma`` into ``out``.

    ``mu <= mu0 = 2 sqrt(2) erfinv(delta)`` gives 0, ``mu`` or ``mu^2/2 + mu z``
    infinite gives ``inf``; ``upper = max(mu^2/2 + mu z, 1e-8)``, ``z = Phi^-1(1 -
    delta)``, brackets the root from above (the privacy loss is ``N(mu^2/2,
    mu^2)``). Each entry starts from the spline of ``log eps`` in ``log mu`` on
    the evenly spaced ``knots`` (``coef`` in SciPy's ``PPoly.c`` layout) or,
    when ``coef`` has no column, from ``start`` (its ``upper`` when NaN).
    ``polish`` nudges each ε up until ``delta(eps) <= delta`` as computed.
    On the calling thread; each entry alone, so slices of ``mu`` may run in
    threads (``sklearn_fil.accounting._per_instance_gaussian``).
    """
    for blk in range((mu.shape[0] + _BLOCK - 1) // _BLOCK):
        _block(mu, mu0, z, delta, start, knots, coef, polish, out, blk)


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _block(mu, mu0, z, delta, start, knots, coef, polish, out, blk):
    """Entries ``blk * _BLOCK`` up to the next block of :func:`gaussian_epsilons`."""
    first, last = blk * _BLOCK, min(mu.shape[0], (blk + 1) * _BLOCK)
    log_delta = math.log(delta)
    spline = coef.shape[1] > 0
    estimate = spline or not math.isnan(start)
    scale = (knots.shape[0] - 1) / (knots[-1] - knots[0]) if spline else 0.0
    # two passes of independent entries (which the processor overlaps): the
    # starting points into ``out``, then the iterations
    for i in range(first, last):
        m = mu[i]
        if spline and m > mu0 and m < np.inf:
            upper = max(0.5 * m * m + m * z, 1e-8)
            out[i] = _spline_start(m, upper, knots, coef, scale)
        else:
            out[i] = start
    for i in range(first, last):
        m = mu[i]
        if not m > mu0:
            out[i] = 0.0
        elif m == np.inf:
            out[i] = np.inf
        else:
            top = 0.5 * m * m + m * z
            if not top < np.inf:
                # mu^2 / 2 overflows (inf, or inf - inf at the largest
                # doubles when z < 0): eps is above every double
                out[i] = np.inf
                continue
            upper = max(top, 1e-8)
            eps = out[i] if estimate else upper
            out[i] = _solve(eps, m, delta, log_delta, upper, polish, estimate)


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _solve(eps, mu, delta, log_delta, upper, polish, estimate):
    """ε of one entry from ``eps``; see :func:`gaussian_epsilons`."""
    accept = 0.0
    if polish and estimate:
        # one nudge step above the estimate, usually confirmed at once
        accept = first_step(eps)
        eps += accept
    eps, value, slope, done = newton(eps, mu, delta, log_delta, 0.0, upper, accept)
    if polish and not done:
        eps = nudge(eps, mu, delta, value, slope)
    return eps


@numba.njit(cache=True, nogil=True, inline="always")
def first_step(eps):
    """``max(4 ulp(eps), NUDGE_RTOL * eps)``, the first nudge."""
    if eps > _NORMAL:
        # 4 ulp <= 2^-50 eps: below NUDGE_RTOL eps
        return NUDGE_RTOL * eps
    return max(4.0 * np.spacing(eps), NUDGE_RTOL * eps)


@numba.njit(cache=True, nogil=True)
def range_above(mu, mu0):
    """Count, min and max of the finite entries of ``mu`` above ``mu0``."""
    count = 0
    low = np.inf
    high = -np.inf
    for i in range(mu.shape[0]):
        m = mu[i]
        if m > mu0 and m < np.inf:
            count += 1
            low = min(low, m)
            high = max(high, m)
    return count, low, high
