# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""Tests of the label-DP lower bound of Yuan et al. (Algorithm 2).

The inputs come from a small tanh network whose logit Jacobian is checked by finite
differences; the clipped per-example gradients, the released noisy gradient and the
least-squares sign attack are simulated here from scratch (full gradient vectors,
clipped as vectors, the released gradient averaged over the batch with noise of
standard deviation ``sigma C / N``), and the closed form must agree with the
simulation and stay below the Gaussian mechanism's exact and accounted epsilon.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import expit
from scipy.stats import binom, norm

from sklearn_fil.accounting import dpsgd_epsilon, label_dp_lower_bound
from tests.accounting._invalid import FLOAT_POSITIVE, invalid

N_IN, N_HIDDEN = 3, 4


def make_network(rng):
    return {
        "W1": rng.normal(scale=0.8, size=(N_HIDDEN, N_IN)),
        "b1": rng.normal(scale=0.3, size=N_HIDDEN),
        "w2": rng.normal(scale=1.5, size=N_HIDDEN),
        "b2": rng.normal(scale=0.3),
    }


def flatten(net):
    return np.concatenate(
        [net["W1"].ravel(), net["b1"], net["w2"], np.atleast_1d(net["b2"])]
    )


def unflatten(theta):
    k = N_HIDDEN * N_IN
    return {
        "W1": theta[:k].reshape(N_HIDDEN, N_IN),
        "b1": theta[k : k + N_HIDDEN],
        "w2": theta[k + N_HIDDEN : k + 2 * N_HIDDEN],
        "b2": theta[-1],
    }


def logits(net, X):
    return np.tanh(X @ net["W1"].T + net["b1"]) @ net["w2"] + net["b2"]


def logit_jacobian(net, X):
    """dZ[r]/dtheta, rows in the order of ``flatten``: (W1, b1, w2, b2)."""
    h = np.tanh(X @ net["W1"].T + net["b1"])
    back = net["w2"] * (1.0 - h**2)  # dZ / d(pre-activation)
    dW1 = back[:, :, None] * X[:, None, :]
    return np.hstack([dW1.reshape(len(X), -1), back, h, np.ones((len(X), 1))])


# Column blocks of the Jacobian that an adversary may attack.
LAYERS = {
    "last": slice(N_HIDDEN * N_IN + N_HIDDEN, N_HIDDEN * N_IN + 2 * N_HIDDEN),  # w2
    "neuron": slice(N_IN, 2 * N_IN),  # W1[1, :], weights into hidden unit 1
    "first": slice(0, N_HIDDEN * N_IN),  # all of W1
}


def test_logit_jacobian_matches_finite_differences():
    rng = np.random.default_rng(0)
    net, X = make_network(rng), rng.normal(size=(5, N_IN))
    theta, jac = flatten(net), logit_jacobian(net, X)
    h = 1e-6
    for j in range(theta.size):
        step = np.zeros_like(theta)
        step[j] = h
        fd = logits(unflatten(theta + step), X) - logits(unflatten(theta - step), X)
        assert_allclose(jac[:, j], fd / (2 * h), rtol=1e-7, atol=1e-9)


def clip(g, max_grad_norm):
    """Hard clipping of each row to norm at most ``max_grad_norm``."""
    n = np.linalg.norm(g, axis=1, keepdims=True)
    return g / np.maximum(1.0, n / max_grad_norm)


def make_batch(rng, n, layer, scale=1.0):
    """A batch: attack inputs and the clipped full gradients under D_0 and D_1[r]."""
    net, X = make_network(rng), rng.normal(scale=scale, size=(n, N_IN))
    p = expit(logits(net, X))
    y = (rng.uniform(size=n) < 0.5).astype(float)
    jac = logit_jacobian(net, X)
    g0 = (p - y)[:, None] * jac  # full per-example gradients of the log loss
    g1 = (p - (1.0 - y))[:, None] * jac  # the same with the label flipped
    return {
        "coefficients": jac[:, LAYERS[layer]],
        "proba": p,
        "labels": y,
        "grad_norms": np.linalg.norm(g0, axis=1),
        "flipped": np.linalg.norm(g1, axis=1),
        "g0": g0,
        "g1": g1,
        "layer": LAYERS[layer],
    }


