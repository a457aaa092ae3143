# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""per_instance_gaussian_epsilon: gaussian_epsilon over an array, vectorised."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import special

from sklearn_fil.accounting import (
    _kernels,
    gaussian_delta,
    gaussian_epsilon,
    per_instance_gaussian_epsilon,
)
from tests.accounting._epsilon_reference import _epsilon_numpy, _phi_difference
from tests.accounting._invalid import FLOAT_DELTA, FLOAT_POSITIVE, invalid


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
        ({"sigma": 0.0}, invalid("sigma", FLOAT_POSITIVE, "0.0")),
        ({"delta": 1.0}, invalid("delta", FLOAT_DELTA, "1.0")),
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


# The numba kernel on large arrays: the fine spline, the start accepted after
# one evaluation and the first nudge at the curve's rounding


def _big_sensitivities(mu0, sigma, n=70_000, seed=0):
    """``n`` sensitivities over seven decades of ``mu``, with edge cases.

    The first entries: 0, inf, ``mu`` just below / at / just above ``mu0``,
    and large ``mu`` whose epsilon passes ``e^709``.
    """
    rng = np.random.default_rng(seed)
    edges = mu0 * np.array([0.0, np.inf, 1 - 1e-9, 1.0, 1 + 1e-9, 1 + 1e-6, 1.01])
    large = np.array([40.0, 45.0, 60.0, 200.0, 2000.0])
    mu = np.exp(rng.uniform(np.log(mu0), np.log(mu0) + 16.0, n - 12))
    return sigma * np.concatenate([edges, large, mu])


def _mp_delta(eps, mu):
    """δ(ε) of the Gaussian mechanism in 60-digit arithmetic (mpmath)."""
    mpmath = pytest.importorskip("mpmath")
    with mpmath.workdps(60):
        eps, mu = mpmath.mpf(float(eps)), mpmath.mpf(float(mu))
        return mpmath.ncdf(mu / 2 - eps / mu) - mpmath.exp(eps) * mpmath.ncdf(
            -mu / 2 - eps / mu
        )


