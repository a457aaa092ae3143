"""numba kernels of DP-SGD for (multinomial) logistic models, and its update.

For a network without hidden layers the input-Jacobian columns of the
clipped per-example gradient have a closed form in per-example scalars and
the weight rows ``W_j``; the kernel evaluates ``||J_i e_j||^2`` for every
example of a batch and every requested coordinate in one pass, with no
temporaries (the generic forward-over-reverse code in
:mod:`sklearn_fil.neural._network` builds several ``batch x coordinates x
classes`` arrays instead).

:func:`binary_clipped_sum` is a whole step's clipped sum of binary logistic
regression, each sampled row of the data read once.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import math

import numba
import numpy as np

_TINY = np.finfo(np.float64).tiny
_SQRT1_2 = math.sqrt(0.5)
# As sklearn_fil.neural._network._DIRECT_FLOOR: the direct sum of squares of a
# row is exact to rounding when at least this fraction of ||x||^2 + 1.
_DIRECT_FLOOR = 2.0**-1000
# Clipping codes of binary_clipped_sum.
CLIP_NONE, CLIP_HARD, CLIP_GELU = 0, 1, 2


@numba.njit(cache=True, nogil=True, inline="always")
def _row_setup(i, X, xi, W, P, D, norms, c, dc, S, S2, v):
    """Per-example scalars of the closed form; fills ``S``, ``S2``, ``v``.

    Example ``i`` of the batch is row ``xi`` of ``X``.
    """
    K = W.shape[1]
    if K == 1:
        S[0, 0] = P[i, 0] * (1.0 - P[i, 0])
    else:
        for k in range(K):
            for q in range(K):
                S[k, q] = -P[i, k] * P[i, q]
            S[k, k] += P[i, k]
    d_sq = 0.0
    for k in range(K):
        v[k] = 0.0
        d_sq += D[i, k] * D[i, k]
        for q in range(K):
            v[k] += S[k, q] * D[i, q]
    for k in range(K):
        for q in range(K):
            acc = 0.0
            for r in range(K):
                acc += S[k, r] * S[r, q]
            S2[k, q] = acc
    A = 1.0
    for t in range(X.shape[1]):
        A += X[xi, t] * X[xi, t]
    radial = c[i] + dc[i] * norms[i]
    return d_sq, A, c[i] * c[i], radial * radial, 1.0 / max(norms[i], _TINY)


@numba.njit(cache=True, nogil=True, inline="always")
def _column_value(xi, j, X, W, S2, v, d_sq, A, c2, r2, inv_norm):
    """``||J_i e_j||^2`` from the per-example scalars."""
    K = W.shape[1]
    if K == 1:  # binary: scalars, no loops in the innermost position
        w = W[j, 0]
        dd = v[0] * w
        dq = S2[0, 0] * w * w
    else:
        dd = 0.0
        dq = 0.0
        for k in range(K):
            dd += v[k] * W[j, k]
            row = 0.0
            for q in range(K):
                row += S2[k, q] * W[j, q]
            dq += W[j, k] * row
    x = X[xi, j]
    u = (x * d_sq + A * dd) * inv_norm
    u_sq = u * u
    # As clipped_tangent_sq_norm in _network: two non-negative terms.
    return c2 * max(d_sq + 2.0 * x * dd + A * dq - u_sq, 0.0) + r2 * u_sq


@numba.njit(cache=True, nogil=True, parallel=True)
def linear_jacobian_sq_norms(X, coords, W, P, D, norms, c, dc, out):
    """``||J_i e_j||^2`` of the clipped gradient of a one-layer model.

    Parameters
    ----------
    X : ndarray of shape (b, d)
        The batch.
    coords : ndarray of int of shape (m,)
        Input coordinates ``j``.
    W : ndarray of shape (d, K)
        Weights (``K = 1``: binary, sigmoid output; else softmax).
    P : ndarray of shape (b, K)
        Predicted probabilities (the sigmoid for ``K = 1``).
    D : ndarray of shape (b, K)
        Output errors ``P - Y``.
    norms, c, dc : ndarray of shape (b,)
        Gradient norms, clip factors and their derivatives.
    out : ndarray of shape (b, m)
        Written in place.

    Notes
    -----
    With ``S_i = diag(p_i) - p_i p_i^T`` (``s (1 - s)`` when ``K = 1``) the
    output error moves along ``e_j`` as ``S_i W_j``, and with ``A_i = ||x_i||^2
    + 1`` (the bias)::

        ||dg||^2 = ||delta||^2 + 2 x_ij (S delta) . W_j + A (W_j^T S^2 W_j)
        g . dg   = x_ij ||delta||^2 + A (S delta) . W_j

    and with ``u = g . dg / ||g||`` the clipped gradient ``c g`` has
    ``||d(c g)||^2 = c^2 (||dg||^2 - u^2) + (c + c' ||g||)^2 u^2``, the first
    difference clamped at zero (see
    :func:`sklearn_fil.neural._network.clipped_tangent_sq_norm`).
    """
    K = W.shape[1]
    for i in numba.prange(X.shape[0]):
        S, S2, v = np.empty((K, K)), np.empty((K, K)), np.empty(K)
        d_sq, A, c2, r2, inv_norm = _row_setup(i, X, i, W, P, D, norms, c, dc, S, S2, v)
        for jj in range(coords.shape[0]):
            out[i, jj] = _column_value(
                i, coords[jj], X, W, S2, v, d_sq, A, c2, r2, inv_norm
            )


@numba.njit(cache=True, nogil=True, inline="always")
def _fil_accumulate_row(
    i, X, coords, W, P, D, norms, c, dc, rows, scale, trace_factor, trace, attr, whole
):
    """Example ``i``'s part of :func:`linear_fil_accumulate`."""
    K = W.shape[1]
    S, S2, v = np.empty((K, K)), np.empty((K, K)), np.empty(K)
    r = rows[i]
    xi = np.int64(i)  # one integer type for both (numba would unify to float)
    if whole:
        xi = np.int64(r)
    d_sq, A, c2, r2, inv_norm = _row_setup(i, X, xi, W, P, D, norms, c, dc, S, S2, v)
    total = 0.0
    for jj in range(coords.shape[0]):
        j = coords[jj]
        value = _column_value(xi, j, X, W, S2, v, d_sq, A, c2, r2, inv_norm)
        total += value
        if attr.shape[0] > 0:
            attr[r, j] += scale * value
    trace[r] += scale * trace_factor * total


@numba.njit(cache=True, nogil=True, parallel=True)
def linear_fil_accumulate(
    X, coords, W, P, D, norms, c, dc, rows, scale, trace_factor, trace, attr, whole
):
    """Add one step's Fisher information to the accumulators, in place.

    ``trace[rows[i]] += scale * trace_factor * sum_j ||J_i e_j||^2`` and, when
    ``attr`` has rows, ``attr[rows[i], coords[j]] += scale * ||J_i e_j||^2``:
    :func:`linear_jacobian_sq_norms` without the batch x coordinates temporary.
    ``rows`` must be distinct (a batch). ``X`` is the batch, or with
    ``whole`` the whole data, whose rows ``rows`` are the batch. The
    examples are spread over numba's threads; see
    :func:`linear_fil_accumulate_serial` for few coordinates.
    """
    for i in numba.prange(rows.shape[0]):
        _fil_accumulate_row(
            i, X, coords, W, P, D, norms, c, dc, rows, scale, trace_factor, trace,
            attr, whole,
        )  # fmt: skip


@numba.njit(cache=True, nogil=True)
def linear_fil_accumulate_serial(
    X, coords, W, P, D, norms, c, dc, rows, scale, trace_factor, trace, attr, whole
):
    """:func:`linear_fil_accumulate` on the calling thread (the same values).

    For a few coordinates a step's work is a fraction of a millisecond, less
    than a parallel region costs.
    """
    for i in range(rows.shape[0]):
        _fil_accumulate_row(
            i, X, coords, W, P, D, norms, c, dc, rows, scale, trace_factor, trace,
            attr, whole,
        )  # fmt: skip


@numba.njit(cache=True, nogil=True)
def standard_normal_block(generator, out):
    """Fill ``out`` with standard normal deviates of ``generator``, in order.

    numba's ``Generator.standard_normal`` is NumPy's ziggurat on the same bit
    generator: the deviates are those of ``generator.standard_normal(out.size)``
    (tested), without NumPy's per-call overhead.
    """
    for i in range(out.shape[0]):
        out[i] = generator.standard_normal()


@numba.njit(cache=True, nogil=True)
def noisy_sgd_block(
    start,
    stop,
    noise_std,
    noise,
    grads,
    params,
    velocity,
    n_decayed,
    divisor,
    learning_rate,
    momentum,
    alpha,
):
    """The noisy SGD step of the flat coordinates ``start:stop``, in place.

    For each coordinate ``i``: the released gradient ``r = (grads[i] +
    noise_std noise[i]) / divisor`` (``noise`` unread when ``noise_std`` is
    0) is written back to ``grads[i]``; the update ``u = r + alpha params[i]``
    (weight decay only for ``i < n_decayed``, the weights) goes through the
    heavy-ball velocity ``v = momentum v + u`` (``velocity`` unused when
    ``momentum`` is 0), and ``params[i] -= learning_rate v``. One pass over
    the block, no temporaries.
    """
    split = min(max(n_decayed, start), stop)
    for lo, hi, decayed in ((start, split, True), (split, stop, False)):
        for i in range(lo, hi):
            g = grads[i]
            if noise_std != 0.0:
                g += noise_std * noise[i]
            g /= divisor
            grads[i] = g
            if decayed:
                g += alpha * params[i]
            if momentum != 0.0:
                g += momentum * velocity[i]
                velocity[i] = g
            params[i] -= learning_rate * g


@numba.njit(cache=True, nogil=True, inline="always")
def _ndtr(a):
    """``Phi(a)`` by the branches of SciPy's ``ndtr`` (cephes), libm's erf/erfc.

    Within 1e-15 relative of :func:`scipy.special.ndtr` for ``a >= -1`` (the
    arguments of the GELU clip factor): the two erf implementations differ
    by an ulp or so.
    """
    x = a * _SQRT1_2
    z = abs(x)
    if z < _SQRT1_2:
        return 0.5 + 0.5 * math.erf(x)
    y = 0.5 * math.erfc(z)
    return 1.0 - y if x > 0.0 else y


@numba.njit(cache=True, nogil=True)
def binary_clipped_sum(
    X, Y, rows, w, b, max_grad_norm, clipping, grad_w, norms, c, z, delta, sq, gathered
):
    """One step's clipped gradient sum of binary logistic regression, in place.

    For each ``r = rows[i]``: the margin ``z = X[r] . w + b``, the error
    ``delta = expit(z) - Y[r, 0]``, the gradient norm ``||g|| = |delta|
    sqrt(||X[r]||^2 + 1)`` (weights and bias), the clip factor ``c`` of
    :func:`~sklearn_fil.neural._network.clip_factor` (``clipping``: one of
    ``CLIP_NONE``, ``CLIP_HARD``, ``CLIP_GELU``), and ``grad_w += c delta
    X[r]``, the bias gradient ``+= c delta``: the general path's forward,
    backward, norms and weighted sum, with each row read once (the sum
    added while the row is in cache) and no gathered copy of the batch
    unless ``gathered`` asks for one.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        The whole training data (C order).
    Y : ndarray of shape (n, 1)
        0/1 labels.
    rows : ndarray of int of shape (b,)
        The batch.
    w : ndarray of shape (d,)
        Weights.
    b, max_grad_norm : float
        Bias and clipping bound ``C``.
    clipping : int
        Clipping code.
    grad_w : ndarray of shape (d,)
        Overwritten with the clipped sum of the weight gradients.
    norms, c, z, delta, sq : ndarray of shape (b,)
        Overwritten with each example's gradient norm, clip factor, margin,
        error and ``||X[r]||^2``.
    gathered : ndarray of shape (b, d) or (0, d)
        Overwritten with the rows of the batch, if it has rows (for the FIL
        accounting, which needs them); else not written.

    Returns
    -------
    grad_b : float
        The clipped sum of the bias gradients.
    exact : bool
        False, and the outputs incomplete, when a norm is not finite or its
        sum of squares may have lost squares to underflow (see
        :func:`~sklearn_fil.neural._network._direct_norms`): the general
        path must take the step (it computes scaled norms, or raises).
    """
    grad_w[:] = 0.0
    grad_b = 0.0
    C = max_grad_norm
    d = X.shape[1]
    keep = gathered.shape[0] > 0
    for i in range(rows.shape[0]):
        r = rows[i]
        x = X[r]
        # BLAS dot products: a loop would add in order, one term at a time
        # (floating-point sums are not reordered), three times slower
        margin = np.dot(x, w) + b
        x_sq = sq[i] = np.dot(x, x)
        error = 1.0 / (1.0 + math.exp(-margin)) - Y[r, 0]
        weight = x_sq + 1.0
        g_sq = weight * (error * error)
        # an exact zero (error = 0) is exact; NaN fails the first test
        if not g_sq < math.inf or (g_sq < _DIRECT_FLOOR * weight and error != 0.0):
            return grad_b, False
        norm = math.sqrt(g_sq)
        if clipping == CLIP_HARD:
            factor = C / norm if norm > C else 1.0
        elif clipping == CLIP_GELU:
            u = norm / C - 1.0
            factor = 1.0 / (u * _ndtr(u) + 1.0)
        else:
            factor = 1.0
        norms[i] = norm
        c[i] = factor
        z[i] = margin
        delta[i] = error
        wd = error * factor
        for j in range(d):
            if keep:
                gathered[i, j] = x[j]
            grad_w[j] += x[j] * wd
        grad_b += wd
    return grad_b, True
