# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""The optimal likelihood-ratio membership attack on output-perturbed GLMs."""

import warnings

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import expit
from scipy.stats import norm

from sklearn_fil import (
    IRFILRegressor,
    OutputPerturbedLinearRegression,
    OutputPerturbedLogisticRegression,
)
from sklearn_fil.attacks import LikelihoodRatioMembershipInference

FPR = 0.01


def _logistic_problem(n=30, seed=0, sigma=0.05):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    y = (rng.uniform(size=n) < expit(X @ [1.5, -1.0, 0.5])).astype(int)
    model = OutputPerturbedLogisticRegression(
        sigma=sigma, lam=0.1, data_norm=2.0, penalize_intercept=True, random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)  # clipping
        model.fit(X, y)
    return model, X, y


def _refit_without(X, y, i, lam, data_norm):
    """Newton on the objective without example i, penalty n lam kept (float64)."""
    norms = np.linalg.norm(X, axis=1)
    Xc = X * np.minimum(1.0, data_norm / norms)[:, None]
    Xt = np.hstack([Xc, np.ones((len(X), 1))])
    omega = np.ones(len(X))
    omega[i] = 0.0
    reg = len(X) * lam
    w = np.zeros(Xt.shape[1])
    for _ in range(100):
        s = expit(Xt @ w)
        g = Xt.T @ (omega * (s - y)) + reg * w
        H = Xt.T @ ((omega * s * (1 - s))[:, None] * Xt) + reg * np.eye(Xt.shape[1])
        step = np.linalg.solve(H, g)
        w -= step
        if np.linalg.norm(step) < 1e-14:
            break
    return w


def _within_binomial(successes, trials, p, z=4.5):
    """``successes / trials`` within ``z`` binomial standard errors of ``p``."""
    se = np.sqrt(p * (1 - p) / trials)
    return np.abs(successes / trials - p) <= z * se + 1.0 / trials


def test_tpr_is_the_neyman_pearson_power():
    model, X, y = _logistic_problem()
    attack = LikelihoodRatioMembershipInference(model.release(), fpr=FPR).fit(X, y)
    expected = norm.cdf(attack.loo_sensitivity_ / model.sigma - norm.ppf(1 - FPR))
    assert_allclose(attack.tpr_, expected, rtol=1e-12)
    assert_allclose(attack.report_["tpr"], attack.tpr_)
    assert np.all(attack.tpr_ >= FPR)


def test_report_matches_the_model_report():
    model, X, y = _logistic_problem()
    attack = LikelihoodRatioMembershipInference(model, delta=model.delta_).fit(X, y)
    report = model.privacy_report_
    assert attack.report_.columns.tolist() == [
        "loo_sensitivity",
        "epsilon",
        "fil",
        "tpr",
    ]
    assert_allclose(
        attack.report_["loo_sensitivity"], report["loo_sensitivity"], rtol=1e-8
    )
    assert_allclose(attack.report_["epsilon"], report["epsilon"], rtol=1e-8)
    assert_allclose(attack.report_["fil"], report["fil"], rtol=1e-6)
    # the test is (epsilon, delta)-bounded: tpr <= e^eps fpr + delta
    eps = attack.report_["epsilon"].to_numpy()
    assert np.all(attack.tpr_ <= np.exp(eps) * FPR + attack.delta_ + 1e-12)


def test_leave_one_out_minimisers_match_refits():
    model, X, y = _logistic_problem()
    attack = LikelihoodRatioMembershipInference(model).fit(X, y)
    for i in (0, 7, 19):
        w_i = _refit_without(X, y, i, 0.1, 2.0)
        assert_allclose(attack.leave_one_out_[i], w_i, rtol=1e-9, atol=1e-12)