def simulate_attack(batch, sigma, max_grad_norm, n_draws, rng):
    """Monte Carlo success rates of the least-squares sign attack.

    Returns the fraction of draws in which the attack outputs ``labels[r]`` when
    trained on ``D_0`` and when trained on ``D_1[r]``.
    """
    n = batch["proba"].size
    cols = batch["layer"]
    c0 = clip(batch["g0"], max_grad_norm)[:, cols]
    c1 = clip(batch["g1"], max_grad_norm)[:, cols]
    mean0 = c0.sum(axis=0) / n  # released gradient of the layer, without noise
    s = sigma * max_grad_norm / n
    design = batch["coefficients"].T  # the paper's C, (d, N)
    y = batch["labels"]

    def success(mean, r):
        noisy = mean[:, None] + rng.normal(scale=s, size=(mean.size, n_draws))
        x, *_ = np.linalg.lstsq(design, noisy, rcond=None)  # (N, n_draws)
        guess = (x[r] < 0).astype(float)  # p - y < 0 means y = 1
        return np.mean(guess == y[r])

    rate0 = np.array([success(mean0, r) for r in range(n)])
    rate1 = np.array(
        [success(mean0 + (c1[r] - c0[r]) / n, r) for r in range(n)]  # D_1[r]
    )
    return rate0, rate1


def assert_binomial_agreement(p, rate, n_draws):
    """Each Monte Carlo count in the central 1 - 2 Phi(-4) of Binomial(n_draws, p).

    The exact form of "within 4 standard errors": near 0 or 1 the count is
    Poisson-like and a normal bound is too narrow (3 hits where 0.2 are
    expected happens once in 900 draws of the count).
    """
    k = np.rint(rate * n_draws)
    tail = norm.sf(4.0)
    inside = (binom.cdf(k, n_draws, p) > tail) & (binom.sf(k - 1, n_draws, p) > tail)
    assert np.all(inside), (p, rate)


@pytest.mark.parametrize(
    "layer, n, sigma, max_grad_norm",
    [
        ("last", 4, 0.1, 0.3),  # full column rank, d = N
        ("last", 3, 0.1, 1.0),  # full column rank, d > N, some not clipped
        ("neuron", 3, 0.1, 0.3),  # intermediate-layer attack
        ("first", 7, 0.2, 0.5),  # d = 12 > N
        ("last", 7, 0.1, 0.5),  # d = 4 < N: least squares, not interpolation
    ],
)
def test_closed_form_matches_monte_carlo(
    layer, n, sigma, max_grad_norm, global_random_seed
):
    # a fixed batch (the conditions below are about it), random draws
    batch = make_batch(np.random.default_rng(n + 10 * len(layer)), n, layer)
    rng = np.random.default_rng(global_random_seed)
    # Some examples are clipped under one label and not the other.
    f0 = batch["grad_norms"] > max_grad_norm
    f1 = batch["flipped"] > max_grad_norm
    assert np.any(f0 | f1)
    bound = label_dp_lower_bound(
        batch["coefficients"],
        batch["proba"],
        batch["labels"],
        batch["grad_norms"],
        noise_multiplier=sigma,
        max_grad_norm=max_grad_norm,
    )
    n_draws = 40_000
    rate0, rate1 = simulate_attack(batch, sigma, max_grad_norm, n_draws, rng)
    assert_binomial_agreement(bound.p0, rate0, n_draws)
    assert_binomial_agreement(bound.p1, rate1, n_draws)
    # The probabilities are not trivial: the comparison can fail.
    assert np.any(bound.p0 - bound.p1 > 0.3)
    assert np.any((bound.p1 > 0.05) & (bound.p1 < 0.95))
    finite = (rate1 > 0.05) & (rate0 > 0.05)
    assert np.any(finite)
    expected = np.log(rate0[finite] / rate1[finite])
    assert_allclose(bound.per_example[finite], expected, atol=0.1)


