# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from scipy.integrate import quad
from scipy.optimize import minimize
from scipy.special import expit
from scipy.stats import norm

from sklearn_fil.accounting import (
    gaussian_delta,
    gaussian_epsilon,
    gaussian_rdp,
    output_perturbation_sensitivity,
)
from tests.accounting._invalid import FLOAT_DELTA, FLOAT_POSITIVE, INT_POSITIVE, invalid

SIGMAS = [0.3, 0.5, 1.0, 2.0, 5.0, 20.0]
SENSITIVITIES = [0.1, 0.5, 1.0, 3.0]
DELTAS = [1e-2, 1e-5, 1e-9]


def balle_wang_delta(epsilon, sigma, sensitivity):
    """Exact δ(ε) of the Gaussian mechanism, Balle & Wang (2018, Theorem 8)."""
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    return norm.cdf(a - b) - np.exp(epsilon) * norm.cdf(-a - b)


def exact_delta(epsilon, sigma, sensitivity):
    """δ(ε) of the Gaussian mechanism in 60-digit arithmetic (mpmath).

    The reference for ε returned as guarantees: they sit within about 2e-12
    of the root, below the rounding of the curve in double precision
    (dp-accounting's :func:`gaussian_delta` is off by up to 3e-11 relative
    at sensitivity / sigma = 1e-3).
    """
    mpmath = pytest.importorskip("mpmath")
    with mpmath.workdps(60):
        eps = mpmath.mpf(float(epsilon))
        mu = mpmath.mpf(float(sensitivity)) / mpmath.mpf(float(sigma))
        value = mpmath.ncdf(mu / 2 - eps / mu) - mpmath.exp(eps) * mpmath.ncdf(
            -mu / 2 - eps / mu
        )
        return float(value)


# --------------------------------------------------------------------------------------
# gaussian_delta


@pytest.mark.parametrize(
    "sigma, sensitivity", list(itertools.product(SIGMAS, SENSITIVITIES))
)
def test_gaussian_delta_matches_balle_wang(sigma, sensitivity):
    epsilons = np.array([0.0, 1e-3, 0.05, 0.3, 1.0, 2.0, 4.0, 8.0])
    expected = balle_wang_delta(epsilons, sigma, sensitivity)
    got = gaussian_delta(epsilons, sigma=sigma, sensitivity=sensitivity)
    assert_allclose(got, expected, rtol=1e-9, atol=0)
    # The scalar path agrees with the vectorised one and returns a Python float.
    for eps, value in zip(epsilons, got, strict=True):
        scalar = gaussian_delta(float(eps), sigma=sigma, sensitivity=sensitivity)
        assert isinstance(scalar, float)
        assert_allclose(scalar, value, rtol=1e-12, atol=0)


def test_gaussian_delta_shape_and_limits():
    eps = np.array([[0.0, 0.5], [1.0, np.inf]])
    got = gaussian_delta(eps, sigma=1.0, sensitivity=1.0)
    assert got.shape == (2, 2)
    assert got[1, 1] == 0.0
    # δ(0) is the total variation distance 2Φ(Δ/(2 sigma)) - 1.
    assert_allclose(got[0, 0], 2 * norm.cdf(0.5) - 1, rtol=1e-12)
    # Strictly decreasing in ε.
    assert got[0, 0] > got[0, 1] > got[1, 0] > got[1, 1]


@pytest.mark.parametrize("epsilon", [0.0, 0.5, 1.0, 2.0])
def test_gaussian_delta_monte_carlo_hockey_stick(epsilon, global_random_seed):
    """δ(ε) = E_P[(1 - e^ε q/p)_+] for P = N(0, sigma²), Q = N(Δ, sigma²)."""
    sigma, sensitivity = 1.3, 1.0
    rng = np.random.default_rng(global_random_seed)
    x = rng.normal(0.0, sigma, size=1_000_000)
    log_q_over_p = (2.0 * x * sensitivity - sensitivity**2) / (2.0 * sigma**2)
    samples = np.maximum(0.0, -np.expm1(epsilon + log_q_over_p))
    estimate = samples.mean()
    std_err = samples.std(ddof=1) / math.sqrt(samples.size)
    exact = gaussian_delta(epsilon, sigma=sigma, sensitivity=sensitivity)
    assert abs(estimate - exact) <= 5 * std_err


