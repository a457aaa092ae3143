"""Per-example gradients, their clipping and their input Jacobians for DP-SGD.

The network is ``z_l = a_{l-1} W_l + b_l``, ``a_l = act(z_l)`` for the hidden
layers and a sigmoid (one output) or softmax output. The per-example gradient
of layer ``l`` is the outer product ``a_{l-1,i} delta_{l,i}^T``, so its
squared norm is ``(||a_{l-1,i}||^2 + 1) ||delta_{l,i}||^2`` with the bias, and
the clipped sum ``sum_i c_i g_i`` is ``a_{l-1}^T (c * delta_l)``: nothing of
size ``batch x n_parameters`` is ever formed.

The Fisher information of a DP-SGD step about example ``i``'s features needs
``J_i = d g~_i / d x_i`` for the clipped gradient ``g~_i = c(||g_i||) g_i``.
Its column for input coordinate ``j`` is a Jacobian-vector product of the
backward pass (forward-over-reverse): the tangents of the activations and of
the backpropagated errors along ``e_j``, contracted layer by layer with the
same outer-product structure, give ``||J_i e_j||^2`` without forming
``J_i``.

Every function computes in the array namespace of its input: NumPy (with
SciPy's special functions and, for one-layer models, the numba kernel of
:mod:`sklearn_fil.neural._kernels`), or any array-API namespace (CuPy on a
GPU) through the generic forward-over-reverse code, with sums of products
in place of ``einsum`` and stable ``xp`` versions of the logistic functions.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import math

import numpy as np

from sklearn_fil import _backend
from sklearn_fil._network import DenseNetwork

_SQRT_2PI = math.sqrt(2.0 * math.pi)
_TINY = float(np.finfo(np.float64).tiny)
# Entries (batch x coordinates x width) of one chunk of Jacobian-vector products.
_TANGENT_ENTRIES = 2**22
# The tangent of ``act'(z)`` along ``da`` (the tangent of ``a = act(z)``) for
# the input Jacobians; None where ``act'`` is locally constant. The logistic
# one is not written: its Jacobians raise.
SLOPE_TANGENTS = {
    "tanh": lambda a, da: -2.0 * a * da,
    "relu": None,
    "identity": None,
}


def gelu(x, xp=None):
    """``x * Phi(x)``, Phi the standard normal distribution function.

    ``xp`` is the namespace of ``x`` (inferred when None); Phi is exact in
    every namespace or raises, see :func:`sklearn_fil._backend.ndtr`.
    """
    xp = _backend.namespace_of(x) if xp is None else xp
    return x * _backend.ndtr(x, xp)


def gelu_prime(x, xp=None):
    """Derivative of :func:`gelu`: ``Phi(x) + x phi(x)``."""
    xp = _backend.namespace_of(x) if xp is None else xp
    # phi(x) underflows to 0 beyond |x| = 40; clamping there keeps x * x
    # from overflowing for huge gradient norms (the product is 0 either way).
    xc = xp.minimum(xp.maximum(x, -40.0), 40.0)
    return _backend.ndtr(x, xp) + x * xp.exp(-0.5 * xc * xc) / _SQRT_2PI


def clip_factor(norm, max_grad_norm, clipping, xp=None):
    """Scale ``c`` of each gradient and its derivative ``dc / d||g||``.

    ``"hard"``: ``min(1, C / ||g||)`` (derivative taken where it exists);
    ``"gelu"``: ``1 / (GELU(||g|| / C - 1) + 1)``; ``None``: no clipping.
    ``xp`` is the namespace of ``norm`` (inferred when None).
    """
    xp = _backend.namespace_of(norm) if xp is None else xp
    C = max_grad_norm
    if clipping is None:
        return xp.ones_like(norm), xp.zeros_like(norm)
    if clipping == "hard":
        over = norm > C
        safe = xp.where(over, norm, 1.0)
        # -(C / |g|) / |g|, not -C / |g|^2: no overflow for huge norms
        return xp.where(over, C / safe, 1.0), xp.where(over, -(C / safe) / safe, 0.0)
    u = norm / C - 1.0
    denom = gelu(u, xp) + 1.0
    return 1.0 / denom, -(gelu_prime(u, xp) / (C * denom)) / denom


def check_finite_norms(norms, xp=None):
    """Raise a ValueError unless every gradient norm is finite.

    A non-finite norm from :meth:`Network.grad_norms` means a per-example
    gradient that is itself not finite (or whose norm exceeds the float
    range): clipping cannot bound it, and dropping it silently would change
    the sum without notice.
    """
    xp = _backend.namespace_of(norms) if xp is None else xp
    if not bool(xp.all(xp.isfinite(norms))):
        raise ValueError(NON_FINITE_GRADIENT)


NON_FINITE_GRADIENT = (
    "A per-example gradient is not finite (or its norm overflows float64): "
    "the features or the weights are too large for the forward pass. Scale "
    "the features (e.g. StandardScaler) or lower the learning rate."
)


def clipped_tangent_sq_norm(gg, g_dg, norms, c, dc, xp):
    """``||d(c g)||^2`` along one tangent, from ``||dg||^2`` and ``g . dg``.

    With ``u = g . dg / ||g||`` the tangent splits into ``dg_perp``, orthogonal
    to ``g``, and ``u g / ||g||``; the clip factor moves only with the
    radial part, so::

        d(c g) = c dg_perp + (c + c' ||g||) u g / ||g||
        ||d(c g)||^2 = c^2 (||dg||^2 - u^2) + (c + c' ||g||)^2 u^2

    Both terms are non-negative, unlike the expanded ``c^2 ||dg||^2 + (g .
    dg)^2 (2 c c' / ||g|| + c'^2)``, which for a hard-clipped gradient
    (``c + c' ||g|| = 0``: its norm stays ``C``) cancels ``c^2 u^2`` against
    itself and can come out negative. ``||dg||^2 >= u^2`` (Cauchy-Schwarz);
    the computed difference can fall below zero only by the rounding of its
    two terms, a few units in the last place of ``||dg||^2``, and is clamped
    at zero.

    Parameters
    ----------
    gg, g_dg : ndarray
        ``||dg||^2`` and ``g . dg``, broadcastable with the others.
    norms, c, dc : ndarray
        Gradient norms ``||g||``, clip factors and their derivatives
        ``dc / d||g||`` (see :func:`clip_factor`).
    xp : namespace
        Array namespace of the inputs.

    Returns
    -------
    sq : ndarray
    """
    u = g_dg / xp.maximum(norms, _TINY)
    u_sq = u * u
    radial = c + dc * norms
    return c * c * xp.maximum(gg - u_sq, 0.0) + radial * radial * u_sq


# Accept the direct sums of squares of a row when they are at least this
# fraction of max_l (||a_l||^2 + 1): see _direct_norms.
_DIRECT_FLOOR = 2.0**-1000


def _direct_norms(acts, deltas):
    """``||g_i||`` from plain sums of squares, or None where that is not exact.

    ``||g_i||^2 = sum_l (||a_l,i||^2 + 1) ||delta_l,i||^2``, computed
    directly (NumPy). Overflow anywhere leaves a non-finite sum; underflow
    only loses squares below ``2^-1022`` from ``||delta_l,i||^2``, an absolute
    error of at most ``n_l 2^-1074`` scaled by ``||a_l,i||^2 + 1``. So when
    every row's sum is finite and at least ``2^-1000 max_l (||a_l,i||^2 +
    1)``, it is exact to rounding (relative error below ``n_l 2^-74`` from
    underflow) and is returned; otherwise None, and the caller computes the
    scaled norms (which are also right for rows that are exactly zero).
    """
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        sq = bound = None
        for a, d in zip(acts, deltas, strict=True):
            weight = np.einsum("ij,ij->i", a, a) + 1.0
            term = weight * np.einsum("ij,ij->i", d, d)
            sq = term if sq is None else sq + term
            bound = weight if bound is None else np.maximum(bound, weight)
        if not np.all(sq >= _DIRECT_FLOOR * bound) or not np.all(np.isfinite(sq)):
            return None
        return np.sqrt(sq)


def _inner(spec, a, b, xp):
    """Inner products over the last axis, ``np.einsum(spec, a, b)``.

    ``spec`` is one of ``"ij,ij->i"``, ``"ij,imj->im"`` and ``"imj,imj->im"``;
    outside NumPy a sum of products (the array API has no ``einsum``).
    """
    if xp is np:
        return np.einsum(spec, a, b)
    if a.ndim < b.ndim:
        a = a[:, None, :]
    return xp.sum(a * b, axis=-1)


class Network(DenseNetwork):
    """Weights of a dense network and its per-example DP-SGD computations.

    The passes of :class:`~sklearn_fil._network.DenseNetwork`, plus the
    per-example gradient norms, the clipped sums and the input Jacobians of
    the clipped gradients.

    Parameters
    ----------
    coefs, intercepts : list of ndarray
        ``W_l`` of shape ``(n_{l-1}, n_l)`` and ``b_l`` of shape ``(n_l,)``.
    activation : {"tanh", "relu", "logistic", "identity"}
        Hidden activation; the input Jacobians need ``"tanh"``, ``"relu"``
        or ``"identity"``.
    xp : module, default=None
        Array namespace of the weights and of the data; None infers it from
        ``coefs[0]``. NumPy computes with SciPy and numba; any other namespace
        with the generic array-API code.
    """

    def grad_norms(self, acts, deltas):
        """Per-example gradient norms ``||g_i||`` over all weights and biases.

        NumPy first tries the direct sums of squares (:func:`_direct_norms`)
        and keeps them when every row's is exact to rounding; otherwise, and
        in every other namespace, the norms are computed overflow-safe: each
        layer's ``||a||`` and ``||delta||`` are computed from the rows scaled
        by their largest entry (``max(|a|, 1)`` for the activations, whose
        bias entry is 1), and the layers are combined relative to the
        largest gradient entry ``M_i``, so the result is
        finite whenever ``||g_i||`` is representable (rows of ``1e200`` give
        a finite norm, not ``inf``, and are clipped, not dropped). A
        gradient with a non-finite entry, or a norm beyond the float range,
        gives a non-finite norm: see :func:`check_finite_norms`.
        """
        xp = self.xp
        if xp is np:
            norms = _direct_norms(acts, deltas)
            if norms is not None:
                return norms
        layers = []
        top = None
        for a, d in zip(acts, deltas, strict=True):
            ma = xp.maximum(xp.max(xp.abs(a), axis=1), 1.0)
            md = xp.max(xp.abs(d), axis=1)
            m = ma * md  # the largest |entry| of this layer's gradient
            layers.append((a, d, ma, md, m))
            top = m if top is None else xp.maximum(top, m)
        scale = xp.where(top > 0, top, 1.0)
        sq = None
        for a, d, ma, md, m in layers:
            md_safe = xp.where(md > 0, md, 1.0)
            an = a / ma[:, None]
            dn = d / md_safe[:, None]
            rel = m / scale
            inv = 1.0 / ma
            term = (
                (_inner("ij,ij->i", an, an, xp) + inv * inv)
                * _inner("ij,ij->i", dn, dn, xp)
                * (rel * rel)
            )
            sq = term if sq is None else sq + term
        return scale * xp.sqrt(sq)

    def weighted_sum(self, acts, deltas, weights, out=None):
        """``sum_i weights_i g_i`` as per-layer (coef, intercept) gradients.

        ``out`` (NumPy): per-layer ``(coef, intercept)`` arrays written in
        place and returned.
        """
        if out is None:
            out = []
            for a, d in zip(acts, deltas, strict=True):
                wd = d * weights[:, None]
                out.append((a.T @ wd, self.xp.sum(wd, axis=0)))
            return out
        for a, d, (gW, gb) in zip(acts, deltas, out, strict=True):
            wd = d * weights[:, None]
            np.matmul(a.T, wd, out=gW)
            np.sum(wd, axis=0, out=gb)
        return out

    def label_sq_norm(self, acts, deltas, norms, c, dc, x_sq=None):
        """Trace of ``J_y^T J_y`` of the clipped gradient about the label.

        The label enters only through the output error ``delta_L = p - y``
        (``d delta_L / dy = -I``), so its tangents run backward alone. A
        binary label is one coordinate; a one-hot label moves on the tangent
        space of its constraint (values sum to one), whose trace is ``sum_k
        ||J e_k||^2 - ||J 1||^2 / K``.

        Parameters
        ----------
        acts, deltas : list of ndarray
            Forward and backward pass of the batch.
        norms, c, dc : ndarray of shape (b,)
            Gradient norms, clip factors and their derivatives.
        x_sq : ndarray of shape (b,), default=None
            ``||a_0||^2`` of each example, when known; a network without
            hidden layers and one output then needs no ``acts``.

        Returns
        -------
        sq : ndarray of shape (b,)
        """
        xp = self.xp
        K = self.coefs[-1].shape[1]
        if K == 1 and len(self.coefs) == 1:
            # g = delta (x, 1) moves along -(x, 1): radially, so only the
            # clip factor's change counts, (c + c' ||g||)^2 ||(x, 1)||^2. The
            # general formula's ||dg||^2 - u^2 is 0 here, up to its rounding
            # (about sqrt(eps) after the square root of the report)
            radial = c + dc * norms
            if x_sq is None:
                x_sq = _inner("ij,ij->i", acts[0], acts[0], xp)
            return radial * radial * (x_sq + 1.0)
        directions = np.eye(K) if K == 1 else np.vstack([np.eye(K), np.ones(K)])
        dd = -_backend.asarray(directions, xp, _backend.device(deltas[-1]))[None, ...]
        gg = g_dg = 0.0
        for layer in range(len(self.coefs) - 1, -1, -1):
            a, d = acts[layer], deltas[layer]
            weight = (_inner("ij,ij->i", a, a, xp) + 1.0)[:, None]
            gg = gg + weight * xp.sum(dd * dd, axis=-1)
            g_dg = g_dg + weight * xp.sum(d[:, None, :] * dd, axis=-1)
            if layer > 0:
                slope = self.slope(acts, layer)[:, None, :]
                dd = (dd @ self.coefs[layer].T) * slope
        sq = clipped_tangent_sq_norm(
            gg, g_dg, norms[:, None], c[:, None], dc[:, None], xp
        )
        if K == 1:
            return sq[:, 0]
        return xp.sum(sq[:, :K], axis=1) - sq[:, K] / K

    def jacobian_sq_norms(self, acts, logits, deltas, norms, c, dc, coords):
        """``||J_i e_j||^2`` of the clipped gradient for the coordinates ``coords``.

        Parameters
        ----------
        acts, logits, deltas : list of ndarray, ndarray, list of ndarray
            Forward and backward pass of the batch.
        norms, c, dc : ndarray of shape (b,)
            Gradient norms, clip factors and their derivatives.
        coords : ndarray of int of shape (m,)
            Input coordinates ``j``, in the namespace of the network.

        Returns
        -------
        sq : ndarray of shape (b, m)

        Notes
        -----
        NumPy networks without hidden layers use the numba kernel
        :func:`~sklearn_fil.neural._kernels.linear_jacobian_sq_norms`, the
        others the generic forward-over-reverse code.
        """
        xp = self.xp
        b, m = acts[0].shape[0], coords.shape[0]
        if len(self.coefs) == 1 and xp is np:  # logistic: closed form in numba
            from sklearn_fil.neural._kernels import linear_jacobian_sq_norms

            out = np.empty((b, coords.size))
            linear_jacobian_sq_norms(
                np.ascontiguousarray(acts[0]),
                np.ascontiguousarray(coords, dtype=np.int64),
                self.coefs[0],
                self.proba(logits),
                deltas[0],
                norms,
                c,
                dc,
                out,
            )
            return out
        width = max(W.shape[1] for W in self.coefs)
        step = max(1, _TANGENT_ENTRIES // max(1, b * width))
        parts = []
        for start in range(0, m, step):
            part = coords[start : min(m, start + step)]
            parts.append(self._jvp_sq_norms(acts, logits, deltas, norms, c, dc, part))
        return parts[0] if len(parts) == 1 else _backend.concat(parts, xp, axis=1)

    def direction_sq_norms(self, acts, logits, deltas, norms, c, dc, directions):
        """``||J_i u||^2`` of the clipped gradient along input directions ``u``.

        :meth:`jacobian_sq_norms` (its generic code) with the rows of
        ``directions``, shape ``(m, d)``, in place of the ``e_j`` (for a
        constrained one-hot group, ``u = 1_G``, its all-ones direction).
        """
        return self._jvp_sq_norms(
            acts, logits, deltas, norms, c, dc, None, directions=directions
        )

    def _jvp_sq_norms(
        self, acts, logits, deltas, norms, c, dc, coords, directions=None
    ):
        xp = self.xp
        L = len(self.coefs)
        if L > 1 and self.activation not in SLOPE_TANGENTS:
            raise NotImplementedError(
                "Input Jacobians need activation 'tanh', 'relu' or 'identity'."
            )
        x = acts[0]
        # Forward tangents along e_j: dz_1 = W_1[j], then through the layers.
        if directions is None:
            dz = xp.take(self.coefs[0], coords, axis=0)[None, :, :]  # (1, m, n_1)
        else:  # a general tangent u: dz_1 = u W_1
            dz = (directions @ self.coefs[0])[None, :, :]
        dacts = [None]  # the input's tangent e_j is handled in closed form
        for layer in range(1, L):
            da = self.slope(acts, layer)[:, None, :] * dz
            dacts.append(da)
            dz = da @ self.coefs[layer]
        p = self.proba(logits)[:, None, :]
        if self.binary:
            ddelta = p * (1.0 - p) * dz
        else:
            ddelta = p * dz - p * xp.sum(p * dz, axis=2, keepdims=True)
        # Backward tangents, last layer first.
        ddeltas = [ddelta]
        for layer in range(L - 1, 0, -1):
            W = self.coefs[layer]
            back_dot = ddeltas[0] @ W.T
            slope = self.slope(acts, layer)[:, None, :]
            tangent = SLOPE_TANGENTS[self.activation]
            if tangent is None:
                ddeltas.insert(0, back_dot * slope)
            else:
                back = (deltas[layer] @ W.T)[:, None, :]
                dslope = tangent(acts[layer][:, None, :], dacts[layer])
                ddeltas.insert(0, back_dot * slope + back * dslope)
        gg = g_dg = None  # ||dg||^2 and g . dg, summed over the layers
        for layer in range(L):
            a, d, dd = acts[layer], deltas[layer], ddeltas[layer]
            a_sq = _inner("ij,ij->i", a, a, xp)[:, None]
            d_sq = _inner("ij,ij->i", d, d, xp)[:, None]
            d_dd = _inner("ij,imj->im", d, dd, xp)
            dd_sq = _inner("imj,imj->im", dd, dd, xp)
            if layer == 0 and directions is None:
                da_sq, a_da = 1.0, xp.take(x, coords, axis=1)
            elif layer == 0:
                da_sq = xp.sum(directions * directions, axis=1)[None, :]
                a_da = x @ directions.T
            else:
                da = dacts[layer]
                da_sq = _inner("imj,imj->im", da, da, xp)
                a_da = _inner("ij,imj->im", a, da, xp)
            gg_l = da_sq * d_sq + 2.0 * a_da * d_dd + a_sq * dd_sq + dd_sq
            g_dg_l = a_da * d_sq + a_sq * d_dd + d_dd
            gg = gg_l if gg is None else gg + gg_l
            g_dg = g_dg_l if g_dg is None else g_dg + g_dg_l
        return clipped_tangent_sq_norm(
            gg, g_dg, norms[:, None], c[:, None], dc[:, None], xp
        )
