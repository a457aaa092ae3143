# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""Per-example gradients, clipping and input Jacobians against finite differences."""

import itertools

import numpy as np
import pytest
from numpy.testing import assert_allclose

from sklearn_fil.neural._network import (
    Network,
    clip_factor,
    clipped_tangent_sq_norm,
    gelu,
)

ARCHITECTURES = {
    "logistic-binary": ((), 1),
    "logistic-multiclass": ((), 3),
    "mlp-binary": ((4, 3), 1),
    "mlp-multiclass": ((5,), 3),
}


def _network(sizes, n_out, d=3, activation="tanh", seed=0):
    rng = np.random.default_rng(seed)
    widths = [d, *sizes, n_out]
    coefs = [rng.standard_normal((a, b)) for a, b in itertools.pairwise(widths)]
    intercepts = [rng.standard_normal(b) for b in widths[1:]]
    return Network(coefs, intercepts, activation)


def _data(n, d, n_out, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    labels = rng.integers(0, max(n_out, 2), n)
    Y = labels[:, None].astype(float) if n_out == 1 else np.eye(n_out)[labels]
    return X, Y


def _flat_grad(net, x, y):
    """One example's gradient, materialised: [W_1, b_1, W_2, b_2, ...]."""
    acts, logits = net.forward(x[None])
    deltas = net.backward(acts, logits, y[None])
    return np.concatenate(
        [
            np.concatenate([np.outer(a[0], d[0]).ravel(), d[0]])
            for a, d in zip(acts, deltas, strict=True)
        ]
    )


def _flat_params(net):
    return np.concatenate(
        [
            np.concatenate([W.ravel(), b])
            for W, b in zip(net.coefs, net.intercepts, strict=True)
        ]
    )


def _set_params(net, theta):
    coefs, intercepts, k = [], [], 0
    for W, b in zip(net.coefs, net.intercepts, strict=True):
        coefs.append(theta[k : k + W.size].reshape(W.shape))
        k += W.size
        intercepts.append(theta[k : k + b.size])
        k += b.size
    return Network(coefs, intercepts, net.activation)


@pytest.mark.parametrize("name", ARCHITECTURES)
@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_per_example_gradient_matches_finite_differences(name, activation):
    sizes, n_out = ARCHITECTURES[name]
    net = _network(sizes, n_out, activation=activation)
    X, Y = _data(4, 3, n_out)
    theta = _flat_params(net)
    h = 1e-6
    for i in range(4):
        fd = np.empty_like(theta)
        for k in range(theta.size):
            e = np.zeros_like(theta)
            e[k] = h
            up, down = _set_params(net, theta + e), _set_params(net, theta - e)
            fd[k] = (
                up.loss(up.forward(X[i : i + 1])[1], Y[i : i + 1])[0]
                - down.loss(down.forward(X[i : i + 1])[1], Y[i : i + 1])[0]
            ) / (2 * h)
        assert_allclose(_flat_grad(net, X[i], Y[i]), fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", ARCHITECTURES)
def test_norms_and_clipped_sum_match_materialised_gradients(name):
    sizes, n_out = ARCHITECTURES[name]
    net = _network(sizes, n_out)
    X, Y = _data(6, 3, n_out)
    G = np.array([_flat_grad(net, X[i], Y[i]) for i in range(6)])
    acts, logits = net.forward(X)
    deltas = net.backward(acts, logits, Y)
    assert_allclose(net.grad_norms(acts, deltas), np.linalg.norm(G, axis=1))
    weights = np.linspace(0.2, 1.7, 6)
    summed = net.weighted_sum(acts, deltas, weights)
    flat = np.concatenate([np.concatenate([gW.ravel(), gb]) for gW, gb in summed])
    assert_allclose(flat, weights @ G)


@pytest.mark.parametrize("clipping", ["gelu", "hard"])
def test_clip_factor_and_its_derivative(clipping):
    C = 1.5
    norms = np.array([0.1, 0.9, 1.4, 1.6, 3.0, 10.0])
    c, dc = clip_factor(norms, C, clipping)
    if clipping == "hard":
        assert_allclose(c, np.minimum(1.0, C / norms))
    else:
        assert_allclose(c, 1.0 / (gelu(norms / C - 1.0) + 1.0))
    h = 1e-6
    fd = (
        clip_factor(norms + h, C, clipping)[0] - clip_factor(norms - h, C, clipping)[0]
    ) / (2 * h)
    assert_allclose(dc, fd, rtol=1e-6, atol=1e-10)


@pytest.mark.parametrize("name", ARCHITECTURES)
@pytest.mark.parametrize("clipping", ["gelu", "hard", None])
def test_input_jacobian_of_clipped_gradient_matches_finite_differences(name, clipping):
    sizes, n_out = ARCHITECTURES[name]
    net = _network(sizes, n_out)
    X, Y = _data(5, 3, n_out)
    C = 0.7  # some gradients above the bound, some below, none at the kink

    def clipped(x, y):
        g = _flat_grad(net, x, y)
        return clip_factor(np.linalg.norm(g)[None], C, clipping)[0][0] * g

    acts, logits = net.forward(X)
    deltas = net.backward(acts, logits, Y)
    norms = net.grad_norms(acts, deltas)
    assert np.all(np.abs(norms - C) > 1e-3)
    c, dc = clip_factor(norms, C, clipping)
    coords = np.array([2, 0, 1])
    fast = net.jacobian_sq_norms(acts, logits, deltas, norms, c, dc, coords)
    h = 1e-6
    for i in range(5):
        for k, j in enumerate(coords):
            e = np.zeros(3)
            e[j] = h
            column = (clipped(X[i] + e, Y[i]) - clipped(X[i] - e, Y[i])) / (2 * h)
            assert_allclose(fast[i, k], column @ column, rtol=1e-6, atol=1e-12)


def test_jacobian_chunks_do_not_change_the_result(monkeypatch):
    import sklearn_fil.neural._network as network

    net = _network((4,), 2)
    X, Y = _data(7, 3, 2)
    acts, logits = net.forward(X)
    deltas = net.backward(acts, logits, Y)
    norms = net.grad_norms(acts, deltas)
    c, dc = clip_factor(norms, 1.0, "gelu")
    coords = np.arange(3)
    whole = net.jacobian_sq_norms(acts, logits, deltas, norms, c, dc, coords)
    monkeypatch.setattr(network, "_TANGENT_ENTRIES", 1)  # one coordinate at a time
    assert_allclose(
        net.jacobian_sq_norms(acts, logits, deltas, norms, c, dc, coords), whole
    )


@pytest.mark.parametrize("n_out", [1, 4])
def test_logistic_kernel_equals_the_generic_forward_over_reverse(n_out):
    net = _network((), n_out, d=6)
    X, Y = _data(9, 6, n_out)
    acts, logits = net.forward(X)
    deltas = net.backward(acts, logits, Y)
    norms = net.grad_norms(acts, deltas)
    c, dc = clip_factor(norms, 0.8, "gelu")
    coords = np.array([5, 1, 3])
    kernel = net.jacobian_sq_norms(acts, logits, deltas, norms, c, dc, coords)
    generic = net._jvp_sq_norms(acts, logits, deltas, norms, c, dc, coords)
    assert_allclose(kernel, generic, rtol=1e-12)


@pytest.mark.parametrize("name", ARCHITECTURES)
@pytest.mark.parametrize("clipping", ["gelu", "hard"])
def test_label_jacobian_matches_finite_differences(name, clipping):
    # The label as a continuous coordinate (binary) or a one-hot vector moving
    # on the sum-to-one plane (multiclass): trace over an orthonormal basis.
    sizes, n_out = ARCHITECTURES[name]
    net = _network(sizes, n_out)
    X, Y = _data(5, 3, n_out)
    C = 0.7

    def clipped(x, y):
        g = _flat_grad(net, x, y)
        return clip_factor(np.linalg.norm(g)[None], C, clipping)[0][0] * g

    acts, logits = net.forward(X)
    deltas = net.backward(acts, logits, Y)
    norms = net.grad_norms(acts, deltas)
    c, dc = clip_factor(norms, C, clipping)
    fast = net.label_sq_norm(acts, deltas, norms, c, dc)
    K = Y.shape[1]
    basis = (
        np.ones((1, 1))
        if K == 1
        else np.linalg.svd(np.eye(K) - 1.0 / K)[0][:, : K - 1].T
    )
    h = 1e-6
    for i in range(5):
        trace = 0.0
        for u in basis:
            col = (clipped(X[i], Y[i] + h * u) - clipped(X[i], Y[i] - h * u)) / (2 * h)
            trace += col @ col
        assert_allclose(fast[i], trace, rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize("clipping", ["gelu", "hard", None])
def test_clipped_tangent_norm_equals_the_materialised_tangent(clipping):
    # d(c g) = c dg + c' (g . dg / ||g||) g, formed as a vector, for tangents in
    # general position and for tangents along g (all of the hard-clipped
    # gradient's change then cancels: its norm stays at C).
    rng = np.random.default_rng(3)
    C = 0.5
    for scale in [1e-3, 1.0, 1e3]:
        g = scale * rng.standard_normal(7)
        for dg in [rng.standard_normal(7), -2.5 * g, g + 1e-9 * rng.standard_normal(7)]:
            nu = np.linalg.norm(g)
            c, dc = clip_factor(np.array([nu]), C, clipping)
            want = c[0] * dg + dc[0] * (g @ dg / nu) * g
            got = clipped_tangent_sq_norm(dg @ dg, g @ dg, nu, c[0], dc[0], np)
            assert got >= 0.0
            # Rounding of ||dg||^2 - u^2, relative to the unclipped c^2 ||dg||^2.
            assert abs(got - want @ want) <= 1e-12 * c[0] ** 2 * (dg @ dg)


@pytest.mark.parametrize("clipping", ["gelu", "hard"])
def test_label_jacobian_of_clipped_badly_scaled_rows_matches_finite_differences(
    clipping,
):
    # Badly scaled rows have huge gradients, clipped (GELU: deep in
    # saturation). The expanded closed form cancelled c^2 u^2 against itself
    # there and came out negative: NaN after the square root in DPSGDClassifier.
    net = _network((), 1, d=4)
    rng = np.random.default_rng(5)
    X = rng.standard_normal((40, 4)) * np.array([1e-2, 1.0, 1e2, 1e3])
    Y = rng.integers(0, 2, 40)[:, None].astype(float)
    C = 0.7
    acts, logits = net.forward(X)
    deltas = net.backward(acts, logits, Y)
    norms = net.grad_norms(acts, deltas)
    assert np.sum(norms > 10 * C) >= 15  # the others are fitted: g ~ 0
    c, dc = clip_factor(norms, C, clipping)
    fast = net.label_sq_norm(acts, deltas, norms, c, dc)
    assert np.all(fast >= 0.0)

    def clipped(x, y):
        g = _flat_grad(net, x, y)
        return clip_factor(np.linalg.norm(g)[None], C, clipping)[0][0] * g

    # A small step: near g = 0 the GELU factor curves on the scale of
    # h ||x_i||, which reaches 1e-3 here with h = 1e-6.
    h = 1e-8
    for i in range(X.shape[0]):
        col = (clipped(X[i], Y[i] + h) - clipped(X[i], Y[i] - h)) / (2 * h)
        # Unclipped, this coordinate's squared norm is ||x_i||^2 + 1.
        assert_allclose(fast[i], col @ col, rtol=1e-5, atol=1e-8 * C**2)
