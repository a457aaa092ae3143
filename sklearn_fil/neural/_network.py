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
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from scipy.special import expit, log_softmax, ndtr, softmax

from sklearn_fil.neural._kernels import linear_jacobian_sq_norms

_SQRT_2PI = np.sqrt(2.0 * np.pi)
# Entries (batch x coordinates x width) of one chunk of Jacobian-vector products.
_TANGENT_ENTRIES = 2**22


def gelu(x):
    """``x * Phi(x)``, Phi the standard normal distribution function."""
    return x * ndtr(x)


def gelu_prime(x):
    """Derivative of :func:`gelu`: ``Phi(x) + x phi(x)``."""
    return ndtr(x) + x * np.exp(-0.5 * x * x) / _SQRT_2PI


def clip_factor(norm, max_grad_norm, clipping):
    """Scale ``c`` of each gradient and its derivative ``dc / d||g||``.

    ``"hard"``: ``min(1, C / ||g||)`` (derivative taken where it exists);
    ``"gelu"``: ``1 / (GELU(||g|| / C - 1) + 1)``; ``None``: no clipping.
    """
    C = max_grad_norm
    if clipping is None:
        return np.ones_like(norm), np.zeros_like(norm)
    if clipping == "hard":
        over = norm > C
        safe = np.where(over, norm, 1.0)
        return np.where(over, C / safe, 1.0), np.where(over, -C / safe**2, 0.0)
    u = norm / C - 1.0
    denom = gelu(u) + 1.0
    return 1.0 / denom, -gelu_prime(u) / (C * denom**2)


