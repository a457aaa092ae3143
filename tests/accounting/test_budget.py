# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""PrivacyBudget and within_budget: refusal before recording, composition
against dp-accounting's privacy loss distributions and Renyi DP built by hand
in the test, and a grid search on a real data set that stays within budget."""

import math
import pickle
import warnings

import dp_accounting
import numpy as np
import pandas as pd
import pytest
from dp_accounting.pld import privacy_loss_distribution as pld
from dp_accounting.rdp.rdp_privacy_accountant import DEFAULT_RDP_ORDERS
from scipy.special import gammaln, logsumexp
from scipy.stats import norm
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.metrics import accuracy_score
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.preprocessing import StandardScaler

from sklearn_fil import (
    OutputPerturbedLinearRegression,
    OutputPerturbedLogisticRegression,
)
from sklearn_fil.accounting import (
    Guarantee,
    PrivacyBudget,
    dpsgd_dp_event,
    gaussian_epsilon,
    within_budget,
)
from sklearn_fil.exceptions import BudgetExceededError, PrivacyLeakWarning

DELTA = 1e-6
REPLACE_ONE = dp_accounting.NeighboringRelation.REPLACE_ONE


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(n_samples=200, n_features=4, random_state=0)
    return X / np.linalg.norm(X, axis=1).max(), y


def _glm(data, **params):
    defaults = dict(lam=0.1, fit_intercept=False, data_norm=1.0, delta=DELTA)
    return OutputPerturbedLogisticRegression(**{**defaults, **params}).fit(*data)


def _dpsgd_guarantee(noise=1.3, q=0.1, steps=20, relation="replace_one"):
    """A DP-SGD guarantee built from the accounting functions (hard clipping)."""
    event, event_relation = dpsgd_dp_event(
        noise_multiplier=noise,
        sample_rate=q,
        steps=steps,
        neighboring_relation=relation,
    )
    return Guarantee(
        epsilon=1.0,  # not used by the budget, which composes the event
        delta=DELTA,
        neighboring_relation=relation,
        mechanism="DP-SGD",
        dp_event=event,
        event_relation=event_relation,
    )


def balle_wang_delta(epsilon, mu):
    """δ(ε) of the Gaussian mechanism at distance / noise ``mu``."""
    return norm.cdf(mu / 2 - epsilon / mu) - math.exp(epsilon) * norm.cdf(
        -mu / 2 - epsilon / mu
    )


# --------------------------------------------------------------------------------------
# refusal before recording


def test_spend_raises_before_the_release_that_exceeds(data):
    model = _glm(data, target_epsilon=1.0)
    budget = PrivacyBudget(epsilon=1.6, delta=DELTA)
    assert budget.spent == 0.0 and budget.remaining == 1.6 and len(budget) == 0
    first = budget.spend(model, label="a")
    assert first == pytest.approx(model.epsilon_, rel=1e-12)
    # two identical Gaussian releases: one at noise sigma / sqrt(2)
    second = budget.spend(model, label="b")
    g = model.guarantee_
    mu = math.sqrt(2) * g.sensitivity / g.noise_std
    assert balle_wang_delta(second, mu) == pytest.approx(DELTA, rel=1e-6)
    before = budget.ledger.copy()
    with pytest.raises(BudgetExceededError, match="Nothing was recorded"):
        budget.spend(model, label="c")
    # the ledger is unchanged after the error
    assert len(budget) == 2 and budget.spent == second
    pd.testing.assert_frame_equal(budget.ledger, before)
    assert budget.ledger["label"].tolist() == ["a", "b"]
    assert budget.ledger["spent"].tolist() == [first, second]
    assert not budget.fits(model)
    assert budget.epsilon_after(model) > budget.epsilon
    # a smaller release still fits
    small = _glm(data, target_epsilon=0.05)
    assert budget.fits(small)
    budget.spend(small)
    assert len(budget) == 3


def test_release_without_guarantee_is_refused(data):
    budget = PrivacyBudget(epsilon=100.0, delta=DELTA)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        no_dp = _glm(data, data_norm=None)
        # without label_bound
        linear = OutputPerturbedLinearRegression(lam=0.1, data_norm=1.0).fit(
            data[0], data[1] * 1.0
        )
    for model in (no_dp, linear):
        with pytest.raises(BudgetExceededError, match="no differential-privacy"):
            budget.spend(model)
        assert budget.epsilon_after(model) == math.inf
    assert len(budget) == 0


def test_refuses_other_relations_and_group_sizes(data):
    model = _glm(data, sigma=1.0)
    budget = PrivacyBudget(
        epsilon=100.0, delta=DELTA, neighboring_relation="add_remove"
    )
    with pytest.raises(ValueError, match="'replace_one' with a budget under"):
        budget.spend(model)
    budget = PrivacyBudget(epsilon=100.0, delta=DELTA)
    budget.spend(model)
    with pytest.raises(ValueError, match="groups of 2"):
        budget.spend(model.guarantee_.group(2))
    assert len(budget) == 1
    with pytest.raises(ValueError, match="no dp_event"):
        budget.spend(
            Guarantee(epsilon=1.0, delta=DELTA, neighboring_relation="replace_one")
        )
    with pytest.raises(TypeError, match="guarantee_"):
        budget.spend("a model")
    rdp = PrivacyBudget(epsilon=100.0, delta=DELTA, accountant="rdp")
    with pytest.raises(ValueError, match="accountant='rdp' cannot"):
        rdp.spend(_dpsgd_guarantee())


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(epsilon=0.0, delta=DELTA),
        dict(epsilon=1.0, delta=0.0),
        dict(epsilon=1.0, delta=DELTA, accountant="moments"),
        dict(epsilon=1.0, delta=DELTA, neighboring_relation="swap"),
    ],
)
def test_bad_budgets(kwargs):
    with pytest.raises(ValueError):
        PrivacyBudget(**kwargs)


# --------------------------------------------------------------------------------------
# composition against hand-built dp-accounting computations


def _mu(models):
    """Gaussian mechanisms compose as one: mu = distance / noise adds in squares."""
    return math.sqrt(
        sum((m.guarantee_.sensitivity / m.guarantee_.noise_std) ** 2 for m in models)
    )


def test_gaussian_releases_compose_exactly(data):
    models = [_glm(data, sigma=s, lam=lam) for s, lam in [(0.5, 0.1), (2.0, 0.03)]]
    budget = PrivacyBudget(epsilon=100.0, delta=DELTA)
    for model in models:
        budget.spend(model)
    assert balle_wang_delta(budget.spent, _mu(models)) == pytest.approx(DELTA, rel=1e-6)
    # dp-accounting's PLD of the two mechanisms, built by hand: the same,
    # approached from above
    hand = pld.from_gaussian_mechanism(
        standard_deviation=models[0].sigma_,
        sensitivity=models[0].guarantee_.sensitivity,
    ).compose(
        pld.from_gaussian_mechanism(
            standard_deviation=models[1].sigma_,
            sensitivity=models[1].guarantee_.sensitivity,
        )
    )
    expected = hand.get_epsilon_for_delta(DELTA)
    assert budget.spent <= expected
    assert budget.spent == pytest.approx(expected, rel=1e-3)


def test_linear_and_logistic_releases_compose_exactly(data):
    """A classifier and a regressor on the same rows: one Gaussian ledger."""
    X, y = data
    models = [
        _glm(data, sigma=0.5),
        OutputPerturbedLinearRegression(
            sigma=0.5, lam=0.5, data_norm=1.0, label_bound=1.0, delta=DELTA
        ).fit(X, y - 0.5),
    ]
    budget = PrivacyBudget(epsilon=100.0, delta=DELTA)
    for model in models:
        budget.spend(model)
    assert balle_wang_delta(budget.spent, _mu(models)) == pytest.approx(DELTA, rel=1e-6)


def test_mixed_composition_matches_hand_built_pld(data):
    """A GLM release and Poisson DP-SGD under replace-one: dp-accounting's
    REPLACE_ONE PLD of the sampled steps composed with the GLM's Gaussian
    PLD at its sensitivity."""
    model = _glm(data, sigma=1.0)
    noise, q, steps = 2.0, 0.1, 20
    budget = PrivacyBudget(epsilon=100.0, delta=DELTA)
    budget.spend(model)
    budget.spend(_dpsgd_guarantee(noise, q, steps))
    gaussian = pld.from_gaussian_mechanism(
        standard_deviation=model.sigma_, sensitivity=model.guarantee_.sensitivity
    )
    dpsgd = pld.from_gaussian_mechanism(
        standard_deviation=noise, sampling_prob=q, neighboring_relation=REPLACE_ONE
    ).self_compose(steps)
    expected = gaussian.compose(dpsgd).get_epsilon_for_delta(DELTA)
    assert budget.spent == pytest.approx(expected, rel=1e-4)
    # the order of the releases does not matter
    other = PrivacyBudget(epsilon=100.0, delta=DELTA)
    other.spend(_dpsgd_guarantee(noise, q, steps))
    other.spend(model)
    assert other.spent == pytest.approx(budget.spent, rel=1e-4)


def _poisson_gaussian_rdp(q, noise, alpha):
    """RDP of the Poisson-subsampled Gaussian at an integer order (Mironov,
    Talwar & Zhang 2019, section 3.3), in closed form."""
    k = np.arange(alpha + 1)
    terms = (
        gammaln(alpha + 1)
        - gammaln(k + 1)
        - gammaln(alpha - k + 1)
        + k * math.log(q)
        + (alpha - k) * math.log1p(-q)
        + (k * k - k) / (2 * noise**2)
    )
    return logsumexp(terms) / (alpha - 1)


def test_rdp_composition_matches_hand_built_rdp(data):
    models = [_glm(data, sigma=s) for s in (0.7, 1.5)]
    budget = PrivacyBudget(epsilon=100.0, delta=DELTA, accountant="rdp")
    for model in models:
        budget.spend(model)
    orders = np.array(DEFAULT_RDP_ORDERS, dtype=float)
    # Gaussian RDP: alpha Δ² / (2 σ²), added over the releases
    rdp = sum(orders * m.guarantee_.sensitivity**2 / (2 * m.sigma_**2) for m in models)
    expected, _ = dp_accounting.rdp.compute_epsilon(orders, rdp, DELTA)
    assert budget.spent == pytest.approx(expected, rel=1e-12)


def test_rdp_composition_with_poisson_sampling_under_add_remove():
    noise, q, steps, m = 1.1, 0.05, 50, 3.0
    budget = PrivacyBudget(
        epsilon=100.0, delta=DELTA, accountant="rdp", neighboring_relation="add_remove"
    )
    budget.spend(_dpsgd_guarantee(noise, q, steps, relation="add_remove"))
    budget.spend(dp_accounting.GaussianDpEvent(m))  # unit distance
    integer = np.array([a for a in DEFAULT_RDP_ORDERS if float(a).is_integer()])
    rdp = integer / (2 * m**2) + steps * np.array(
        [_poisson_gaussian_rdp(q, noise, int(a)) for a in integer]
    )
    on_integers, _ = dp_accounting.rdp.compute_epsilon(integer, rdp, DELTA)
    # the accountant also minimises over fractional orders: never worse
    assert budget.spent <= on_integers * (1 + 1e-9)
    assert budget.spent == pytest.approx(on_integers, rel=0.05)


def test_bare_event_is_unit_distance(data):
    budget = PrivacyBudget(epsilon=100.0, delta=DELTA)
    budget.spend(dp_accounting.GaussianDpEvent(2.0), label="mine")
    assert budget.spent == pytest.approx(
        gaussian_epsilon(sigma=2.0, sensitivity=1.0, delta=DELTA), rel=1e-12
    )
    assert budget.ledger["label"].tolist() == ["mine"]
    assert math.isnan(budget.ledger["epsilon"].iloc[0])
    assert "1 release(s)" in repr(budget)


# --------------------------------------------------------------------------------------
# a grid search within budget, on a real data set


def test_grid_search_picks_the_best_candidate_within_budget():
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    data_norm, delta, budget_eps = 2.0, 1e-6, 2.0
    grid = {"sigma": [0.01, 0.1, 1.0], "lam": [0.003, 0.3]}
    model = OutputPerturbedLogisticRegression(
        data_norm=data_norm, penalize_intercept=True, delta=delta, random_state=0
    )
    budget = PrivacyBudget(epsilon=budget_eps, delta=delta)
    refit = within_budget(budget)
    cv = KFold(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ClippingWarning on some folds
        search = GridSearchCV(
            model, grid, scoring=refit.scoring, refit=refit, cv=cv
        ).fit(X, y)
        plain = GridSearchCV(model, grid, cv=cv).fit(X, y)
    results = search.cv_results_
    # every fold model's epsilon, by hand: replace-one sensitivity
    # (1 + 2e-6) 2 L / (n lam) with L = sqrt(data_norm^2 + 1)
    train_sizes = [len(train) for train, _ in cv.split(X)]
    by_hand = np.array(
        [
            [
                gaussian_epsilon(
                    sigma=p["sigma"],
                    sensitivity=(1 + 2e-6)
                    * 2
                    * math.hypot(data_norm, 1.0)
                    / (n * p["lam"]),
                    delta=delta,
                )
                for n in train_sizes
            ]
            for p in results["params"]
        ]
    )
    recorded = np.column_stack([results[f"split{k}_test_epsilon"] for k in range(3)])
    np.testing.assert_allclose(recorded, by_hand, rtol=1e-9)
    np.testing.assert_allclose(
        np.column_stack([results[f"split{k}_test_spent_after"] for k in range(3)]),
        by_hand,
        rtol=1e-9,
    )
    fits = by_hand.max(axis=1) <= budget_eps
    scores = np.where(fits, results["mean_test_score"], -np.inf)
    assert search.best_index_ == int(np.argmax(scores))
    assert 0 < fits.sum() < len(fits)
    # without the constraint the search picks a candidate far above the budget
    assert by_hand[plain.best_index_].max() > 100 * budget_eps
    # the refitted model (all the data: a smaller sensitivity) fits too
    best = search.best_estimator_
    assert best.epsilon_ <= by_hand[search.best_index_].min()
    budget.spend(best)
    assert budget.spent == pytest.approx(best.epsilon_, rel=1e-12)
    assert search.best_params_ == results["params"][search.best_index_]
    assert best.score(X, y) > 0.8


def test_grid_search_with_no_candidate_within_budget_raises(data):
    model = OutputPerturbedLogisticRegression(
        lam=0.1, fit_intercept=False, data_norm=1.0, delta=DELTA, random_state=0
    )
    budget = PrivacyBudget(epsilon=0.01, delta=DELTA)
    refit = within_budget(budget, scoring="accuracy")
    search = GridSearchCV(
        model, {"sigma": [0.01, 0.1]}, scoring=refit.scoring, refit=refit, cv=3
    )
    with pytest.raises(BudgetExceededError, match="No candidate fits"):
        search.fit(*data)
    with pytest.raises(ValueError, match="spent_after"):
        refit({"mean_test_score": np.array([1.0])})
    with pytest.raises(TypeError, match="PrivacyBudget"):
        within_budget(1.0)


@pytest.mark.parametrize("scoring", [None, "accuracy", "neg_log_loss"])
def test_search_within_budget_scores_and_predicts_with_its_ranking_scorer(
    data, scoring
):
    # scikit-learn's search looks its scorer up as scorer_[refit]: with a
    # plain callable refit, search.score raised KeyError (issue 30, item 4)
    X, y = data
    X_train, y_train, X_test, y_test = X[:150], y[:150], X[150:], y[150:]
    model = OutputPerturbedLogisticRegression(
        lam=0.1, fit_intercept=False, data_norm=1.0, delta=DELTA, random_state=0
    )
    refit = within_budget(PrivacyBudget(epsilon=5.0, delta=DELTA), scoring=scoring)
    search = GridSearchCV(
        model, {"sigma": [0.01, 0.1, 1.0]}, scoring=refit.scoring, refit=refit, cv=3
    ).fit(X_train, y_train)
    best = search.best_estimator_
    np.testing.assert_array_equal(search.predict(X_test), best.predict(X_test))
    np.testing.assert_array_equal(
        search.predict_proba(X_test), best.predict_proba(X_test)
    )
    expected = {
        None: best.score(X_test, y_test),
        "accuracy": accuracy_score(y_test, best.predict(X_test)),
        "neg_log_loss": np.mean(
            np.log(best.predict_proba(X_test)[np.arange(len(y_test)), y_test])
        ),
    }[scoring]
    assert search.score(X_test, y_test) == pytest.approx(expected, rel=1e-12)


def test_budget_refit_survives_pickle_clone_and_repr(data):
    budget = PrivacyBudget(epsilon=5.0, delta=DELTA)
    refit = within_budget(budget, scoring="accuracy")
    # the key of its ranking scorer, under which the search looks it up
    assert refit == "score" and {"score": 1}[refit] == 1
    assert refit != "epsilon" and refit != within_budget(budget)
    assert repr(refit) == f"within_budget({budget!r}, scoring='accuracy')"
    model = OutputPerturbedLogisticRegression(
        lam=0.1, fit_intercept=False, data_norm=1.0, delta=DELTA, random_state=0
    )
    search = GridSearchCV(
        model, {"sigma": [0.1, 1.0]}, scoring=refit.scoring, refit=refit, cv=3
    )
    for copied in (pickle.loads(pickle.dumps(refit)), clone(search).refit):
        assert type(copied) is type(refit) and copied is not refit
        assert repr(copied) == repr(refit)
    assert "refit=within_budget(" in repr(search)
    search = clone(search).fit(*data)
    assert search.score(*data) == accuracy_score(data[1], search.predict(data[0]))
