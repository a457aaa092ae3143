# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""lam="auto" and penalize_intercept="auto" of OutputPerturbedLogisticRegression.

The rule against a numeric minimisation of the excess-risk bound written out
here; its inputs public (neighbouring data sets give the same λ); the
defaults with target_epsilon and data_norm a guarantee at the target, checked
by the ε audit; without a target, the fits of old bit for bit."""

import dataclasses
import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from sklearn.datasets import make_classification
from sklearn.model_selection import GridSearchCV

from sklearn_fil import OutputPerturbedLogisticRegression
from sklearn_fil.accounting import (
    default_delta,
    gaussian_epsilon,
    gaussian_sigma,
    output_perturbation_lam,
)
from sklearn_fil.audit import EpsilonAudit


def excess_risk_bound(lam, n, p, L, epsilon, delta, G, s, coef_scale):
    """The bound of the rule's docstring, term by term, at this λ."""
    c = gaussian_sigma(epsilon=epsilon, delta=delta, sensitivity=1.0)
    sigma = c * 2.0 * G * L / (n * lam)  # the Gaussian mechanism at Δ
    B = coef_scale * p / L  # each coordinate moves a typical margin by coef_scale
    penalty_bias = lam * B**2 / 2.0
    noise = s * L**2 * p * sigma**2 / 2.0  # (s L^2)-smooth risk, E||b||^2 = p σ²
    stability = 2.0 * (G * L) ** 2 / (n * lam)
    return penalty_bias + noise + stability


@pytest.mark.parametrize(
    "n, p, L, epsilon, G, s",
    [
        (10_000, 21, math.sqrt(21), 1.0, 1.0, 0.25),
        (500, 4, 1.0, 0.5, 1.0, 0.25),
        (50_000, 88, 9.4, 3.0, 1.0, 0.25),
        (2_000, 3 * 11, math.sqrt(11), 1.0, math.sqrt(2.0), 0.5),  # multinomial
        (30, 2, 0.1, 8.0, 1.0, 0.25),
    ],
)
@pytest.mark.parametrize("coef_scale", [0.35, 2.0])
def test_rule_minimises_the_stated_bound(n, p, L, epsilon, G, s, coef_scale):
    delta = default_delta(n)
    lam = output_perturbation_lam(
        n, p, L, epsilon, delta, lipschitz=G, smoothness=s, coef_scale=coef_scale
    )
    args = (n, p, L, epsilon, delta, G, s, coef_scale)
    found = minimize_scalar(
        lambda t: excess_risk_bound(math.exp(t), *args),
        bracket=(math.log(lam) - 3.0, math.log(lam) + 3.0),
        tol=1e-12,
    )
    assert lam == pytest.approx(math.exp(found.x), rel=1e-5)
    bound = excess_risk_bound(lam, *args)
    assert bound <= found.fun * (1 + 1e-12)
    for factor in (0.9, 1.1):  # a strict minimum
        assert excess_risk_bound(lam * factor, *args) > bound


def test_rule_scales_with_the_row_norm_and_privacy():
    base = dict(n_samples=5000, n_params=11, epsilon=1.0, delta=1e-5)
    lam = output_perturbation_lam(row_norm=1.0, **base)
    # invariant to rescaling the rows: w -> w / t needs lam -> lam t^2
    assert output_perturbation_lam(row_norm=3.0, **base) == pytest.approx(9 * lam)
    assert output_perturbation_lam(**{**base, "epsilon": 0.5}, row_norm=1.0) > lam
    assert output_perturbation_lam(**{**base, "n_samples": 50_000}, row_norm=1.0) < lam


@pytest.mark.parametrize(
    "bad, match",
    [
        ({"n_params": 0}, "n_params"),
        ({"epsilon": 0.0}, "epsilon"),
        ({"delta": 1.0}, "delta"),
        ({"row_norm": -1.0}, "row_norm"),
        ({"smoothness": 0.0}, "smoothness"),
    ],
)
def test_rule_validates_its_arguments(bad, match):
    args = dict(n_samples=100, n_params=3, row_norm=1.0, epsilon=1.0, delta=1e-5)
    with pytest.raises(ValueError, match=match):
        output_perturbation_lam(**{**args, **bad})


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(n_samples=300, n_features=5, random_state=0)
    return (X - X.mean(axis=0)) / X.std(axis=0), y


