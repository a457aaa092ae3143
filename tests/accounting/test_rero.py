# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""Tests of the reconstruction-robustness (ReRo) bounds.

The bounds are checked against what an adversary achieves and against closed
forms derived here, never against the code under test:

* a real reconstruction attack (the MAP guess among K candidates) on the
  Gaussian mechanism, simulated; with two candidates at the full sensitivity on
  either side of the reference data set it attains the mu-GDP bound Phi(mu);
* the blow-up ``sup {Q(E) : P(E) <= kappa}`` of the Gaussian pair and of one
  Poisson-subsampled Gaussian step by Neyman-Pearson (threshold sets), with the
  symmetrised bound of the latter as the concave hull of both orders of the
  pair, computed on a grid;
* a Monte-Carlo Neyman-Pearson estimate for 20 Poisson-subsampled steps (Hayes
  et al.'s estimate) and the MAP attack on them under replace-one.
"""

import itertools
import math

import dp_accounting
import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.integrate import quad
from scipy.stats import norm
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from sklearn_fil import OutputPerturbedLogisticRegression
from sklearn_fil.accounting import (
    Guarantee,
    dpsgd_dp_event,
    gaussian_epsilon,
    rero_bound,
    rero_kappa,
)

KAPPAS = np.array([1e-6, 1e-3, 0.01, 0.1, 0.3, 0.5, 0.9])


def gaussian_guarantee(mu, relation="replace_one", delta=1e-5):
    """The guarantee of a Gaussian release with sensitivity mu, noise 1."""
    return Guarantee(
        epsilon=gaussian_epsilon(sigma=1.0, sensitivity=mu, delta=delta),
        delta=delta,
        neighboring_relation=relation,
        sensitivity=mu,
        noise_std=1.0,
        dp_event=dp_accounting.GaussianDpEvent(1.0 / mu),
        event_relation="add_remove",
    )


def gaussian_blowup(kappa, mu):
    """sup {N(mu,1)(E) : N(0,1)(E) <= kappa}: E = {x > c}, N(0,1)(x > c) = kappa."""
    c = norm.isf(kappa)
    return norm.sf(c - mu)


# --------------------------------------------------------------------------------------
# the Gaussian mechanism: closed form, a real attack


@pytest.mark.parametrize("mu", [0.1, 1.0, 3.0])
def test_gaussian_bound_is_the_neyman_pearson_blowup(mu):
    assert_allclose(
        rero_bound(gaussian_guarantee(mu), KAPPAS),
        gaussian_blowup(KAPPAS, mu),
        rtol=1e-10,
        atol=1e-15,
    )


def map_attack_success(candidates, sigma, n_trials, rng):
    """Empirical success of the MAP guess: the target is a uniformly drawn
    candidate, the release the candidate plus N(0, sigma^2 I); the guess is the
    nearest candidate (the MAP under a uniform prior)."""
    target = rng.integers(len(candidates), size=n_trials)
    release = candidates[target] + sigma * rng.normal(
        size=(n_trials, candidates.shape[1])
    )
    dist = ((release[:, None, :] - candidates[None, :, :]) ** 2).sum(axis=2)
    return np.mean(dist.argmin(axis=1) == target)


@pytest.mark.parametrize("mu", [0.5, 1.5])
def test_two_antipodal_candidates_attain_the_gdp_bound(mu, global_random_seed):
    """Add/remove, sensitivity 1: the reference data set releases 0 + noise, and
    the two candidates add +e or -e. The MAP attack tells N(mu e, I) from
    N(-mu e, I) with probability Phi(mu), which is the bound at kappa = 1/2."""
    rng = np.random.default_rng(global_random_seed)
    n = 40_000
    candidates = np.array([[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]])
    success = map_attack_success(candidates, 1.0 / mu, n, rng)
    bound = rero_bound(gaussian_guarantee(mu, "add_remove"), rero_kappa(2))
    assert_allclose(bound, norm.cdf(mu), rtol=1e-12)
    se = math.sqrt(bound * (1 - bound) / n)
    assert abs(success - bound) <= 5 * se  # attained
    # Power: the bound of a mechanism with half the sensitivity (a bug that
    # halved mu) is beaten by the attack.
    assert success > rero_bound(gaussian_guarantee(mu / 2, "add_remove"), 0.5) + 5 * se


@pytest.mark.parametrize("n_candidates", [3, 10])
def test_map_attack_on_many_candidates_stays_below(n_candidates, global_random_seed):
    """K orthogonal candidates at the full sensitivity from the reference. The
    MAP attack succeeds with probability int phi(z) Phi(z + mu)^(K-1) dz (the
    target's coordinate beats the K - 1 others), below the bound at 1/K."""
    rng = np.random.default_rng(global_random_seed)
    mu, n = 1.5, 20_000
    candidates = np.eye(n_candidates)
    success = map_attack_success(candidates, 1.0 / mu, n, rng)
    exact = quad(
        lambda z: norm.pdf(z) * norm.cdf(z + mu) ** (n_candidates - 1), -10, 10
    )[0]
    assert abs(success - exact) <= 5 * math.sqrt(exact * (1 - exact) / n)
    bound = rero_bound(gaussian_guarantee(mu, "add_remove"), rero_kappa(n_candidates))
    assert exact <= bound
    assert 1.0 / n_candidates < exact  # the attack does learn from the release


# --------------------------------------------------------------------------------------
# the three methods: order, monotonicity, the (epsilon, delta) point


@pytest.mark.parametrize("mu", [0.3, 1.0, 2.5])
def test_profile_and_point_bounds_are_looser(mu):
    g = gaussian_guarantee(mu)
    tight = rero_bound(g, KAPPAS)
    profile = rero_bound(g, KAPPAS, method="profile")
    point = rero_bound(g, KAPPAS, method="epsilon_delta")
    assert np.all(profile >= tight - 1e-12)
    assert np.all(point >= tight - 1e-12)
    # The profile bound over eps >= 0 is the trade-off bound exactly where its
    # best eps, mu Phi^-1(1 - kappa) - mu^2 / 2, is >= 0: kappa <= Phi(-mu / 2).
    small = KAPPAS <= norm.cdf(-mu / 2)
    assert_allclose(profile[small], tight[small], rtol=1e-7)
    assert np.all(profile[~small] > tight[~small])
    # The point bound is Hayes et al.'s e^eps kappa + delta where that is the
    # smaller branch.
    eps, delta = g.epsilon, g.delta
    expected = np.minimum.reduce(
        [
            np.ones_like(KAPPAS),
            delta + math.exp(eps) * KAPPAS,
            1 - math.exp(-eps) * (1 - delta - KAPPAS),
        ]
    )
    assert_allclose(point, expected, rtol=1e-14)


@pytest.mark.parametrize("method", ["trade_off", "profile", "epsilon_delta"])
def test_monotone_in_kappa_and_mu(method):
    kappas = np.linspace(0.01, 0.99, 12)
    rows = [
        rero_bound(gaussian_guarantee(mu), kappas, method=method)
        for mu in (0.2, 0.5, 1.0, 2.0)
    ]
    for row in rows:
        assert np.all(np.diff(row) >= -1e-12)
        assert np.all(row >= kappas) and np.all(row <= 1.0)
    for low, high in itertools.pairwise(rows):
        assert np.all(high >= low - 1e-12)


def test_composition_of_gaussians_is_one_gaussian():
    """T Gaussian releases of noise m are mu-GDP with mu = sqrt(T) / m."""
    event = dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(4.0), 9)
    assert_allclose(
        rero_bound(event, KAPPAS), gaussian_blowup(KAPPAS, 0.75), rtol=1e-10
    )


# --------------------------------------------------------------------------------------
# Poisson-subsampled Gaussian: PLD profile against independent derivations


def test_pld_path_on_a_gaussian_matches_the_closed_form():
    """Sampling with probability 1 is the Gaussian mechanism, but takes the PLD
    path (minimum of e^eps kappa + delta(eps) over all real eps)."""
    event = dp_accounting.PoissonSampledDpEvent(1.0, dp_accounting.GaussianDpEvent(1.0))
    kappas = np.array([1e-4, 0.1, 0.5, 0.9])
    assert_allclose(rero_bound(event, kappas), gaussian_blowup(kappas, 1.0), atol=1e-6)


def test_gaussian_event_under_replace_one_is_read_at_distance_two():
    """dp-accounting's PLD reads GaussianDpEvent(m) under REPLACE_ONE as two
    points 2 apart (and sampling with probability 1 as N(-1) against N(+1)):
    the closed form and the PLD path must both use mu = 2 / m."""
    kappas = np.array([0.01, 0.2])
    expected = gaussian_blowup(kappas, 1.0)
    for event in (
        dp_accounting.GaussianDpEvent(2.0),
        dp_accounting.PoissonSampledDpEvent(1.0, dp_accounting.GaussianDpEvent(2.0)),
    ):
        g = Guarantee(
            epsilon=4.4,
            delta=1e-5,
            neighboring_relation="replace_one",
            dp_event=event,
            event_relation="replace_one",
        )
        assert_allclose(rero_bound(g, kappas), expected, rtol=1e-5)
        assert_allclose(rero_bound(g, kappas, method="profile"), expected, rtol=1e-5)


def one_step_curves(q, m, c):
    """Both orders of the add/remove pair P = N(0, m^2), Q = (1-q) P + q N(1, m^2),
    as points (size, power) of their Neyman-Pearson tests at thresholds ``c``.

    log(Q/P) increases with x, so the optimal sets are half-lines: {x > c} for
    sup Q(E) s.t. P(E) <= kappa (Dong, Roth & Su's f_q = q f + (1 - q) Id), and
    {x < c} for sup P(E) s.t. Q(E) <= kappa.
    """
    p_above = norm.sf(c / m)
    q_above = (1 - q) * p_above + q * norm.sf((c - 1) / m)
    return (p_above, q_above), (1 - q_above, 1 - p_above)


def concave_hull(x, y, at):
    """The least concave majorant of the points (x, y) (with (0, 0) and (1, 1)),
    at ``at``: the minimum over slopes s of s * at + max_i (y_i - s x_i)."""
    x = np.concatenate([[0.0], x, [1.0]])
    y = np.concatenate([[0.0], y, [1.0]])
    slopes = np.exp(np.linspace(-8, 12, 2001))
    intercept = (y[None, :] - slopes[:, None] * x[None, :]).max(axis=1)
    return (slopes[:, None] * at[None, :] + intercept[:, None]).min(axis=0)


@pytest.mark.parametrize(("q", "m"), [(0.3, 1.0), (0.1, 0.8)])
def test_one_subsampled_step_against_neyman_pearson(q, m):
    """The PLD accountant bounds both orders of the pair (add and remove); the
    bound is the concave hull of both blow-up curves, and at least each."""
    event = dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(m))
    kappas = np.array([1e-3, 0.05, 0.3, 0.7])
    bound = rero_bound(event, kappas)
    (x1, y1), (x2, y2) = one_step_curves(q, m, np.linspace(-8, 9, 1201))
    hull = concave_hull(np.concatenate([x1, x2]), np.concatenate([y1, y2]), kappas)
    assert_allclose(bound, hull, atol=2e-3)
    add = (1 - q) * kappas + q * norm.cdf(norm.ppf(kappas) + 1 / m)
    remove = np.interp(kappas, x2, y2)  # x2 increases with c
    assert np.all(bound >= np.maximum(add, remove) - 1e-6)  # a valid bound
    assert np.all(bound <= np.maximum(add, remove) * math.exp(2e-3) + 2e-3)


