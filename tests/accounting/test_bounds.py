# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import math

import numpy as np
import pytest
from numpy.testing import assert_allclose

from sklearn_fil.accounting import gaussian_rdp, mse_bound_fil, mse_bound_rdp
from tests.accounting._invalid import invalid

# --------------------------------------------------------------------------------------
# mse_bound_rdp (Guo et al. 2022, Theorem 1, unbiased attacks)


def test_mse_bound_rdp_paper_example():
    """Guo et al. §4: Z = [0, 100], ε = 2 gives 10⁴ / (4 (e² - 1)) ≈ 391."""
    expected = 100.0**2 / (4.0 * (math.exp(2.0) - 1.0))
    got = mse_bound_rdp(2.0, 100.0)
    assert isinstance(got, float)
    assert_allclose(got, expected, rtol=1e-14)
    assert round(got, 1) == 391.3
    # The adversary's standard deviation is about 19, as the paper says.
    assert 19.0 < math.sqrt(got) < 20.0
    # With a scalar diameter the dimension does not matter.
    assert_allclose(mse_bound_rdp(2.0, 100.0, n_features=7), expected, rtol=1e-14)


@pytest.mark.parametrize("epsilon", [1e-8, 0.1, 1.0, 3.0, 30.0])
def test_mse_bound_rdp_per_coordinate_matches_mean_formula(epsilon):
    diam = np.array([1.0, 2.0, 0.0, 10.0, 0.5])
    d = diam.size
    expected = (np.sum(diam**2) / (4.0 * d)) / (math.exp(epsilon) - 1.0)
    got = mse_bound_rdp(epsilon, diam)
    assert_allclose(got, expected, rtol=1e-7)  # exp(ε) - 1 loses digits at ε = 1e-8
    assert_allclose(mse_bound_rdp(epsilon, diam, n_features=d), got, rtol=0)
    # Equal diameters reduce to the scalar form.
    assert_allclose(
        mse_bound_rdp(epsilon, np.full(3, 4.0)), mse_bound_rdp(epsilon, 4.0), rtol=1e-15
    )


def test_mse_bound_rdp_small_epsilon_accuracy():
    """expm1 keeps full precision where exp(ε) - 1 would not: bound ≈ D²/(4ε)."""
    eps = 1e-12
    got = mse_bound_rdp(eps, 2.0)
    # 1/(e^ε - 1) = 1/ε - 1/2 + ε/12 - ...
    expected = 1.0 / eps - 0.5 + eps / 12.0  # times D²/4 = 1
    assert_allclose(got, expected, rtol=1e-14)


def test_mse_bound_rdp_limits_and_broadcast():
    assert mse_bound_rdp(0.0, 1.0) == np.inf
    assert mse_bound_rdp(np.inf, 1.0) == 0.0
    # Zero diameter: the example is known, the bound is 0 even at ε = 0.
    assert mse_bound_rdp(0.0, 0.0) == 0.0
    assert mse_bound_rdp(0.0, [0.0, 0.0]) == 0.0
    # Decreasing in ε, tends to inf as ε → 0.
    eps = np.array([1e-6, 1e-3, 0.1, 1.0, 10.0])
    got = mse_bound_rdp(eps, 3.0)
    assert got.shape == eps.shape
    assert np.all(np.diff(got) < 0)
    assert got[0] > 1e6
    # Arrays of any shape broadcast.
    eps2 = np.array([[0.0, 1.0], [2.0, 3.0]])
    got2 = mse_bound_rdp(eps2, [1.0, 2.0])
    assert got2.shape == (2, 2)
    assert got2[0, 0] == np.inf
    assert_allclose(got2[1, 1], (5.0 / 8.0) / math.expm1(3.0), rtol=1e-14)


@pytest.mark.parametrize("sigma", [0.5, 1.0, 4.0])
@pytest.mark.parametrize("m", [0.1, 1.0, 3.0])
def test_mse_bound_rdp_gaussian_tightness_example(sigma, m):
    """Guo et al. §4 tightness example.

    h = z + N(0, sigma²) with z ∈ [0, M] is (2, M²/sigma²)-RDP, and the unbiased
    ẑ = h has MSE sigma², which the bound never exceeds; as M → 0 the bound tends
    to sigma²/4.
    """
    eps = gaussian_rdp(2.0, sigma=sigma, sensitivity=m)
    assert_allclose(eps, m**2 / sigma**2, rtol=1e-14)
    bound = mse_bound_rdp(eps, m)
    assert bound <= sigma**2
    assert bound <= sigma**2 / 4.0
    tiny = 1e-4 * sigma
    limit = mse_bound_rdp(gaussian_rdp(2.0, sigma=sigma, sensitivity=tiny), tiny)
    assert_allclose(limit, sigma**2 / 4.0, rtol=1e-6)


# --------------------------------------------------------------------------------------
# mse_bound_fil (Guo et al. 2022, Theorem 2, unbiased attacks)