def test_batches_match_monte_carlo_per_batch(global_random_seed):
    rng = np.random.default_rng(5)
    sigma, max_grad_norm, delta = 0.3, 0.4, 0.01
    parts = [make_batch(rng, n, "first") for n in (3, 5, 5, 4)]
    stack = {
        key: np.concatenate([b[key] for b in parts])
        for key in ("coefficients", "proba", "labels", "grad_norms")
    }
    ids = np.repeat([30, 10, 20, 40], [3, 5, 5, 4])  # not sorted, not contiguous ids
    perm = rng.permutation(ids.size)
    bound = label_dp_lower_bound(
        stack["coefficients"][perm],
        stack["proba"][perm],
        stack["labels"][perm],
        stack["grad_norms"][perm],
        noise_multiplier=sigma,
        max_grad_norm=max_grad_norm,
        delta=delta,
        batches=ids[perm],
    )
    inverse = np.argsort(perm)
    p0, p1 = bound.p0[inverse], bound.p1[inverse]
    rng = np.random.default_rng(global_random_seed)  # the Monte Carlo draws
    n_draws = 40_000
    start = 0
    for b in parts:
        rows = slice(start, start + b["proba"].size)
        start = rows.stop
        rate0, rate1 = simulate_attack(b, sigma, max_grad_norm, n_draws, rng)
        assert_binomial_agreement(p0[rows], rate0, n_draws)
        assert_binomial_agreement(p1[rows], rate1, n_draws)
    lb = np.log((p0 - delta) / p1)
    assert_allclose(bound.per_example[inverse], lb, rtol=1e-10)
    # batch_epsilon follows np.unique(ids) = [10, 20, 30, 40]
    per_batch = [max(0.0, lb[ids == k].max()) for k in (10, 20, 30, 40)]
    assert_allclose(bound.batch_epsilon, per_batch, rtol=1e-10)
    assert_allclose(bound.epsilon, max(per_batch), rtol=1e-10)
    assert bound.per_example[bound.example] == bound.epsilon


def test_full_rank_closed_form_and_flipped_norms():
    # With C of full column rank, a_r^T G_0 = f0 (p - y) / N exactly, so
    # P_0 = Phi(f0 |p - y| / (sigma C ||a_r||)) with ||a_r||^2 = [(C^T C)^-1]_rr.
    rng = np.random.default_rng(3)
    batch = make_batch(rng, 5, "first")
    sigma, max_grad_norm = 0.7, 0.5
    design = batch["coefficients"].T
    a_norm = np.sqrt(np.diag(np.linalg.inv(design.T @ design)))
    p, y = batch["proba"], batch["labels"]
    f0 = np.minimum(1, max_grad_norm / batch["grad_norms"])
    f1 = np.minimum(1, max_grad_norm / batch["flipped"])
    p0 = norm.cdf(f0 * np.abs(p - y) / (sigma * max_grad_norm * a_norm))
    p1 = norm.cdf(-f1 * np.abs(p - 1 + y) / (sigma * max_grad_norm * a_norm))
    args = (batch["coefficients"], p, y, batch["grad_norms"])
    kw = {"noise_multiplier": sigma, "max_grad_norm": max_grad_norm}
    derived = label_dp_lower_bound(*args, **kw)
    given = label_dp_lower_bound(*args, flipped_grad_norms=batch["flipped"], **kw)
    for bound in (derived, given):
        assert_allclose(bound.p0, p0, rtol=1e-9)
        assert_allclose(bound.p1, p1, rtol=1e-9)
        assert_allclose(bound.per_example, np.log(p0 / p1), rtol=1e-9)
        assert np.all(bound.p0 >= 0.5) and np.all(bound.p1 <= 0.5)


def test_tiny_p1_is_accurate():
    # One example, one weight: P_0 = Phi(k / sigma), P_1 = Phi(-k / sigma).
    coefficients = np.array([[2.0]])
    p, y = np.array([0.5]), np.array([1.0])
    sigma = 0.003
    bound = label_dp_lower_bound(
        coefficients, p, y, [1.0], noise_multiplier=sigma, max_grad_norm=10.0
    )
    # |p - y| = 0.5 (not clipped: 1.0 < 10), ||a|| = 1 / 2: k = 0.5 / (10 / 2)
    k = 0.1
    assert_allclose(bound.p0, norm.cdf(k / sigma), rtol=1e-12)
    assert_allclose(bound.p1, norm.cdf(-k / sigma), rtol=1e-9)
    assert 0 < bound.p1[0] < 1e-200
    expected = norm.logcdf(k / sigma) - norm.logcdf(-k / sigma)
    assert_allclose(bound.epsilon, expected, rtol=1e-12)
    assert 555 < bound.epsilon < 565


