# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""Certified intervals of the logistic ``Delta_i``, against extended-precision refits.

The reference minimisers come from the extended-precision Newton solver of
``_longdouble``, so a leave-one-out displacement keeps its relative accuracy;
``D_-i`` removes example ``i``'s loss term and keeps the penalty at
``sum(omega) lam / 2``. It shares no code with ``sklearn_fil``.
"""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import stats
from scipy.special import expit

from sklearn_fil import (
    OutputPerturbedLinearRegression,
    OutputPerturbedLogisticRegression,
)
from sklearn_fil._glm import fit_glm
from sklearn_fil._leave_one_out import leave_one_out, leave_one_out_interval
from sklearn_fil.accounting import gaussian_epsilon
from sklearn_fil.linear_model import _output_perturbation
from tests.linear_model._longdouble import LD, penalty, refit

CERTIFIED_FRACTION = 1e-6  # the fits' documented certification


def reference_shifts(X, y, omega, lam, fit_intercept, penalize_intercept, rows):
    """``(w*, {i: w_-i})`` in longdouble for the sampled ``rows``."""
    p = X.shape[1] + fit_intercept
    reg = penalty(p, omega, lam, fit_intercept, penalize_intercept)
    w_full = refit(X, y, omega, "logistic", reg, fit_intercept)
    refits = {}
    for i in rows:
        without = omega.copy()
        without[i] = 0.0  # the penalty keeps sum(omega): n is public
        refits[i] = refit(X, y, without, "logistic", reg, fit_intercept, w0=w_full)
    return w_full, refits


def distance(a, b):
    return float(np.sqrt(np.sum((np.asarray(a, LD) - np.asarray(b, LD)) ** 2)))


def make_data(n, d=5, seed=0, weighted=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * np.geomspace(0.3, 1.0, d)
    X *= 0.999 / np.linalg.norm(X, axis=1).max()  # data_norm=1 clips nothing
    y = (rng.uniform(size=n) < expit(3.0 * X @ rng.standard_normal(d))).astype(float)
    omega = rng.uniform(0.2, 1.0, n) if weighted else np.ones(n)
    return X, y, omega


def sample_rows(n, residual_order, k=12, seed=0):
    """The rows of the largest and smallest residuals, and random ones."""
    rng = np.random.default_rng(seed)
    return np.unique(
        np.r_[residual_order[:3], residual_order[-3:], rng.choice(n, k, replace=False)]
    )


CONFIGS = {
    # a guarantee: clipped rows, penalised intercept
    "guarantee": dict(lam=1e-2, data_norm=1.0, penalize_intercept=True),
    # no guarantee: the intercept is not penalised (no global strong convexity)
    "free_intercept": dict(lam=1e-3, penalize_intercept=False),
    "no_intercept": dict(lam=1e-3, fit_intercept=False, penalize_intercept=False),
}


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("config", CONFIGS)
def test_report_interval_contains_extended_precision_refits(config, weighted):
    # n above AUTO_EXACT_MAX_SAMPLES: "auto" certifies an interval
    n = 2400
    assert n > _output_perturbation.AUTO_EXACT_MAX_SAMPLES
    X, y, omega = make_data(n, weighted=weighted)
    params = CONFIGS[config]
    # a tiny noise: the released weights are the fit's centre (the report's
    # sensitivities do not depend on sigma)
    est = OutputPerturbedLogisticRegression(
        sigma=1e-30, public_sample_weight=True, random_state=0, **params
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)  # no guarantee
        est.fit(X, y, sample_weight=omega if weighted else None)
    report = est.privacy_report_
    assert list(report.columns[-4:]) == [
        "loo_sensitivity_bound",
        "loo_sensitivity_lower",
        "epsilon",
        "epsilon_replace_one",
    ]
    upper = report["loo_sensitivity_bound"].to_numpy()
    lower = report["loo_sensitivity_lower"].to_numpy()
    fit_intercept = params.get("fit_intercept", True)
    centre = np.append(est.coef_, est.intercept_) if fit_intercept else est.coef_
    Xt = np.hstack([X, np.ones((n, 1))]) if fit_intercept else X
    order = np.argsort(np.abs(expit(Xt @ centre) - y))
    rows = sample_rows(n, order)
    w_star, refits = reference_shifts(
        X,
        y,
        omega / omega.max(),
        params["lam"],
        fit_intercept,
        params.get("penalize_intercept", False),
        rows,
    )
    for i in rows:
        exact = distance(w_star, refits[i])
        assert lower[i] <= exact <= upper[i], (i, lower[i], exact, upper[i])
        # and the released centre is within the upper end of the refit
        assert distance(centre, refits[i]) <= upper[i]
    # every row its own value, and a narrow interval (relative width of
    # order 1/n: 0.2 % to 2 % here, 100 times less at n = 10^5)
    assert np.median((upper - lower) / upper) < 5e-2
    assert len(np.unique(report["epsilon"])) > 0.9 * n


def test_epsilon_is_computed_from_the_upper_end():
    X, y, _ = make_data(2100, seed=1)
    est = OutputPerturbedLogisticRegression(
        sigma=0.05, lam=1e-2, data_norm=1.0, penalize_intercept=True, random_state=0
    ).fit(X, y)
    report = est.privacy_report_
    for i in (0, 700, 2099):
        expected = gaussian_epsilon(
            sigma=est.sigma_,
            sensitivity=report["loo_sensitivity_bound"].iloc[i],
            delta=est.delta_,
        )
        assert_allclose(report["epsilon"].iloc[i], expected, rtol=1e-9)
    assert np.all(report["epsilon"] <= report["epsilon_replace_one"])
    assert np.all(report["epsilon_replace_one"] <= est.epsilon_)
    # below the strong-convexity bound omega_i L / (sum(omega) lam)
    b = np.sqrt(2.0) / (2100 * 1e-2)
    slack = 2 * CERTIFIED_FRACTION * 2 * b
    assert np.all(report["loo_sensitivity_bound"] <= b + slack)
    assert np.all(report["loo_sensitivity_bound"] < 0.5 * b)


@pytest.mark.parametrize("offset", [1e-7, 1e-4])
def test_interval_from_weights_off_the_minimiser(offset):
    # the given weights (the released centre) need not be the minimiser: the
    # interval pays ||w - w*||, and reach bounds the distance from w itself
    n, lam = 1500, 2e-3
    X, y, omega = make_data(n, seed=2, weighted=True)
    rows = sample_rows(n, np.arange(n), k=8, seed=2)
    w_star, refits = reference_shifts(X, y, omega, lam, True, False, rows)
    w = w_star.astype(float) + offset * np.random.default_rng(0).standard_normal(6)
    res = leave_one_out_interval(X, y, w, omega, "logistic", lam, True, False)
    assert distance(w, w_star) <= res.fit_error
    for i in rows:
        exact = distance(w_star, refits[i])
        assert res.lower[i] <= exact <= res.upper[i]
        assert distance(w, refits[i]) <= res.reach[i]


def test_widths_shrink_with_n():
    widths = []
    for n in (1000, 4000, 16000):
        X, y, omega = make_data(n, seed=3)
        w, *_ = fit_glm(X, y, omega, "logistic", 1e-3, True, False, 1e-12, 100)
        res = leave_one_out_interval(X, y, w, omega, "logistic", 1e-3, True, False)
        widths.append(np.median((res.upper - res.lower) / res.upper))
    # relative half-width about L ||v_i|| cond(H) / 2, of order 1/n
    assert widths[1] < 0.5 * widths[0]
    assert widths[2] < 0.5 * widths[1]


def test_zero_weight_rows_have_a_zero_interval():
    X, y, omega = make_data(300, seed=4)
    omega[[3, 10]] = 0.0
    w, *_ = fit_glm(X, y, omega, "logistic", 1e-2, True, True, 1e-12, 100)
    res = leave_one_out_interval(X, y, w, omega, "logistic", 1e-2, True, True)
    assert np.all(res.upper[[3, 10]] == 0) and np.all(res.lower[[3, 10]] == 0)
    assert np.all(res.upper[omega > 0] > 0)


@pytest.mark.filterwarnings("ignore::UserWarning")  # clipping, a poor model
def test_uncertified_rows_fall_back_to_the_strong_convexity_bound(monkeypatch):
    # few rows, a tiny penalty: the one-step remainder cannot be localised
    monkeypatch.setattr(_output_perturbation, "AUTO_EXACT_MAX_SAMPLES", 5)
    rng = np.random.default_rng(5)
    n, lam = 12, 1e-4
    X = rng.standard_normal((n, 2))
    y = (rng.uniform(size=n) < 0.5).astype(float)
    est = OutputPerturbedLogisticRegression(
        sigma=1.0, lam=lam, data_norm=1.0, penalize_intercept=True
    ).fit(X, y)
    report = est.privacy_report_
    b = np.sqrt(2.0) / (n * lam)
    upper = report["loo_sensitivity_bound"]
    assert np.all(np.isfinite(upper))
    assert np.all(upper <= b * (1 + 4 * CERTIFIED_FRACTION))
    assert np.all(report["loo_sensitivity_lower"] >= 0)


def test_squared_loss_interval_is_the_closed_form():
    # constant curvature: no remainder, the interval is the exact value
    rng = np.random.default_rng(6)
    X = rng.standard_normal((400, 3))
    y = X @ [1.0, -2.0, 0.5] + rng.standard_normal(400)
    omega = np.ones(400)
    exact = leave_one_out(X, y, np.zeros(4), omega, "squared", 0.01, True, False)
    w = exact.minimiser
    res = leave_one_out_interval(X, y, w, omega, "squared", 0.01, True, False)
    assert np.all(res.lower <= exact.sensitivity * (1 + 1e-12))
    assert np.all(exact.sensitivity <= res.upper * (1 + 1e-12))
    assert_allclose(res.upper, exact.sensitivity, rtol=1e-6)


def test_linear_model_report_unchanged_above_the_threshold():
    rng = np.random.default_rng(7)
    n = 2100
    X = rng.standard_normal((n, 3))
    y = X @ [1.0, -2.0, 0.5] + rng.standard_normal(n)
    report = OutputPerturbedLinearRegression(sigma=0.1, lam=0.01).fit(X, y)
    columns = report.privacy_report_.columns[-3:]
    assert list(columns) == ["loo_sensitivity", "epsilon", "epsilon_replace_one"]


def _epsilon_lower_bound(s0, s1, delta, alpha):
    """Empirical ε lower bound of the test ``s >= t`` accusing ``s1``'s data set.

    The threshold is chosen on the first half of the samples, the rates
    counted on the second (one-sided Clopper-Pearson at ``alpha`` each).
    """
    h0, h1 = s0.size // 2, s1.size // 2
    best, threshold = -np.inf, None
    for t in np.quantile(s0[:h0], 1 - np.geomspace(1e-1, 1e-4, 40)):
        fpr, fnr = np.mean(s0[:h0] >= t), np.mean(s1[:h1] < t)
        if fpr > 0 and 1 - delta - fnr > 0:
            eps = np.log((1 - delta - fnr) / fpr)
            if eps > best:
                best, threshold = eps, t
    fp, m0 = int(np.sum(s0[h0:] >= threshold)), s0.size - h0
    fn, m1 = int(np.sum(s1[h1:] < threshold)), s1.size - h1
    fpr_up = stats.beta.ppf(1 - alpha, fp + 1, max(m0 - fp, 1))
    fnr_up = stats.beta.ppf(1 - alpha, fn + 1, max(m1 - fn, 1))
    top = 1 - delta - fnr_up
    return np.log(top / fpr_up) if top > 0 else -np.inf


def test_per_instance_epsilon_audit(global_random_seed, monkeypatch):
    # releases of the mechanism on D and on D_-i (penalty n lam kept): the
    # empirical ε of telling them apart stays below the row's claimed ε, and
    # the same audit catches a claim from a third of the upper end
    monkeypatch.setattr(_output_perturbation, "AUTO_EXACT_MAX_SAMPLES", 100)
    n, lam = 400, 1e-2
    X, y, _ = make_data(n, seed=8)
    params = dict(lam=lam, data_norm=1.0, penalize_intercept=True)
    probe = OutputPerturbedLogisticRegression(sigma=1e-30, **params).fit(X, y)
    upper = probe.privacy_report_["loo_sensitivity_bound"].to_numpy()
    i = int(np.argmax(upper))
    sigma = upper[i] / 1.5  # the row's claim: epsilon about 5 at delta
    est = OutputPerturbedLogisticRegression(sigma=sigma, **params).fit(X, y)
    claimed = est.privacy_report_["epsilon"].iloc[i]
    centre = np.append(probe.coef_, probe.intercept_)
    weight = np.ones(n)
    weight[i] = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)  # private weights
        # lam n / (n - 1) keeps the penalty at n lam without example i
        refit = OutputPerturbedLogisticRegression(
            sigma=1e-30, lam=lam * n / (n - 1), data_norm=1.0, penalize_intercept=True
        ).fit(X, y, sample_weight=weight)
    centre_i = np.append(refit.coef_, refit.intercept_)
    rng = np.random.default_rng(global_random_seed)
    m = 200_000
    direction = (centre - centre_i) / np.linalg.norm(centre - centre_i)

    def releases(c, noise):
        Z = c + noise * rng.standard_normal((m, c.size))
        return Z @ direction

    delta = est.delta_
    s1, s0 = releases(centre, sigma), releases(centre_i, sigma)
    # alpha 1e-3 on each rate: a false alarm at most once in 500 seeds
    assert _epsilon_lower_bound(s0, s1, delta, 1e-3) <= claimed
    broken = gaussian_epsilon(sigma=sigma, sensitivity=upper[i] / 3, delta=delta)
    assert _epsilon_lower_bound(s0, s1, delta, 1e-3) > broken


def test_sparse_rows_give_the_dense_interval():
    from scipy import sparse

    X, y, omega = make_data(500, seed=9, weighted=True)
    X[np.abs(X) < 0.1] = 0.0
    w, *_ = fit_glm(X, y, omega, "logistic", 1e-2, True, False, 1e-12, 100)
    dense = leave_one_out_interval(X, y, w, omega, "logistic", 1e-2, True, False)
    csr = leave_one_out_interval(
        sparse.csr_array(X), y, w, omega, "logistic", 1e-2, True, False
    )
    for a, b in zip(
        (dense.lower, dense.upper, dense.reach),
        (csr.lower, csr.upper, csr.reach),
        strict=True,
    ):
        assert_allclose(b, a, rtol=1e-10)