def test_many_subsampled_steps_against_monte_carlo(global_random_seed):
    """Hayes et al.'s estimate for T = 20 steps, q = 0.1, m = 1 (add/remove):
    sample the privacy loss L = sum_t log(1 - q + q exp((2 x_t - 1) / (2 m^2)))
    under P = N(0, m^2)^T, take the threshold t with P(L > t) = kappa, and
    estimate Q(L > t) = E_P[e^L 1{L > t}]. The bound is at least this (up to
    sampling error) and, the pair being nearly symmetric, not far above."""
    rng = np.random.default_rng(global_random_seed)
    q, m, steps, n = 0.1, 1.0, 20, 100_000
    x = m * rng.normal(size=(n, steps))
    loss = np.log1p(q * np.expm1((2 * x - 1) / (2 * m**2))).sum(axis=1)
    event = dpsgd_dp_event(noise_multiplier=m, sample_rate=q, steps=steps)[0]
    for kappa in (0.01, 0.1, 0.5):
        threshold = np.quantile(loss, 1 - kappa)
        weights = np.exp(loss) * (loss > threshold)
        estimate = weights.mean()
        # sampling error of the mean, and of the threshold's P-mass (slope e^t)
        slack = 5 * (weights.std() / math.sqrt(n))
        slack += 5 * math.exp(threshold) * math.sqrt(kappa * (1 - kappa) / n)
        bound = rero_bound(event, kappa)
        assert bound >= estimate - slack
        assert bound <= estimate + slack + 0.02