def test_empirical_tpr_matches_analytic_over_many_releases(global_random_seed):
    # releases drawn around w* (member) and around w_-i (non-member, from an
    # independent refit): the attack's rates at 1 % FPR must be the analytic
    # ones within Monte-Carlo error, for examples of small and large Delta_i
    model, X, y = _logistic_problem()
    sigma = model.sigma
    attack = LikelihoodRatioMembershipInference(model, fpr=FPR).fit(X, y)
    ratio = attack.loo_sensitivity_ / sigma
    examples = [int(np.argmin(ratio)), int(np.argsort(ratio)[len(ratio) // 2])]
    examples.append(int(np.argmax(ratio)))
    assert ratio[examples[-1]] > 2 * ratio[examples[0]]
    rng = np.random.default_rng(global_random_seed)
    m = 20_000
    w_star = attack.minimiser_
    member = attack.predict(w_star + sigma * rng.standard_normal((m, w_star.size)))
    for i in examples:
        w_i = _refit_without(X, y, i, 0.1, 2.0)
        outside = attack.predict(w_i + sigma * rng.standard_normal((m, w_i.size)))
        assert _within_binomial(member[:, i].sum(), m, attack.tpr_[i])
        assert _within_binomial(outside[:, i].sum(), m, FPR)
    # and the real releases of the estimator, refitted with fresh noise
    fits = 200
    released = np.empty((fits, w_star.size))
    clone = OutputPerturbedLogisticRegression(**model.get_params())
    clone.set_params(per_instance_accounting=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        for k in range(fits):
            seed = 1000 + fits * global_random_seed + k
            fitted = clone.set_params(random_state=seed).fit(X, y)
            released[k] = np.append(fitted.coef_, fitted.intercept_)
    hits = attack.predict(released).sum(axis=0)
    assert np.all(_within_binomial(hits[examples], fits, attack.tpr_[examples]))


def test_linear_model_and_statistic():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((25, 2))
    y = X @ [1.0, -1.0] + 0.5 * rng.standard_normal(25)
    model = OutputPerturbedLinearRegression(sigma=0.02, lam=0.05, random_state=0)
    model.fit(X, y)
    attack = LikelihoodRatioMembershipInference(model).fit(X, y)
    assert_allclose(
        attack.loo_sensitivity_, model.privacy_report_["loo_sensitivity"], rtol=1e-10
    )
    # the statistic is N(Delta_i / sigma, 1) at w* and N(0, 1) at w_-i
    z_star = attack.decision_function(attack.minimiser_)
    assert_allclose(z_star, attack.loo_sensitivity_ / model.sigma, rtol=1e-9)
    z_loo = attack.decision_function(attack.leave_one_out_)
    assert_allclose(np.diag(z_loo), 0.0, atol=1e-9)
    # a model gives the statistic of its release
    released = np.append(model.coef_, model.intercept_)
    assert_allclose(
        attack.decision_function(model.release()), attack.decision_function(released)
    )
    assert attack.decision_function(np.tile(released, (3, 1))).shape == (3, 25)
    assert_array_equal(
        attack.predict(released), attack.decision_function(released) > norm.isf(0.01)
    )


def test_dataframe_index_and_weighted_model():
    _, X, y = _logistic_problem()
    frame = pd.DataFrame(X, columns=["a", "b", "c"], index=np.arange(100, 130))
    weights = np.random.default_rng(0).uniform(0.5, 1.0, 30)
    weighted = OutputPerturbedLogisticRegression(
        sigma=0.05,
        lam=0.1,
        data_norm=2.0,
        penalize_intercept=True,
        public_sample_weight=True,
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        weighted.fit(frame, y, sample_weight=weights)
    with pytest.raises(ValueError, match="sample weights"):
        LikelihoodRatioMembershipInference(weighted).fit(frame, y)
    attack = LikelihoodRatioMembershipInference(weighted).fit(
        frame, y, sample_weight=weights
    )
    assert attack.report_.index.equals(frame.index)
    assert_allclose(
        attack.report_["loo_sensitivity"].to_numpy(),
        weighted.privacy_report_["loo_sensitivity"].to_numpy(),
        rtol=1e-8,
    )


def test_refuses_irfil_and_other_models():
    X, y = np.random.default_rng(0).standard_normal((20, 2)), np.arange(20.0)
    irfil = IRFILRegressor(n_iter=1, tol=0).fit(X, y)
    with pytest.raises(TypeError, match="IRFIL"):
        LikelihoodRatioMembershipInference(irfil).fit(X, y)
    with pytest.raises(ValueError, match="weight vectors of length"):
        model = OutputPerturbedLinearRegression(lam=0.1).fit(X, y)
        LikelihoodRatioMembershipInference(model).fit(X, y).decision_function([1.0])


def test_deprecated_positional_sample_weight_and_released_keyword():
    model, X, y = _logistic_problem()
    ones = np.ones(len(y))
    attack = LikelihoodRatioMembershipInference(model).fit(X, y, sample_weight=ones)
    with pytest.warns(FutureWarning, match="sample_weight"):
        old = LikelihoodRatioMembershipInference(model).fit(X, y, ones)
    assert_array_equal(old.tpr_, attack.tpr_)
    release = model.release()
    # X=None tests the attacked release
    assert_array_equal(attack.decision_function(), attack.decision_function(release))
    with pytest.warns(FutureWarning, match="released"):
        z = attack.decision_function(released=release)
    assert_array_equal(z, attack.decision_function(release))
    with pytest.warns(FutureWarning, match="released"):
        assert_array_equal(attack.predict(released=release), attack.predict())
