"""numba kernels of the accounting: the Gaussian mechanism's ε, entry by entry.

:func:`gaussian_epsilons` inverts the exact curve of the Gaussian mechanism
(Balle & Wang 2018, Thm 8)

.. math::

    \\delta(\\varepsilon) = \\Phi(\\mu/2 - \\varepsilon/\\mu)
        - e^{\\varepsilon} \\Phi(-\\mu/2 - \\varepsilon/\\mu)

for every ``mu`` of an array in one pass: the interpolated start, the
safeguarded Newton iteration on ``log delta(eps)`` and the upward nudge that
makes ``delta(eps) <= delta`` hold as computed run entry by entry with no
temporaries, the entries split over numba's threads. Each entry is computed
alone, so the answers do not depend on the number of threads. The steps are
those of the NumPy reference of the tests
(``tests/accounting/_epsilon_reference.py``), with two shortcuts that save
evaluations of the curve (two erfc each, most of the cost):

* a start within rounding of the root (a fine spline) is first tried one
  nudge step up: when that one evaluation gives ``delta(eps) <= delta`` with
  the root one step below (to within half a step, or the curve's rounding),
  it is the answer, where Newton's step and one nudge would have ended
  (:func:`newton`);
* the first nudge is at least the rounding of the computed root
  (:func:`rounding`), where that is above ``NUDGE_RTOL`` of it.

The curve is evaluated in the form that does not cancel where it is used
(:func:`delta_curve`): as written; with ``Phi(u) - Phi(v)`` by its series
below ``SERIES_BELOW`` in ``mu`` and ε (as written, two numbers near
``Phi(-eps/mu)`` cancelled to 1e-9 of themselves at ``mu = 1e-8``); and with
``e^eps Phi(v) = phi(u) Phi(v) / phi(v)`` where ``e^eps`` overflows or
``Phi(v)`` underflows (``exp(eps + log Phi(v))`` lost ε times the rounding,
everything from ``mu ~ 1e8``). So the computed root is within about
``1e-13`` of the exact one, and the answer, nudged ``1e-12`` above it, is
never below it: checked against 60-digit arithmetic, it is 0.5e-12 to
2e-12 above the root for ``mu`` from 1e-8 to 1e15 and δ down to 1e-17 (up
to 1e-14 absolute where ε is near 0, and ``delta(eps)`` is checked below
``delta`` by twice its rounding). The NumPy reference agrees to ``1e-12``.

``Phi`` is evaluated as SciPy's ``ndtr`` does (Cephes), from ``erf`` near 0
and ``erfc`` elsewhere, so that its lower tail is accurate to relative
rounding; ``log Phi`` as SciPy's ``log_ndtr`` does, by the asymptotic series
below ``-20``. Only the ``erf``, ``erfc``, ``exp``, ``expm1`` and ``log``
underneath come from the C library instead of SciPy's and NumPy's: each is
correct to about an ulp, so the curve moves by about its own rounding.

Nothing here imports scikit-learn or SciPy; inputs are contiguous float64
arrays and scalars.
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
# Newton on log δ(ε) converges quadratically (checked against the scalar
# inversion): a step below this fraction of min(ε, μ) leaves an error of
# order its square. log δ bends on the scale of ε for small μ, of μ (one
# unit of ε/μ - μ/2) for large: relative to ε alone, the step left up to
# 3e-12 of ε at ε/μ ~ 3000. The tolerance sits above the rounding of the
# curve near ε = 0.
STEP_RTOL = 1e-7
MAX_ITER = 200
# Above this ε, the second term of δ(ε) without e^ε (e^709 overflows).
EXP_SAFE = 700.0
# log of the largest double: e^x overflows above it
_LOG_MAX = math.log(float(np.finfo(np.float64).max))
# the smallest normal double: below it, fewer than 53 significant bits
_TINY = float(np.finfo(np.float64).tiny)
# Below this mu and eps, delta(eps) = [Phi(u) - Phi(v)] - (e^eps - 1) Phi(v),
# the difference Phi(u) - Phi(v) by its series (:func:`phi_difference`):
# Phi(u) - e^eps Phi(v) cancels to about 2 eps / mu^2 of its terms, which
# moves the root by some 1e-15 / eps of itself (5e-8 at mu = 1e-8, delta =
# 1e-17); this form cancels to about 2 (eps / mu)^2 (70 there). Above 0.1
# the direct form is within 1e-13 of the root and cheaper: the series
# converges as (eps / 2)^2k / (2k + 1)!.
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
# entries per block of the parallel loop (a few microseconds of work each)
_BLOCK = 1024


@numba.njit(cache=True, nogil=True)
def ndtr(a):
    """Standard normal CDF ``Phi(a)``, as SciPy's ``ndtr`` (Cephes) computes it.

    ``0.5 + 0.5 erf(a / sqrt 2)`` for ``|a| < 1``, else ``0.5 erfc(|a| /
    sqrt 2)`` reflected for ``a > 0``: relative rounding in the lower tail.
    """
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
    """``log Phi(a)``, as SciPy's ``log_ndtr`` computes it for real ``a``.

    Below ``-20`` the asymptotic series of :func:`tail_series`.
    """
    if a > 6.0:
        return -ndtr(-a)
    if a > -20.0:
        return math.log(ndtr(a))
    log_lhs = -0.5 * a * a - math.log(-a) - _HALF_LOG_2PI
    return log_lhs + math.log(tail_series(a))


@numba.njit(cache=True, nogil=True)
def tail_series(a):
    """``Phi(a) |a| / phi(a) = 1 - 1/a^2 + 3/a^4 - ...`` for ``a <= -20``.

    The asymptotic series, summed as SciPy's ``log_ndtr`` does until a term
    no longer changes the sum (its terms decrease while ``2k - 1 < a^2``,
    far beyond the few used here).
    """
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

    The derivative is ``-e^eps Phi(v)``, ``v = -mu/2 - eps/mu`` (the density
    terms cancel). Where ``e^eps`` overflows (``eps > EXP_SAFE``) or
    ``Phi(v)`` underflows, to 0 or to a subnormal number (fewer digits, from
    ``v = -37.5``), it is ``phi(u) Phi(v) / phi(v)``, ``u = mu/2 - eps/mu``:
    ``e^eps phi(v) = phi(u)`` exactly, and the ratio is the asymptotic
    series (``v < -37`` there). No ``eps`` in it: ``exp(eps + log Phi(v))``
    lost ``eps`` times the rounding to the cancellation of its two terms
    (everything from ``mu ~ 1e8``, where ``eps ~ 5e15``).

    Below ``SERIES_BELOW`` in ``eps`` and ``mu`` (and ``Phi(v)`` normal),
    ``delta = [Phi(u) - Phi(v)] - (e^eps - 1) Phi(v)``, the difference by
    :func:`phi_difference`: accurate to a few ulps times ``(eps / mu)^2``
    where the direct form loses ``2 eps / mu^2`` ulps.
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
    mu)`` (the value is that step's end) or once the bracket is a few ulps
    wide.

    With ``accept > 0`` (``eps`` is a start one nudge step ``accept`` above an
    estimate of the root), ``eps`` itself is the answer when its evaluation
    gives ``delta(eps) <= delta`` (by twice :func:`curve_rounding`) and puts
    the root ``accept`` below it, to within ``max(accept / 2, 2 noise)``
    (``noise`` of :func:`rounding`): where Newton's step and the first nudge
    would have ended.

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
    """How far the computed ``delta(eps)`` is off by rounding, about.

    Both terms of ``delta`` carry a few ulps of relative error, so ``delta``
    is off by about ``ROUNDING`` times their sum: ``Phi(u) + e^eps Phi(v)
    = value + 2 slope``, or in the series form ``(Phi(u) - Phi(v)) + (e^eps
    - 1) Phi(v) = value + 2 (1 - e^-eps) slope``.
    """
    if series_form(eps, mu):
        return ROUNDING * (value - 2.0 * math.expm1(-eps) * slope)
    return ROUNDING * (value + 2.0 * slope)


@numba.njit(cache=True, nogil=True, inline="always")
def rounding(eps, mu, value, slope):
    """How far the rounding of the computed curve moves its root, about:
    :func:`curve_rounding` over the slope. Where ``delta`` is the
    difference of two close numbers this is far above ``NUDGE_RTOL * eps``.
    ``inf`` where the slope is 0 (or NaN): nothing is known.
    """
    if not slope > 0.0:
        return np.inf
    return curve_rounding(eps, mu, value, slope) / slope


@numba.njit(cache=True, nogil=True, error_model="numpy")
def nudge(eps, mu, delta, value, slope):
    """First of ``eps + s, eps + 3s, eps + 7s, ...`` with ``delta(.) <=
    delta`` as computed, by twice :func:`curve_rounding` (``inf`` if none
    is, or the curve is NaN, within ``MAX_NUDGES``).

    ``s = max(4 ulp(eps), NUDGE_RTOL eps, rounding)``, the rounding of the
    root estimated from ``value`` and ``slope`` (the curve near ``eps``):
    steps below it would be doubled until they reach it.
    """
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


@numba.njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def gaussian_epsilons(mu, mu0, z, delta, start, knots, coef, polish, out):
    """ε of the Gaussian mechanism for every ``mu``, written to ``out``.

    Parameters
    ----------
    mu : ndarray of shape (n,)
        ``sensitivity / sigma``, ``>= 0`` (``inf`` allowed).
    mu0 : float
        ``2 sqrt(2) erfinv(delta)``: ``mu <= mu0`` gives ε = 0.
    z : float
        ``Phi^{-1}(1 - delta)``; ``upper = max(mu^2/2 + mu z, 1e-8)`` brackets
        the root from above (the privacy loss is ``N(mu^2/2, mu^2)``).
    delta : float
        Target δ in (0, 1).
    start : float
        Used when ``coef`` has no column: every entry starts from ``start``,
        or from its ``upper`` when ``start`` is NaN.
    knots : ndarray of shape (g,)
        Evenly spaced knots in ``log mu`` of the starting spline.
    coef : ndarray of shape (4, g - 1) or (4, 0)
        The spline of ``log eps`` in ``log mu``, SciPy's ``PPoly.c`` layout.
    polish : bool
        Whether to nudge each ε upwards until ``delta(eps) <= delta`` as
        computed (the starting grid is solved without).
    out : ndarray of shape (n,)
        Output: ε, ``0`` where ``mu <= mu0``, and ``inf`` where ``mu`` is
        or where ``mu^2/2 + mu z`` overflows (ε above every double, from
        ``mu`` about 1.9e154).
    """
    n_blocks = (mu.shape[0] + _BLOCK - 1) // _BLOCK
    for blk in numba.prange(n_blocks):
        _block(mu, mu0, z, delta, start, knots, coef, polish, out, blk)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def gaussian_epsilons_serial(mu, mu0, z, delta, start, knots, coef, polish, out):
    """:func:`gaussian_epsilons` on the calling thread, for small arrays.

    A parallel region wakes every thread; where the cores are busy the last
    one may take a time slice (milliseconds) to start.
    """
    for blk in range((mu.shape[0] + _BLOCK - 1) // _BLOCK):
        _block(mu, mu0, z, delta, start, knots, coef, polish, out, blk)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _block(mu, mu0, z, delta, start, knots, coef, polish, out, blk):
    """Entries ``blk * _BLOCK`` up to the next block of :func:`gaussian_epsilons`."""
    first, last = blk * _BLOCK, min(mu.shape[0], (blk + 1) * _BLOCK)
    log_delta = math.log(delta)
    spline = coef.shape[1] > 0
    estimate = spline or not math.isnan(start)
    scale = (knots.shape[0] - 1) / (knots[-1] - knots[0]) if spline else 0.0
    # two passes over the block, each a loop of independent entries that the
    # processor overlaps (one pass per entry would be latency-bound): the
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


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _solve(eps, mu, delta, log_delta, upper, polish, estimate):
    """ε of one entry from ``eps``; see :func:`gaussian_epsilons`."""
    accept = 0.0
    if polish and estimate:
        # the estimate is within rounding of the root: from one nudge step
        # above it, the first evaluation usually confirms it as the answer
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