def test_map_attack_on_poisson_dpsgd_under_replace_one(global_random_seed):
    """Replace-one, two candidates whose clipped gradients are +C e and -C e:
    each of T steps releases B_t s C + N(0, (m C)^2), B_t ~ Bernoulli(q). The MAP
    guess of s (likelihood ratio of the two mixtures) succeeds at most as often
    as the bound at kappa = 1/2, read from the guarantee DP-SGD reports."""
    rng = np.random.default_rng(global_random_seed)
    q, m, steps, n = 0.3, 1.0, 5, 20_000
    event, relation = dpsgd_dp_event(
        noise_multiplier=m,
        sample_rate=q,
        steps=steps,
        neighboring_relation="replace_one",
    )
    accountant = dp_accounting.pld.PLDAccountant(
        dp_accounting.NeighboringRelation.REPLACE_ONE,
        value_discretization_interval=1e-3,
    )
    eps = accountant.compose(event).get_epsilon(1e-5)  # coarse grid: pessimistic
    g = Guarantee(
        epsilon=eps,
        delta=1e-5,
        neighboring_relation="replace_one",
        dp_event=event,
        event_relation=relation,
    )
    sign = rng.choice([-1.0, 1.0], size=n)
    sampled = rng.random(size=(n, steps)) < q
    y = sampled * sign[:, None] + m * rng.normal(size=(n, steps))

    def log_mixture(s):
        return np.log((1 - q) * norm.pdf(y / m) + q * norm.pdf((y - s) / m)).sum(axis=1)

    guess = np.where(log_mixture(1.0) >= log_mixture(-1.0), 1.0, -1.0)
    success = np.mean(guess == sign)
    bound = rero_bound(g, 0.5)
    assert success > 0.6  # the attack learns something
    assert success <= bound + 5 * math.sqrt(bound * (1 - bound) / n)