class Network:
    """Weights of a dense network and its per-example computations.

    Parameters
    ----------
    coefs, intercepts : list of ndarray
        ``W_l`` of shape ``(n_{l-1}, n_l)`` and ``b_l`` of shape ``(n_l,)``.
    activation : {"tanh", "relu"}
        Hidden activation.
    """

    def __init__(self, coefs, intercepts, activation):
        self.coefs = coefs
        self.intercepts = intercepts
        self.activation = activation

    @property
    def binary(self):
        return self.coefs[-1].shape[1] == 1

    def forward(self, X):
        """Activations ``[a_0 = X, a_1, ..., a_{L-1}]`` and output logits."""
        acts = [X]
        for W, b in zip(self.coefs[:-1], self.intercepts[:-1], strict=True):
            z = acts[-1] @ W + b
            acts.append(np.tanh(z) if self.activation == "tanh" else np.maximum(z, 0))
        return acts, acts[-1] @ self.coefs[-1] + self.intercepts[-1]

    def proba(self, logits):
        """Class probabilities, ``(n, 1)`` for the positive class when binary."""
        return expit(logits) if self.binary else softmax(logits, axis=1)

    def loss(self, logits, Y):
        """Per-example log loss; ``Y`` is 0/1 of shape ``(n, 1)`` or one-hot."""
        if self.binary:
            z, y = logits[:, 0], Y[:, 0]
            return np.logaddexp(0.0, z) - y * z
        return -np.sum(Y * log_softmax(logits, axis=1), axis=1)

    def _slope(self, acts, layer):
        """``act'(z_l)`` from the activation ``a_l``."""
        a = acts[layer]
        return 1.0 - a * a if self.activation == "tanh" else (a > 0).astype(a.dtype)

    def backward(self, acts, logits, Y):
        """Errors ``delta_l = dloss / dz_l`` of every layer, first to last."""
        deltas = [self.proba(logits) - Y]
        for layer in range(len(self.coefs) - 1, 0, -1):
            back = deltas[0] @ self.coefs[layer].T
            deltas.insert(0, back * self._slope(acts, layer))
        return deltas

    @staticmethod
    def grad_norms(acts, deltas):
        """Per-example gradient norms ``||g_i||`` over all weights and biases."""
        sq = np.zeros(acts[0].shape[0])
        for a, d in zip(acts, deltas, strict=True):
            sq += (np.einsum("ij,ij->i", a, a) + 1.0) * np.einsum("ij,ij->i", d, d)
        return np.sqrt(sq)

    @staticmethod
    def weighted_sum(acts, deltas, weights):
        """``sum_i weights_i g_i`` as per-layer (coef, intercept) gradients."""
        out = []
        for a, d in zip(acts, deltas, strict=True):
            wd = d * weights[:, None]
            out.append((a.T @ wd, wd.sum(axis=0)))
        return out

    def jacobian_sq_norms(self, acts, logits, deltas, norms, c, dc, coords):
        """``||J_i e_j||^2`` of the clipped gradient for the coordinates ``coords``.

        Parameters
        ----------
        acts, logits, deltas : list of ndarray, ndarray, list of ndarray
            Forward and backward pass of the batch.
        norms, c, dc : ndarray of shape (b,)
            Gradient norms, clip factors and their derivatives.
        coords : ndarray of int of shape (m,)
            Input coordinates ``j``.

        Returns
        -------
        sq : ndarray of shape (b, m)
        """
        b = acts[0].shape[0]
        if len(self.coefs) == 1:  # (multinomial) logistic: closed form in numba
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
        out = np.empty((b, coords.size))
        for start in range(0, coords.size, step):
            part = coords[start : start + step]
            out[:, start : start + step] = self._jvp_sq_norms(
                acts, logits, deltas, norms, c, dc, part
            )
        return out

    def _jvp_sq_norms(self, acts, logits, deltas, norms, c, dc, coords):
        L = len(self.coefs)
        x = acts[0]
        # Forward tangents along e_j: dz_1 = W_1[j], then through the layers.
        dz = self.coefs[0][coords][None, :, :]  # (1, m, n_1)
        dacts = [None]  # the input's tangent e_j is handled in closed form
        for layer in range(1, L):
            da = self._slope(acts, layer)[:, None, :] * dz
            dacts.append(da)
            dz = da @ self.coefs[layer]
        p = self.proba(logits)[:, None, :]
        if self.binary:
            ddelta = p * (1.0 - p) * dz
        else:
            ddelta = p * dz - p * np.sum(p * dz, axis=2, keepdims=True)
        # Backward tangents, last layer first.
        ddeltas = [ddelta]
        for layer in range(L - 1, 0, -1):
            W = self.coefs[layer]
            back_dot = ddeltas[0] @ W.T
            slope = self._slope(acts, layer)[:, None, :]
            if self.activation == "tanh":
                back = (deltas[layer] @ W.T)[:, None, :]
                dslope = -2.0 * acts[layer][:, None, :] * dacts[layer]
                ddeltas.insert(0, back_dot * slope + back * dslope)
            else:  # relu: the slope is locally constant
                ddeltas.insert(0, back_dot * slope)
        gg = np.zeros(ddelta.shape[:2])  # ||dg||^2
        g_dg = np.zeros(ddelta.shape[:2])  # g . dg
        for layer in range(L):
            a, d, dd = acts[layer], deltas[layer], ddeltas[layer]
            a_sq = np.einsum("ij,ij->i", a, a)[:, None]
            d_sq = np.einsum("ij,ij->i", d, d)[:, None]
            d_dd = np.einsum("ij,imj->im", d, dd)
            dd_sq = np.einsum("imj,imj->im", dd, dd)
            if layer == 0:
                da_sq, a_da = 1.0, x[:, coords]
            else:
                da = dacts[layer]
                da_sq = np.einsum("imj,imj->im", da, da)
                a_da = np.einsum("ij,imj->im", a, da)
            gg += da_sq * d_sq + 2.0 * a_da * d_dd + a_sq * dd_sq + dd_sq
            g_dg += a_da * d_sq + a_sq * d_dd + d_dd
        n = np.maximum(norms, np.finfo(float).tiny)[:, None]
        cc, dcc = c[:, None], dc[:, None]
        return cc * cc * gg + g_dg * g_dg * (2.0 * cc * dcc / n + dcc * dcc)
