"""numba kernel of the FIL accounting of DP-SGD for (multinomial) logistic models.

For a network without hidden layers the input-Jacobian columns of the
clipped per-example gradient have a closed form in per-example scalars and
the weight rows ``W_j``; the kernel evaluates ``||J_i e_j||^2`` for every
example of a batch and every requested coordinate in one pass, with no
temporaries (the generic forward-over-reverse code in
:mod:`sklearn_fil.neural._network` builds several ``batch x coordinates x
classes`` arrays instead).
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numba
import numpy as np


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

    and the clipped gradient ``c g`` has ``||d(c g)||^2 = c^2 ||dg||^2 + (g .
    dg)^2 (2 c c' / ||g|| + c'^2)``.
    """
    b, d = X.shape
    K = W.shape[1]
    m = coords.shape[0]
    tiny = np.finfo(np.float64).tiny
    for i in numba.prange(b):
        S = np.empty((K, K))
        if K == 1:
            S[0, 0] = P[i, 0] * (1.0 - P[i, 0])
        else:
            for k in range(K):
                for q in range(K):
                    S[k, q] = -P[i, k] * P[i, q]
                S[k, k] += P[i, k]
        v = np.zeros(K)  # S delta
        d_sq = 0.0
        for k in range(K):
            d_sq += D[i, k] * D[i, k]
            for q in range(K):
                v[k] += S[k, q] * D[i, q]
        S2 = np.zeros((K, K))
        for k in range(K):
            for q in range(K):
                for r in range(K):
                    S2[k, q] += S[k, r] * S[r, q]
        A = 1.0
        for t in range(d):
            A += X[i, t] * X[i, t]
        ci = c[i]
        cross = 2.0 * ci * dc[i] / max(norms[i], tiny) + dc[i] * dc[i]
        for jj in range(m):
            j = coords[jj]
            dd = 0.0
            dq = 0.0
            for k in range(K):
                dd += v[k] * W[j, k]
                row = 0.0
                for q in range(K):
                    row += S2[k, q] * W[j, q]
                dq += W[j, k] * row
            x = X[i, j]
            gg = d_sq + 2.0 * x * dd + A * dq
            gdg = x * d_sq + A * dd
            out[i, jj] = ci * ci * gg + gdg * gdg * cross