# --------------------------------------------------------------------------------------
# estimators


def unit_ball_data(n=60, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1).max()
    return X, (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)


def test_output_perturbed_estimator_in_one_call():
    X, y = unit_ball_data()
    model = OutputPerturbedLogisticRegression(
        sigma=0.1, lam=0.1, data_norm=1.0, random_state=0
    ).fit(X, y)
    g = model.guarantee_
    mu = g.sensitivity / g.noise_std
    kappa = rero_kappa(10)
    expected = gaussian_blowup(kappa, mu)
    assert_allclose(rero_bound(model, kappa), expected, rtol=1e-10)
    assert_allclose(rero_bound(g, kappa), expected, rtol=1e-10)
    pipe = make_pipeline(FunctionTransformer(), model).fit(X, y)
    assert_allclose(rero_bound(pipe, kappa), expected, rtol=1e-10)
    # A group of 2 rows moves the release twice as far.
    assert_allclose(
        rero_bound(g.group(2), kappa), gaussian_blowup(kappa, 2 * mu), rtol=1e-10
    )


def test_no_guarantee_is_refused_with_its_reason():
    X, y = unit_ball_data()
    model = OutputPerturbedLogisticRegression(sigma=0.1, lam=0.1, random_state=0)
    model.fit(X, y)
    with pytest.raises(
        ValueError, match=r"no differential-privacy guarantee.*data_norm"
    ):
        rero_bound(model, 0.1)


