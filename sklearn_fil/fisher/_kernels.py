"""numba kernels of the FIL engine: largest eigenvalue of diagonal + rank-2.

Every per-example spectral norm in the engine reduces, after one shared
rotation, to the largest eigenvalue of

.. math::

    E = r^2 \\operatorname{diag}(\\gamma) + Y B Y^\\top, \\qquad
    Y = [y_1, y_2] \\in \\mathbb{R}^{p \\times 2}, \\qquad
    B = \\begin{pmatrix} \\beta & \\rho \\\\ \\rho & 0 \\end{pmatrix},

with ``gamma`` shared by all examples and sorted in decreasing order. ``B``
has at most one positive and one negative eigenvalue, so ``E = D + a a^T - b
b^T``. The kernels find the top eigenvalue exactly (to rounding) by a
safeguarded Newton iteration on a continuous increasing function whose only
root above the second-largest pole is that eigenvalue; see
:func:`top_eigenvalue`.

Nothing here imports scikit-learn or pandas; inputs are contiguous float64
arrays and scalars.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numba
import numpy as np

_EPS = np.finfo(np.float64).eps
_MAX_ITER = 200


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


@numba.njit(cache=True, nogil=True)
def _top_eigenvalue(gamma, r2, y1, y2, n1, n2, beta, rho, a, b):
    """:func:`top_eigenvalue` given ``n1 = ||y1||^2`` and ``n2 = ||y2||^2``.

    The per-example kernel has both already (``||y2||^2`` is shared by every
    example), which saves a pass over ``p``.
    """
    p = gamma.shape[0]
    # Balance the columns: Y B Y^T is unchanged under y1 -> s y1, y2 -> y2 / s,
    # beta -> beta / s^2. Equal column norms keep a a^T - b b^T from being a
    # large cancellation when ||y1|| and ||y2|| differ by orders of magnitude.
    s1 = 1.0
    s2 = 1.0
    if n1 > 0.0 and n2 > 0.0:
        s1 = (n2 / n1) ** 0.25
        s2 = 1.0 / s1
        beta = beta / (s1 * s1)
    # Eigen-decomposition of B = [[beta, rho], [rho, 0]].
    half = 0.5 * beta
    rad = np.hypot(half, rho)
    if half >= 0.0:
        bp = half + rad
        bm = -(rho * rho) / bp if bp > 0.0 else 0.0
    else:
        bm = half - rad
        bp = -(rho * rho) / bm
    # eigenvector for eigenvalue e: (e, rho) (or (1, 0)/(0, 1) when rho = 0)
    if rho != 0.0:
        n_p = np.hypot(bp, rho)
        n_m = np.hypot(bm, rho)
        vp1, vp2 = bp / n_p, rho / n_p
        vm1, vm2 = bm / n_m, rho / n_m
    elif beta >= 0.0:
        vp1, vp2, vm1, vm2 = 1.0, 0.0, 0.0, 1.0
    else:
        vp1, vp2, vm1, vm2 = 0.0, 1.0, 1.0, 0.0
    sp = np.sqrt(max(bp, 0.0))
    sm = np.sqrt(max(-bm, 0.0))
    # a, b and the sums of the Rayleigh quotient along a, in one pass
    norm_a2 = 0.0
    da = 0.0
    ab = 0.0
    for k in range(p):
        ak = sp * (vp1 * s1 * y1[k] + vp2 * s2 * y2[k])
        bk = sm * (vm1 * s1 * y1[k] + vm2 * s2 * y2[k])
        a[k] = ak
        b[k] = bk
        norm_a2 += ak * ak
        da += r2 * gamma[k] * ak * ak
        ab += ak * bk
    d1 = r2 * gamma[0]
    if p == 1:
        return d1 + a[0] * a[0] - b[0] * b[0]
    d2 = r2 * gamma[1]

    # Lower bounds: d_2 and Rayleigh quotients along e_1 and along a.
    lo = max(d2, d1 + a[0] * a[0] - b[0] * b[0])
    if norm_a2 > 0.0:
        lo = max(lo, da / norm_a2 + norm_a2 - ab * ab / norm_a2)
    hi = d1 + norm_a2
    if not hi > lo:
        return lo

    scale = max(abs(hi), abs(lo))
    tol = 4.0 * _EPS * scale
    # Evaluate the bracket ends we may start from; the root function is only
    # defined strictly above d_2.
    mu = lo if lo > d2 else 0.5 * (lo + hi)
    for _ in range(_MAX_ITER):
        if mu == d1:
            mu = np.nextafter(d1, np.inf)
        # the diagonal d_k = r2 * gamma_k for k >= 1 (pole d_1 handled apart)
        tau, dtau = _tau_scaled(mu, d1, a[0], b[0], gamma, r2, a, b)
        if tau < 0.0:
            lo = mu
        else:
            hi = mu
        if hi - lo <= tol:
            break
        if dtau > 0.0:
            step = mu - tau / dtau
            if abs(step - mu) <= tol:
                # converged: the Newton correction is below rounding
                mu = min(max(step, lo), hi)
                break
            if not (lo < step < hi):
                step = 0.5 * (lo + hi)
        else:
            step = 0.5 * (lo + hi)
        mu = step
    return mu


# ``error_model="numpy"`` drops the division-by-zero branch and ``reassoc``
# lets the six sums be split across SIMD lanes: together they vectorise the
# pole sum, the innermost loop of the engine (about 1.7x faster). Reordering
# the sums moves the result by a few ulps, far inside the tested 1e-8.
@numba.njit(
    cache=True, nogil=True, error_model="numpy", fastmath={"reassoc", "contract"}
)
def _tau_scaled(mu, d1, a1, b1, gamma, r2, a, b):
    """Value and derivative of the root function ``tau`` at ``mu``.

    ``Phi(mu) = diag(1, -1) + sum_k [a_k, b_k]^T [a_k, b_k] / (d_k - mu)``,
    ``d_k = r2 * gamma_k``, is a 2x2 symmetric matrix, increasing in ``mu``
    between poles. The largest eigenvalue of ``E`` is the root of ``tau``:
    the larger eigenvalue of ``Phi`` above the top pole ``d1`` and the
    smaller one below it (the two branches meet continuously at ``d1``). The
    pole term of ``d1`` is kept apart so that the determinant stays accurate
    near it: ``det(Phi) = det(Phi_rest) + t y1^T adj(Phi_rest) y1`` exactly,
    the ``t^2`` terms cancelling analytically.
    """
    p_r = 1.0
    q_r = -1.0
    s_r = 0.0
    dp_r = 0.0
    dq_r = 0.0
    ds_r = 0.0
    for k in range(1, gamma.shape[0]):
        inv = 1.0 / (r2 * gamma[k] - mu)
        inv2 = inv * inv
        aa = a[k] * a[k]
        bb = b[k] * b[k]
        ab = a[k] * b[k]
        p_r += aa * inv
        q_r += bb * inv
        s_r += ab * inv
        dp_r += aa * inv2
        dq_r += bb * inv2
        ds_r += ab * inv2
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
    disc = np.hypot(pp - qq, 2.0 * ss)
    big = 0.5 * (tr + disc) if tr >= 0.0 else 0.5 * (tr - disc)
    small = det / big if big != 0.0 else 0.0
    tau = max(big, small) if mu > d1 else min(big, small)
    v1 = ss
    v2 = tau - pp
    w1 = tau - qq
    w2 = ss
    if v1 * v1 + v2 * v2 < w1 * w1 + w2 * w2:
        v1 = w1
        v2 = w2
    nrm = np.hypot(v1, v2)
    if nrm == 0.0:
        v1 = 1.0
        v2 = 0.0
    else:
        v1 /= nrm
        v2 /= nrm
    proj1 = t * (v1 * a1 + v2 * b1)
    dtau = v1 * v1 * dp_r + 2.0 * v1 * v2 * ds_r + v2 * v2 * dq_r + proj1 * proj1
    return tau, dtau


@numba.njit(cache=True, nogil=True, parallel=True)
def per_example_fil(
    YU,
    G,
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
    YU : ndarray of shape (b, p)
        Rows ``U_K^T H^{-1} x_i``: the examples in the eigenbasis of ``K =
        H^{-1} Q H^{-1}`` (``Q`` the projector onto the private feature
        coordinates).
    G : ndarray of shape (b, d)
        Rows ``(H^{-2} x_i)`` restricted to the feature coordinates.
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
    n, p = YU.shape
    d = G.shape[1]
    n_groups = grp_col.shape[0]
    label = 1.0 if label_col >= 0 else 0.0
    max_m = 1
    for g in range(n_groups):
        max_m = max(max_m, grp_ptr[g + 1] - grp_ptr[g])
    yv_norm2 = 0.0
    for k in range(p):
        yv_norm2 += yv[k] * yv[k]
    for i in numba.prange(n):
        work_a = np.empty(p)
        work_b = np.empty(p)
        yu = np.empty(p)
        a = 0.0
        uv = 0.0
        for k in range(p):
            yk = YU[i, k] + yu_off[k]
            yu[k] = yk
            a += yk * yk
            uv += yk * yv[k]
        ri = r[i]
        ci = c[i]
        beta = ci * ci * beta0 + label
        rho = ci * ri
        r2 = ri * ri
        lam = _top_eigenvalue(gamma, r2, yu, yv, a, yv_norm2, beta, rho, work_a, work_b)
        fil[i] = np.sqrt(max(omega2[i] * lam, 0.0)) * inv_sigma
        trace = omega2[i] * (r2 * trace_k + beta * a + 2.0 * rho * uv)
        dfil[i] = np.sqrt(max(trace * inv_k, 0.0)) * inv_sigma
        gi = np.empty(d)
        for j in range(d):
            gi[j] = G[i, j] + g_off[j]
        for j in range(d):
            col = feat_col[j]
            if col >= 0:
                wj = w_feat[j]
                val = omega2[i] * (
                    ci * ci * wj * wj * a + 2.0 * rho * wj * gi[j] + r2 * hdiag[j]
                )
                attr[i, col] = np.sqrt(max(val, 0.0)) * inv_sigma
        if n_groups > 0:
            gw = np.empty(max_m)
            ga = np.empty(max_m)
            gb = np.empty(max_m)
            rot_off = 0
            for g in range(n_groups):
                lo = grp_ptr[g]
                m = grp_ptr[g + 1] - lo
                for s in range(m):
                    acc = 0.0
                    for t in range(m):
                        acc += grp_rot[rot_off + s * m + t] * gi[grp_cols[lo + t]]
                    gw[s] = acc
                rot_off += m * m
                lam_g = top_eigenvalue(
                    grp_gamma[lo : lo + m],
                    r2,
                    grp_w[lo : lo + m],
                    gw[:m],
                    ci * ci * a,
                    rho,
                    ga,
                    gb,
                )
                attr[i, grp_col[g]] = np.sqrt(max(omega2[i] * lam_g, 0.0)) * inv_sigma
        if label_col >= 0:
            attr[i, label_col] = np.sqrt(max(omega2[i] * a, 0.0)) * inv_sigma


@numba.njit(cache=True, nogil=True, parallel=True)
def abs_rmatvec(X, v):
    """``|X|^T |v|`` without an ``n x d`` copy of ``|X|``.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Matrix, fastest C-contiguous (rows are read in order).
    v : ndarray of shape (n,)
        Vector.

    Returns
    -------
    out : ndarray of shape (d,)
    """
    n, d = X.shape
    n_blocks = min(n, 64)
    partial = np.zeros((n_blocks, d))
    for blk in numba.prange(n_blocks):
        acc = partial[blk]
        for i in range(blk * n // n_blocks, (blk + 1) * n // n_blocks):
            vi = abs(v[i])
            for j in range(d):
                acc[j] += abs(X[i, j]) * vi
    out = np.zeros(d)
    for blk in range(n_blocks):
        for j in range(d):
            out[j] += partial[blk, j]
    return out