@pytest.mark.parametrize("delta", [1e-3, 1e-7, 1e-14])
def test_large_arrays_match_scalar_gaussian_epsilon(delta):
    sigma = 0.3
    mu0 = 2.0 * np.sqrt(2.0) * float(special.erfinv(delta))
    sens = _big_sensitivities(mu0, sigma)
    eps = per_instance_gaussian_epsilon(sens, sigma=sigma, delta=delta)
    assert eps[0] == 0.0 and eps[1] == np.inf and eps[2] == 0.0
    assert eps[3] < 1e-15  # mu = sens / sigma rounds to either side of mu0
    assert np.all(eps[4:12] > 0) and np.all(np.isfinite(eps[4:]))
    assert eps[11] > 700.0  # e^eps overflows: the form without it
    rng = np.random.default_rng(1)
    rows = np.concatenate([np.arange(2, 12), rng.choice(sens.size, 150, replace=False)])
    ref = np.array(
        [gaussian_epsilon(sigma=sigma, sensitivity=sens[k], delta=delta) for k in rows]
    )
    # near mu0 (eps -> 0) the root is ill-conditioned: atol
    assert_allclose(eps[rows], ref, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(
    "log_mu_range, delta, rtol",
    [
        # well conditioned: the nudge of 1e-12 eps is all that is added
        ((np.log(1e-3), np.log(3.0)), 1e-6, 1e-11),
        # mu ~ 1e-6 (the leave-one-out distances of a large fit): as
        # Phi(u) - e^eps Phi(v), delta(eps) is the difference of two numbers
        # near 1/2, rounded at 1e-10 of eps; by the series of Phi(u) - Phi(v)
        # it is as well conditioned
        ((np.log(1e-6), np.log(3e-5)), 1e-7, 1e-11),
    ],
)
def test_large_arrays_are_the_root_of_the_exact_curve(log_mu_range, delta, rtol):
    # against the curve in 60-digit arithmetic: delta(eps) <= delta, and
    # eps no more than rtol above the exact root
    rng = np.random.default_rng(2)
    mu = np.exp(rng.uniform(*log_mu_range, 70_000))
    eps = per_instance_gaussian_epsilon(mu, sigma=1.0, delta=delta)
    for k in rng.choice(mu.size, 40, replace=False):
        assert _mp_delta(eps[k], mu[k]) <= delta
        assert _mp_delta(eps[k] * (1.0 - rtol), mu[k]) > delta


def test_large_arrays_delta_as_scipy_computes_it():
    # the guarantee through SciPy's ndtr (the curve of the NumPy reference)
    rng = np.random.default_rng(3)
    mu = np.exp(rng.uniform(np.log(1e-3), np.log(30.0), 70_000))
    eps = per_instance_gaussian_epsilon(mu, sigma=1.0, delta=1e-6)
    curve = special.ndtr(mu / 2 - eps / mu) - np.exp(eps) * special.ndtr(
        -mu / 2 - eps / mu
    )
    assert np.all(curve <= 1e-6 * (1 + 1e-12))


def test_large_arrays_match_the_numpy_reference():
    # the kernel against the vectorised NumPy code it replaced (SciPy's
    # ndtr, Newton to convergence, nudges of 1e-12 eps)
    rng = np.random.default_rng(4)
    mu = np.exp(rng.normal(np.log(0.1), 1.3, 100_000))
    eps = per_instance_gaussian_epsilon(mu, sigma=1.0, delta=1e-6)
    assert_allclose(eps, _epsilon_numpy(mu, 1e-6), rtol=5e-12)


def test_threads_do_not_change_the_answer():
    numba = pytest.importorskip("numba")
    rng = np.random.default_rng(5)
    mu = np.exp(rng.uniform(np.log(1e-7), np.log(50.0), 100_000))
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = per_instance_gaussian_epsilon(mu, sigma=1.0, delta=1e-7)
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        two = per_instance_gaussian_epsilon(mu, sigma=1.0, delta=1e-7)
    finally:
        numba.set_num_threads(before)
    assert_array_equal(one, two)


def test_phi_kernels_in_the_tails():
    # Phi and log Phi of the kernel against 40-digit arithmetic: relative
    # rounding, times the conditioning x^2 of Phi in its rounded argument
    mpmath = pytest.importorskip("mpmath")
    x = np.concatenate([np.linspace(-38.0, 8.0, 461), [-0.7, 0.7, 1e-3, -1e-3]])
    with mpmath.workdps(40):
        ref = np.array([float(mpmath.ncdf(v)) for v in x])
        big = -np.geomspace(1.0, 1e4, 60)
        log_ref = np.array([float(mpmath.log(mpmath.ncdf(v))) for v in big])
    got = np.array([_kernels.ndtr(v) for v in x])
    assert np.all(np.abs(got - ref) <= 4e-16 * (1.0 + x * x) * ref)
    log_got = np.array([_kernels.log_ndtr(v) for v in big])
    assert_allclose(log_got, log_ref, rtol=1e-14)


# delta so small that 1 - delta rounds to 1 (below about 5.5e-17)


@pytest.mark.parametrize("n", [5, 300, 10_000])
@pytest.mark.parametrize("delta", [1e-16, 1e-17, 1e-30, 1e-300])
def test_delta_below_the_rounding_of_one(delta, n):
    # the bracket's z = Phi^-1(1 - delta) was ndtri(1 - delta): inf from
    # delta ~ 5.5e-17, which gave inf up to 256 entries and a spline through
    # inf (ValueError) above; at 1e-16, 1.5e-3 low, which put the bracket's
    # top below the root from mu ~ 80 (nudged up to 7e-5 too high). The
    # scalar inverts the same curve, bracketed with norm.isf(delta).
    sens = np.append(np.geomspace(1e-2, 20.0, n - 1), 200.0)
    rows = [0, n // 2, n - 2, n - 1]
    ref = [gaussian_epsilon(sigma=1.0, sensitivity=sens[k], delta=delta) for k in rows]
    eps = per_instance_gaussian_epsilon(sens, sigma=1.0, delta=delta)
    assert_allclose(eps[rows], ref, rtol=1e-9)
    assert_allclose(_epsilon_numpy(sens, delta)[rows], ref, rtol=1e-9)


# the kernels as plain Python (NUMBA_DISABLE_JIT=1) at extreme mu


def _plain(kernel):
    """The Python function under a numba dispatcher (itself without numba)."""
    return getattr(kernel, "py_func", kernel)


@pytest.mark.parametrize("mu", [1e6, 1e9, 1e12, 1e15])
def test_kernels_as_plain_python_at_extreme_mu(mu):
    # Compiled (error_model="numpy"), x / 0 and an overflowing math.exp give
    # inf or NaN, which the iteration takes for "no Newton step" (bisection);
    # as Python they raise. Each function as Python, over the compiled ones
    # it calls, must answer as compiled, at points of the iteration within
    # 10 of the root in (eps - mu^2 / 2) / mu.
    delta = 1e-10
    top = 0.5 * mu * mu + mu * float(-special.ndtri(delta))
    rng = np.random.default_rng(6)
    for s in rng.uniform(-10.0, 6.0, 300):
        eps = mu * (0.5 * mu + s)
        curve = _kernels.delta_curve(eps, mu)
        assert_array_equal(_plain(_kernels.delta_curve)(eps, mu), curve)
        args = (eps, mu, delta, np.log(delta), 0.0, top, 0.0)
        assert_array_equal(_plain(_kernels.newton)(*args), _kernels.newton(*args))
        for slope in (curve[1], 0.0):
            assert_array_equal(
                _plain(_kernels.rounding)(eps, mu, curve[0], slope),
                _kernels.rounding(eps, mu, curve[0], slope),
            )


@pytest.mark.parametrize("n", [40, 400])
@pytest.mark.parametrize(
    "delta, mu_range",
    [(1e-16, (29.4, 30.1)), (1e-18, (28.8, 29.7)), (1e-20, (28.3, 29.3))],
)
def test_subnormal_tail_of_the_second_term(delta, mu_range, n):
    # at the root eps < 700 (e^eps in direct form) but Phi(-mu/2 - eps/mu)
    # is subnormal, with fewer digits: e^eps times it made eps up to 1.7e-4
    # too low at delta = 1e-20. Against the curve in 60 digits.
    rng = np.random.default_rng(7)
    mu = rng.uniform(*mu_range, n)
    for eps in (
        per_instance_gaussian_epsilon(mu, sigma=1.0, delta=delta),
        _epsilon_numpy(mu, delta),
    ):
        for k in range(0, n, n // 20):
            assert _mp_delta(eps[k], mu[k]) <= delta
            assert _mp_delta(eps[k] * (1.0 - 1e-11), mu[k]) > delta


# never below the exact root, mu from 1e-8 to 1e15


@pytest.mark.parametrize("n", [47, 1000, 10_000])
@pytest.mark.parametrize("delta", [1e-5, 1e-10, 1e-17])
def test_never_below_the_root_of_the_exact_curve(delta, n):
    # Against the curve in 60-digit arithmetic at 47 sensitivities over
    # 1e-8..1e15, alone (the start from the bracket), among 1000 (the
    # spline) and 10,000 (the fine spline): delta(eps) <= delta, and eps at
    # most 1e-11 above the root (or 0 where delta(0) <= delta). Up to 1e13
    # of eps was lost to cancellation in exp(eps + log Phi(-mu/2 - eps/mu)),
    # the curve garbage from mu ~ 1e8 on: at mu = 1e12, eps was 1.5e-8
    # below the root. Below mu ~ 1e-4, Phi(u) - e^eps Phi(v) cancelled to
    # 2 eps / mu^2 of its terms: eps up to 5e-8 below the root at mu = 1e-8.
    rows = np.linspace(0, n - 1, 47).round().astype(int)
    mu = np.geomspace(1e-8, 1e15, n)
    eps = per_instance_gaussian_epsilon(mu, sigma=1.0, delta=delta)
    ref = _epsilon_numpy(mu, delta) if n == 1000 else eps
    for k in rows:
        for e in {eps[k], ref[k]}:
            assert _mp_delta(e, mu[k]) <= delta, mu[k]
            if e > 0.0:
                assert _mp_delta(e * (1.0 - 1e-11), mu[k]) > delta, mu[k]


@pytest.mark.parametrize("n", [12, 300, 10_000])
@pytest.mark.parametrize("delta", [0.9, 1e-5])
def test_epsilon_above_the_largest_double_is_inf(delta, n):
    # mu^2 / 2 overflows from mu = 1.9e154: eps is above every double and
    # inf says so. The spline through the grid's inf raised a ValueError
    # past 256 entries, and at the largest double with delta > 1/2 the
    # bracket mu^2/2 + mu z was inf - inf: eps NaN.
    mu = np.append(np.geomspace(1e-3, 1e300, n - 3), [1.8e154, 1.9e154, 1.8e308])
    eps = per_instance_gaussian_epsilon(mu, sigma=1.0, delta=delta)
    expected_inf = mu >= 1.9e154
    assert np.all(np.isinf(eps[expected_inf]))
    assert np.all(np.isfinite(eps[~expected_inf]))
    ref = _epsilon_numpy(mu, delta)
    assert_array_equal(np.isinf(ref), expected_inf)
    # the finite ones near the top: the root of the curve in 400 digits,
    # eps = mu (mu/2 + s) with s = Phi^-1(1 - delta) to within 1 / mu
    mpmath = pytest.importorskip("mpmath")
    for k in [n - 3, np.flatnonzero(mu < 1e150)[-1]]:
        with mpmath.workdps(400):
            m = mpmath.mpf(float(mu[k]))
            low = m * (m / 2 - float(special.ndtri(delta)) - 1 / m)
            for e in (eps[k], ref[k]):
                assert mpmath.mpf(float(e)) >= low
                assert float(e) <= float(low) * (1.0 + 1e-11)


def test_phi_difference_against_60_digits():
    # Phi(c + h) - Phi(c - h) by the Hermite series, where delta_curve uses
    # it (|c| h = eps / 2 < 0.05, h = mu / 2 < 0.05): relative rounding times
    # the conditioning c^2 of phi(c) in its argument, kernel and NumPy alike
    mpmath = pytest.importorskip("mpmath")
    rng = np.random.default_rng(8)
    h = 10.0 ** rng.uniform(-10.0, np.log10(0.05), 300)
    c = -np.minimum(10.0 ** rng.uniform(-3.0, np.log10(0.05 / h)), 30.0)
    c[::3] *= -1.0

    def exact(a, b):
        # even in a: in the lower tail, where 60 digits are plenty
        with mpmath.workdps(60):
            a, b = -abs(mpmath.mpf(float(a))), mpmath.mpf(float(b))
            return float(mpmath.ncdf(a + b) - mpmath.ncdf(a - b))

    ref = np.array([exact(a, b) for a, b in zip(c, h, strict=True)])
    got = np.array([_kernels.phi_difference(a, b) for a, b in zip(c, h, strict=True)])
    assert np.all(np.abs(got - ref) <= 1e-15 * (1.0 + c * c) * ref)
    got = _phi_difference(c, h)
    assert np.all(np.abs(got - ref) <= 1e-15 * (1.0 + c * c) * ref)


@pytest.mark.parametrize("n", [81, 400])
@pytest.mark.parametrize("delta", [0.3, 1e-3, 1e-5, 1e-10, 1e-17])
def test_at_the_threshold_below_which_eps_is_zero(delta, n):
    # Up to mu0 = 2 sqrt(2) erfinv(delta), delta(0) <= delta: eps = 0.
    # SciPy's erfinv is up to 4 ulps off; the float mu0 was above the exact
    # one for 3/4 of deltas, and a mu in between got 0 for a positive eps
    # (1e-25 to 1e-19). Just above mu0, eps is delta(0) - delta over the
    # slope, both terms rounded: it is nudged up by twice that rounding.
    mpmath = pytest.importorskip("mpmath")
    with mpmath.workdps(60):
        mu0 = float(2 * mpmath.sqrt(2) * mpmath.erfinv(delta))
    near = mu0 * (1.0 + np.arange(-40, 41) * 1e-16)
    mu = np.append(near, np.geomspace(1e-3, 10.0, n - near.size))
    for eps in (
        per_instance_gaussian_epsilon(mu, sigma=1.0, delta=delta),
        _epsilon_numpy(mu, delta),
    ):
        for k in range(near.size):
            assert _mp_delta(eps[k], mu[k]) <= delta, k
        assert np.all(eps[: near.size] <= 1e-14)


@pytest.mark.parametrize("delta", [0.3, 1e-3])
def test_newton_converged_where_eps_is_many_mu(delta):
    # eps / mu ~ mu / 2 in the thousands: log delta bends on the scale of mu
    # in eps, and a last Newton step of 1e-7 eps left up to 3e-12 of eps
    # (nudged up to 4.3e-12 above the root at delta = 0.3, mu = 5800)
    mu = np.geomspace(100.0, 1e5, 40)
    for eps in (
        per_instance_gaussian_epsilon(mu, sigma=1.0, delta=delta),
        _epsilon_numpy(mu, delta),
    ):
        for k in range(mu.size):
            assert _mp_delta(eps[k], mu[k]) <= delta
            assert _mp_delta(eps[k] * (1.0 - 2e-12), mu[k]) > delta