def test_group_guarantee_of_poisson_dpsgd_uses_the_point():
    event, relation = dpsgd_dp_event(
        noise_multiplier=1.0,
        sample_rate=0.1,
        steps=5,
        neighboring_relation="replace_one",
    )
    g = Guarantee(
        epsilon=2.0,
        delta=1e-5,
        neighboring_relation="replace_one",
        dp_event=event,
        event_relation=relation,
    )
    g2 = Guarantee(
        epsilon=5.0, delta=1e-5, neighboring_relation="replace_one", group_size=2
    )  # as Guarantee.group(2) returns: no event
    point = min(1e-5 + math.exp(5.0) * 0.01, 1 - math.exp(-5.0) * (1 - 1e-5 - 0.01))
    assert_allclose(rero_bound(g2, 0.01), point, rtol=1e-14)
    with pytest.raises(ValueError, match="needs the mechanism's dp_event"):
        rero_bound(g2, 0.01, method="trade_off")
    assert rero_bound(g, 0.01) <= rero_bound(g, 0.01, method="epsilon_delta")


# --------------------------------------------------------------------------------------
# priors


def test_kappa_of_priors(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    assert rero_kappa(4) == 0.25
    assert rero_kappa(np.array([0.1, 0.7, 0.2])) == 0.7
    n, d, r, s = 200_000, 3, 1.2, 0.8
    z = s * rng.normal(size=(n, d))
    inside = np.linalg.norm(z, axis=1) <= r
    kappa = rero_kappa("gaussian", radius=r, scale=s, n_dims=d)
    assert abs(inside.mean() - kappa) <= 5 * math.sqrt(kappa * (1 - kappa) / n)
    # Another centre holds less mass (Anderson's inequality).
    assert np.mean(np.linalg.norm(z - 0.3, axis=1) <= r) < kappa
    box = np.abs(z) <= r
    assert_allclose(
        rero_kappa("gaussian", radius=r, scale=s, n_dims=d, norm="linf"),
        (2 * norm.cdf(r / s) - 1) ** d,
        rtol=1e-12,
    )
    assert abs(box.all(axis=1).mean() - (2 * norm.cdf(r / s) - 1) ** d) < 0.01
    u = rng.uniform(size=(n, 2))
    ball = rero_kappa("uniform", radius=0.3, scale=1.0, n_dims=2)
    assert_allclose(ball, math.pi * 0.09, rtol=1e-12)
    assert abs(np.mean(np.linalg.norm(u - 0.5, axis=1) <= 0.3) - ball) < 0.01
    assert rero_kappa("uniform", radius=0.8, scale=1.0, n_dims=2) == 1.0  # capped
    assert_allclose(rero_kappa("uniform", radius=0.1, n_dims=3, norm="linf"), 0.008)


# --------------------------------------------------------------------------------------
# bad input


@pytest.mark.parametrize("kappa", [0.0, 1.0, -0.1, np.nan, [0.1, 1.5]])
def test_kappa_outside_the_open_unit_interval(kappa):
    with pytest.raises(ValueError, match="kappa must lie in the open interval"):
        rero_bound(gaussian_guarantee(1.0), kappa)


def test_bad_privacy_argument():
    with pytest.raises(TypeError, match="fitted estimator with guarantee_"):
        rero_bound(object(), 0.1)
    with pytest.raises(ValueError, match="needs a Guarantee"):
        rero_bound(dp_accounting.GaussianDpEvent(1.0), 0.1, method="epsilon_delta")
    with pytest.raises(ValueError, match="method"):
        rero_bound(gaussian_guarantee(1.0), 0.1, method="exact")


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        ((1,), {}, "K >= 2"),
        (([0.5, 0.6],), {}, "sum to 1"),
        (([0.5, -0.5, 1.0],), {}, "non-negative"),
        (("gaussian",), {}, "needs an error radius"),
        (("gaussian",), {"radius": -1.0}, "radius"),
        (("laplace",), {"radius": 1.0}, "prior"),
        (("uniform",), {"radius": 1.0, "norm": "l1"}, "norm"),
    ],
)
def test_bad_priors(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        rero_kappa(*args, **kwargs)