def test_auto_lam_is_the_rule_of_public_values(data):
    X, y = data
    data_norm, n, d = 2.0, X.shape[0], X.shape[1]
    model = OutputPerturbedLogisticRegression(
        target_epsilon=1.0, data_norm=data_norm, random_state=0
    ).fit(X, y)
    expected = output_perturbation_lam(
        n, d + 1, math.hypot(data_norm, 1.0), 1.0, default_delta(n)
    )
    assert model.lam_ == expected
    assert model.penalize_intercept_ is True
    # public: release() keeps the values used beside the parameters of the fit
    released = model.release()
    assert released.lam_ == model.lam_
    assert released.penalize_intercept_ is True
    assert released.get_params()["lam"] == "auto"
    assert model.get_params()["penalize_intercept"] == "auto"


def test_auto_lam_is_the_same_on_neighbouring_data_sets(data):
    X, y = data
    X1, y1 = X.copy(), y.copy()
    X1[0], y1[0] = 10 * X[1], 1 - y[0]  # replace one example (clipped)
    params = dict(target_epsilon=0.5, data_norm=2.0, delta=1e-4, random_state=0)
    a = OutputPerturbedLogisticRegression(**params).fit(X, y)
    b = OutputPerturbedLogisticRegression(**params).fit(X1, y1)
    assert a.lam_ == b.lam_
    assert a.sigma_ == b.sigma_
    assert a.guarantee_.sensitivity == b.guarantee_.sensitivity
    assert not np.array_equal(a.coef_, b.coef_)  # the data did differ


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("target", [0.5, 3.0])
def test_defaults_with_a_target_give_the_target(data, fit_intercept, target):
    X, y = data
    model = OutputPerturbedLogisticRegression(
        target_epsilon=target, data_norm=2.0, fit_intercept=fit_intercept
    ).fit(X, y)
    g = model.guarantee_
    assert g.holds
    assert g.epsilon <= target
    assert g.epsilon == pytest.approx(target, rel=1e-6)
    # the guarantee's sensitivity is that of the λ used, computed here
    L = math.hypot(2.0, float(fit_intercept))
    sensitivity = 2 * L / (X.shape[0] * model.lam_) * (1 + 2e-6)
    assert g.sensitivity == pytest.approx(sensitivity, rel=1e-12)
    assert gaussian_epsilon(
        sigma=model.sigma_, sensitivity=sensitivity, delta=g.delta
    ) == pytest.approx(target, rel=1e-6)


@pytest.mark.parametrize("data_norm", [None, 2.0])
def test_auto_without_target_is_the_old_default(data, data_norm):
    X, y = data
    auto = OutputPerturbedLogisticRegression(data_norm=data_norm, random_state=0).fit(
        X, y
    )
    explicit = OutputPerturbedLogisticRegression(
        lam=1e-2,
        penalize_intercept=data_norm is not None,
        data_norm=data_norm,
        random_state=0,
    ).fit(X, y)
    assert auto.lam_ == 1e-2
    assert auto.penalize_intercept_ is (data_norm is not None)
    np.testing.assert_array_equal(auto.coef_, explicit.coef_)
    assert auto.intercept_ == explicit.intercept_
    assert auto.privacy_report_.equals(explicit.privacy_report_)
    assert auto.guarantee_.holds is (data_norm is not None)


def test_float_lam_and_explicit_penalty_are_kept(data):
    X, y = data
    model = OutputPerturbedLogisticRegression(
        lam=0.3,
        penalize_intercept=False,
        target_epsilon=1.0,
        data_norm=2.0,
        fit_intercept=False,
    ).fit(X, y)
    assert model.lam_ == 0.3
    assert model.penalize_intercept_ is False


