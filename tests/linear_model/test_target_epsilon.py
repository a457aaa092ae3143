# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""target_epsilon of OutputPerturbedLogisticRegression, sigma_ on every
released GLM, and dp_event_: against the Balle & Wang closed form at the
sensitivity computed here by hand, and dp-accounting called directly."""

import math
import warnings

import dp_accounting
import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import norm
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.model_selection import GridSearchCV
from sklearn.preprocessing import StandardScaler

from sklearn_fil import (
    IRFILClassifier,
    IRFILRegressor,
    OutputPerturbedLinearRegression,
    OutputPerturbedLogisticRegression,
)
from sklearn_fil.exceptions import PrivacyLeakWarning


def closed_form_delta(epsilon, sigma, sensitivity):
    """δ(ε) of the Gaussian mechanism, Balle & Wang (2018, Theorem 8)."""
    a, b = sensitivity / (2 * sigma), epsilon * sigma / sensitivity
    return norm.cdf(a - b) - math.exp(epsilon) * norm.cdf(-a - b)


def closed_form_sigma(epsilon, delta, sensitivity):
    return brentq(
        lambda s: closed_form_delta(epsilon, s, sensitivity) - delta,
        1e-4 * sensitivity,
        1e4 * sensitivity,
        xtol=1e-300,
        rtol=1e-15,
    )


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(n_samples=80, n_features=4, random_state=0)
    return X / np.linalg.norm(X, axis=1).max() * 1.2, y  # some rows clipped


@pytest.mark.parametrize("target", [0.2, 1.0, 6.0])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_calibrated_sigma_is_the_analytic_gaussian_mechanism(
    data, target, fit_intercept
):
    X, y = data
    lam, data_norm, n = 0.05, 1.0, X.shape[0]
    model = OutputPerturbedLogisticRegression(
        target_epsilon=target,
        sigma=123.0,  # ignored
        lam=lam,
        fit_intercept=fit_intercept,
        penalize_intercept=True,
        data_norm=data_norm,
        random_state=0,
    ).fit(X, y)
    # the certified replace-one sensitivity, by hand; default delta 1 / (10 n)
    L = math.hypot(data_norm, float(fit_intercept))
    sensitivity = (1 + 2e-6) * 2 * L / (n * lam)
    delta = min(1e-5, 1 / (10 * n))
    assert model.sigma_ == pytest.approx(
        closed_form_sigma(target, delta, sensitivity), rel=1e-9
    )
    assert model.epsilon_ <= target
    assert model.epsilon_ == pytest.approx(target, rel=1e-9)
    assert closed_form_delta(target, model.sigma_, sensitivity) <= delta * (1 + 1e-9)
    g = model.guarantee_
    assert g.noise_std == model.sigma_ and g.delta == delta
    assert g.sensitivity == pytest.approx(sensitivity, rel=1e-12)
    assert "calibrated" in g.accountant
    # the FIL report is that of the calibrated noise
    plain = OutputPerturbedLogisticRegression(
        sigma=model.sigma_,
        lam=lam,
        fit_intercept=fit_intercept,
        penalize_intercept=True,
        data_norm=data_norm,
        random_state=0,
    ).fit(X, y)
    np.testing.assert_array_equal(model.coef_, plain.coef_)
    np.testing.assert_allclose(
        model.privacy_report_["fil"], plain.privacy_report_["fil"], rtol=1e-12
    )


def test_public_sample_weight_enters_the_calibration(data):
    X, y = data
    n = X.shape[0]
    weights = np.where(np.arange(n) % 2 == 0, 1.0, 0.25)
    model = OutputPerturbedLogisticRegression(
        target_epsilon=1.0,
        lam=0.1,
        fit_intercept=False,
        data_norm=1.0,
        delta=1e-4,
        public_sample_weight=True,
    ).fit(X, y, sample_weight=weights)
    # 2 L max(w) / (lam sum(w)), with the certification factor
    sensitivity = (1 + 2e-6) * 2 * 1.0 * weights.max() / (0.1 * weights.sum())
    assert model.sigma_ == pytest.approx(
        closed_form_sigma(1.0, 1e-4, sensitivity), rel=1e-9
    )
    assert model.epsilon_ <= 1.0


@pytest.mark.parametrize(
    "params, match",
    [
        (dict(data_norm=None), "data_norm was not set"),
        (dict(penalize_intercept=False, fit_intercept=True), "not penalised"),
        (dict(lam=0.0), "lam=0"),
    ],
)
def test_target_without_guarantee_is_an_error_before_any_work(data, params, match):
    X, y = data
    base = dict(target_epsilon=1.0, lam=0.1, fit_intercept=False, data_norm=1.0)
    model = OutputPerturbedLogisticRegression(**{**base, **params})
    with pytest.raises(ValueError, match=rf"target_epsilon=1\.0 needs.*{match}"):
        model.fit(X, y)
    assert not hasattr(model, "sigma_")  # a failed fit leaves no state
    # private (non-uniform) weights: no guarantee either
    with pytest.raises(ValueError, match="public_sample_weight"):
        OutputPerturbedLogisticRegression(**base).fit(
            X, y, sample_weight=np.r_[2.0, np.ones(X.shape[0] - 1)]
        )


@pytest.mark.parametrize("bad", [0.0, -1.0, "1"])
def test_target_epsilon_is_validated(data, bad):
    with pytest.raises(ValueError, match="target_epsilon"):
        OutputPerturbedLogisticRegression(target_epsilon=bad, data_norm=1.0).fit(*data)


def test_grid_search_over_sigma_with_a_target_compares_equal_privacy():
    """The target wins over sigma: every candidate of a grid over sigma is
    the same calibrated model, so the search cannot pick a larger epsilon."""
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    model = OutputPerturbedLogisticRegression(
        target_epsilon=1.0,
        lam=0.3,
        data_norm=2.0,
        penalize_intercept=True,
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search = GridSearchCV(model, {"sigma": [0.01, 1.0, 100.0]}, cv=3).fit(X, y)
    scores = search.cv_results_["mean_test_score"]
    assert np.ptp(scores) == 0.0
    assert search.best_estimator_.epsilon_ <= 1.0
    assert search.best_estimator_.epsilon_ == pytest.approx(1.0, rel=1e-9)
    # measured on this data set (see the report of issue 18)
    assert search.best_estimator_.sigma_ == pytest.approx(
        closed_form_sigma(
            1.0,
            min(1e-5, 1 / (10 * X.shape[0])),
            (1 + 2e-6) * 2 * math.hypot(2.0, 1.0) / (X.shape[0] * 0.3),
        ),
        rel=1e-9,
    )


# --------------------------------------------------------------------------------------
# sigma_ and dp_event_ on every released GLM


@pytest.mark.parametrize(
    "estimator",
    [
        OutputPerturbedLinearRegression(sigma=0.3, lam=0.1),
        OutputPerturbedLogisticRegression(sigma=0.3),
        IRFILRegressor(sigma=0.3, n_iter=2, tol=0),
        IRFILClassifier(sigma=0.3, n_iter=2, tol=0),
    ],
    ids=lambda e: type(e).__name__,
)
def test_sigma_is_fitted_and_released(data, estimator):
    X, y = data
    model = clone(estimator).set_params(random_state=0).fit(X, y)
    assert model.sigma_ == 0.3
    released = model.release()
    assert released.sigma_ == 0.3
    assert model.guarantee_.noise_std in (None, 0.3)
    with pytest.warns(PrivacyLeakWarning):
        assert model.dp_event_ is None
    with pytest.warns(PrivacyLeakWarning):
        assert released.dp_event_ is None


def test_dp_event_is_the_release_at_unit_distance(data):
    X, y = data
    model = OutputPerturbedLogisticRegression(
        target_epsilon=2.0, lam=0.1, fit_intercept=False, data_norm=1.0, delta=1e-4
    ).fit(X, y)
    g = model.guarantee_
    assert model.dp_event_ == dp_accounting.GaussianDpEvent(g.noise_std / g.sensitivity)
    assert g.event_relation == "add_remove"
    # dp-accounting's accountants, called directly, reproduce epsilon_
    pld = dp_accounting.pld.PLDAccountant().compose(model.dp_event_)
    assert pld.get_epsilon(1e-4) == pytest.approx(model.epsilon_, rel=1e-6)
    rdp = dp_accounting.rdp.RdpAccountant().compose(model.dp_event_)
    assert rdp.get_epsilon(1e-4) >= model.epsilon_
    # the release keeps the guarantee, the event and the calibrated noise
    released = model.release()
    assert released.dp_event_ == model.dp_event_
    assert released.sigma_ == model.sigma_
    assert released.target_epsilon == 2.0