def test_monotone_in_sigma():
    rng = np.random.default_rng(7)
    batch = make_batch(rng, 6, "first")
    sigmas = np.array([8.0, 4.0, 2.0, 1.0, 0.5, 0.25, 0.1])  # falling
    for delta in (0.0, 1e-5, 0.05):
        results = [
            label_dp_lower_bound(
                batch["coefficients"],
                batch["proba"],
                batch["labels"],
                batch["grad_norms"],
                noise_multiplier=s,
                max_grad_norm=0.5,
                delta=delta,
            )
            for s in sigmas
        ]
        per_example = np.array([r.per_example for r in results])
        eps = np.array([r.epsilon for r in results])
        assert np.all(np.diff(per_example, axis=0) > 0)
        assert np.all(np.diff(eps) >= 0)
        assert np.all(np.diff(eps[eps > 0]) > 0) and eps[-1] > 1.0
        assert np.all(np.diff([r.p0 for r in results], axis=0) > 0)
        assert np.all(np.diff([r.p1 for r in results], axis=0) < 0)


def balle_wang_delta(epsilon, mu):
    """Exact delta(epsilon) of the Gaussian mechanism, sensitivity / noise = mu."""
    return norm.cdf(mu / 2 - epsilon / mu) - np.exp(epsilon) * norm.cdf(
        -mu / 2 - epsilon / mu
    )


@pytest.mark.parametrize("layer, n", [("last", 4), ("first", 6), ("last", 9)])
@pytest.mark.parametrize("sigma", [0.3, 0.8, 2.0])
def test_never_exceeds_gaussian_mechanism(layer, n, sigma):
    rng = np.random.default_rng(n)
    batch = make_batch(rng, n, layer, scale=2.0)
    max_grad_norm = 0.5
    # The released sum of clipped full gradients moves by at most 2 C when one
    # label flips (replace-one); here by exactly this much for example r:
    shift = np.linalg.norm(
        clip(batch["g1"], max_grad_norm) - clip(batch["g0"], max_grad_norm), axis=1
    )
    assert np.all(shift <= 2 * max_grad_norm * (1 + 1e-12))
    assert shift.max() > 1.5 * max_grad_norm  # sensitivity 1 C would be wrong
    mu = shift / (sigma * max_grad_norm)
    for delta in (0.0, 1e-5, 1e-2):
        bound = label_dp_lower_bound(
            batch["coefficients"],
            batch["proba"],
            batch["labels"],
            batch["grad_norms"],
            noise_multiplier=sigma,
            max_grad_norm=max_grad_norm,
            delta=delta,
        )
        # The attack's event satisfies P_0 <= e^eps P_1 + delta(eps) for every
        # eps, with the exact delta(eps) of the pair's Gaussian mechanism.
        for eps in np.linspace(0.0, 3 * bound.epsilon + 1.0, 60):
            slack = balle_wang_delta(eps, mu) - (bound.p0 - np.exp(eps) * bound.p1)
            assert np.all(slack >= -1e-12)
        if delta > 0:
            accounted = dpsgd_epsilon(
                noise_multiplier=sigma,
                sample_rate=1.0,
                steps=1,
                delta=delta,
                sensitivity=2.0,
                accountant="rdp",
            )
            assert 0 < bound.epsilon <= accounted


def test_unseen_example_and_rank_deficiency():
    rng = np.random.default_rng(11)
    batch = make_batch(rng, 4, "last")
    coefficients = batch["coefficients"].copy()
    coefficients[2] = 0.0  # a dead unit: the attack cannot see example 2
    norms = batch["grad_norms"]
    bound = label_dp_lower_bound(
        coefficients,
        batch["proba"],
        batch["labels"],
        norms,
        noise_multiplier=1.0,
        max_grad_norm=1.0,
        delta=0.1,
    )
    assert bound.p0[2] == 0.5 and bound.p1[2] == 0.5
    assert_allclose(bound.per_example[2], np.log(0.4 / 0.5))
    # The other rows are attacked as if example 2 were not in the batch (its zero
    # column leaves the least-squares solution of the others unchanged).
    keep = [0, 1, 3]
    rest = label_dp_lower_bound(
        coefficients[keep],
        batch["proba"][keep],
        batch["labels"][keep],
        norms[keep],
        noise_multiplier=1.0,
        max_grad_norm=1.0,
        delta=0.1,
    )
    assert_allclose(bound.p0[keep], rest.p0, rtol=1e-9)
    assert_allclose(bound.p1[keep], rest.p1, rtol=1e-9)


