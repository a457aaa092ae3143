# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""LiRA and RMIA: the tests against closed forms and brute force."""

import threading

import joblib
import numpy as np
import pytest
from scipy.special import expit
from scipy.stats import norm
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.datasets import make_classification
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_curve
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from sklearn_fil.attacks import (
    LiRAMembershipInference,
    LossThresholdMembershipInference,
    RMIAMembershipInference,
    attack_report,
)
from sklearn_fil.attacks._shadow import logit_confidence


class GaussianSignal(ClassifierMixin, BaseEstimator):
    """A Gaussian mechanism seen through ``predict_proba``.

    Column 0 of X is the row's id. A fit draws, for every id ``i``, the logit
    ``phi_i = mu_i + shift [i trained on] + sigma N(0, 1)``: IN and OUT are
    Gaussians of equal variance and means ``shift`` apart, so the
    Neyman-Pearson test of one row is a threshold on ``phi_i - mu_i`` and its
    TPR at FPR ``a`` is ``Phi(shift / sigma - Phi^-1(1 - a))``. The loss
    threshold ignores the offsets ``mu_i``.
    """

    def __init__(self, mu=None, shift=1.0, sigma=1.0, random_state=None):
        self.mu = mu
        self.shift = shift
        self.sigma = sigma
        self.random_state = random_state

    def fit(self, X, y):
        rng = np.random.default_rng(self.random_state)
        self.classes_ = np.array([0, 1])
        self.phi_ = self.mu + self.sigma * rng.standard_normal(self.mu.size)
        self.phi_[np.asarray(X)[:, 0].astype(int)] += self.shift
        return self

    def predict_proba(self, X):
        p = expit(self.phi_[np.asarray(X)[:, 0].astype(int)])
        return np.column_stack([1.0 - p, p])


class ReportSkipping(GaussianSignal):
    """Fails unless fitted with the report columns switched off."""

    def __init__(
        self,
        mu=None,
        shift=1.0,
        sigma=1.0,
        random_state=None,
        per_instance_accounting="auto",
        fil_accounting=True,
    ):
        super().__init__(mu=mu, shift=shift, sigma=sigma, random_state=random_state)
        self.per_instance_accounting = per_instance_accounting
        self.fil_accounting = fil_accounting

    def fit(self, X, y):
        if self.per_instance_accounting is not False or self.fil_accounting:
            raise AssertionError("a shadow model computed an unread report")
        return super().fit(X, y)


class RandomWeights(ClassifierMixin, BaseEstimator):
    """A linear classifier whose weights ignore the training data."""

    def __init__(self, random_state=None):
        self.random_state = random_state

    def fit(self, X, y):
        rng = np.random.default_rng(self.random_state)
        self.classes_ = np.unique(y)
        self.coef_ = rng.standard_normal(np.asarray(X).shape[1])
        return self

    def predict_proba(self, X):
        p = expit(np.asarray(X) @ self.coef_)
        return np.column_stack([1.0 - p, p])


class Rendezvous(GaussianSignal):
    """Fits wait for a second fit to run at the same time (or fail)."""

    barrier = None

    def fit(self, X, y):
        type(self).barrier.wait(timeout=20)
        return super().fit(X, y)


def _signal_data(n, seed):
    rng = np.random.default_rng(seed)
    mu = rng.normal(scale=2.0, size=n)
    X = np.arange(n, dtype=np.float64)[:, None]
    y = np.ones(n, dtype=np.int64)
    member = rng.random(n) < 0.5
    target = GaussianSignal(mu=mu, random_state=seed + 1).fit(X[member], y[member])
    return X, y, member, target


def _tpr_at(member, score, level):
    """Largest TPR at FPR <= level, from sklearn's ROC of the score."""
    fpr, tpr, _ = roc_curve(member, score, drop_intermediate=False)
    return tpr[fpr <= level].max()