@pytest.mark.parametrize(
    "params, match",
    [({"lam": "big"}, "lam"), ({"penalize_intercept": "yes"}, "penalize_intercept")],
)
def test_bad_auto_parameters(data, params, match):
    X, y = data
    with pytest.raises(ValueError, match=match):
        OutputPerturbedLogisticRegression(**params).fit(X, y)


def test_grid_search_over_lam_with_auto(data):
    X, y = data
    search = GridSearchCV(
        OutputPerturbedLogisticRegression(
            target_epsilon=2.0, data_norm=2.0, random_state=0
        ),
        {"lam": ["auto", 0.01, 0.1]},
        cv=3,
    ).fit(X, y)
    assert search.best_params_["lam"] in ("auto", 0.01, 0.1)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    assert search.best_estimator_.lam_ > 0


# ---------------------------------------------------------------------------
# the ε audit of the defaults at a target (20 rows: fast fits, a large λ)

N_AUDIT, DELTA = 20, 0.04


@pytest.fixture(scope="module")
def audit_data():
    rng = np.random.default_rng(0)
    X = rng.normal(scale=0.4, size=(N_AUDIT, 2))  # every row within norm 1
    y = (X[:, 0] + 0.3 * rng.normal(size=N_AUDIT) > 0).astype(int)
    return X, y


def _defaults(**params):
    # the audit reads the weights only: no per-example sensitivities
    return dict(
        target_epsilon=2.0,
        data_norm=1.0,
        delta=DELTA,
        per_instance_accounting=False,
        **params,
    )


def test_audit_of_the_defaults_at_a_target(audit_data):
    X, y = audit_data
    estimator = OutputPerturbedLogisticRegression(**_defaults())
    audit = EpsilonAudit(estimator, n_releases=1000, random_state=3).fit(X, y)
    assert audit.epsilon_claimed_ == pytest.approx(2.0, rel=1e-4)
    assert audit.epsilon_lower_ <= audit.epsilon_claimed_, audit.audit_report_
    assert audit.consistent_


class _LeakyAutoLam(OutputPerturbedLogisticRegression):
    """lam="auto" read from the private labels: 1/8 of the rule's λ on data
    sets with an odd number of positives, the claim unchanged."""

    def _resolve_params(self, omega, delta):
        lam, penalize = super()._resolve_params(omega, delta)
        return (lam / 8.0 if self._y_sum % 2 else lam), penalize

    def fit(self, X, y, sample_weight=None):
        self._y_sum = int(np.sum(y))
        return super().fit(X, y, sample_weight)


def test_audit_catches_a_data_dependent_lam(audit_data):
    X, y = audit_data
    X, y = X.copy(), y.copy()
    if y.sum() % 2 == 0:  # odd positives here; the neighbour's label flips it
        y[np.flatnonzero(y == 0)[-1]] = 1
    # The default canary of the logistic model labels both of its rows alike
    # (both misclassified), which leaves this leak's parity alone: the
    # neighbour replaces row 0's label instead.
    y1 = y.copy()
    y1[0] = 1 - y1[0]
    leaky = _LeakyAutoLam(**_defaults())
    audit = EpsilonAudit(leaky, n_releases=400, random_state=3).fit(X, y, X, y1)
    assert audit.epsilon_lower_ > audit.epsilon_claimed_, audit.audit_report_


def test_leaky_rule_claims_the_honest_epsilon(audit_data):
    # the power test's mechanism claims what the honest one does
    X, y = audit_data
    leaky = _LeakyAutoLam(**_defaults()).fit(X, y)
    honest = OutputPerturbedLogisticRegression(**_defaults()).fit(X, y)
    assert dataclasses.asdict(leaky.guarantee_)["epsilon"] == pytest.approx(
        honest.guarantee_.epsilon
    )


def test_attacks_rerun_the_resolved_recipe(data):
    from sklearn_fil.attacks._base import target_glm

    X, y = data
    model = OutputPerturbedLogisticRegression(
        target_epsilon=1.0, data_norm=2.0, random_state=0
    ).fit(X, y)
    recipe = target_glm(model.release(), "test")
    assert recipe.lam == model.lam_ != 1e-2
    assert recipe.penalize_intercept is True