# --------------------------------------------------------------------------------------
# gaussian_epsilon


@pytest.mark.parametrize(
    "sigma, sensitivity, delta", list(itertools.product(SIGMAS, SENSITIVITIES, DELTAS))
)
def test_gaussian_epsilon_valid_and_tight(sigma, sensitivity, delta):
    eps = gaussian_epsilon(sigma=sigma, sensitivity=sensitivity, delta=delta)
    assert isinstance(eps, float)
    assert math.isfinite(eps) and eps >= 0.0
    # A guarantee: the exact curve at the returned ε is within the target.
    assert balle_wang_delta(eps, sigma, sensitivity) <= delta * (1 + 1e-9)
    assert exact_delta(eps, sigma, sensitivity) <= delta
    if eps == 0.0:
        assert balle_wang_delta(0.0, sigma, sensitivity) <= delta
    else:
        # Tight: a slightly smaller ε violates the target.
        smaller = max(eps - 1e-6, 0.0)
        assert balle_wang_delta(smaller, sigma, sensitivity) > delta


@pytest.mark.parametrize("sensitivity", SENSITIVITIES)
@pytest.mark.parametrize("delta", DELTAS)
def test_gaussian_epsilon_decreases_with_sigma(sensitivity, delta):
    eps = [
        gaussian_epsilon(sigma=s, sensitivity=sensitivity, delta=delta) for s in SIGMAS
    ]
    for larger, smaller in itertools.pairwise(eps):
        assert smaller <= larger
        if larger > 0:
            assert smaller < larger


def _classical_epsilon(sigma, sensitivity, delta):
    return math.sqrt(2 * math.log(1.25 / delta)) * sensitivity / sigma


# Only the combinations where the classical ε is below 1, where it is valid.
CLASSICAL_GRID = [
    (sigma, sensitivity, delta)
    for sigma, sensitivity, delta in itertools.product(
        [2.0, 5.0, 10.0, 50.0], [0.1, 0.5, 1.0], DELTAS
    )
    if _classical_epsilon(sigma, sensitivity, delta) < 1
]


@pytest.mark.parametrize("sigma, sensitivity, delta", CLASSICAL_GRID)
def test_gaussian_epsilon_below_classical_bound(sigma, sensitivity, delta):
    """Dwork & Roth (2014, Thm A.1): ε = sqrt(2 log(1.25/δ)) Δ/sigma works when < 1."""
    classical = _classical_epsilon(sigma, sensitivity, delta)
    tight = gaussian_epsilon(sigma=sigma, sensitivity=sensitivity, delta=delta)
    assert tight <= classical
    # The classical ε is itself valid under the exact curve.
    assert balle_wang_delta(classical, sigma, sensitivity) <= delta


@pytest.mark.parametrize("scale", [1e-3, 0.1, 7.0, 1e3])
@pytest.mark.parametrize("sigma, sensitivity", [(1.0, 1.0), (3.0, 0.5), (0.4, 2.0)])
def test_gaussian_epsilon_scale_invariant(sigma, sensitivity, scale):
    base = gaussian_epsilon(sigma=sigma, sensitivity=sensitivity, delta=1e-6)
    scaled = gaussian_epsilon(
        sigma=scale * sigma, sensitivity=scale * sensitivity, delta=1e-6
    )
    assert_allclose(scaled, base, rtol=1e-9, atol=0)


def test_gaussian_epsilon_zero_when_already_private():
    # δ(0) = 2Φ(Δ/(2 sigma)) - 1 ≈ Δ / (sigma sqrt(2π)) is tiny here.
    assert gaussian_epsilon(sigma=1e3, sensitivity=1e-3, delta=1e-5) == 0.0
    # Large sensitivity / sigma: a finite, valid ε far from 0.
    eps = gaussian_epsilon(sigma=0.1, sensitivity=10.0, delta=1e-10)
    assert math.isfinite(eps) and eps > 5000
    assert exact_delta(eps, 0.1, 10.0) <= 1e-10


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    ratio=st.floats(min_value=1e-3, max_value=30.0),
    log10_delta=st.floats(min_value=-12.0, max_value=-1.0),
)
def test_gaussian_epsilon_roundtrip_property(ratio, log10_delta):
    delta = 10.0**log10_delta
    eps = gaussian_epsilon(sigma=1.0, sensitivity=ratio, delta=delta)
    assert exact_delta(eps, 1.0, ratio) <= delta
    if eps > 0:
        assert gaussian_delta(eps * (1 - 1e-6), sigma=1.0, sensitivity=ratio) > delta