def test_mse_bound_fil_values():
    x = np.array([1e-3, 0.25, 1.0, 3.0, 1e5])
    assert_allclose(mse_bound_fil(x), 1.0 / x**2, rtol=1e-15)
    assert mse_bound_fil(0.0) == np.inf
    assert isinstance(mse_bound_fil(2.0), float)
    assert mse_bound_fil(2.0) == 0.25
    got = mse_bound_fil([[0.0, 2.0], [4.0, 0.5]])
    assert got.shape == (2, 2)
    assert_allclose(got, [[np.inf, 0.25], [1.0 / 16.0, 4.0]], rtol=1e-15)


@pytest.mark.parametrize("sigma", [0.3, 1.0, 5.0])
def test_mse_bound_fil_cramer_rao_attained_by_gaussian_mechanism(
    sigma, global_random_seed
):
    """Cramér-Rao is attained by the Gaussian mechanism.

    h = z + N(0, sigma² I_d) has FIL η = 1/sigma in every direction, and the
    unbiased ẑ = h attains the bound 1/η² = sigma² (up to sampling error).
    """
    rng = np.random.default_rng(global_random_seed)
    d, n = 4, 200_000
    z = rng.uniform(-2.0, 2.0, size=d)
    h = z + rng.normal(0.0, sigma, size=(n, d))
    sq_err = np.sum((h - z) ** 2, axis=1) / d
    mse = sq_err.mean()
    std_err = sq_err.std(ddof=1) / math.sqrt(n)
    bound = mse_bound_fil(1.0 / sigma)
    assert_allclose(bound, sigma**2, rtol=1e-14)
    assert abs(mse - bound) <= 5 * std_err
    # FIL is a better (larger) bound than the RDP one on the same mechanism.
    assert bound >= mse_bound_rdp(gaussian_rdp(2.0, sigma=sigma, sensitivity=4.0), 4.0)


def test_mse_bound_fil_biased_estimator_can_beat_it(global_random_seed):
    """The bound is for unbiased attacks only: shrinking towards a known prior mean
    beats it, which is why the docs restrict it to unbiased reconstruction."""
    rng = np.random.default_rng(global_random_seed)
    sigma, z, n = 2.0, 0.1, 200_000
    h = z + rng.normal(0.0, sigma, size=n)
    shrunk = 0.1 * h  # biased towards 0
    assert np.mean((shrunk - z) ** 2) < 0.5 * mse_bound_fil(1.0 / sigma)


# --------------------------------------------------------------------------------------
# bad input


@pytest.mark.parametrize(
    "args, kwargs, match",
    [
        ((-1.0, 1.0), {}, r"epsilon must be >= 0 \(and not NaN\), got epsilon=-1.0"),
        ((np.nan, 1.0), {}, r"epsilon must be >= 0 \(and not NaN\), got epsilon=nan"),
        (([0.5, -2.0], 1.0), {}, r"epsilon must be >= 0.*got epsilon=-2.0"),
        (("x", 1.0), {}, r"epsilon must be a real number.*got epsilon='x'"),
        ((1.0, -1.0), {}, r"diameter must be finite and >= 0, got diameter=-1.0"),
        ((1.0, np.inf), {}, r"diameter must be finite and >= 0, got diameter=inf"),
        ((1.0, [1.0, np.nan]), {}, r"diameter must be finite and >= 0.*diameter=nan"),
        ((1.0, [[1.0]]), {}, r"diameter must be a scalar or a 1-D array.*\(1, 1\)"),
        ((1.0, []), {}, r"diameter must not be empty"),
        ((1.0, "wide"), {}, r"diameter must be a real number.*diameter='wide'"),
        (
            (1.0, 1.0),
            {"n_features": 0},
            invalid("n_features", "None or an int in the range [1, inf)", "0"),
        ),
        (
            (1.0, 1.0),
            {"n_features": 2.0},
            invalid("n_features", "None or an int in the range [1, inf)", "2.0"),
        ),
        (
            (1.0, [1.0, 2.0]),
            {"n_features": 3},
            r"n_features=3 does not match len\(diameter\)=2",
        ),
    ],
)
def test_mse_bound_rdp_bad_input(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        mse_bound_rdp(*args, **kwargs)


@pytest.mark.parametrize(
    "dfil, match",
    [
        (-1.0, r"dfil must be >= 0 \(and not NaN\), got dfil=-1.0"),
        (np.nan, r"dfil must be >= 0 \(and not NaN\), got dfil=nan"),
        ([1.0, np.nan], r"dfil must be >= 0 \(and not NaN\), got dfil=nan"),
        (np.inf, r"dfil must be finite, got dfil=inf"),
        ("big", r"dfil must be a real number.*got dfil='big'"),
    ],
)
def test_mse_bound_fil_bad_input(dfil, match):
    with pytest.raises(ValueError, match=match):
        mse_bound_fil(dfil)