def test_p0_below_delta_gives_minus_inf_and_zero_epsilon():
    bound = label_dp_lower_bound(
        [[1.0, 0.0], [0.0, 1.0]],
        [0.4, 0.6],
        [1, 0],
        [0.6, 0.6],
        noise_multiplier=100.0,
        max_grad_norm=1.0,
        delta=0.6,
    )
    assert np.all(bound.p0 < 0.6)
    assert_array_equal(bound.per_example, [-np.inf, -np.inf])
    assert bound.epsilon == 0.0
    assert_array_equal(bound.batch_epsilon, [0.0])


GOOD = {
    "coefficients": np.eye(3),
    "proba": np.array([0.2, 0.5, 0.9]),
    "labels": np.array([0, 1, 1]),
    "grad_norms": np.array([0.3, 0.6, 0.2]),
}


@pytest.mark.parametrize(
    "change, match",
    [
        ({"coefficients": np.ones(3)}, "coefficients must be a 2-D array"),
        ({"coefficients": np.ones((0, 3))}, "at least one row"),
        ({"coefficients": [[np.nan, 0, 0]] * 3}, "coefficients must contain only"),
        ({"proba": np.ones(4) / 2}, r"proba must have shape \(3,\)"),
        ({"proba": [0.2, 1.5, 0.3]}, r"proba must be in \[0, 1\]"),
        ({"labels": [0, 1]}, r"labels must have shape \(3,\)"),
        ({"labels": [0, 2, 1]}, "labels must be 0 or 1, got a label equal to 2.0"),
        ({"labels": [0, -1, 1]}, "labels must be 0 or 1"),
        ({"labels": ["a", "b", "c"]}, "labels must be an array of real numbers"),
        ({"grad_norms": [0.3, 0.6]}, r"grad_norms must have shape \(3,\)"),
        ({"grad_norms": [0.3, -0.6, 0.2]}, "grad_norms must be >= 0"),
        ({"grad_norms": [0.3, 0.1, 0.2]}, r"grad_norms\[1\]=0.1 is smaller"),
        ({"flipped_grad_norms": [0.3, 0.6]}, "flipped_grad_norms must have shape"),
        ({"flipped_grad_norms": [0.3, 0.6, 0.2]}, r"flipped_grad_norms\[0\]"),
        ({"batches": [0, 1]}, r"batches must have shape \(3,\)"),
        ({"noise_multiplier": 0.0}, invalid("noise_multiplier", FLOAT_POSITIVE, "0.0")),
        (
            {"noise_multiplier": -1.0},
            invalid("noise_multiplier", FLOAT_POSITIVE, "-1.0"),
        ),
        ({"max_grad_norm": 0.0}, invalid("max_grad_norm", FLOAT_POSITIVE, "0.0")),
        ({"max_grad_norm": np.inf}, invalid("max_grad_norm", FLOAT_POSITIVE, "inf")),
        ({"delta": 1.0}, invalid("delta", "a float in the range [0.0, 1.0)", "1.0")),
        ({"delta": -0.1}, invalid("delta", "a float in the range [0.0, 1.0)", "-0.1")),
    ],
)
def test_bad_input(change, match):
    kwargs = {**GOOD, "noise_multiplier": 1.0, "max_grad_norm": 1.0, **change}
    with pytest.raises(ValueError, match=match):
        label_dp_lower_bound(**kwargs)


def test_flipped_norm_needs_nonzero_residual():
    kwargs = {**GOOD, "proba": [0.0, 0.5, 0.9], "grad_norms": [0.0, 0.6, 0.2]}
    with pytest.raises(ValueError, match=r"proba\[0\] equals labels\[0\]"):
        label_dp_lower_bound(**kwargs, noise_multiplier=1.0, max_grad_norm=1.0)
    # With the flipped norms given, a saturated prediction is fine.
    bound = label_dp_lower_bound(
        **kwargs,
        flipped_grad_norms=[1.0, 0.6, 0.9],
        noise_multiplier=1.0,
        max_grad_norm=1.0,
    )
    assert bound.p0[0] == 0.5 and bound.p1[0] < 0.5