@pytest.mark.parametrize(
    "ratio, delta", [(1e-10, 1e-12), (1e-9, 1e-15), (1e-6, 1e-300), (1e4, 1e-10)]
)
def test_gaussian_epsilon_extreme_ratios_valid(ratio, delta):
    eps = gaussian_epsilon(sigma=1.0, sensitivity=ratio, delta=delta)
    assert 0.0 < eps < math.inf
    assert exact_delta(eps, 1.0, ratio) <= delta
    # Not a vacuous answer: half the reported epsilon violates the target.
    assert gaussian_delta(0.5 * eps, sigma=1.0, sensitivity=ratio) > delta


@pytest.mark.parametrize(
    "ratio, delta",
    [(1.9e-8, 1e-17), (2.3e-8, 1e-10), (1e9, 1e-5), (1e14, 1e-10), (1e15, 1e-5)],
)
def test_gaussian_epsilon_is_a_guarantee_where_the_textbook_curve_cancels(ratio, delta):
    # Phi(a) - e^eps Phi(b) in double precision cancels at these ratios: a root
    # of it was up to 1e-7 (small) or 1e-8 (large) relative below the true ε
    eps = gaussian_epsilon(sigma=1.0, sensitivity=ratio, delta=delta)
    assert exact_delta(eps, 1.0, ratio) <= delta
    assert exact_delta(eps * (1 - 1e-10), 1.0, ratio) > delta  # and tight


# --------------------------------------------------------------------------------------
# gaussian_rdp


def renyi_divergence_by_quadrature(alpha, sigma, sensitivity):
    """Rényi divergence D_alpha(N(0, sigma²) ‖ N(Δ, sigma²)) by quadrature.

    D_alpha = log ∫ p^alpha q^(1-alpha) dx / (alpha - 1).
    """

    def log_integrand(x):
        return alpha * norm.logpdf(x, 0.0, sigma) + (1 - alpha) * norm.logpdf(
            x, sensitivity, sigma
        )

    # p^alpha q^(1-alpha) is proportional to a Gaussian centred at (1 - alpha)Δ,
    # of width sigma; factor its peak out so large orders do not overflow.
    centre = (1 - alpha) * sensitivity
    peak = log_integrand(centre)
    integral, _ = quad(
        lambda x: np.exp(log_integrand(x) - peak),
        centre - 40 * sigma,
        centre + 40 * sigma,
        epsabs=0,
        epsrel=1e-12,
        limit=200,
    )
    return (peak + math.log(integral)) / (alpha - 1)


@pytest.mark.parametrize("alpha", [1.01, 1.5, 2.0, 3.0, 10.0, 64.0])
@pytest.mark.parametrize("sigma, sensitivity", [(1.0, 1.0), (0.5, 2.0), (3.0, 0.7)])
def test_gaussian_rdp_matches_quadrature(alpha, sigma, sensitivity):
    expected = renyi_divergence_by_quadrature(alpha, sigma, sensitivity)
    got = gaussian_rdp(alpha, sigma=sigma, sensitivity=sensitivity)
    assert isinstance(got, float)
    assert_allclose(got, expected, rtol=1e-7)


def test_gaussian_rdp_vectorised():
    alphas = np.array([1.5, 2.0, 32.0])
    got = gaussian_rdp(alphas, sigma=2.0, sensitivity=1.0)
    assert_allclose(got, alphas / 8.0, rtol=1e-15)
    assert gaussian_rdp(np.inf, sigma=1.0, sensitivity=1.0) == np.inf


# --------------------------------------------------------------------------------------
# output_perturbation_sensitivity


@pytest.mark.parametrize("n_samples, lam", [(1, 1.0), (50, 1e-2), (1000, 0.3)])
def test_output_perturbation_sensitivity_closed_form(n_samples, lam):
    sens = output_perturbation_sensitivity(n_samples=n_samples, lam=lam, row_norm=1.0)
    assert_allclose(sens, 2.0 / (n_samples * lam), rtol=1e-15)
    assert_allclose(
        output_perturbation_sensitivity(n_samples=n_samples, lam=lam, row_norm=2.5),
        2.5 * sens,
        rtol=1e-15,
    )
    # Guo et al. (2022, §7.1): (2, ε)-RDP with ε = 4 / (n lam sigma)².
    sigma = 0.7
    assert_allclose(
        gaussian_rdp(2, sigma=sigma, sensitivity=sens),
        4.0 / (n_samples * lam * sigma) ** 2,
        rtol=1e-12,
    )


