# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""The distribution tests of the audit against published formulas and Monte Carlo."""

import math

import numpy as np
import pytest
from scipy import stats

from sklearn_fil.audit import _diagnostics


def _henze_zirkler_by_hand(X):
    """The statistic written term by term, with the inverse covariance."""
    n, p = X.shape
    S_inv = np.linalg.inv(np.cov(X, rowvar=False, bias=True))
    centred = X - X.mean(axis=0)
    b = ((2 * p + 1) / 4) ** (1 / (p + 4)) * n ** (1 / (p + 4)) / math.sqrt(2)
    total = 0.0
    for j in range(n):
        for k in range(n):
            d = X[j] - X[k]
            total += math.exp(-(b**2) / 2 * d @ S_inv @ d)
    to_mean = sum(math.exp(-(b**2) / (2 * (1 + b**2)) * c @ S_inv @ c) for c in centred)
    return (
        total / n
        - 2 * (1 + b**2) ** (-p / 2) * to_mean
        + n * (1 + 2 * b**2) ** (-p / 2)
    )


def test_henze_zirkler_statistic_matches_its_definition():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3)) @ rng.normal(size=(3, 3))
    hz, p_value, dim = _diagnostics.henze_zirkler(X)
    assert dim == 3
    assert hz == pytest.approx(_henze_zirkler_by_hand(X), rel=1e-10)
    assert 0 < p_value < 1


def test_henze_zirkler_size_and_power(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    gaussian = [
        _diagnostics.henze_zirkler(rng.normal(size=(100, 4)))[1] for _ in range(200)
    ]
    # Level 0.05: the rejection rate of 200 Gaussian samples is within 4 SE.
    assert abs(np.mean(np.array(gaussian) < 0.05) - 0.05) < 4 * math.sqrt(
        0.05 * 0.95 / 200
    )
    laplace = [
        _diagnostics.henze_zirkler(rng.laplace(size=(400, 4)))[1] for _ in range(10)
    ]
    assert np.mean(np.array(laplace) < 0.05) >= 0.9


def test_henze_zirkler_tests_a_degenerate_gaussian_on_its_support():
    rng = np.random.default_rng(2)
    Z = rng.normal(size=(80, 2))
    X = np.c_[Z, Z.sum(axis=1), np.zeros(80)]  # rank 2 in 4 dimensions
    hz, _, dim = _diagnostics.henze_zirkler(X)
    assert dim == 2
    assert hz == pytest.approx(_diagnostics.henze_zirkler(Z)[0], rel=1e-8)
    assert math.isnan(_diagnostics.henze_zirkler(np.ones((10, 3)))[1])


def test_henze_zirkler_subsets_cover_many_weights():
    rng = np.random.default_rng(3)
    R = rng.normal(size=(60, 70))
    _, p_value, n_subsets = _diagnostics.henze_zirkler_subsets(R, rng)
    assert n_subsets == 2 * (70 // 30 + 1)  # subsets of min(55, 60 // 2) weights
    assert 0 < p_value <= 1


def test_laplace_anderson_darling_matches_scipy(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    R = np.c_[rng.laplace(size=50), rng.normal(size=50), rng.standard_t(2, size=50)]
    statistic, p_value = _diagnostics.laplace_anderson_darling(R, rng, n_null=4999)
    for j in range(R.shape[1]):
        ref = stats.goodness_of_fit(
            stats.laplace,
            R[:, j],
            statistic="ad",
            n_mc_samples=4999,
            rng=np.random.default_rng([global_random_seed, j]),
        )
        assert statistic[j] == pytest.approx(ref.statistic, rel=1e-10)
        # Two Monte-Carlo p-values of 4999 draws each: within 5 SE.
        se = math.sqrt(ref.pvalue * (1 - ref.pvalue) / 4999 * 2) + 1e-3
        assert abs(p_value[j] - ref.pvalue) < 5 * se


def test_laplace_anderson_darling_rejects_uniform_weights(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    _, p_value = _diagnostics.laplace_anderson_darling(rng.uniform(size=(400, 3)), rng)
    assert (p_value < 1e-3).all()
    constant = _diagnostics.laplace_anderson_darling(np.ones((10, 2)), rng)[1]
    assert np.isnan(constant).all()


@pytest.mark.parametrize("alpha", [1.0, 1.5, 2.0])
def test_tail_index_recovers_stable_alpha(alpha, global_random_seed):
    samples = stats.levy_stable.rvs(
        alpha, 0.0, size=(10000, 2), random_state=global_random_seed
    )
    assert _diagnostics.tail_index(samples) == pytest.approx(alpha, rel=0.1)


def test_shapiro_wilk_per_weight(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    R = np.c_[rng.normal(size=200), rng.exponential(size=200), np.zeros(200)]
    p_value = _diagnostics.shapiro_wilk(R)
    assert p_value[0] == pytest.approx(stats.shapiro(R[:, 0]).pvalue)
    assert p_value[1] < 1e-6
    assert np.isnan(p_value[2])
