# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""PrivateSearchCV: the search API, its accounting against dp-accounting
composed independently, and bad input refused before any work."""

import math
import warnings

import dp_accounting
import numpy as np
import pytest
from scipy import optimize, stats
from sklearn.base import RegressorMixin, clone
from sklearn.datasets import make_classification
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_fil import (
    DPSGDClassifier,
    OutputPerturbedLogisticRegression,
    PrivateSearchCV,
    release,
)
from sklearn_fil.accounting import PrivacyBudget
from sklearn_fil.exceptions import PrivacyLeakWarning
from sklearn_fil.model_selection._stopping import draw_repetitions, repetition_gamma
from tests.model_selection._doubles import NoisyMeanClassifier

DELTA = 1e-5


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(n_samples=600, n_features=4, random_state=0)
    return X / np.linalg.norm(X, axis=1).max(), y


def _logistic(**params):
    return OutputPerturbedLogisticRegression(
        **{"data_norm": 1.0, "fit_intercept": False, **params}
    )


def _gaussian_epsilon(m, delta):
    """Analytic Gaussian mechanism at unit sensitivity (Balle and Wang 2018)."""

    def delta_at(eps):
        low = math.exp(eps + stats.norm.logcdf(-0.5 / m - eps * m))
        return stats.norm.cdf(0.5 / m - eps * m) - low

    if delta_at(0.0) <= delta:  # (0, delta)-DP already
        return 0.0
    return optimize.brentq(lambda e: delta_at(e) - delta, 0.0, 500.0, xtol=1e-14)


def _noise_multiplier(epsilon, delta):
    """Inverse of :func:`_gaussian_epsilon` in the noise multiplier."""
    return optimize.brentq(
        lambda m: _gaussian_epsilon(m, delta) - epsilon, 0.05, 1e4, xtol=1e-14
    )


def _rdp_epsilon(event, delta):
    acc = dp_accounting.rdp.RdpAccountant(
        neighboring_relation=dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE
    )
    acc.compose(event)
    return acc.get_epsilon(delta)


# --------------------------------------------------------------------------
# accounting


@pytest.mark.parametrize("refit", [True, False])
@pytest.mark.parametrize("shape", [0.0, 1.0, math.inf])
def test_total_epsilon_is_dp_accountings(data, refit, shape):
    X, y = data
    search = PrivateSearchCV(
        _logistic(lam=0.1),
        {"lam": [0.03, 0.1, 0.3]},
        target_epsilon=2.0,
        delta=DELTA,
        n_iter=5,
        shape=shape,
        refit=refit,
        random_state=0,
    ).fit(X, y)
    n_val = search.validation_indices_.size
    # the event rebuilt from the reported epsilons and noise, not from the code
    model = _noise_multiplier(search.candidate_epsilon_, DELTA)
    score = search.score_noise_std_ * n_val
    run = dp_accounting.ComposedDpEvent(
        [dp_accounting.GaussianDpEvent(model), dp_accounting.GaussianDpEvent(score)]
    )
    event = dp_accounting.dp_event.RepeatAndSelectDpEvent(run, 5.0, shape)
    if refit:
        refit_m = _noise_multiplier(search.refit_epsilon_, DELTA)
        event = dp_accounting.ComposedDpEvent(
            [event, dp_accounting.GaussianDpEvent(refit_m)]
        )
    expected = _rdp_epsilon(event, DELTA)
    # the candidates are asked for 1e-6 more noise than is accounted
    assert expected <= search.epsilon_ <= expected * (1 + 1e-5)
    assert 2.0 * (1 - 1e-5) <= search.epsilon_ <= 2.0
    assert search.delta_ == DELTA
    g = search.guarantee_
    assert g.neighboring_relation == "replace_one"
    assert g.event_relation == "add_remove"
    assert "n_samples" in g.public
    assert (search.refit_epsilon_ is None) == (not refit)
    assert search.best_estimator_.guarantee_ is g


def test_candidates_are_fitted_at_the_calibrated_noise(data):
    # the double records its noise: every candidate's noise over its
    # sensitivity is the accounted model noise multiplier (1e-6 above it)
    X, y = data
    search = PrivateSearchCV(
        NoisyMeanClassifier(),
        {"shift": [0.0, 0.5]},
        target_epsilon=1.0,
        delta=DELTA,
        refit=False,
        random_state=0,
    ).fit(X, y)
    n_train = X.shape[0] - search.validation_indices_.size
    winner = search.best_estimator_
    expected = _noise_multiplier(search.candidate_epsilon_, DELTA)
    np.testing.assert_allclose(winner.noise_std_ / (2.0 / n_train), expected, rtol=1e-8)


def test_budget_spends_the_search_and_its_winner(data):
    X, y = data
    search = PrivateSearchCV(
        _logistic(),
        {"lam": [0.1, 1.0]},
        target_epsilon=1.5,
        delta=DELTA,
        random_state=0,
    ).fit(X, y)
    budget = PrivacyBudget(epsilon=3.0, delta=DELTA, accountant="rdp")
    assert budget.spend(search) == pytest.approx(search.epsilon_, rel=1e-12)
    budget = PrivacyBudget(epsilon=3.0, delta=DELTA, accountant="rdp")
    assert budget.spend(search.best_estimator_) == pytest.approx(
        search.epsilon_, rel=1e-12
    )
    # twice the search: two repeat-and-selects composed, as dp-accounting does
    twice = dp_accounting.ComposedDpEvent([search.dp_event_] * 2)
    assert budget.spend(search) == pytest.approx(_rdp_epsilon(twice, DELTA), rel=1e-9)
    with pytest.raises(ValueError, match="accountant='rdp'"):
        PrivacyBudget(epsilon=3.0, delta=DELTA).spend(search)


def test_repetition_distribution(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    mean, n = 8.0, 4000
    for shape in (0.0, 0.5, 1.0, 3.0, math.inf):
        if not math.isinf(shape):  # dp-accounting's own map from the mean
            from dp_accounting.rdp.rdp_privacy_accountant import (
                _gamma_truncated_negative_binomial,
            )

            assert repetition_gamma(mean, shape) == pytest.approx(
                _gamma_truncated_negative_binomial(shape, mean), rel=1e-6
            )
        draws = np.array([draw_repetitions(rng, mean, shape) for _ in range(n)])
        assert draws.min() >= (0 if math.isinf(shape) else 1)
        # the sample mean within 5 standard errors (its sample sd)
        assert abs(draws.mean() - mean) < 5 * draws.std() / math.sqrt(n)
    gamma = repetition_gamma(mean, 1.0)  # geometric: P(K = 1) = gamma
    ones = np.mean([draw_repetitions(rng, mean, 1.0) == 1 for _ in range(n)])
    assert abs(ones - gamma) < 5 * math.sqrt(gamma * (1 - gamma) / n)


# --------------------------------------------------------------------------
# the search API


def test_cv_results_and_best(data):
    X, y = data
    grid = {"lam": [0.01, 0.1, 1.0], "penalize_intercept": [True]}
    search = PrivateSearchCV(
        _logistic(), grid, target_epsilon=3.0, delta=DELTA, n_iter=6, random_state=1
    ).fit(X, y)
    res = search.cv_results_
    k = len(res["params"])
    assert k >= 1
    for key in (
        "mean_test_score",
        "rank_test_score",
        "mean_fit_time",
        "mean_score_time",
        "param_lam",
        "param_penalize_intercept",
    ):
        assert len(res[key]) == k
    assert search.best_index_ == int(np.argmax(res["mean_test_score"]))
    assert res["rank_test_score"][search.best_index_] == 1
    assert search.best_params_ == res["params"][search.best_index_]
    assert search.best_score_ == res["mean_test_score"][search.best_index_]
    assert search.best_params_["lam"] in grid["lam"]
    assert list(res["param_lam"]) == [p["lam"] for p in res["params"]]
    # the winner refitted on all rows at the refit's epsilon, with the search's
    # guarantee
    best = search.best_estimator_
    assert best.lam == search.best_params_["lam"]
    assert best.target_epsilon == search.refit_epsilon_
    assert search.predict(X).shape == (X.shape[0],)
    np.testing.assert_array_equal(search.classes_, [0, 1])
    assert search.score(X, y) == best.score(X, y)
    np.testing.assert_array_equal(search.predict_proba(X), best.predict_proba(X))


def test_reproducible_and_fresh(data):
    X, y = data
    search = PrivateSearchCV(
        _logistic(), {"lam": [0.1, 1.0]}, target_epsilon=1.0, random_state=3
    )
    a = clone(search).fit(X, y)
    b = clone(search).fit(X, y)
    np.testing.assert_array_equal(a.best_estimator_.coef_, b.best_estimator_.coef_)
    assert a.cv_results_["params"] == b.cv_results_["params"]
    fresh = search.set_params(random_state=None)
    c, d = clone(fresh).fit(X, y), clone(fresh).fit(X, y)
    assert not np.array_equal(c.best_estimator_.coef_, d.best_estimator_.coef_)
    # the split is public: a function of n alone, whatever the randomness
    np.testing.assert_array_equal(a.validation_indices_, c.validation_indices_)
    assert a.validation_indices_.size == round(0.2 * X.shape[0])
    # what may be published carries the search's guarantee
    assert release(c.best_estimator_).guarantee_ == c.guarantee_


def test_refit_false_keeps_the_winning_run(data):
    X, y = data
    search = PrivateSearchCV(
        NoisyMeanClassifier(),
        {"shift": [0.0, 0.5]},
        target_epsilon=1.0,
        refit=False,
        random_state=0,
    ).fit(X, y)
    assert search.refit_epsilon_ is None and search.refit_time_ == 0.0
    assert isinstance(search.dp_event_, dp_accounting.dp_event.RepeatAndSelectDpEvent)
    # the winner saw the training part only: its noise-free mean is that part's
    train = np.setdiff1d(np.arange(X.shape[0]), search.validation_indices_)
    winner = search.best_estimator_
    np.testing.assert_allclose(winner.mean_, X[train].mean(axis=0), rtol=1e-12)
    assert winner.shift == search.best_params_["shift"]


def test_param_distributions(data):
    X, y = data
    search = PrivateSearchCV(
        _logistic(),
        [{"lam": stats.loguniform(1e-2, 1.0)}, {"lam": [5.0]}],
        target_epsilon=3.0,
        n_iter=8,
        random_state=0,
    ).fit(X, y)
    lams = [p["lam"] for p in search.cv_results_["params"]]
    assert all(1e-2 <= v <= 1.0 or v == 5.0 for v in lams)


def test_pipeline(data):
    X, y = data
    scaler = FrozenEstimator(StandardScaler(with_std=False).fit(X[:100]))
    pipe = make_pipeline(scaler, _logistic())
    name = "outputperturbedlogisticregression"
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        search = PrivateSearchCV(
            pipe, {f"{name}__lam": [0.1, 1.0]}, target_epsilon=2.0, random_state=0
        ).fit(X, y)
    assert search.best_estimator_[-1].guarantee_ is search.guarantee_
    assert set(search.best_params_) == {f"{name}__lam"}
    # a prefix fitted on the private rows is published uncovered: warned
    with pytest.warns(PrivacyLeakWarning, match="prefix"):
        PrivateSearchCV(
            make_pipeline(StandardScaler(), _logistic(data_norm=8.0)),
            {f"{name}__lam": [0.1]},
            target_epsilon=2.0,
        ).fit(X, y)


def test_dpsgd_shuffled(data):
    X, y = data
    clf = DPSGDClassifier(
        sampling="shuffle",
        batch_size=100,
        max_iter=2,
        per_instance_accounting=False,
        fil_accounting=False,
    )
    search = PrivateSearchCV(
        clf,
        {"learning_rate": [0.1, 0.5]},
        target_epsilon=3.0,
        n_iter=3,
        random_state=0,
    ).fit(X, y)
    assert search.epsilon_ <= 3.0
    assert search.best_estimator_.guarantee_ is search.guarantee_


class _Regressor(RegressorMixin, NoisyMeanClassifier):
    pass


class _Counting(NoisyMeanClassifier):
    fits = 0

    def fit(self, X, y):
        type(self).fits += 1
        return super().fit(X, y)


@pytest.mark.parametrize(
    "estimator, dists, params, error, match",
    [
        (_Counting(), {"nope": [1]}, {}, ValueError, "Invalid parameter 'nope'"),
        (_Counting(), {"target_epsilon": [1.0]}, {}, ValueError, "calibrates"),
        (_Counting(), {"delta": [1e-6]}, {}, ValueError, "calibrates"),
        (_Counting(), {"shift": []}, {}, ValueError, "empty"),
        (
            _Counting(),
            {"shift": [0.0]},
            {"privacy_shares": (1, 0, 1)},
            ValueError,
            "privacy_shares",
        ),
        (
            _Counting(),
            {"shift": [0.0]},
            {"privacy_shares": (1, 1)},
            ValueError,
            "privacy_shares",
        ),
        (
            _Counting(),
            {"shift": [0.0]},
            {"validation_fraction": 1e-4},
            ValueError,
            "validation_fraction",
        ),
        (
            _Counting(),
            {"shift": [0.0]},
            {"target_epsilon": 1e-3},
            ValueError,
            "out of reach",
        ),
        (
            _Counting(),
            {"shift": [0.0]},
            {"shape": -1.0},
            InvalidParameterError,
            "shape",
        ),
        (_Counting(), {"shift": [0.0]}, {"n_iter": 1}, InvalidParameterError, "n_iter"),
        (LogisticRegression(), {"C": [1.0]}, {}, TypeError, "target_epsilon"),
        (
            OutputPerturbedLogisticRegression(),
            {"lam": [1.0]},
            {},
            ValueError,
            "data_norm",
        ),
        (DPSGDClassifier(), {"learning_rate": [1.0]}, {}, ValueError, "shuffle"),
        (_Regressor(), {"shift": [1.0]}, {}, ValueError, "scoring"),
    ],
)
def test_bad_input_before_any_work(data, estimator, dists, params, error, match):
    X, y = data
    _Counting.fits = 0
    search = PrivateSearchCV(estimator, dists, **{"target_epsilon": 1.0, **params})
    with pytest.raises(error, match=match):
        search.fit(X, y)
    assert _Counting.fits == 0
    assert not hasattr(search, "best_estimator_")


def test_candidate_without_the_accounted_guarantee(data):
    X, y = data

    class Louder(NoisyMeanClassifier):  # half the noise, the same claim
        def fit(self, X, y):
            super().fit(X, y)
            g = self.guarantee_
            self.guarantee_ = type(g)(
                **{
                    **g.__dict__,
                    "dp_event": dp_accounting.GaussianDpEvent(
                        g.dp_event.noise_multiplier / 2
                    ),
                }
            )
            return self

    with pytest.raises(ValueError, match="cannot account"):
        PrivateSearchCV(Louder(), {"shift": [0.0]}, target_epsilon=1.0).fit(X, y)


def test_poisson_without_repetition_releases_nothing(data):
    X, y = data
    for seed in range(50):  # P(K = 0) = exp(-1.01) per seed
        search = PrivateSearchCV(
            NoisyMeanClassifier(),
            {"shift": [0.0]},
            target_epsilon=5.0,
            n_iter=1.01,
            shape=math.inf,
            random_state=seed,
        )
        try:
            search.fit(X, y)
        except ValueError as exc:
            assert "gave 0" in str(exc)
            assert not hasattr(search, "best_estimator_")
            return
    pytest.fail("no seed drew K = 0")
