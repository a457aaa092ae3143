# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""DP-SGD's noise, fused update and deferred norms.

The noise must be exactly ``N(0, (sigma C)^2)`` per coordinate, independent
across coordinates and steps, and reproducible from ``random_state``: its
deviates are checked against NumPy's own generator, and their distribution
by Kolmogorov-Smirnov and moment tests on the released gradients of real
fits (zero features make the clipped sum of the first layer exactly zero,
so its release is the noise over the divisor).
"""

import itertools

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import stats
from sklearn.datasets import make_classification
from threadpoolctl import threadpool_limits

from sklearn_fil.neural import DPSGDClassifier
from sklearn_fil.neural._kernels import noisy_sgd_block, standard_normal_block
from sklearn_fil.neural._network import Network, _direct_norms
from sklearn_fil.neural._noise import NoiseStreams, block_bounds, seed_sequence

# Significance of each statistical test: a correct implementation fails one
# of them with probability 1e-4 (the seeds are fixed, so a pass is stable).
ALPHA = 1e-4


def _normal_z_bound(n, alpha=ALPHA):
    """Two-sided bound on ``sqrt(n) |mean|`` (or on a correlation's)."""
    return stats.norm.isf(alpha / 2) / np.sqrt(n)


def test_numba_deviates_are_numpys_ziggurat():
    # numba's Generator.standard_normal against NumPy's C implementation on
    # the same bit generator: the same numbers, in the same order.
    out = np.empty(10_001)
    standard_normal_block(np.random.Generator(np.random.SFC64(7)), out)
    want = np.random.Generator(np.random.SFC64(7)).standard_normal(10_001)
    assert_array_equal(out, want)


def test_blocks_are_fixed_by_size_and_cover_it():
    assert block_bounds(5) == [0, 5]
    assert block_bounds(20_000) == [0, 10_000, 20_000]
    bounds = block_bounds(200_961)
    assert len(bounds) == 9 and bounds[0] == 0 and bounds[-1] == 200_961
    assert np.ptp(np.diff(bounds)) <= 1


def test_streams_are_spawned_seeds():
    size = 70_000
    noise = NoiseStreams(size, np.random.SeedSequence(3))
    z1 = np.empty(size)
    noise.fill(z1)
    # each block is the stream of its spawned child seed, continued per step
    children = np.random.SeedSequence(3).spawn(len(noise.blocks))
    z2 = np.empty(size)
    noise.fill(z2)
    for child, (_, lo, hi) in zip(children, noise.blocks, strict=True):
        g = np.random.Generator(np.random.SFC64(child))
        assert_array_equal(z1[lo:hi], g.standard_normal(hi - lo))
        assert_array_equal(z2[lo:hi], g.standard_normal(hi - lo))


def test_seed_sequence_draws_128_bits_from_either_generator():
    a = seed_sequence(np.random.RandomState(0))
    b = seed_sequence(np.random.RandomState(0))
    c = seed_sequence(np.random.default_rng(0))
    assert a.entropy == b.entropy != c.entropy
    assert len(a.entropy) == 4 and all(0 <= w < 2**32 for w in a.entropy)


def test_fill_is_standard_normal_and_uncorrelated():
    # 8 blocks x 2 steps: KS and moments of all deviates, correlations of
    # neighbouring blocks and of consecutive steps.
    size = 2**17
    noise = NoiseStreams(size, np.random.SeedSequence(11))
    steps = np.empty((2, size))
    for z in steps:
        noise.fill(z)
    flat = steps.ravel()
    assert stats.kstest(flat, "norm").pvalue > ALPHA
    n = flat.size
    assert abs(flat.mean()) < _normal_z_bound(n)
    # var of a sample variance of N(0, 1) is 2 / n; of the 4th moment 96 / n
    assert abs(flat.var() - 1.0) < stats.norm.isf(ALPHA / 2) * np.sqrt(2 / n)
    assert abs(np.mean(flat**4) - 3.0) < stats.norm.isf(ALPHA / 2) * np.sqrt(96 / n)
    half = size // 2
    r_blocks = np.corrcoef(steps[0, :half], steps[0, half:])[0, 1]
    r_steps = np.corrcoef(steps[0], steps[1])[0, 1]
    assert abs(r_blocks) < _normal_z_bound(half)
    assert abs(r_steps) < _normal_z_bound(size)


def test_fused_update_is_the_written_out_step():
    # release, decay (weights only), momentum and step against NumPy
    rng = np.random.default_rng(0)
    size, n_decayed, std = 1000, 700, 0.7
    grads, params, velocity, z = (rng.standard_normal(size) for _ in range(4))
    decay = 0.01 * (np.arange(size) < n_decayed)
    for momentum in (0.0, 0.9):
        released = (grads + std * z) / 32.0
        v = momentum * velocity + released + decay * params
        want_params = params - 0.1 * v
        got_grads, got_params, got_v = grads.copy(), params.copy(), velocity.copy()
        for lo, hi in [(0, 400), (400, size)]:  # blocks on both sides of 700
            noisy_sgd_block(
                lo, hi, std, z, got_grads, got_params, got_v, n_decayed, 32.0,
                0.1, momentum, 0.01,
            )  # fmt: skip
        assert_allclose(got_grads, released, rtol=1e-15)
        assert_allclose(got_params, want_params, rtol=1e-14, atol=1e-15)
        if momentum:
            assert_allclose(got_v, v, rtol=1e-14)
    # no noise: the (empty) noise array is not read
    got_grads, got_params = grads.copy(), params.copy()
    noisy_sgd_block(0, size, 0.0, np.empty(0), got_grads, got_params, np.empty(0),
                    0, 4.0, 0.1, 0.0, 0.0)  # fmt: skip
    assert_allclose(got_params, params - 0.1 * grads / 4.0, rtol=1e-15)


def _zero_feature_fit(sigma, C, seed, steps=3, **params):
    # the first layer's per-example gradients are x delta^T = 0: its
    # released gradient is noise / batch_size exactly
    X = np.zeros((64, 3000))
    y = np.arange(64) % 2
    clf = DPSGDClassifier(
        hidden_layer_sizes=(8,),
        noise_multiplier=sigma,
        max_grad_norm=C,
        batch_size=16,
        max_iter=1,
        record_steps=steps,
        per_instance_accounting=False,
        fil_accounting=False,
        random_state=seed,
        **params,
    ).fit(X, y)
    return clf, np.array(
        [s.grad_coefs[0].ravel() * s.divisor / (sigma * C) for s in clf.recorded_steps_]
    )


def test_released_noise_is_normal_with_std_sigma_c_and_independent():
    _, z = _zero_feature_fit(1.7, 0.3, seed=0)
    assert z.shape == (3, 24_000)  # 2 noise blocks for the first layer
    assert stats.kstest(z.ravel(), "norm").pvalue > ALPHA
    n = z.size
    assert abs(z.mean()) < _normal_z_bound(n)
    assert abs(z.var() - 1.0) < stats.norm.isf(ALPHA / 2) * np.sqrt(2 / n)
    for a, b in [(0, 1), (1, 2)]:
        assert abs(np.corrcoef(z[a], z[b])[0, 1]) < _normal_z_bound(z.shape[1])


def test_same_seed_same_model_other_seed_other_noise():
    X, y = make_classification(n_samples=300, n_features=20, random_state=0)
    params = dict(
        hidden_layer_sizes=(16,), batch_size=32, max_iter=2, momentum=0.5, alpha=1e-3
    )
    a = DPSGDClassifier(**params, random_state=3).fit(X, y)
    b = DPSGDClassifier(**params, random_state=3).fit(X, y)
    c = DPSGDClassifier(**params, random_state=4).fit(X, y)
    for Wa, Wb, Wc in zip(a.coefs_ + a.intercepts_, b.coefs_ + b.intercepts_,
                          c.coefs_ + c.intercepts_, strict=True):  # fmt: skip
        assert_array_equal(Wa, Wb)
        assert not np.allclose(Wa, Wc)
        assert Wa.base is None  # the fitted weights are arrays of their own
    _, z1 = _zero_feature_fit(1.0, 1.0, seed=np.random.RandomState(5))
    _, z2 = _zero_feature_fit(1.0, 1.0, seed=5)
    assert_array_equal(z1, z2)


def test_one_blas_thread_gives_the_same_fit():
    # BLAS on one thread or on several: the same fit
    X, y = make_classification(n_samples=400, n_features=300, random_state=1)
    params = dict(hidden_layer_sizes=(64,), batch_size=128, max_iter=1, random_state=0)
    threaded = DPSGDClassifier(**params).fit(X, y)
    with threadpool_limits(limits=1, user_api="blas"):
        serial = DPSGDClassifier(**params).fit(X, y)
    for got, want in zip(serial.coefs_, threaded.coefs_, strict=True):
        assert_allclose(got, want, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("hidden", [(), (5,)])
def test_deferred_initial_norms_equal_the_eager_full_pass(hidden):
    # Without per-instance accounting the rows never sampled get their norm
    # at the initial weights after training; with it, by a full pass first.
    # The two reports must agree, and the never-sampled rows must hold the
    # norm of the per-example gradient at the initial weights (by hand).
    X, y = make_classification(n_samples=200, n_features=6, random_state=2)
    rng = np.random.default_rng(0)
    widths = [6, *hidden, 1]
    init = {
        "coefs_init": [
            rng.normal(0, 0.5, (a, b)) for a, b in itertools.pairwise(widths)
        ],
        "intercepts_init": [rng.normal(0, 0.5, b) for b in widths[1:]],
    }
    params = dict(
        hidden_layer_sizes=hidden,
        batch_size=20,
        max_iter=1,
        max_grad_norm=0.7,
        record_steps=10,
        fil_accounting=False,
        random_state=0,
    )
    lazy = DPSGDClassifier(**params, per_instance_accounting=False).fit(X, y, **init)
    eager = DPSGDClassifier(**params, per_instance_accounting=True).fit(X, y, **init)
    assert_allclose(
        lazy.privacy_report_["grad_norm"], eager.privacy_report_["grad_norm"],
        rtol=1e-12,
    )  # fmt: skip
    seen = np.unique(np.concatenate([s.indices for s in lazy.recorded_steps_]))
    unseen = np.setdiff1d(np.arange(200), seen)
    assert 0 < unseen.size < 200
    net = Network(init["coefs_init"], init["intercepts_init"], "tanh")
    for i in unseen[:5]:
        g = _per_example_gradient(net, X[i], y[i])
        norm = np.linalg.norm(g) / 0.7  # in units of C, then GELU-clipped
        clipped = norm / (stats.norm.cdf(norm - 1.0) * (norm - 1.0) + 1.0)
        assert lazy.privacy_report_["grad_norm"].iloc[i] == pytest.approx(
            clipped, rel=1e-12
        )


def _per_example_gradient(net, x, y):
    """Flat gradient of one example's log loss, by explicit backpropagation."""
    a = [x]
    for W, b in zip(net.coefs[:-1], net.intercepts[:-1], strict=True):
        a.append(np.tanh(a[-1] @ W + b))
    p = 1.0 / (1.0 + np.exp(-(a[-1] @ net.coefs[-1] + net.intercepts[-1])))
    delta = p - y
    parts = []
    for layer in range(len(net.coefs) - 1, -1, -1):
        parts += [np.outer(a[layer], delta).ravel(), delta]
        if layer:
            delta = (net.coefs[layer] @ delta) * (1.0 - a[layer] ** 2)
    return np.concatenate(parts)


def test_direct_norms_fall_back_where_squares_underflow():
    # The gradient is linear in the output error: scaling delta by 1e-170
    # scales every norm by 1e-170, though ||delta||^2 underflows directly.
    rng = np.random.default_rng(0)
    net = Network(
        [rng.standard_normal((4, 3)), rng.standard_normal((3, 1))],
        [rng.standard_normal(3), rng.standard_normal(1)],
        "tanh",
    )
    X = rng.standard_normal((6, 4))
    acts, logits = net.forward(X)
    deltas = net.backward(acts, logits, np.ones((6, 1)))
    norms = net.grad_norms(acts, deltas)
    assert _direct_norms(acts, deltas) is not None
    tiny = [d * 1e-170 for d in deltas]
    assert _direct_norms(acts, tiny) is None
    assert_allclose(net.grad_norms(acts, tiny), norms * 1e-170, rtol=1e-13)
    huge = [d * 1e300 for d in deltas]
    assert _direct_norms(acts, huge) is None
    assert_allclose(net.grad_norms(acts, huge), norms * 1e300, rtol=1e-13)
