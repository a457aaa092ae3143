"""A dense network's forward pass and backpropagation, in any array namespace.

The network is ``z_l = a_{l-1} W_l + b_l``, ``a_l = act(z_l)`` for the hidden
layers and a sigmoid (one output) or softmax output. DP-SGD's per-example
computations (:class:`sklearn_fil.neural._network.Network`) and the gradient
label attack (:mod:`sklearn_fil.attacks._gradient_label`) share these passes.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from scipy.special import expit, log_softmax, softmax

from sklearn_fil import _backend


def _expit(z, xp):
    """Logistic sigmoid without overflow: ``exp(-|z|)`` only."""
    e = xp.exp(-xp.abs(z))
    return xp.where(z >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _log_softmax(z, xp):
    """Row-wise log-softmax, shifted by the row maximum."""
    shifted = z - xp.max(z, axis=1, keepdims=True)
    return shifted - xp.log(xp.sum(xp.exp(shifted), axis=1, keepdims=True))


def _softmax(z, xp):
    """Row-wise softmax, shifted by the row maximum."""
    e = xp.exp(z - xp.max(z, axis=1, keepdims=True))
    return e / xp.sum(e, axis=1, keepdims=True)


def _tanh(z, xp):
    return np.tanh(z, out=z) if xp is np else xp.tanh(z)


def _relu(z, xp):
    return np.maximum(z, 0.0, out=z) if xp is np else xp.maximum(z, 0)


def _logistic(z, xp):
    return expit(z, out=z) if xp is np else _expit(z, xp)


def _relu_slope(a, xp):
    return (a > 0).astype(a.dtype) if xp is np else xp.astype(a > 0, a.dtype)


# The hidden activations (scikit-learn's MLP names): ``act(z, xp)``, which may
# overwrite ``z`` (a NumPy array), and ``act'(z)`` from ``a = act(z)``.
ACTIVATIONS = {
    "tanh": _tanh,
    "relu": _relu,
    "logistic": _logistic,
    "identity": lambda z, xp: z,
}
DERIVATIVES = {
    "tanh": lambda a, xp: 1.0 - a * a,
    "relu": _relu_slope,
    "logistic": lambda a, xp: a * (1.0 - a),
    "identity": lambda a, xp: xp.ones_like(a),
}


class DenseNetwork:
    """Weights of a dense network: forward pass, probabilities, backpropagation.

    Parameters
    ----------
    coefs, intercepts : list of ndarray
        ``W_l`` of shape ``(n_{l-1}, n_l)`` and ``b_l`` of shape ``(n_l,)``.
    activation : {"tanh", "relu", "logistic", "identity"}
        Hidden activation, a key of :data:`ACTIVATIONS`.
    xp : module, default=None
        Array namespace of the weights and of the data; None infers it from
        ``coefs[0]``. NumPy computes with SciPy; any other namespace with
        stable ``xp`` versions of the logistic functions.
    """

    def __init__(self, coefs, intercepts, activation, xp=None):
        self.coefs = coefs
        self.intercepts = intercepts
        self.activation = activation
        self.xp = _backend.namespace_of(coefs[0]) if xp is None else xp

    @property
    def binary(self):
        return self.coefs[-1].shape[1] == 1

    def forward(self, X):
        """Activations ``[a_0 = X, a_1, ..., a_{L-1}]`` and output logits."""
        acts = [X]
        activate = ACTIVATIONS[self.activation]
        for W, b in zip(self.coefs[:-1], self.intercepts[:-1], strict=True):
            acts.append(activate(self._affine(acts[-1], W, b), self.xp))
        return acts, self._affine(acts[-1], self.coefs[-1], self.intercepts[-1])

    def _affine(self, a, W, b):
        """``a @ W + b``; on NumPy the bias is added in place (one temporary)."""
        z = a @ W
        if self.xp is np and isinstance(z, np.ndarray):
            z += b
            return z
        return z + b

    def proba(self, logits):
        """Class probabilities, ``(n, 1)`` for the positive class when binary."""
        if self.xp is np:
            return expit(logits) if self.binary else softmax(logits, axis=1)
        return _expit(logits, self.xp) if self.binary else _softmax(logits, self.xp)

    def loss(self, logits, Y):
        """Per-example log loss; ``Y`` is 0/1 of shape ``(n, 1)`` or one-hot."""
        xp = self.xp
        if self.binary:
            z, y = logits[:, 0], Y[:, 0]
            return xp.logaddexp(xp.zeros_like(z), z) - y * z
        if xp is np:
            return -np.sum(Y * log_softmax(logits, axis=1), axis=1)
        return -xp.sum(Y * _log_softmax(logits, xp), axis=1)

    def slope(self, acts, layer):
        """``act'(z_l)`` of hidden layer ``l >= 1``, from its activation ``a_l``.

        Parameters
        ----------
        acts : list of ndarray
            Activations from :meth:`forward`.
        layer : int
            Index into ``acts`` of a hidden layer (1 to ``L - 1``).

        Returns
        -------
        slope : ndarray of shape (n, n_l)
        """
        return DERIVATIVES[self.activation](acts[layer], self.xp)

    def backward(self, acts, logits, Y):
        """Errors ``delta_l = dloss / dz_l`` of every layer, first to last."""
        return self.backpropagate(acts, self.proba(logits) - Y)

    def backpropagate(self, acts, output):
        """Derivatives of ``sum_k output[:, k] z_L[:, k]`` per layer, first to last.

        Chain rule from the output logits down: with ``output = p - Y`` these
        are the errors of :meth:`backward`; with ``output`` all ones for a
        binary network, the sensitivities ``dZ / dz_l`` of its output logit.

        Parameters
        ----------
        acts : list of ndarray
            Activations from :meth:`forward`.
        output : ndarray of shape (n, n_outputs)
            Derivative with respect to the output logits.

        Returns
        -------
        deltas : list of ndarray
            One ``(n, n_l)`` array per weight layer, first to last.
        """
        deltas = [output]
        for layer in range(len(self.coefs) - 1, 0, -1):
            back = deltas[0] @ self.coefs[layer].T
            deltas.insert(0, back * self.slope(acts, layer))
        return deltas
