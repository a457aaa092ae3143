"""numba kernels of the FIL engine: largest eigenvalue of diagonal + rank-2.

Every per-example spectral norm in the engine reduces, after one shared
rotation, to the largest eigenvalue of

.. math::

    E = r^2 \\operatorname{diag}(\\gamma) + Y B Y^\\top, \\qquad
    Y = [y_1, y_2] \\in \\mathbb{R}^{p \\times 2}, \\qquad
    B = \\begin{pmatrix} \\beta & \\rho \\\\ \\rho & 0 \\end{pmatrix},

with ``gamma`` shared by all examples and sorted in decreasing order. The
kernels find its top eigenvalue exactly (to rounding) by a safeguarded Newton
iteration: see :func:`top_eigenvalue`.

Most of ``gamma`` is usually far below the root (a cluster of small
eigenvalues, or near-zero ones): those poles are summed once per example as
the moments of a geometric series, truncated below rounding, so that a Newton
step costs only the few near poles (:func:`_far_group`). The iteration stops
without a confirming evaluation once the quadratic-convergence bound puts the
remaining error below rounding (:func:`_newton`).

Nothing here imports scikit-learn or pandas; inputs are contiguous float64
arrays and scalars.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import types

import numba
import numpy as np

_EPS = np.finfo(np.float64).eps
# sums of two squares inside (_TINY, _HUGE) are exact to rounding
_TINY = 1e-290
_HUGE = 1e290
_MAX_ITER = 200
# Newton's start (_ritz_start): at most this many steps on its cubic, which
# stop once a step is below this fraction of the root (a start needs no more)
_RITZ_ITER = 8
_RITZ_RTOL = 1e-10
# rows per block of the per-example kernel
_BLOCK = 256
# Numba compiles each jitted function apart, then links its optimised code into
# every caller and optimises and emits it again there. Helpers called from one
# place in a caller of the same flags are therefore inlined by numba
# (``inline="always"``), to the same machine results: a first report compiles
# about 2 s (of 21) less, and the parallel kernel no longer calls _example_fil
# once per row, whose array arguments' reference counts its threads contend on
# (0.67-0.85 x the time at n = 10^5; benchmarks/results/startup.md). The
# ``fastmath`` helpers stay apart (inlined, they would take their caller's
# flags), and so do ``_top_eigenvalue`` (two call sites: typing it twice costs
# more than its level) and ``top_eigenvalue`` (also called from Python).


@numba.njit(cache=True, nogil=True)
def top_eigenvalue(gamma, r2, y1, y2, beta, rho, a, b):
    """Largest eigenvalue of ``r2 * diag(gamma) + Y B Y^T``.

    Parameters
    ----------
    gamma : ndarray of shape (p,)
        Shared diagonal, sorted in decreasing order, ``gamma >= 0``.
    r2 : float
        Scale of the diagonal for this example (the squared residual).
    y1, y2 : ndarray of shape (p,)
        The two columns of ``Y``.
    beta, rho : float
        ``B = [[beta, rho], [rho, 0]]``.
    a, b : ndarray of shape (p,)
        Work arrays (overwritten).

    Returns
    -------
    mu : float
        The largest eigenvalue.

    Notes
    -----
    Write ``B = b_+ v_+ v_+^T + b_- v_- v_-^T`` with ``b_+ >= 0 >= b_-``, so
    ``E = D + a a^T - b b^T`` with ``a = sqrt(b_+) Y v_+`` and ``b =
    sqrt(-b_-) Y v_-``. By interlacing ``mu >= d_2`` (the second largest
    diagonal entry) and by Weyl ``mu <= d_1 + ||a||^2``. On ``(d_2, inf)``
    the function ``tau`` of :func:`_tau_scaled` is continuous and increasing with
    ``mu`` as its only root (Haynsworth inertia of the bordered matrix), so a
    Newton iteration kept inside the bracket by bisection converges to it.
    """
    n1 = 0.0
    n2 = 0.0
    for k in range(gamma.shape[0]):
        n1 += y1[k] * y1[k]
        n2 += y2[k] * y2[k]
    return _top_eigenvalue(gamma, r2, y1, y2, n1, n2, beta, rho, a, b)


def _ratio_bound(m):
    """Largest ``r`` with ``r**m / (1 - r) <= 2**-54``, lowered by 1%.

    Beyond ``m`` terms the geometric series ``sum_j u^j``, ``|u| <= r``,
    leaves at most ``r**m / (1 - r)`` of its leading term: below a quarter of
    an ulp, less than the rounding of the direct sum it replaces. The 1%
    margin covers the rounding of the ratio itself. The slope's series
    (coefficients ``j + 1``) is cut a few ulps coarser; the slope sets only
    the Newton step, not the root.
    """
    lo, hi = 0.0, 1.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if mid**m / (1.0 - mid) <= 2.0**-54:
            lo = mid
        else:
            hi = mid
    return 0.99 * lo


# far-pole expansion: 3, 4 or 6 terms, for ratios up to these bounds
_RHO3 = _ratio_bound(3)
_RHO4 = _ratio_bound(4)
_RHO6 = _ratio_bound(6)
# fewest far poles worth a moment pass, most poles stripped as an isolated tail
_MIN_FAR = 8
_MAX_TAIL = 4
# rough cost, in flops, of one pole summed directly over a whole solve (a
# division and ten flops, times three or four iterations), against the flops
# per pole of the moment pass with 3, 4 or 6 terms
_NEAR_COST = 80
_FAR_COST3 = 14
_FAR_COST4 = 17
_FAR_COST6 = 26


@numba.njit(cache=True, nogil=True)
def _far_terms(g_hi, g_lo, r2, lo):
    """Terms needed to expand the poles ``r2 * [g_lo, g_hi]`` about their midpoint.

    ``0`` when the ratio ``h / (lo - c)`` (half-width over the distance of
    the midpoint ``c`` to the lowest possible root) is above ``_RHO6``.
    Scalars only: an array argument would cost two atomic reference counts
    per call.
    """
    c = 0.5 * r2 * (g_hi + g_lo)
    h = 0.5 * r2 * (g_hi - g_lo)
    dist = lo - c
    if not dist > 0.0:
        return 0
    if h <= _RHO3 * dist:
        return 3
    if h <= _RHO4 * dist:
        return 4
    if h <= _RHO6 * dist:
        return 6
    return 0


@numba.njit(cache=True, nogil=True, inline="always")
def _far_group(gamma, r2, lo):
    """Poles ``kf..kt-1`` summed by moments, and the number of terms.

    Two candidates for ``kt``: ``p``, or ``p`` less a short tail of poles set
    apart by gaps (the near-zero eigenvalues of ``K``, which would otherwise
    double the half-width). For each, ``kf`` is the first pole from which on
    the poles may be expanded: the ratio of :func:`_far_terms` only
    decreases as ``kf`` grows (``gamma`` is decreasing), so one test at the
    last admissible ``kf`` settles that there is none, and otherwise a scan
    from ``1`` stops after a pole or two (the near poles are the few top
    eigenvalues of ``K``). The cheaper plan wins, including the plain sum
    (``kf = kt = p``, no group).
    """
    p = gamma.shape[0]
    kt_gap = p
    while (
        kt_gap > p - _MAX_TAIL
        and kt_gap >= 3
        and gamma[kt_gap - 1] < 0.5 * gamma[kt_gap - 2]
    ):
        kt_gap -= 1
    best_kf = p
    best_kt = p
    best_m = 0
    best_cost = _NEAR_COST * (p - 1)
    for trial in range(2):
        kt = p if trial == 0 else kt_gap
        if trial == 1 and kt_gap == p:
            break
        k_last = kt - _MIN_FAR
        g_end = gamma[kt - 1]
        if k_last < 1 or _far_terms(gamma[k_last], g_end, r2, lo) == 0:
            continue
        kf = 1
        m = _far_terms(gamma[kf], g_end, r2, lo)
        while m == 0:
            kf += 1
            m = _far_terms(gamma[kf], g_end, r2, lo)
        per_pole = _FAR_COST3 if m == 3 else (_FAR_COST4 if m == 4 else _FAR_COST6)
        cost = per_pole * (kt - kf) + _NEAR_COST * (p - 1 - (kt - kf))
        if cost < best_cost:
            best_kf, best_kt, best_m, best_cost = kf, kt, m, cost
    return best_kf, best_kt, best_m


_FM = {"reassoc", "contract"}


@numba.njit(cache=True, nogil=True, error_model="numpy", fastmath=_FM)
def _moments3(gamma, r2, a, b, kf, kt, c, inv_l):
    """Three moments of each of ``a_k^2``, ``b_k^2``, ``a_k b_k``; see
    :func:`_far_moments`."""
    a0 = a1 = a2 = b0 = b1 = b2 = s0 = s1 = s2 = 0.0
    # slices: a loop from 0 lets numba drop the negative-index wrap, which
    # would otherwise turn the loads into gathers
    g = gamma[kf:kt]
    av = a[kf:kt]
    bv = b[kf:kt]
    # w_k = (r2 gamma_k - c) / l; products of (a w^i) and (b w^j) give the
    # moments with one multiplication per power
    scale = r2 * inv_l
    shift = -c * inv_l
    for k in range(kt - kf):
        w = g[k] * scale + shift
        aw = av[k] * w
        bw = bv[k] * w
        a0 += av[k] * av[k]
        a1 += av[k] * aw
        a2 += aw * aw
        b0 += bv[k] * bv[k]
        b1 += bv[k] * bw
        b2 += bw * bw
        s0 += av[k] * bv[k]
        s1 += av[k] * bw
        s2 += aw * bw
    z = 0.0
    return (a0, a1, a2, z, z, z, b0, b1, b2, z, z, z, s0, s1, s2, z, z, z)


@numba.njit(cache=True, nogil=True, error_model="numpy", fastmath=_FM)
def _moments4(gamma, r2, a, b, kf, kt, c, inv_l):
    """Four moments of each; see :func:`_far_moments`."""
    a0 = a1 = a2 = a3 = b0 = b1 = b2 = b3 = s0 = s1 = s2 = s3 = 0.0
    g = gamma[kf:kt]  # slices: see _moments3
    av = a[kf:kt]
    bv = b[kf:kt]
    scale = r2 * inv_l
    shift = -c * inv_l
    for k in range(kt - kf):
        w = g[k] * scale + shift
        aw = av[k] * w
        bw = bv[k] * w
        aw2 = aw * w
        bw2 = bw * w
        a0 += av[k] * av[k]
        a1 += av[k] * aw
        a2 += aw * aw
        a3 += aw * aw2
        b0 += bv[k] * bv[k]
        b1 += bv[k] * bw
        b2 += bw * bw
        b3 += bw * bw2
        s0 += av[k] * bv[k]
        s1 += av[k] * bw
        s2 += aw * bw
        s3 += aw * bw2
    z = 0.0
    return (a0, a1, a2, a3, z, z, b0, b1, b2, b3, z, z, s0, s1, s2, s3, z, z)


@numba.njit(cache=True, nogil=True, error_model="numpy", fastmath=_FM)
def _moments6(gamma, r2, a, b, kf, kt, c, inv_l):
    """Six moments of each; see :func:`_far_moments`."""
    a0 = a1 = a2 = a3 = a4 = a5 = 0.0
    b0 = b1 = b2 = b3 = b4 = b5 = 0.0
    s0 = s1 = s2 = s3 = s4 = s5 = 0.0
    g = gamma[kf:kt]  # slices: see _moments3
    av = a[kf:kt]
    bv = b[kf:kt]
    scale = r2 * inv_l
    shift = -c * inv_l
    for k in range(kt - kf):
        w = g[k] * scale + shift
        aw = av[k] * w
        bw = bv[k] * w
        aw2 = aw * w
        bw2 = bw * w
        aw3 = aw2 * w
        bw3 = bw2 * w
        a0 += av[k] * av[k]
        a1 += av[k] * aw
        a2 += aw * aw
        a3 += aw * aw2
        a4 += aw2 * aw2
        a5 += aw2 * aw3
        b0 += bv[k] * bv[k]
        b1 += bv[k] * bw
        b2 += bw * bw
        b3 += bw * bw2
        b4 += bw2 * bw2
        b5 += bw2 * bw3
        s0 += av[k] * bv[k]
        s1 += av[k] * bw
        s2 += aw * bw
        s3 += aw * bw2
        s4 += aw2 * bw2
        s5 += aw2 * bw3
    return (a0, a1, a2, a3, a4, a5, b0, b1, b2, b3, b4, b5, s0, s1, s2, s3, s4, s5)


@numba.njit(cache=True, nogil=True, inline="always")
def _far_moments(gamma, r2, a, b, kf, kt, c, inv_l, m):
    """Moments ``sum_k v_k w_k^j``, ``w_k = (d_k - c) / l``, ``j < m``.

    ``v_k`` runs over ``a_k^2``, ``b_k^2`` and ``a_k b_k`` for ``k`` in
    ``kf..kt-1``, ``d_k = r2 gamma_k``. Returned as one 18-tuple (six moments
    of each, those past ``m`` zero); one loop per ``m`` so that each
    vectorises with its sums in registers.
    """
    if m <= 3:
        return _moments3(gamma, r2, a, b, kf, kt, c, inv_l)
    if m == 4:
        return _moments4(gamma, r2, a, b, kf, kt, c, inv_l)
    return _moments6(gamma, r2, a, b, kf, kt, c, inv_l)


@numba.njit(cache=True, nogil=True, inline="always")
def _series(m0, m1, m2, m3, m4, m5, s):
    """``sum_j m_j s^j`` and its companion ``sum_j (j + 1) m_j s^j``.

    Trailing zero moments (fewer terms taken) are skipped, which shortens
    the dependency chain of a Newton step without changing a bit.
    """
    if m5 == 0.0 and m4 == 0.0:
        if m3 == 0.0:
            val = m0 + s * (m1 + s * m2)
            der = m0 + s * (2.0 * m1 + s * 3.0 * m2)
        else:
            val = m0 + s * (m1 + s * (m2 + s * m3))
            der = m0 + s * (2.0 * m1 + s * (3.0 * m2 + s * 4.0 * m3))
        return val, der
    val = m0 + s * (m1 + s * (m2 + s * (m3 + s * (m4 + s * m5))))
    der = m0 + s * (
        2.0 * m1 + s * (3.0 * m2 + s * (4.0 * m3 + s * (5.0 * m4 + s * 6.0 * m5)))
    )
    return val, der


@numba.njit(cache=True, nogil=True)
def _top_eigenvalue(gamma, r2, y1, y2, n1, n2, beta, rho, a, b):
    """:func:`top_eigenvalue` given ``n1 = ||y1||^2`` and ``n2 = ||y2||^2``.

    The per-example kernel has both already (``||y2||^2`` is shared by every
    example), which saves a pass over ``p``.
    """
    p = gamma.shape[0]
    norm_a2, da, ab, norm_b2, db, dab = _split_rank2(
        y1, y2, n1, n2, beta, rho, gamma, r2, a, b
    )
    d1 = r2 * gamma[0]
    if p == 1:
        return d1 + a[0] * a[0] - b[0] * b[0]
    d2 = r2 * gamma[1]

    # Lower bounds: d_2 and Rayleigh quotients along e_1 and along a.
    lo = max(d2, d1 + a[0] * a[0] - b[0] * b[0])
    if norm_a2 > 0.0:
        lo = max(lo, (da - ab * ab) / norm_a2 + norm_a2)
    hi = d1 + norm_a2
    if not hi > lo:
        return lo

    # Every iterate stays >= lo, so the far poles are far for all of them.
    kf, kt, m = _far_group(gamma, r2, lo)
    c = 0.0
    dist = 1.0
    if m > 0:
        c = 0.5 * r2 * (gamma[kf] + gamma[kt - 1])
        dist = lo - c
    far = _far_moments(gamma, r2, a, b, kf, kt, c, 1.0 / dist, m)
    a1, b1 = a[0], b[0]
    start = _ritz_start(
        d1,
        a1,
        b1,
        norm_a2 - a1 * a1,
        norm_b2 - b1 * b1,
        ab - a1 * b1,
        da - d1 * a1 * a1,
        db - d1 * b1 * b1,
        dab - d1 * a1 * b1,
    )
    return _newton(gamma, r2, a, b, d1, d2, lo, hi, kf, kt, c, dist, far, start)


@numba.njit(cache=True, nogil=True)
def _hypot(x, y):
    """``sqrt(x^2 + y^2)``: the plain formula where the sum of squares can
    neither overflow nor lose digits to underflow (within an ulp of
    ``np.hypot``, at a fraction of its latency), ``np.hypot`` elsewhere."""
    sq = x * x + y * y
    if _TINY < sq < _HUGE:
        return np.sqrt(sq)
    return np.hypot(x, y)


@numba.njit(cache=True, nogil=True, error_model="numpy", fastmath=_FM)
def _split_rank2(y1, y2, n1, n2, beta, rho, gamma, r2, a, b):
    """Write ``Y B Y^T = a a^T - b b^T`` into ``a`` and ``b``.

    Returns ``||a||^2``, ``a^T D a``, ``a^T b``, ``||b||^2``, ``b^T D b`` and
    ``a^T D b``, summed in the same pass.
    """
    p = gamma.shape[0]
    # Balance the columns: Y B Y^T is unchanged under y1 -> s y1, y2 -> y2 / s,
    # beta -> beta / s^2. Equal column norms keep a a^T - b b^T from being a
    # large cancellation when ||y1|| and ||y2|| differ by orders of magnitude.
    s1 = 1.0
    s2 = 1.0
    if n1 > 0.0 and n2 > 0.0:
        q = np.sqrt(n2 / n1)
        s1 = np.sqrt(q)
        s2 = 1.0 / s1
        beta = beta / q
    # Eigen-decomposition of B = [[beta, rho], [rho, 0]].
    half = 0.5 * beta
    rad = _hypot(half, rho)
    if half >= 0.0:
        bp = half + rad
        bm = -(rho * rho) / bp if bp > 0.0 else 0.0
    else:
        bm = half - rad
        bp = -(rho * rho) / bm
    # eigenvector for eigenvalue e: (e, rho) (or (1, 0)/(0, 1) when rho = 0),
    # taken for the eigenvalue of larger magnitude; the other one is its
    # perpendicular (the sign of a column of Y v is free)
    if rho != 0.0:
        if half >= 0.0:
            n_p = _hypot(bp, rho)
            vp1, vp2 = bp / n_p, rho / n_p
            vm1, vm2 = -vp2, vp1
        else:
            n_m = _hypot(bm, rho)
            vm1, vm2 = bm / n_m, rho / n_m
            vp1, vp2 = vm2, -vm1
    elif beta >= 0.0:
        vp1, vp2, vm1, vm2 = 1.0, 0.0, 0.0, 1.0
    else:
        vp1, vp2, vm1, vm2 = 0.0, 1.0, 1.0, 0.0
    sp = np.sqrt(max(bp, 0.0))
    sm = np.sqrt(max(-bm, 0.0))
    norm_a2 = 0.0
    da = 0.0
    ab = 0.0
    norm_b2 = 0.0
    db = 0.0
    dab = 0.0
    for k in range(p):
        ak = sp * (vp1 * s1 * y1[k] + vp2 * s2 * y2[k])
        bk = sm * (vm1 * s1 * y1[k] + vm2 * s2 * y2[k])
        a[k] = ak
        b[k] = bk
        dk = r2 * gamma[k]
        norm_a2 += ak * ak
        da += dk * ak * ak
        ab += ak * bk
        norm_b2 += bk * bk
        db += dk * bk * bk
        dab += dk * ak * bk
    return norm_a2, da, ab, norm_b2, db, dab


@numba.njit(cache=True, nogil=True, inline="always")
def _ritz_start(d1, a1, b1, saa, sbb, sab, daa, dbb, dab):
    """Newton's start: the largest Ritz value of ``E`` on ``span{e_1, a', b'}``.

    ``a'`` and ``b'`` are ``a`` and ``b`` without their top-pole entries
    ``a1``, ``b1``; the sums over the other entries are ``saa = ||a'||^2``,
    ``sbb``, ``sab = a'^T b'`` and ``daa = a'^T D a'``, ``dbb``, ``dab``. The
    top eigenvector of ``E`` is ``(D - mu)^-1`` times a combination of ``a``
    and ``b``, so where the other poles are far below ``mu`` it nearly lies
    in this span, and the Ritz value (the top eigenvalue of the ``3 x 3``
    matrix of ``E`` on an orthonormal basis of it) is close to ``mu``, which
    saves Newton steps. A Ritz value is a lower bound, at least the Rayleigh
    quotients along ``e_1`` and ``a`` (both in the span), so it never starts
    Newton farther from the root. It only starts it (the caller keeps it
    inside the bracket): the root is the same, and where Newton stops moves
    the results by rounding. ``-inf`` without ``a'``.
    """
    if not saa > 0.0:
        return -np.inf
    ra = np.sqrt(saa)
    t = sab / saa
    m11 = d1 + a1 * a1 - b1 * b1
    m12 = a1 * ra - b1 * sab / ra
    m22 = daa / saa + saa - sab * t
    n3sq = sbb - sab * t  # ||b' - t a'||^2: the third basis vector's length
    if not n3sq > 1e-12 * sbb:  # b' (nearly) along a': the 2 x 2 matrix
        h = 0.5 * (m11 - m22)
        return 0.5 * (m11 + m22) + _hypot(h, m12)
    n3 = np.sqrt(n3sq)
    m13 = -b1 * n3
    m23 = (dab - t * daa) / (ra * n3) - sab / ra * n3
    m33 = (dbb - 2.0 * t * dab + t * t * daa) / n3sq - n3sq
    # the largest root of det(lam I - M) = lam^3 - c2 lam^2 + c1 lam - c0, by
    # Newton from Gershgorin's upper bound, above which the cubic increases
    # and is convex: the iterates decrease to the root
    lam = max(
        m11 + abs(m12) + abs(m13),
        m22 + abs(m12) + abs(m23),
        m33 + abs(m13) + abs(m23),
    )
    c2 = m11 + m22 + m33
    c1 = m11 * m22 + m11 * m33 + m22 * m33 - m12 * m12 - m13 * m13 - m23 * m23
    c0 = (
        m11 * (m22 * m33 - m23 * m23)
        - m12 * (m12 * m33 - m23 * m13)
        + m13 * (m12 * m23 - m22 * m13)
    )
    for _ in range(_RITZ_ITER):
        f = ((lam - c2) * lam + c1) * lam - c0
        df = (3.0 * lam - 2.0 * c2) * lam + c1
        if not df > 0.0:
            break
        step = f / df
        lam -= step
        if step <= _RITZ_RTOL * abs(lam):
            break
    return lam


@numba.njit(cache=True, nogil=True, inline="always")
def _newton(gamma, r2, a, b, d1, d2, lo, hi, kf, kt, c, dist, far, start):
    """Safeguarded Newton iteration for the root of ``tau`` in ``[lo, hi]``.

    It starts from ``start`` (:func:`_ritz_start`) where that lies inside the
    bracket (so above ``d2 <= lo``), else from ``lo``.
    """
    scale = max(abs(hi), abs(lo))
    tol = 4.0 * _EPS * scale
    # tau is defined only strictly above d_2
    mu = lo if lo > d2 else 0.5 * (lo + hi)
    if lo < start < hi:
        mu = start
    for _ in range(_MAX_ITER):
        if mu == d1:
            mu = np.nextafter(d1, np.inf)
        # tau' = dnum / dden > 0 on the branch we follow
        tau, dnum, dden, tr_d, gap = _tau_scaled(
            mu, d1, a[0], b[0], gamma, r2, a, b, kf, kt, c, dist, far
        )
        if tau < 0.0:
            lo = mu
        else:
            hi = mu
        if hi - lo <= tol:
            break
        if dnum > 0.0:
            step = mu - tau * dden / dnum
            corr = abs(step - mu)
            if corr <= tol:
                # converged: the Newton correction is below rounding
                mu = min(max(step, lo), hi)
                break
            if lo < step < hi:
                # Newton's error after this step is at most about C corr^2,
                # C = |tau''| / (2 tau') <= 1 / g + u^T Phi' u / |tau - tau_o|
                # (Phi'' <= 2 Phi' / g termwise) with g the distance to
                # the nearest pole, u the other eigenvector of Phi (its
                # eigenvalue tau_o) and u^T Phi' u = tr(Phi') - tau'. Below
                # eps * scale, the confirming evaluation would move mu by
                # less than rounding: skip it.
                g = min(abs(mu - d1), mu - d2)
                # bound >= 1 / g: a test without divisions first
                if corr * corr <= _EPS * scale * g:
                    slope = dnum / dden
                    bound = 1.0 / g + (tr_d - slope) / gap
                    if corr * corr * bound <= _EPS * scale:
                        mu = step
                        break
            else:
                step = 0.5 * (lo + hi)
        else:
            step = 0.5 * (lo + hi)
        mu = step
    return mu


# ``error_model="numpy"`` drops the division-by-zero branch and ``reassoc``
# lets the six sums be split across SIMD lanes: together they vectorise the
# pole sum, the innermost loop of the engine. Reordering
# the sums moves the result by a few ulps, far inside the tested 1e-8.
# Inlined into _tau_scaled (same flags) by numba: LLVM does not inline calls
# between numba functions, and each call costs reference counts on the arrays.
@numba.njit(cache=True, nogil=True, error_model="numpy", fastmath=_FM, inline="always")
def _pole_sums(mu, gamma, r2, a, b, k0, k1):
    """``sum_k v_k / (d_k - mu)`` and ``sum_k v_k / (d_k - mu)^2``, ``k0 <= k < k1``.

    ``v_k`` runs over ``a_k^2``, ``b_k^2`` and ``a_k b_k``.
    """
    p_r = 0.0
    q_r = 0.0
    s_r = 0.0
    dp_r = 0.0
    dq_r = 0.0
    ds_r = 0.0
    g = gamma[k0:k1]
    av = a[k0:k1]
    bv = b[k0:k1]
    for k in range(k1 - k0):
        inv = 1.0 / (r2 * g[k] - mu)
        inv2 = inv * inv
        aa = av[k] * av[k]
        bb = bv[k] * bv[k]
        ab = av[k] * bv[k]
        p_r += aa * inv
        q_r += bb * inv
        s_r += ab * inv
        dp_r += aa * inv2
        dq_r += bb * inv2
        ds_r += ab * inv2
    return p_r, q_r, s_r, dp_r, dq_r, ds_r


@numba.njit(cache=True, nogil=True, error_model="numpy", fastmath=_FM)
def _tau_scaled(mu, d1, a1, b1, gamma, r2, a, b, kf, kt, c, dist, far):
    """Value and slope of the root function ``tau`` at ``mu``.

    ``Phi(mu) = diag(1, -1) + sum_k [a_k, b_k]^T [a_k, b_k] / (d_k - mu)``,
    ``d_k = r2 * gamma_k``, is a 2x2 symmetric matrix, increasing in ``mu``
    between poles. The largest eigenvalue of ``E`` is the root of ``tau``:
    the larger eigenvalue of ``Phi`` above the top pole ``d1`` and the
    smaller one below it (the two branches meet continuously at ``d1``). The
    pole term of ``d1`` is kept apart so that the determinant stays accurate
    near it: ``det(Phi) = det(Phi_rest) + t y1^T adj(Phi_rest) y1`` exactly,
    the ``t^2`` terms cancelling analytically. Poles ``1..kf-1`` and
    ``kt..p-1`` are summed directly, ``kf..kt-1`` through the moments ``far``
    of :func:`_far_moments` (centre ``c``, ratio denominator ``dist``).

    Returns ``tau``, then ``tau' = dnum / dden`` as the pair ``dnum, dden``
    (the Newton step divides once), then ``tr(Phi')`` and the gap between
    the two eigenvalues of ``Phi`` for the stopping rule of :func:`_newton`.
    """
    p_r, q_r, s_r, dp_r, dq_r, ds_r = _pole_sums(mu, gamma, r2, a, b, 1, kf)
    p = gamma.shape[0]
    if kt < p:
        p2, q2, s2, dp2, dq2, ds2 = _pole_sums(mu, gamma, r2, a, b, kt, p)
        p_r += p2
        q_r += q2
        s_r += s2
        dp_r += dp2
        dq_r += dq2
        ds_r += ds2
    if kt > kf:
        # 1 / (d_k - mu) = -z sum_j (w_k s)^j, w_k = (d_k - c) / dist
        z = 1.0 / (mu - c)
        s = dist * z
        f = far
        va, da = _series(f[0], f[1], f[2], f[3], f[4], f[5], s)
        vb, db = _series(f[6], f[7], f[8], f[9], f[10], f[11], s)
        vs, ds = _series(f[12], f[13], f[14], f[15], f[16], f[17], s)
        z2 = z * z
        p_r -= z * va
        q_r -= z * vb
        s_r -= z * vs
        dp_r += z2 * da
        dq_r += z2 * db
        ds_r += z2 * ds
    p_r += 1.0
    q_r -= 1.0
    t = 1.0 / (d1 - mu)
    det = (
        p_r * q_r
        - s_r * s_r
        + t * (q_r * a1 * a1 - 2.0 * s_r * a1 * b1 + p_r * b1 * b1)
    )
    pp = p_r + t * a1 * a1
    qq = q_r + t * b1 * b1
    ss = s_r + t * a1 * b1
    tr = pp + qq
    # as _hypot(dx, dy)
    dx = pp - qq
    dy = 2.0 * ss
    sq = dx * dx + dy * dy
    disc = np.sqrt(sq) if _TINY < sq < _HUGE else np.hypot(dx, dy)
    # big: the eigenvalue of larger magnitude; the other one, det / big (a
    # division), is needed only on the branch where it is tau
    if tr >= 0.0:
        big = 0.5 * (tr + disc)
        is_big = mu > d1
    else:
        big = 0.5 * (tr - disc)
        is_big = mu < d1
    if is_big:
        tau = big
    else:
        tau = det / big if big != 0.0 else 0.0
    # eigenvector of big, the longer of (ss, big - pp) and (big - qq, ss);
    # tau's is the same or perpendicular to it, so dtau = v^T Phi' v / v^T v
    # does not wait for the division above
    v1 = ss
    v2 = big - pp
    w1 = big - qq
    w2 = ss
    nv = v1 * v1 + v2 * v2
    nw = w1 * w1 + w2 * w2
    if nv < nw:
        v1 = w1
        v2 = w2
        nv = nw
    if not is_big:
        v1, v2 = -v2, v1
    proj1 = t * (v1 * a1 + v2 * b1)
    dtau = v1 * v1 * dp_r + 2.0 * v1 * v2 * ds_r + v2 * v2 * dq_r + proj1 * proj1
    # trace of Phi' (the gap to the other eigenvalue is disc)
    tr_d = dp_r + dq_r + t * t * (a1 * a1 + b1 * b1)
    if not (_TINY < nv < _HUGE and abs(dtau) < _HUGE):
        # normalise first where the squares would overflow or underflow
        nrm = np.hypot(v1, v2)
        if nrm == 0.0:
            v1 = 1.0
            v2 = 0.0
        else:
            v1 /= nrm
            v2 /= nrm
        proj1 = t * (v1 * a1 + v2 * b1)
        dtau = v1 * v1 * dp_r + 2.0 * v1 * v2 * ds_r + v2 * v2 * dq_r + proj1 * proj1
        nv = 1.0
    return tau, dtau, nv, tr_d, disc


@numba.njit(cache=True, nogil=True, parallel=True)
def per_example_fil(
    Z,
    yu_off,
    g_off,
    r,
    c,
    omega2,
    gamma,
    yv,
    beta0,
    trace_k,
    w_feat,
    hdiag,
    feat_col,
    grp_ptr,
    grp_cols,
    grp_rot,
    grp_gamma,
    grp_w,
    grp_col,
    label_col,
    inv_sigma,
    inv_k,
    fil,
    dfil,
    attr,
):
    """Per-example FIL quantities for a chunk, written in place.

    Parameters
    ----------
    Z : ndarray of shape (b, p + d)
        Rows ``[U_K^T H^{-1} x_i, (H^{-2} x_i)_{1..d}]``, C-contiguous: the
        examples in the eigenbasis of ``K = H^{-1} Q H^{-1}`` (``Q`` the
        projector onto the private feature coordinates), then ``H^{-2} x_i``
        restricted to the feature coordinates; call them ``YU`` and ``G``.
        One contiguous block, not two column slices of it: numba knows its
        rows are unit-stride only then, and vectorises the loops over them.
    yu_off, g_off : ndarray of shape (p,) and (d,)
        Added to every row of ``YU`` and ``G``: the intercept's contribution
        ``x_i = [x_i, 1]``, so that no pass over the chunk adds it (zeros
        without an intercept).
    r, c, omega2 : ndarray of shape (b,)
        Residual ``dl/dm``, curvature ``d2l/dm2`` and squared sample weight.
    gamma : ndarray of shape (p,)
        Eigenvalues of ``K`` in decreasing order.
    yv : ndarray of shape (p,)
        ``U_K^T H^{-1} Q w``.
    beta0 : float
        ``||Q w||^2``; the label adds ``1`` to ``c^2 beta0`` when private.
    trace_k : float
        ``Tr(K)``.
    w_feat, hdiag : ndarray of shape (d,)
        Feature weights ``w_j`` and ``(H^{-2})_{jj}``.
    feat_col : ndarray of shape (d,)
        Output column of each plain feature, ``-1`` for one-hot members.
    grp_ptr, grp_cols, grp_rot, grp_gamma, grp_w, grp_col : ndarray
        Constrained one-hot groups, concatenated in order. Group ``g`` of
        size ``m`` owns the feature columns ``grp_cols[grp_ptr[g]:grp_ptr[g +
        1]]``, the eigenvalues ``grp_gamma`` (decreasing) of ``P_g
        (H^{-2})_{GG} P_g`` with eigenvectors ``U_g``, the rotated weights
        ``grp_w = U_g^T P_g w_G`` (same slices), the row-major ``m x m``
        rotation ``U_g^T P_g`` (consecutive blocks of ``grp_rot``) and the
        output column ``grp_col[g]``.
    label_col : int
        Output column of the label, ``-1`` when the label is not private.
    inv_sigma, inv_k : float
        ``1 / sigma`` and ``1 / k`` (``k`` private coordinates).
    fil, dfil : ndarray of shape (b,)
        Outputs: ``eta_i`` and ``bar-eta_i`` (square roots taken here, so the
        n x d report is written once).
    attr : ndarray of shape (b, n_attributes)
        Output: ``eta_ij``.
    """
    n = Z.shape[0]
    p = gamma.shape[0]
    d = w_feat.shape[0]
    n_groups = grp_col.shape[0]
    max_m = 1
    for g in range(n_groups):
        max_m = max(max_m, grp_ptr[g + 1] - grp_ptr[g])
    yv_norm2 = 0.0
    for k in range(p):
        yv_norm2 += yv[k] * yv[k]
    # every feature plain, in order: the attribute loop runs contiguous
    plain = n_groups == 0
    for j in range(d):
        plain = plain and feat_col[j] == j
    # blocks of rows, each with its own work arrays (allocating them per row
    # costs more than the rest of a row's bookkeeping)
    n_blocks = (n + _BLOCK - 1) // _BLOCK
    for blk in numba.prange(n_blocks):
        work = np.empty((4, max(p, d)))
        gw = np.empty((3, max_m))
        for i in range(blk * _BLOCK, min(n, (blk + 1) * _BLOCK)):
            _example_fil(
                i, Z, yu_off, g_off, r, c, omega2, gamma, yv, yv_norm2,
                beta0, trace_k, w_feat, hdiag, feat_col, plain, grp_ptr,
                grp_cols, grp_rot, grp_gamma, grp_w, grp_col, label_col,
                inv_sigma, inv_k, fil, dfil, attr, work, gw,
            )  # fmt: skip


@numba.njit(cache=True, nogil=True, error_model="numpy", fastmath=_FM)
def _shifted_row(Z, i, yu_off, yv, yu):
    """``yu = Z[i, :p] + yu_off``; returns ``||yu||^2`` and ``yu . yv``."""
    p = yu.shape[0]
    a = 0.0
    uv = 0.0
    for k in range(p):
        yk = Z[i, k] + yu_off[k]
        yu[k] = yk
        a += yk * yk
        uv += yk * yv[k]
    return a, uv


@numba.njit(cache=True, nogil=True, inline="always")
def _example_fil(
    i, Z, yu_off, g_off, r, c, omega2, gamma, yv, yv_norm2, beta0,
    trace_k, w_feat, hdiag, feat_col, plain, grp_ptr, grp_cols, grp_rot,
    grp_gamma, grp_w, grp_col, label_col, inv_sigma, inv_k, fil, dfil, attr,
    work, gw,
):  # fmt: skip
    """Row ``i`` of :func:`per_example_fil`, with caller-owned work arrays."""
    p = gamma.shape[0]
    d = w_feat.shape[0]
    yu = work[0, :p]
    a, uv = _shifted_row(Z, i, yu_off, yv, yu)
    ri = r[i]
    ci = c[i]
    label = 1.0 if label_col >= 0 else 0.0
    beta = ci * ci * beta0 + label
    rho = ci * ri
    r2 = ri * ri
    lam = _top_eigenvalue(
        gamma, r2, yu, yv, a, yv_norm2, beta, rho, work[1, :p], work[2, :p]
    )
    fil[i] = np.sqrt(max(omega2[i] * lam, 0.0)) * inv_sigma
    trace = omega2[i] * (r2 * trace_k + beta * a + 2.0 * rho * uv)
    dfil[i] = np.sqrt(max(trace * inv_k, 0.0)) * inv_sigma
    if plain:
        for j in range(d):
            wj = w_feat[j]
            val = omega2[i] * (
                ci * ci * wj * wj * a
                + 2.0 * rho * wj * (Z[i, p + j] + g_off[j])
                + r2 * hdiag[j]
            )
            attr[i, j] = np.sqrt(max(val, 0.0)) * inv_sigma
    else:
        gi = work[3, :d]
        for j in range(d):
            gi[j] = Z[i, p + j] + g_off[j]
        for j in range(d):
            col = feat_col[j]
            if col >= 0:
                wj = w_feat[j]
                val = omega2[i] * (
                    ci * ci * wj * wj * a + 2.0 * rho * wj * gi[j] + r2 * hdiag[j]
                )
                attr[i, col] = np.sqrt(max(val, 0.0)) * inv_sigma
        _group_attributes(
            i, gi, r2, rho, ci * ci * a, omega2[i], inv_sigma, grp_ptr,
            grp_cols, grp_rot, grp_gamma, grp_w, grp_col, attr, gw,
        )  # fmt: skip
    if label_col >= 0:
        attr[i, label_col] = np.sqrt(max(omega2[i] * a, 0.0)) * inv_sigma


@numba.njit(cache=True, nogil=True, inline="always")
def _group_attributes(
    i, gi, r2, rho, beta, omega2_i, inv_sigma, grp_ptr, grp_cols, grp_rot,
    grp_gamma, grp_w, grp_col, attr, gw,
):  # fmt: skip
    """FIL of each constrained one-hot group of row ``i`` (see
    :func:`per_example_fil`); ``gw`` holds three work rows."""
    rot_off = 0
    for g in range(grp_col.shape[0]):
        lo = grp_ptr[g]
        m = grp_ptr[g + 1] - lo
        for s in range(m):
            acc = 0.0
            for t in range(m):
                acc += grp_rot[rot_off + s * m + t] * gi[grp_cols[lo + t]]
            gw[0, s] = acc
        rot_off += m * m
        lam_g = top_eigenvalue(
            grp_gamma[lo : lo + m],
            r2,
            grp_w[lo : lo + m],
            gw[0, :m],
            beta,
            rho,
            gw[1, :m],
            gw[2, :m],
        )
        attr[i, grp_col[g]] = np.sqrt(max(omega2_i * lam_g, 0.0)) * inv_sigma


@numba.njit(cache=True, nogil=True, parallel=True)
def gradient_sums(X, u, v, w):
    """``X^T u``, ``X^T v`` and ``|X|^T |w|`` in one read of ``X``.

    The engine's gradient, its ``X^T omega^2 c r`` and the size of the
    gradient's terms (the stationarity check's scale): three passes over
    ``X`` as BLAS products and an ``abs`` kernel, one here.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Matrix, C-contiguous (rows are read in order).
    u, v, w : ndarray of shape (n,)
        Vectors.

    Returns
    -------
    out : ndarray of shape (3, d)
        The three products, in order.
    """
    n, d = X.shape
    n_blocks = min(n, 64)
    partial = np.zeros((n_blocks, 3, d))
    for blk in numba.prange(n_blocks):
        acc_u = partial[blk, 0]
        acc_v = partial[blk, 1]
        acc_w = partial[blk, 2]
        for i in range(blk * n // n_blocks, (blk + 1) * n // n_blocks):
            ui = u[i]
            vi = v[i]
            wi = abs(w[i])
            row = X[i]
            for j in range(d):
                x = row[j]
                acc_u[j] += x * ui
                acc_v[j] += x * vi
                acc_w[j] += abs(x) * wi
    # partial.sum(axis=0), in the same order, without compiling NumPy's sum
    out = np.zeros((3, d))
    for blk in range(n_blocks):
        for k in range(3):
            for j in range(d):
                out[k, j] += partial[blk, k, j]
    return out


@numba.njit(cache=True, nogil=True, parallel=True)
def gram_column(X, weights, j):
    """``X^T (weights * X[:, j])`` and ``sum(weights * X[:, j])`` in one read of ``X``.

    Column ``j`` of ``X~^T diag(weights) X~`` (``X~ = [X, 1]``): a strided
    gather of ``X[:, j]`` and a product with ``X`` would read ``X`` twice.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Matrix, C-contiguous (rows are read in order).
    weights : ndarray of shape (n,)
        Row weights.
    j : int
        The column, ``0 <= j < d``.

    Returns
    -------
    out : ndarray of shape (d + 1,)
        The column's ``d`` entries over ``X``, then the intercept's.
    """
    n, d = X.shape
    n_blocks = min(n, 64)
    partial = np.zeros((n_blocks, d + 1))
    for blk in numba.prange(n_blocks):
        acc = partial[blk]
        for i in range(blk * n // n_blocks, (blk + 1) * n // n_blocks):
            t = weights[i] * X[i, j]
            row = X[i]
            for k in range(d):
                acc[k] += t * row[k]
            acc[d] += t
    out = np.zeros(d + 1)  # partial.sum(axis=0): see gradient_sums
    for blk in range(n_blocks):
        for k in range(d + 1):
            out[k] += partial[blk, k]
    return out


def _serial(kernel):
    """``kernel`` compiled without ``parallel=True``: its ``prange`` runs as ``range``.

    For the calling thread alone (numba on one thread, as on small data): a
    first call then does not wait for the parallel lowering, about 4 of the
    20 CPU seconds of compiling :func:`per_example_fil` and 2 of the 3 of
    :func:`gradient_sums` (``benchmarks/bench_startup.py`` times a first
    run). Every row and every block's sum is computed as in the parallel
    kernel, so the results are the same, bit for bit. A copy of the function
    under its own name, so that numba caches the two apart.
    """
    func = getattr(kernel, "py_func", kernel)  # a function with NUMBA_DISABLE_JIT
    name = f"{func.__name__}_serial"
    twin = types.FunctionType(func.__code__, func.__globals__, name)
    twin.__qualname__ = name
    twin.__module__ = func.__module__
    twin.__doc__ = f":func:`{func.__name__}` on the calling thread."
    return numba.njit(cache=True, nogil=True)(twin)


gradient_sums_serial = _serial(gradient_sums)
per_example_fil_serial = _serial(per_example_fil)