@pytest.mark.parametrize("variance", ["global", "per_example"])
@pytest.mark.parametrize("online", [True, False])
def test_lira_score_is_the_gaussian_likelihood_ratio(online, variance):
    """The score, recomputed row by row from the shadow models' logits."""
    X, y, member, target = _signal_data(300, 0)
    attack = LiRAMembershipInference(
        target, n_shadow_models=6, online=online, variance=variance, random_state=0
    ).fit(X, y, membership=member)
    phi = attack.shadow_logits_
    design = attack.shadow_membership_
    assert (design.sum(axis=0) == 3).all()
    # a shadow model's logits: its own offsets, the shift on its own half
    trained = [phi[k][design[k]] - target.mu[design[k]] for k in range(6)]
    assert all(np.abs(t.mean() - 1.0) < 0.5 for t in trained)
    phi_target = np.log(target.predict_proba(X)[:, 1] / target.predict_proba(X)[:, 0])

    def gaussian(mask):
        means = np.array([phi[mask[:, i], i].mean() for i in range(300)])
        variances = np.array([phi[mask[:, i], i].var(ddof=1) for i in range(300)])
        return means, variances

    # equal counts per row and side: the pooled variance is the mean variance
    (mean_out, var_out), (mean_in, var_in) = gaussian(~design), gaussian(design)
    if variance == "global":
        var_out = var_in = np.full(300, (var_out.mean() + var_in.mean()) / 2)
        if not online:
            var_out = np.full(300, gaussian(~design)[1].mean())
    std_out, std_in = np.sqrt(var_out), np.sqrt(var_in)
    z_out = (phi_target - mean_out) / std_out
    if online:
        z_in = (phi_target - mean_in) / std_in
        expected = (z_out**2 - z_in**2) / 2 + np.log(std_out / std_in)
    else:
        expected = z_out
    np.testing.assert_allclose(attack.scores_, expected, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(attack.decision_function(X, y), attack.scores_)


@pytest.mark.parametrize("online", [True, False])
def test_lira_roc_is_the_neyman_pearson_roc(online, global_random_seed):
    """TPR at 10% FPR: Phi(1 - Phi^-1(0.9)) = 0.389, within Monte-Carlo error.

    About 2000 members and non-members: the TPR's standard error is 0.011,
    the FPR's moves it by as much again; the estimated Gaussians (32 shadow
    models) cost under 0.01. Slack 0.05. The loss threshold, blind to the
    offsets mu_i, is far below (0.22).
    """
    X, y, member, target = _signal_data(4000, global_random_seed)
    attack = LiRAMembershipInference(
        target,
        n_shadow_models=32,
        online=online,
        fpr_levels=(0.1,),
        random_state=global_random_seed,
    ).fit(X, y, membership=member)
    optimal = norm.cdf(1.0 - norm.isf(0.1))
    assert abs(attack.tpr_at_fpr_[0.1] - optimal) < 0.05
    assert abs(_tpr_at(member, attack.scores_, 0.1) - optimal) < 0.05
    loss = LossThresholdMembershipInference(target).fit(X, y, membership=member)
    assert _tpr_at(member, loss.decision_function(X, y), 0.1) < optimal - 0.1


def test_lira_beats_loss_threshold_on_one_nearest_neighbour(global_random_seed):
    """1-NN gives every member loss 0, tied with the non-members it labels
    right: the loss threshold has TPR 0 at 1% FPR. Per-row calibration
    separates them: chance is 0.01, with standard error 0.003."""
    X, y = make_classification(
        n_samples=2000, n_features=10, flip_y=0.1, random_state=global_random_seed
    )
    member = np.random.default_rng(global_random_seed).random(2000) < 0.5
    model = KNeighborsClassifier(n_neighbors=1).fit(X[member], y[member])
    loss = LossThresholdMembershipInference(model).fit(X, y, membership=member)
    attack = LiRAMembershipInference(
        model, n_shadow_models=8, fpr_levels=(0.01,), random_state=0
    ).fit(X, y, membership=member)
    assert _tpr_at(member, loss.decision_function(X, y), 0.01) == 0.0
    assert attack.tpr_at_fpr_[0.01] > 0.03
    assert attack.auc_ > loss.auc_


@pytest.mark.parametrize(
    "attack_class, params",
    [(LiRAMembershipInference, {"n_shadow_models": 8}), (RMIAMembershipInference, {})],
)
def test_chance_on_a_model_independent_of_its_data(
    attack_class, params, global_random_seed
):
    """No attack beats a guess when the model ignores its training rows.

    AUC within 4 standard errors (sqrt((m + n + 1) / (12 m n)) = 0.016) of
    0.5; TPR at 5% FPR within 4 binomial errors (0.028) of 0.05.
    """
    rng = np.random.default_rng(global_random_seed)
    X = rng.normal(size=(1000, 3))
    y = rng.integers(0, 2, size=1000)
    member = np.arange(1000) < 500
    model = RandomWeights(random_state=global_random_seed).fit(X[member], y[member])
    attack = attack_class(
        model, fpr_levels=(0.05,), random_state=global_random_seed, **params
    ).fit(X, y, membership=member)
    assert abs(attack.auc_ - 0.5) < 4 * np.sqrt(1001 / (12 * 500 * 500))
    assert abs(attack.tpr_at_fpr_[0.05] - 0.05) < 4 * np.sqrt(0.05 * 0.95 / 500)


def test_rmia_score_by_brute_force():
    """The fraction of population rows z with LR(x, z) > gamma, pair by pair."""
    X, y, member, target = _signal_data(200, 1)
    for online, n_models in ((False, 2), (True, 4)):
        attack = RMIAMembershipInference(
            target,
            n_shadow_models=n_models,
            online=online,
            offline_a=0.4,
            gamma=1.5,
            n_population=50,
            random_state=0,
        ).fit(X, y, membership=member)
        p = expit(attack.shadow_logits_)
        design = attack.shadow_membership_
        prior = np.empty(200)
        for i in range(200):
            p_out = p[~design[:, i], i].mean()
            if online:
                prior[i] = (p[design[:, i], i].mean() + p_out) / 2
            else:
                prior[i] = (1.4 * p_out + 0.6) / 2
        ratio = target.predict_proba(X)[:, 1] / prior
        z = attack.population_
        assert z.size == 50 and np.unique(z).size == 50
        expected = (ratio[:, None] / ratio[None, z] > 1.5).mean(axis=1)
        np.testing.assert_allclose(attack.scores_, expected, atol=1e-12)


def test_rmia_offline_with_two_reference_models(global_random_seed):
    """Two reference models: one OUT model per row, and already better than
    the loss threshold (AUC 0.67 against 0.60; each has standard error
    0.009 on 4000 rows)."""
    X, y, member, target = _signal_data(4000, global_random_seed)
    attack = RMIAMembershipInference(target, random_state=global_random_seed)
    attack.fit(X, y, membership=member)
    assert (attack.shadow_membership_.sum(axis=0) == 1).all()
    loss = LossThresholdMembershipInference(target).fit(X, y, membership=member)
    fpr, tpr, _ = roc_curve(member, loss.decision_function(X, y))
    assert attack.auc_ > np.trapezoid(tpr, fpr) + 0.04


def test_pipeline_target_and_unread_report():
    """A Pipeline is cloned whole; our estimators skip the report columns."""
    X, y, member, _ = _signal_data(200, 2)
    mu = np.random.default_rng(2).normal(size=200)
    pipe = Pipeline([("scale", "passthrough"), ("clf", ReportSkipping(mu=mu))])
    model = pipe.set_params(
        clf__per_instance_accounting=False, clf__fil_accounting=False
    ).fit(X[member], y[member])
    pipe_auto = Pipeline(
        [("scale", "passthrough"), ("clf", ReportSkipping(mu=mu))]
    )  # the default recipe would fail in a shadow model without the switch
    attack = LiRAMembershipInference(
        model, estimator=pipe_auto, n_shadow_models=4, random_state=0
    ).fit(X, y, membership=member)
    assert np.isfinite(attack.scores_).all()

    X, y = make_classification(n_samples=300, random_state=0)
    member = np.arange(300) < 150
    pipe = Pipeline([("scale", StandardScaler()), ("clf", LogisticRegression())])
    model = pipe.fit(X[member], y[member])
    attack = RMIAMembershipInference(model, random_state=0).fit(X, y, membership=member)
    assert attack.scores_.shape == (300,)


def test_logit_confidence_from_proba_and_from_margin():
    """phi = log(p / (1 - p)) of the true label, and +-margin for LinearSVC."""
    X, y = make_classification(
        n_samples=200, n_classes=3, n_informative=4, random_state=0
    )
    model = LogisticRegression().fit(X, y)
    p = model.predict_proba(X)[np.arange(200), y]
    np.testing.assert_allclose(logit_confidence(model, X, y), np.log(p / (1 - p)))
    yb = (y > 0).astype(int)
    # a certain model: p = 1 floored at the resolution 2**-53, not at 1e-300
    knn = KNeighborsClassifier(n_neighbors=1).fit(X, yb)
    np.testing.assert_allclose(logit_confidence(knn, X, yb), 53 * np.log(2))
    np.testing.assert_allclose(logit_confidence(knn, X, 1 - yb), -53 * np.log(2))
    svc = LinearSVC().fit(X, yb)
    margin = svc.decision_function(X)
    expected = np.where(yb == 1, margin, -margin)
    np.testing.assert_allclose(logit_confidence(svc, X, yb), expected)


def test_n_jobs_gives_the_same_scores_and_runs_in_parallel():
    """Each shadow model's seed is fixed before the fits are dispatched.

    The threading backend (the loky workers' start-up would cost seconds):
    two fits must run at once, or the barrier breaks.
    """
    X, y, member, target = _signal_data(300, 3)
    scores = [
        LiRAMembershipInference(target, n_shadow_models=4, random_state=0)
        .fit(X, y, membership=member)
        .scores_
    ]
    Rendezvous.barrier = threading.Barrier(2)
    attack = LiRAMembershipInference(
        target,
        estimator=Rendezvous(mu=target.mu),
        n_shadow_models=4,
        n_jobs=2,
        random_state=0,
    )
    with joblib.parallel_config(backend="threading"):
        attack.fit(X, y, membership=member)
    np.testing.assert_array_equal(attack.scores_, scores[0])


def test_display_and_attack_report():
    pytest.importorskip("matplotlib")
    from sklearn_fil.plotting import MembershipROCDisplay

    X, y, member, target = _signal_data(300, 4)
    attack = LiRAMembershipInference(target, n_shadow_models=4, random_state=0)
    attack.fit(X, y, membership=member)
    display = MembershipROCDisplay.from_estimator(attack, name="LiRA")
    np.testing.assert_array_equal(display.line_.get_xdata(), attack.roc_["fpr"])
    report = attack_report(np.abs(target.mu), attack.scores_, n_bins=2)
    assert report["n"].tolist() == [150, 150]


class CountingLogistic(LogisticRegression):
    fits = 0

    def fit(self, X, y, sample_weight=None):
        type(self).fits += 1
        return super().fit(X, y, sample_weight)


@pytest.mark.parametrize(
    "attack, fit_kwargs, error, match",
    [
        (LiRAMembershipInference, {"membership": [2] * 60}, ValueError, "0/1"),
        (LiRAMembershipInference, {"membership": None}, ValueError, "membership"),
        (LiRAMembershipInference, {"y": None}, ValueError, "requires y"),
        (LiRAMembershipInference, {"n_shadow_models": 3}, ValueError, "at least 4"),
        (
            LiRAMembershipInference,
            {"n_shadow_models": 2, "online": False},
            ValueError,
            "at least 3",
        ),
        (RMIAMembershipInference, {"n_shadow_models": 1}, ValueError, "at least 2"),
        (RMIAMembershipInference, {"n_population": 61}, ValueError, "n_population"),
        (RMIAMembershipInference, {"y": [5] * 60}, ValueError, "not classes"),
        (RMIAMembershipInference, {"fpr_levels": (0.0,)}, ValueError, "open interval"),
        (RMIAMembershipInference, {"model": "ridge"}, TypeError, "neither"),
        (RMIAMembershipInference, {"model": "unfitted"}, NotFittedError, "not fitted"),
    ],
)
def test_bad_input_before_any_work(attack, fit_kwargs, error, match):
    from sklearn.linear_model import Ridge

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = (X[:, 0] > 0).astype(int)
    member = np.arange(60) % 2
    model = CountingLogistic().fit(X, y)
    kwargs = {"y": y, "membership": member, **fit_kwargs}
    model = {"ridge": Ridge().fit(X, y), "unfitted": LogisticRegression()}.get(
        kwargs.pop("model", None), model
    )
    params = {
        k: kwargs.pop(k)
        for k in ("n_shadow_models", "online", "n_population", "fpr_levels")
        if k in kwargs
    }
    instance = attack(model, random_state=0, **params)
    CountingLogistic.fits = 0
    with pytest.raises(error, match=match):
        instance.fit(X, kwargs["y"], membership=kwargs["membership"])
    assert CountingLogistic.fits == 0
    assert not hasattr(instance, "scores_")


def test_decision_function_refuses_other_rows():
    X, y, member, target = _signal_data(100, 5)
    attack = LiRAMembershipInference(target, n_shadow_models=4, random_state=0)
    attack.fit(X, y, membership=member)
    with pytest.raises(ValueError, match="rows passed to fit"):
        attack.decision_function(X[::-1], y)
    assert attack.predict(X, y).sum() > 0
    assert -1 <= attack.score(X, y, member) <= 1