def _fit_logistic(X, y, lam):
    """Minimise Σ_i log(1 + e^{m_i}) - y_i m_i + (nλ/2)‖w‖², m = Xw, y ∈ {0, 1}."""
    n, d = X.shape

    def objective(w):
        m = X @ w
        loss = np.sum(np.logaddexp(0.0, m) - y * m) + 0.5 * n * lam * w @ w
        grad = X.T @ (expit(m) - y) + n * lam * w
        return loss, grad

    w = np.zeros(d)
    res = minimize(
        objective,
        w,
        jac=True,
        method="L-BFGS-B",
        options={"gtol": 1e-13, "ftol": 1e-15, "maxiter": 10_000},
    )
    w = res.x
    # Polish with a few Newton steps (the objective is strongly convex).
    for _ in range(20):
        s = expit(X @ w)
        grad = X.T @ (s - y) + n * lam * w
        hess = (X * (s * (1 - s))[:, None]).T @ X + n * lam * np.eye(d)
        w = w - np.linalg.solve(hess, grad)
    assert np.linalg.norm(X.T @ (expit(X @ w) - y) + n * lam * w) < 1e-10
    return w


def _unit_rows(rng, n, d):
    X = rng.normal(size=(n, d))
    return X / np.linalg.norm(X, axis=1, keepdims=True)


@pytest.mark.parametrize("lam", [1e-2, 0.1, 1.0])
def test_output_perturbation_sensitivity_empirical(lam):
    rng = np.random.default_rng(42)
    n, d = 30, 4
    bound = output_perturbation_sensitivity(n_samples=n, lam=lam, row_norm=1.0)
    ratios = []
    for _ in range(8):
        X = _unit_rows(rng, n, d)
        y = (rng.random(n) < expit(X @ rng.normal(size=d) * 3)).astype(float)
        w = _fit_logistic(X, y, lam)
        # Replace one example by another unit-norm row with the flipped label:
        # either the same row (a pure label flip) or a fresh random row. (The row
        # -x_i with the flipped label would be the same example for this loss.)
        i = rng.integers(n)
        X2, y2 = X.copy(), y.copy()
        if rng.random() < 0.5:
            X2[i] = _unit_rows(rng, 1, d)[0]
        y2[i] = 1.0 - y[i]
        w2 = _fit_logistic(X2, y2, lam)
        gap = np.linalg.norm(w - w2)
        assert gap <= bound * (1 + 1e-9)
        ratios.append(gap / bound)
    # The check is not vacuous: the replacement moves w by a visible fraction.
    assert max(ratios) > 0.05


def test_output_perturbation_sensitivity_row_norm_scaling_empirical():
    """Rows of norm R: ‖w - w'‖ ≤ 2R/(nλ)."""
    rng = np.random.default_rng(3)
    n, d, lam, row_norm = 25, 3, 0.05, 3.0
    bound = output_perturbation_sensitivity(n_samples=n, lam=lam, row_norm=row_norm)
    for _ in range(5):
        X = row_norm * _unit_rows(rng, n, d)
        y = (rng.random(n) < 0.5).astype(float)
        w = _fit_logistic(X, y, lam)
        X2, y2 = X.copy(), y.copy()
        X2[0], y2[0] = row_norm * _unit_rows(rng, 1, d)[0], 1.0 - y[0]
        w2 = _fit_logistic(X2, y2, lam)
        assert np.linalg.norm(w - w2) <= bound * (1 + 1e-9)


