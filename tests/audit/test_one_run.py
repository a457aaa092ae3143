# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""OneRunAudit and the one-run bound: the bound against independent
computations of the theorem (direct summation, the guessing game of
randomized response), every kind of claim against its one-run audit, and the
power to refute mechanisms with much less noise than they claim."""

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.base import clone
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_fil import (
    DPSGDClassifier,
    OutputPerturbedLinearRegression,
    OutputPerturbedLogisticRegression,
)
from sklearn_fil.accounting import PrivacyBudget
from sklearn_fil.audit import OneRunAudit, one_run_epsilon_lower_bound
from tests.audit._doubles import TenthNoiseDPSGD, TwentiethNoiseLogisticRegression

pytestmark = pytest.mark.usefixtures("one_numba_thread")

N_SAMPLES = 100
DELTA = 1e-5  # well below 1 / m: the theorem's delta term is 2 m delta


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(scale=0.3, size=(N_SAMPLES, 2))
    y = (X[:, 0] + 0.3 * rng.normal(size=N_SAMPLES) > 0).astype(int)
    return X, y


# --------------------------------------------------------------------------
# 1. the bound against independent computations


def _p_value_exact(m, r, v, eps, delta):
    """The theorem's p-value by direct summation of the binomial pmf, each
    term from log-gamma functions, summed with ``math.fsum``."""
    log_q, log_p = -math.log1p(math.exp(-eps)), -math.log1p(math.exp(eps))

    def pmf(k):
        log_comb = math.lgamma(r + 1) - math.lgamma(k + 1) - math.lgamma(r - k + 1)
        return math.exp(log_comb + k * log_q + (r - k) * log_p)

    tail = math.fsum(pmf(k) for k in range(v, r + 1))
    if delta == 0:
        return tail
    # f(v - i) - f(v) = P[v - i <= W < v]
    spread = max(
        math.fsum(pmf(k) for k in range(v - i, v)) / i for i in range(1, v + 1)
    )
    return tail + 2 * m * delta * spread


@pytest.mark.parametrize(
    "m, r, v, delta",
    [
        (1000, 100, 100, 0.0),
        (1000, 100, 90, 0.0),
        (1000, 100, 90, 1e-5),
        (100, 60, 48, 1e-4),
        (5000, 200, 150, 1e-6),
        (50, 10, 10, 1e-3),
    ],
)
def test_bound_is_the_largest_rejected_epsilon(m, r, v, delta):
    """At the bound the exact p-value is 1 - confidence; just above it the
    claim is no longer rejected (the bound is the theorem's, not less)."""
    beta = 0.05
    eps = one_run_epsilon_lower_bound(m, r, v, delta=delta, confidence=1 - beta)
    assert eps > 0
    assert _p_value_exact(m, r, v, eps, delta) == pytest.approx(beta, rel=1e-7)
    for above in np.linspace(eps + 1e-3, eps + 2.0, 9):
        assert _p_value_exact(m, r, v, above, delta) > beta


def test_all_correct_closed_form():
    """r correct guesses of r, delta = 0: the bound solves q^r = 1 -
    confidence (r flips of randomized response all agreeing)."""
    for r, confidence in [(1, 0.5), (10, 0.95), (100, 0.95), (1000, 0.99)]:
        q = (1 - confidence) ** (1 / r)
        expected = max(0.0, math.log(q / (1 - q)))
        got = one_run_epsilon_lower_bound(r, r, r, confidence=confidence)
        assert got == pytest.approx(expected, abs=1e-9)


def test_delta_term_lowers_the_bound_and_chance_refutes_nothing():
    pure = one_run_epsilon_lower_bound(1000, 100, 95)
    approx = one_run_epsilon_lower_bound(1000, 100, 95, delta=1e-5)
    assert 0 < approx < pure
    assert one_run_epsilon_lower_bound(1000, 100, 95, delta=1e-3) < approx
    assert one_run_epsilon_lower_bound(1000, 100, 55) == 0.0
    assert one_run_epsilon_lower_bound(1000, 0, 0) == 0.0


@pytest.mark.parametrize(
    "epsilon, r, delta", [(0.5, 100, 0.0), (2.0, 300, 0.0), (1.0, 200, 1e-5)]
)
def test_randomized_response_exact_coverage(epsilon, r, delta):
    """Randomized response at epsilon on each coin (epsilon-DP, so (epsilon,
    delta)-DP): guessing each coin by its output is right with probability q
    = e^eps / (1 + e^eps), independently, so the count is Binomial(r, q).
    The probability that the bound exceeds epsilon, summed exactly over the
    counts, is at most 1 - confidence, and not far below it (0.042, 0.045
    and 0.048 here): the bound is sharp for this mechanism."""
    m = 1000
    q = 1 / (1 + math.exp(-epsilon))
    counts = np.arange(r + 1)
    pmf = stats.binom.pmf(counts, r, q)
    # the delta term only lowers the bound: skip the counts whose delta = 0
    # bound is already at most epsilon
    likely = [
        v for v in counts[pmf > 1e-12] if one_run_epsilon_lower_bound(m, r, v) > epsilon
    ]
    above = [
        v for v in likely if one_run_epsilon_lower_bound(m, r, v, delta=delta) > epsilon
    ]
    assert 0.03 < pmf[above].sum() <= 0.05


def test_randomized_response_game_approaches_epsilon(global_random_seed):
    """The guessing game itself: 20,000 coins through randomized response at
    epsilon = 1, a guess on each. The bound is below epsilon and close to it
    (the 95 % bound from 20,000 guesses is within about 0.04 of it)."""
    rng = np.random.default_rng(global_random_seed)
    m, epsilon = 20_000, 1.0
    coins = rng.choice([-1, 1], size=m)
    keep = rng.random(m) < 1 / (1 + math.exp(-epsilon))
    outputs = np.where(keep, coins, -coins)
    correct = int(np.sum(outputs == coins))
    bound = one_run_epsilon_lower_bound(m, m, correct)
    assert epsilon - 0.12 < bound <= epsilon


def test_bound_validation():
    with pytest.raises(ValueError, match="n_correct <= n_guesses <= n_canaries"):
        one_run_epsilon_lower_bound(10, 20, 5)
    with pytest.raises(ValueError, match="n_correct <= n_guesses"):
        one_run_epsilon_lower_bound(10, 5, 6)
    with pytest.raises(ValueError, match="confidence"):
        one_run_epsilon_lower_bound(10, 5, 5, confidence=1.0)


# --------------------------------------------------------------------------
# 2. correct mechanisms: the one-run bound stays below the claim


def _dpsgd(**params):
    defaults = dict(
        max_grad_norm=0.5,
        max_iter=1,
        learning_rate=0.5,
        clipping="hard",
        delta=DELTA,
        per_instance_accounting=False,
        fil_accounting=False,
    )
    return DPSGDClassifier(**{**defaults, **params})


M = 300  # canaries
CONFIGURATIONS = {
    "dpsgd_full_batch": _dpsgd(
        noise_multiplier=1.5, sampling="shuffle", batch_size=N_SAMPLES + M
    ),
    "dpsgd_poisson": _dpsgd(noise_multiplier=1.0, batch_size=(N_SAMPLES + M) // 2),
    "dpsgd_add_remove": _dpsgd(
        noise_multiplier=1.0,
        batch_size=(N_SAMPLES + M) // 2,
        neighboring_relation="add_remove",
        public_n_samples=N_SAMPLES + M // 2,
        accountant="rdp",  # two fits (see OneRunAudit): the cheaper accountant
    ),
    "glm": OutputPerturbedLogisticRegression(
        target_epsilon=2.0, lam=0.1, data_norm=1.0, fit_intercept=False, delta=DELTA
    ),
    "linear": OutputPerturbedLinearRegression(
        target_epsilon=2.0,
        lam=1.0,
        data_norm=0.02,
        label_bound=1.0,
        fit_intercept=False,
        delta=DELTA,
    ),
}


def _fit(estimator, data, **params):
    X, y = data
    if isinstance(estimator, OutputPerturbedLinearRegression):
        y = X[:, 0] + 0.1
    params = {"n_canaries": M, "n_guesses": 60, **params}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the clipped rows of the linear model
        return OneRunAudit(estimator, **params).fit(X, y)


@pytest.mark.parametrize("name", list(CONFIGURATIONS))
def test_lower_bound_below_claim(name, data, global_random_seed):
    estimator = CONFIGURATIONS[name]
    audit = _fit(estimator, data, random_state=global_random_seed)
    assert audit.epsilon_lower_ <= audit.epsilon_claimed_, audit.audit_report_
    assert audit.consistent_
    report = audit.audit_report_
    assert report.index.tolist() == [type(estimator).__name__]
    assert report["neighboring_relation"].iloc[0] == (
        "add_remove" if name == "dpsgd_add_remove" else "replace_one"
    )
    assert (
        audit.guarantee_.neighboring_relation == report["neighboring_relation"].iloc[0]
    )
    # the counts behind the bound
    scores = audit.scores_
    guessed = scores["guess"] != 0
    assert guessed.sum() == audit.n_guesses_ == 60
    assert (scores["guess"] == scores["coin"]).sum() == audit.n_correct_
    assert audit.epsilon_lower_ == one_run_epsilon_lower_bound(
        M, 60, audit.n_correct_, delta=audit.delta_
    )
    # the guesses are the most extreme scores
    top = scores["score"].nlargest(30).index
    assert (scores.loc[top, "guess"] == 1).all()


def test_the_canaries_carry_the_signal(data):
    """With a tiny noise every guess is right: the canaries' scores are the
    weights they moved, with the sign of their coin."""
    estimator = OutputPerturbedLinearRegression(
        sigma=1e-9, lam=1.0, data_norm=0.02, label_bound=1.0, fit_intercept=False
    )
    audit = _fit(estimator, data, n_guesses=M, random_state=0)
    scores = audit.scores_
    assert np.all(np.sign(scores["score"]) == scores["coin"])
    # ridge along a fresh coordinate: B R / (R^2 + n lam)
    n = N_SAMPLES + M
    assert np.abs(scores["score"]).to_numpy() == pytest.approx(
        np.full(M, 0.02 / (0.02**2 + n)), rel=1e-4
    )


def test_add_remove_leaves_out_the_canaries_with_coin_minus_one(data):
    """Under add/remove the data hold the canaries with coin +1 only: the
    released weight of any other canary column is pure noise around 0."""
    estimator = _dpsgd(  # q = 1: every canary present is in the one step
        noise_multiplier=1e-3,
        batch_size=N_SAMPLES + M // 2,
        neighboring_relation="add_remove",
        public_n_samples=N_SAMPLES + M // 2,
    )
    audit = _fit(estimator, data, n_guesses=M, random_state=1)
    scores = audit.scores_
    absent = scores["coin"] < 0
    # lr C R / sqrt(R^2 + 1) / batch_size = 8.9e-4 against noise 1e-6
    assert np.all(scores.loc[~absent, "score"] > 1e-4)
    assert np.all(np.abs(scores.loc[absent, "score"]) < 1e-4)


# --------------------------------------------------------------------------
# 3. power: mechanisms with much less noise than claimed are refuted


def test_power_dpsgd_tenth_noise(data):
    """One full-batch step claiming noise multiplier 10 (distance 2 C, epsilon
    0.88 at delta 1e-5) with a tenth of it: each canary's weight moves by 2
    C R / sqrt(R^2 + 1) ~ 1.8 noise standard deviations."""
    estimator = TenthNoiseDPSGD(
        **_dpsgd(
            noise_multiplier=10.0, sampling="shuffle", batch_size=N_SAMPLES + M
        ).get_params()
    )
    audit = _fit(estimator, data, random_state=0)
    honest = _fit(DPSGDClassifier(**estimator.get_params()), data, random_state=0)
    assert audit.epsilon_claimed_ == pytest.approx(honest.epsilon_claimed_, rel=1e-3)
    assert audit.epsilon_lower_ > audit.epsilon_claimed_, audit.audit_report_
    assert not audit.consistent_
    assert honest.epsilon_lower_ <= honest.epsilon_claimed_


def test_power_glm_twentieth_noise(data):
    """Output-perturbed logistic regression claiming epsilon 0.5 with a
    twentieth of its noise: each canary's weight moves by about half the
    certified distance, ten times the claimed distance in noise units."""
    params = dict(lam=0.1, data_norm=1.0, fit_intercept=False, delta=DELTA)
    sigma = OutputPerturbedLogisticRegression(target_epsilon=0.5, **params)
    sigma = _fit(sigma, data, random_state=0).guarantee_.noise_std
    estimator = TwentiethNoiseLogisticRegression(sigma=sigma, **params)
    audit = _fit(estimator, data, random_state=0)
    assert audit.epsilon_claimed_ == pytest.approx(0.5, rel=1e-6)
    assert audit.epsilon_lower_ > audit.epsilon_claimed_, audit.audit_report_


# --------------------------------------------------------------------------
# 4. the claim at another delta, pipelines, bad input


def test_claim_at_another_delta(data):
    estimator = CONFIGURATIONS["glm"]
    audit = _fit(estimator, data, delta=1e-8, random_state=0)
    g = audit.guarantee_
    assert audit.delta_ == 1e-8
    expected = PrivacyBudget(1.0, 1e-8).epsilon_after(g)
    assert audit.epsilon_claimed_ == pytest.approx(expected)
    assert audit.epsilon_claimed_ > g.epsilon
    assert audit.epsilon_lower_ == one_run_epsilon_lower_bound(
        M, 60, audit.n_correct_, delta=1e-8
    )


def test_pipeline_and_dataframe(data):
    X, y = data
    frame = pd.DataFrame(X, columns=["a", "b"])
    scaler = StandardScaler(with_std=False).fit(X)
    estimator = CONFIGURATIONS["dpsgd_full_batch"]
    pipe = make_pipeline(scaler, estimator)
    direct = _fit(estimator, (scaler.transform(X), y), random_state=3)
    piped = _fit(pipe, (frame, y), random_state=3)
    pd.testing.assert_frame_equal(direct.scores_, piped.scores_)
    on_frame = _fit(estimator, (frame, y), random_state=3)
    assert on_frame.n_correct_ >= 0  # a DataFrame keeps its names, plus canaries


def test_reproducible(data):
    estimator = CONFIGURATIONS["dpsgd_poisson"]
    a = _fit(estimator, data, random_state=5)
    b = _fit(clone(estimator), data, random_state=5)
    pd.testing.assert_frame_equal(a.scores_, b.scores_)


@pytest.mark.parametrize(
    "estimator, params, error, match",
    [
        (CONFIGURATIONS["glm"], {"n_guesses": M + 1}, ValueError, "exceeds n_canar"),
        (
            _dpsgd(hidden_layer_sizes=(3,), batch_size=10),
            {},
            ValueError,
            "hidden layers",
        ),
        (OutputPerturbedLogisticRegression(), {}, ValueError, "no epsilon"),
        (CONFIGURATIONS["glm"], {"confidence": 1.0}, ValueError, "confidence"),
    ],
)
def test_bad_input(data, estimator, params, error, match):
    audit = OneRunAudit(estimator, **{"n_canaries": M, "n_guesses": 10, **params})
    with pytest.raises(error, match=match):
        audit.fit(*data)
    assert not hasattr(audit, "epsilon_lower_")


def test_multiclass_and_sample_weight_refused(data):
    X, y = data
    three = np.arange(N_SAMPLES) % 3
    audit = OneRunAudit(CONFIGURATIONS["dpsgd_poisson"], n_canaries=M, n_guesses=10)
    with pytest.raises(ValueError, match="3 classes"):
        audit.fit(X, three)
    with pytest.raises(ValueError, match="sample_weight"):
        audit.fit(X, y, sample_weight=np.ones(N_SAMPLES))


_SEEN = []  # per_instance_accounting of every _Spy fit, in this process


class _Spy(OutputPerturbedLogisticRegression):
    def fit(self, X, y, sample_weight=None):
        _SEEN.append(self.per_instance_accounting)
        return super().fit(X, y, sample_weight)


def test_fits_without_unread_report_columns(data):
    """The run skips the report columns nobody reads; the user's estimator is
    untouched and the audit is the same whichever setting it was given."""
    _SEEN.clear()
    spy = _Spy(**CONFIGURATIONS["glm"].get_params())
    audit = _fit(spy, data, random_state=0)
    assert _SEEN == [False]
    assert spy.per_instance_accounting == "auto"
    plain = _fit(CONFIGURATIONS["glm"], data, random_state=0)
    pd.testing.assert_frame_equal(audit.scores_, plain.scores_)
