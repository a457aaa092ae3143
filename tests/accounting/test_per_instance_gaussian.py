# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""per_instance_gaussian_epsilon: gaussian_epsilon over an array, vectorised."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_fil.accounting import (
    gaussian_delta,
    gaussian_epsilon,
    per_instance_gaussian_epsilon,
)


@pytest.mark.parametrize("delta", [0.3, 1e-2, 1e-5, 1e-9, 1e-14])
@pytest.mark.parametrize("sigma", [0.05, 1.0, 20.0])
def test_matches_scalar_gaussian_epsilon(delta, sigma):
    # sensitivities over eight decades of sensitivity / sigma, including
    # both sides of the threshold below which epsilon is 0
    rng = np.random.default_rng(0)
    ratio = np.exp(rng.uniform(np.log(1e-5), np.log(300.0), 300))
    sens = sigma * ratio
    eps = per_instance_gaussian_epsilon(sens, sigma=sigma, delta=delta)
    ref = np.array(
        [gaussian_epsilon(sigma=sigma, sensitivity=s, delta=delta) for s in sens]
    )
    assert_array_equal(eps == 0, ref == 0)
    # both invert the same curve to its rounding (dp-accounting evaluates
    # it by another route); near eps = 0 the root is ill-conditioned
    assert_allclose(eps, ref, rtol=1e-9, atol=1e-12)


def test_is_a_guarantee_as_computed():
    # delta(eps) <= delta for every entry, through dp-accounting's curve too
    sens = np.geomspace(1e-2, 50.0, 40)
    eps = per_instance_gaussian_epsilon(sens, sigma=1.0, delta=1e-6)
    for s, e in zip(sens, eps, strict=True):
        assert gaussian_delta(e, sigma=1.0, sensitivity=s) <= 1e-6 * (1 + 1e-9)


def test_edge_values_and_shape():
    eps = per_instance_gaussian_epsilon(
        [[0.0, np.inf], [1e-12, 1.0]], sigma=1.0, delta=1e-5
    )
    assert eps.shape == (2, 2)
    assert eps[0, 0] == 0.0 and eps[1, 0] == 0.0
    assert eps[0, 1] == np.inf
    assert_allclose(eps[1, 1], gaussian_epsilon(sigma=1.0, sensitivity=1.0, delta=1e-5))
    assert per_instance_gaussian_epsilon([], sigma=1.0, delta=1e-5).shape == (0,)


def test_monotone_in_sensitivity():
    eps = per_instance_gaussian_epsilon(
        np.linspace(0.0, 10.0, 2001), sigma=1.0, delta=1e-5
    )
    assert np.all(np.diff(eps) >= 0)


def test_large_arrays_use_the_interpolated_start():
    # more entries than the interpolation grid: same answers as one by one
    sens = np.geomspace(1e-3, 40.0, 1000)
    eps = per_instance_gaussian_epsilon(sens, sigma=1.0, delta=1e-5)
    few = sens[::97]
    assert_allclose(
        eps[::97], per_instance_gaussian_epsilon(few, sigma=1.0, delta=1e-5), rtol=1e-10
    )


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"sensitivity": [1.0, -1.0]}, "sensitivity must be >= 0"),
        ({"sensitivity": [np.nan]}, "sensitivity must be >= 0"),
        ({"sensitivity": ["a"]}, "sensitivity must be an array of real numbers"),
        ({"sigma": 0.0}, "sigma must be in"),
        ({"delta": 1.0}, "delta must be in"),
    ],
)
def test_validation(kwargs, match):
    params = {"sensitivity": [1.0], "sigma": 1.0, "delta": 1e-5, **kwargs}
    sens = params.pop("sensitivity")
    with pytest.raises(ValueError, match=match):
        per_instance_gaussian_epsilon(sens, **params)


@pytest.mark.parametrize("spread", [0.0, 1e-12, 1e-7, 1e-3])
def test_many_equal_or_nearly_equal_sensitivities(spread):
    # e.g. the same strong-convexity bound for every example
    sens = 0.7 * (1.0 + spread * np.linspace(0.0, 1.0, 3000))
    eps = per_instance_gaussian_epsilon(sens, sigma=1.0, delta=1e-5)
    ref = [gaussian_epsilon(sigma=1.0, sensitivity=s, delta=1e-5) for s in sens[::999]]
    assert_allclose(eps[::999], ref, rtol=1e-9)
    # monotone up to the rounding of the curve
    assert np.all(np.diff(eps) >= -1e-12 * eps[1:])