# --------------------------------------------------------------------------------------
# bad input


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"sigma": 0.0}, invalid("sigma", FLOAT_POSITIVE, "0.0")),
        ({"sigma": -1.0}, invalid("sigma", FLOAT_POSITIVE, "-1.0")),
        ({"sigma": np.nan}, invalid("sigma", FLOAT_POSITIVE, "nan")),
        ({"sigma": np.inf}, invalid("sigma", FLOAT_POSITIVE, "inf")),
        ({"sigma": "1"}, invalid("sigma", FLOAT_POSITIVE, "'1'")),
        ({"sigma": True}, invalid("sigma", FLOAT_POSITIVE, "True")),
        ({"sensitivity": 0}, invalid("sensitivity", FLOAT_POSITIVE, "0")),
        ({"epsilon": -0.5}, r"epsilon must be >= 0 \(and not NaN\), got epsilon=-0.5"),
        ({"epsilon": [0.1, np.nan]}, r"epsilon must be >= 0.*got epsilon=nan"),
        ({"epsilon": "abc"}, r"epsilon must be a real number.*got epsilon='abc'"),
    ],
)
def test_gaussian_delta_bad_input(kwargs, match):
    params = {"epsilon": 1.0, "sigma": 1.0, "sensitivity": 1.0, **kwargs}
    epsilon = params.pop("epsilon")
    with pytest.raises(ValueError, match=match):
        gaussian_delta(epsilon, **params)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"sigma": -2.0}, invalid("sigma", FLOAT_POSITIVE, "-2.0")),
        ({"sensitivity": -1}, invalid("sensitivity", FLOAT_POSITIVE, "-1")),
        ({"sensitivity": np.inf}, invalid("sensitivity", FLOAT_POSITIVE, "inf")),
        ({"delta": 0.0}, invalid("delta", FLOAT_DELTA, "0.0")),
        ({"delta": 1.0}, invalid("delta", FLOAT_DELTA, "1.0")),
        ({"delta": -1e-5}, invalid("delta", FLOAT_DELTA, "-1e-05")),
        ({"delta": np.nan}, invalid("delta", FLOAT_DELTA, "nan")),
        ({"delta": None}, invalid("delta", FLOAT_DELTA, "None")),
    ],
)
def test_gaussian_epsilon_bad_input(kwargs, match):
    params = {"sigma": 1.0, "sensitivity": 1.0, "delta": 1e-5, **kwargs}
    with pytest.raises(ValueError, match=match):
        gaussian_epsilon(**params)


@pytest.mark.parametrize(
    "alpha, kwargs, match",
    [
        (1.0, {}, r"alpha must be > 1 \(and not NaN\), got alpha=1.0"),
        (0.5, {}, r"alpha must be > 1 \(and not NaN\), got alpha=0.5"),
        ([2.0, np.nan], {}, r"alpha must be > 1 \(and not NaN\), got alpha=nan"),
        ("two", {}, r"alpha must be a real number > 1.*got alpha='two'"),
        (2.0, {"sigma": 0.0}, invalid("sigma", FLOAT_POSITIVE, "0.0")),
        (2.0, {"sensitivity": -3.0}, invalid("sensitivity", FLOAT_POSITIVE, "-3.0")),
    ],
)
def test_gaussian_rdp_bad_input(alpha, kwargs, match):
    params = {"sigma": 1.0, "sensitivity": 1.0, **kwargs}
    with pytest.raises(ValueError, match=match):
        gaussian_rdp(alpha, **params)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_samples": 0}, invalid("n_samples", INT_POSITIVE, "0")),
        (
            {"n_samples": 2.5},
            invalid("n_samples", INT_POSITIVE, "2.5"),
        ),
        (
            {"n_samples": True},
            invalid("n_samples", INT_POSITIVE, "True"),
        ),
        ({"lam": 0.0}, invalid("lam", FLOAT_POSITIVE, "0.0")),
        ({"lam": -1e-3}, invalid("lam", FLOAT_POSITIVE, "-0.001")),
        ({"row_norm": 0.0}, invalid("row_norm", FLOAT_POSITIVE, "0.0")),
        ({"row_norm": np.nan}, invalid("row_norm", FLOAT_POSITIVE, "nan")),
    ],
)
def test_output_perturbation_sensitivity_bad_input(kwargs, match):
    params = {"n_samples": 10, "lam": 1.0, "row_norm": 1.0, **kwargs}
    with pytest.raises(ValueError, match=match):
        output_perturbation_sensitivity(**params)


def test_output_perturbation_sensitivity_accepts_numpy_integers():
    sens = output_perturbation_sensitivity(
        n_samples=np.int64(10), lam=np.float32(0.5), row_norm=1
    )
    assert_allclose(sens, 0.4, rtol=1e-7)
