# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""Loss-threshold membership inference and the FIL-binned attack report."""

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.stats import binomtest
from sklearn.base import clone
from sklearn.dummy import DummyClassifier, DummyRegressor
from sklearn.exceptions import NotFittedError
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsRegressor
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from sklearn.tree import DecisionTreeClassifier

from sklearn_fil import OutputPerturbedLogisticRegression
from sklearn_fil.attacks import LossThresholdMembershipInference, attack_report
from sklearn_fil.attacks._membership import (
    _best_threshold,
    _implied_epsilon,
    _tpr_at_fpr,
)


def _max_advantage(epsilon, delta):
    """Largest membership advantage of an (epsilon, delta)-DP mechanism.

    ``(e^epsilon - 1 + 2 delta) / (e^epsilon + 1)``, written as ``1 - 2 (1 -
    delta) / (e^epsilon + 1)`` so that ``epsilon = inf`` gives 1.
    """
    return min(1.0, 1.0 - 2.0 * (1.0 - delta) / (math.exp(min(epsilon, 700.0)) + 1.0))


def _halves(membership, test_size=0.5, random_state=0):
    """Rows of the first and held-out halves, split as the attack does."""
    rows = np.arange(len(membership))
    return train_test_split(
        rows, test_size=test_size, random_state=random_state, stratify=membership
    )


def _brute_force_threshold(loss, member):
    """First (smallest) distinct loss maximising TPR - FPR, in exact arithmetic."""
    best_t, best_adv = None, None
    n_m, n_nm = int(member.sum()), int((~member).sum())
    for t in np.unique(loss):
        pred = loss <= t
        adv = Fraction(int(pred[member].sum()), n_m) - Fraction(
            int(pred[~member].sum()), n_nm
        )
        if best_adv is None or adv > best_adv:
            best_t, best_adv = t, adv
    return float(best_t), best_adv


def _null_attack(seed, n):
    """The attack on ``n`` rows a model never saw, half of them called members."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(400 + n, 4))
    y = (X @ np.array([1.0, -1.0, 0.5, 0.0]) + rng.logistic(size=400 + n) > 0) * 1
    model = LogisticRegression().fit(X[:400], y[:400])
    member = rng.permutation(n) < n // 2
    return LossThresholdMembershipInference(model, random_state=0).fit(
        X[400:], y[400:], membership=member
    )


def _random_labels(n, d, seed):
    """Gaussian features with labels independent of them."""
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), rng.integers(0, 2, size=n)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("ties", [True, False])
def test_threshold_is_the_brute_force_optimum(seed, ties):
    # A constant-zero regressor makes the loss y^2: any losses can be set.
    rng = np.random.default_rng(seed)
    n = 120
    y = rng.integers(0, 8, size=n).astype(float) if ties else rng.normal(size=n)
    # members tend to have small |y| (small loss), so the optimum is non-trivial
    member = rng.random(n) < 1.0 / (1.0 + np.abs(y))
    member[:2], member[2:4] = True, False
    X = np.zeros((n, 1))
    model = DummyRegressor(strategy="constant", constant=0.0).fit(X, y)
    attack = LossThresholdMembershipInference(model, random_state=seed)
    attack.fit(X, y, membership=member)

    first, held = _halves(member, random_state=seed)
    loss = y**2
    best_t, best_adv = _brute_force_threshold(loss[first], member[first])
    assert attack.threshold_ == best_t
    assert best_adv >= 0

    pred = loss[held] <= best_t
    tpr = pred[member[held]].mean()
    fpr = pred[~member[held]].mean()
    assert attack.tpr_ == pytest.approx(tpr, abs=1e-15)
    assert attack.fpr_ == pytest.approx(fpr, abs=1e-15)
    assert attack.advantage_ == pytest.approx(tpr - fpr, abs=1e-15)
    assert attack.score(X[held], y[held], member[held]) == pytest.approx(tpr - fpr)


def test_best_threshold_breaks_ties_towards_the_smallest():
    # Hand case: "loss <= 1" and "loss <= 3" both reach TPR - FPR = 1/2.
    loss = np.array([1.0, 2.0, 3.0, 4.0])
    member = np.array([True, False, True, False])
    assert _best_threshold(loss, member) == 1.0
    # Small integer losses make ties between thresholds frequent.
    rng = np.random.default_rng(12)
    for _ in range(300):
        n = int(rng.integers(4, 14))
        loss = rng.integers(0, 4, size=n).astype(float)
        member = rng.random(n) < 0.5
        member[:2] = [True, False]
        assert _best_threshold(loss, member) == _brute_force_threshold(loss, member)[0]


def test_user_threshold_is_used_and_split_still_holds_out():
    rng = np.random.default_rng(3)
    n = 80
    y = rng.normal(size=n)
    member = np.arange(n) % 2 == 0
    X = np.zeros((n, 1))
    model = DummyRegressor(strategy="constant", constant=0.0).fit(X, y)
    attack = LossThresholdMembershipInference(
        model, threshold=0.5, test_size=0.25, random_state=1
    ).fit(X, y, membership=member)
    _, held = _halves(member, test_size=0.25, random_state=1)
    assert held.size == 20
    assert attack.threshold_ == 0.5
    pred = y[held] ** 2 <= 0.5
    assert attack.tpr_ == pytest.approx(pred[member[held]].mean())
    assert attack.fpr_ == pytest.approx(pred[~member[held]].mean())
    assert attack.report_.loc["all", "n_members"] == 10
    assert attack.report_.loc["all", "n_nonmembers"] == 10


def test_overfitted_tree_has_large_advantage(global_random_seed):
    # Random labels and a fully grown tree: every member sits in a pure leaf
    # (loss 0, TPR = 1); a non-member has loss 0 exactly when the tree's label
    # matches its independent random label, probability 1/2. So the advantage
    # is 1 - 1/2 with a standard error sqrt(0.25 / 100) = 0.05 for the FPR.
    X, y = _random_labels(400, 5, seed=global_random_seed)
    member = np.arange(400) < 200
    model = DecisionTreeClassifier(random_state=0).fit(X[member], y[member])
    attack = LossThresholdMembershipInference(model, random_state=0).fit(
        X, y, membership=member
    )
    assert attack.tpr_ == 1.0
    assert attack.advantage_ > 0.3
    assert abs(attack.advantage_ - 0.5) <= 3 * 0.05

    # the membership score is minus the log loss of the true label
    proba = model.predict_proba(X)[np.arange(400), y]
    expected = np.log(np.clip(proba, 1e-300, 1.0))
    assert_allclose(attack.decision_function(X, y), expected, rtol=0, atol=1e-12)
    assert_array_equal(attack.predict(X, y), (-expected <= attack.threshold_) * 1)


def test_data_independent_model_has_no_advantage(global_random_seed):
    # The model never saw the "members": their loss has the same law as the
    # non-members'. With a threshold fixed on the first half, the held-out
    # advantage has mean 0 and standard error <= sqrt(0.25 (1/200 + 1/200)).
    attack = _null_attack(global_random_seed, 800)
    se = math.sqrt(0.25 * (1 / 200 + 1 / 200))
    assert abs(attack.advantage_) <= 3 * se


def test_dp_model_advantage_within_the_dp_bound(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    n = 400
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0) * 1
    X /= np.linalg.norm(X, axis=1).max()
    member = rng.permutation(n) < n // 2
    model = OutputPerturbedLogisticRegression(
        sigma=0.5, lam=0.05, data_norm=1.0, penalize_intercept=True, random_state=0
    ).fit(X[member], y[member])
    epsilon, delta = model.epsilon_, model.delta_
    assert epsilon is not None and delta is not None
    assert 0.5 < epsilon < 5.0  # the bound below is informative
    attack = LossThresholdMembershipInference(model, delta=delta, random_state=0)
    attack.fit(X, y, membership=member)
    report = attack.report_.loc["all"]
    n_m, n_nm = report["n_members"], report["n_nonmembers"]
    tpr, fpr = attack.tpr_, attack.fpr_
    se = math.sqrt(tpr * (1 - tpr) / n_m + fpr * (1 - fpr) / n_nm)
    # (e^eps - 1 + 2 delta) / (e^eps + 1), written out
    bound = (math.exp(epsilon) - 1 + 2 * delta) / (math.exp(epsilon) + 1)
    assert attack.advantage_ <= bound + 3 * se
    assert 0.0 <= attack.epsilon_lower_bound_ci_ <= epsilon


def test_epsilon_ci_matches_scipy_exact_intervals():
    # The ci is the implied epsilon at the Clopper-Pearson lower bound of the
    # TPR and upper bound of the FPR, each one-sided 97.5%: the ends of the
    # two-sided 95% exact interval of scipy's binomtest.
    X, y = _random_labels(600, 2, seed=5)
    member = np.arange(600) < 300
    model = DecisionTreeClassifier(max_depth=6, random_state=0).fit(
        X[member], y[member]
    )
    delta = 0.01
    attack = LossThresholdMembershipInference(model, delta=delta, random_state=0)
    attack.fit(X, y, membership=member)
    row = attack.report_.loc["all"]
    n_m, n_nm = int(row["n_members"]), int(row["n_nonmembers"])
    tp, fp = round(attack.tpr_ * n_m), round(attack.fpr_ * n_nm)
    assert 0 < tp < n_m and 0 < fp < n_nm  # interior counts, not the closed forms
    tpr_low = binomtest(tp, n_m).proportion_ci(0.95, method="exact").low
    fpr_high = binomtest(fp, n_nm).proportion_ci(0.95, method="exact").high
    expected = max(
        math.log((tpr_low - delta) / fpr_high),
        math.log((1 - fpr_high - delta) / (1 - tpr_low)),
        0.0,
    )
    assert attack.epsilon_lower_bound_ci_ == pytest.approx(expected, rel=1e-9)
    assert attack.epsilon_lower_bound_ci_ <= attack.epsilon_lower_bound_


def test_regressor_squared_error_and_perfect_attack_ci():
    # 1-NN regression memorises continuous targets: members have loss 0 and
    # non-members a positive loss, so TPR = 1, FPR = 0 and the implied epsilon
    # is infinite. The Clopper-Pearson bounds are then closed-form: the TPR is
    # >= c = 0.025^(1/m), the FPR <= 1 - c, so the ci is log(c / (1 - c)).
    rng = np.random.default_rng(4)
    X = rng.normal(size=(200, 3))
    y = rng.normal(size=200)
    member = np.arange(200) < 100
    model = KNeighborsRegressor(n_neighbors=1).fit(X[member], y[member])
    attack = LossThresholdMembershipInference(model, random_state=0).fit(
        X, y, membership=member
    )
    assert attack.threshold_ == 0.0
    assert (attack.tpr_, attack.fpr_, attack.advantage_) == (1.0, 0.0, 1.0)
    assert attack.epsilon_lower_bound_ == math.inf
    c = 0.025 ** (1 / 50)
    assert attack.epsilon_lower_bound_ci_ == pytest.approx(math.log(c / (1 - c)))
    assert_allclose(
        attack.decision_function(X, y), -((model.predict(X) - y) ** 2), atol=1e-15
    )
    assert attack.n_features_in_ == 3


def test_report_groups_are_the_held_out_rows_of_each_group():
    X, y = _random_labels(300, 4, seed=6)
    member = np.arange(300) % 3 != 0
    groups = np.array(["a", "b", "c"])[np.random.default_rng(6).integers(0, 3, 300)]
    model = DecisionTreeClassifier(max_depth=4, random_state=0).fit(
        X[member], y[member]
    )
    attack = LossThresholdMembershipInference(model, random_state=2)
    attack.fit(X, y, membership=member, groups=groups)
    report = attack.report_
    assert list(report.index) == ["all", "a", "b", "c"]
    assert report.index.name == "group"
    _, held = _halves(member, random_state=2)
    pred = -attack.decision_function(X[held], y[held]) <= attack.threshold_
    for g in "abc":
        m = member[held] & (groups[held] == g)
        nm = ~member[held] & (groups[held] == g)
        assert report.loc[g, "n_members"] == m.sum()
        assert report.loc[g, "n_nonmembers"] == nm.sum()
        assert report.loc[g, "tpr"] == pytest.approx(pred[m].mean())
        assert report.loc[g, "fpr"] == pytest.approx(pred[nm].mean())
    assert (
        report.loc[["a", "b", "c"], "n_members"].sum() == report.loc["all", "n_members"]
    )
    assert report.loc["all", "advantage"] == attack.advantage_


def test_frozen_model_survives_clone():
    X, y = _random_labels(100, 2, seed=7)
    member = np.arange(100) < 50
    model = DecisionTreeClassifier(random_state=0).fit(X[member], y[member])
    attack = LossThresholdMembershipInference(FrozenEstimator(model), random_state=0)
    fitted = clone(attack).fit(X, y, membership=member)
    assert fitted.tpr_ == 1.0


def _pair_count_auc(loss, member):
    """Mann-Whitney: share of (member, non-member) pairs the loss orders right."""
    diff = loss[~member][None, :] - loss[member][:, None]  # > 0: member lower
    return ((diff > 0).sum() + 0.5 * (diff == 0).sum()) / diff.size


def _threshold_sweep(loss, member, levels):
    """ROC points of ``loss <= t`` over every distinct loss, and TPR at FPR.

    The TPR at a level is the largest TPR among points with FPR <= level
    (NaN below 1 / n_nonmembers), by looping over the thresholds.
    """
    n_m, n_nm = int(member.sum()), int((~member).sum())
    thresholds = np.concatenate([[-np.inf], np.unique(loss)])
    points = []
    for t in thresholds:
        pred = loss <= t
        points.append((pred[~member].sum() / n_nm, pred[member].sum() / n_m))
    fpr, tpr = np.array(points).T
    at = []
    for level in levels:
        if level < 1 / n_nm:
            at.append(np.nan)
        else:
            at.append(max(t for f, t in points if f <= level))
    return thresholds, fpr, tpr, np.array(at)


def _losses_attack(loss_values, member, **params):
    """An attack whose per-row loss is ``loss_values`` (a zero regressor, y^2)."""
    y = np.sqrt(loss_values)
    X = np.zeros((y.size, 1))
    model = DummyRegressor(strategy="constant", constant=0.0).fit(X, y)
    attack = LossThresholdMembershipInference(model, **params).fit(
        X, y, membership=member
    )
    return attack, X, y


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("ties", [True, False])
def test_roc_auc_and_tpr_at_fpr_match_brute_force(seed, ties):
    # 2500 non-members leave > 1000 held out: both default levels resolvable.
    rng = np.random.default_rng(seed)
    n = 5000
    member = rng.random(n) < 0.5
    shift = np.where(member, 0.0, 0.3)  # members tend to have smaller losses
    loss = rng.exponential(size=n) + shift
    if ties:
        loss = np.round(loss, 1)  # about 60 distinct values
    attack, _, _ = _losses_attack(loss, member, random_state=seed)
    _, held = _halves(member, random_state=seed)
    h_loss, h_member = loss[held], member[held]
    assert (~h_member).sum() >= 1000

    assert attack.auc_ == pytest.approx(_pair_count_auc(h_loss, h_member), abs=1e-12)
    assert 0.55 < attack.auc_ < 0.75  # a non-trivial curve

    thresholds, fpr, tpr, at = _threshold_sweep(h_loss, h_member, (0.001, 0.01))
    roc = attack.roc_
    assert roc.columns.tolist() == ["fpr", "tpr", "loss_threshold"]
    assert_allclose(roc["loss_threshold"], thresholds, rtol=1e-12)
    assert_allclose(roc["fpr"], fpr, rtol=0, atol=1e-15)
    assert_allclose(roc["tpr"], tpr, rtol=0, atol=1e-15)
    assert_array_equal(attack.tpr_at_fpr_.index, [0.001, 0.01])
    assert attack.tpr_at_fpr_.index.name == "fpr"
    assert_allclose(attack.tpr_at_fpr_.to_numpy(), at, rtol=0, atol=1e-15)
    assert np.isfinite(at).all()
    # the chosen threshold's held-out rates are one point of the curve
    on_curve = np.isclose(roc["fpr"], attack.fpr_) & np.isclose(roc["tpr"], attack.tpr_)
    assert on_curve.any()


def test_tpr_at_fpr_is_nan_below_one_false_positive():
    # 100 held-out non-members: FPR 0.01 is one false positive, 0.0099 none.
    rng = np.random.default_rng(13)
    member = np.arange(400) % 2 == 0
    loss = rng.exponential(size=400) + np.where(member, 0.0, 0.5)
    levels = [0.5, 0.01, 0.0099]
    attack, _, _ = _losses_attack(loss, member, fpr_levels=levels, random_state=0)
    assert attack.report_.loc["all", "n_nonmembers"] == 100
    _, held = _halves(member, random_state=0)
    _, _, _, at = _threshold_sweep(loss[held], member[held], levels)
    assert_array_equal(attack.tpr_at_fpr_.index, levels)  # in the given order
    assert_allclose(attack.tpr_at_fpr_.to_numpy(), at, rtol=0, atol=1e-15)
    assert np.isnan(attack.tpr_at_fpr_[0.0099])
    assert not np.isnan(attack.tpr_at_fpr_[0.01])
    assert attack.tpr_at_fpr_[0.5] >= attack.tpr_at_fpr_[0.01]


def test_tpr_at_fpr_takes_the_best_point_without_interpolating():
    # A hand ROC of 10 non-members: steps of FPR 0.1.
    fpr = np.array([0.0, 0.0, 0.1, 0.1, 0.5, 1.0])
    tpr = np.array([0.0, 0.2, 0.2, 0.6, 0.9, 1.0])
    levels = np.array([0.05, 0.1, 0.3, 0.99])
    # 0.05 < 1/10: not resolvable. 0.3: the best point with FPR <= 0.3 is
    # (0.1, 0.6); the straight line to (0.5, 0.9) would claim 0.75.
    assert_array_equal(_tpr_at_fpr(fpr, tpr, levels, 10), [np.nan, 0.6, 0.6, 0.9])


def test_report_auc_per_group_and_nan_without_both_classes():
    rng = np.random.default_rng(14)
    n = 600
    member = rng.random(n) < 0.5
    loss = rng.exponential(size=n) + np.where(member, 0.0, 0.4)
    groups = rng.choice(["a", "b"], size=n).astype(object)
    groups[member & (rng.random(n) < 0.1)] = "only members"
    attack, X, y = _losses_attack(loss, member, random_state=3)
    attack.fit(X, y, membership=member, groups=groups)
    report = attack.report_
    assert report.columns[-1] == "auc"
    _, held = _halves(member, random_state=3)
    for g in ("a", "b"):
        rows = held[groups[held] == g]
        expected = _pair_count_auc(loss[rows], member[rows])
        assert report.loc[g, "auc"] == pytest.approx(expected, abs=1e-12)
    assert np.isnan(report.loc["only members", "auc"])
    assert report.loc["only members", "n_nonmembers"] == 0
    assert report.loc["all", "auc"] == attack.auc_


def test_overfitted_tree_auc_is_three_quarters(global_random_seed):
    # As in test_overfitted_tree_has_large_advantage: members have loss 0, a
    # non-member loss 0 with probability 1/2 (a tie, counting 1/2) and a huge
    # loss otherwise, so AUC = 1/2 + 1/2 * 1/2 with standard error 0.025.
    # Every member ties with about half the non-members: no threshold has a
    # TPR above 0 at an FPR of 1%, whatever the AUC.
    X, y = _random_labels(400, 5, seed=global_random_seed)
    member = np.arange(400) < 200
    model = DecisionTreeClassifier(random_state=0).fit(X[member], y[member])
    attack = LossThresholdMembershipInference(
        model, fpr_levels=[0.01, 0.9], random_state=0
    ).fit(X, y, membership=member)
    assert attack.auc_ > 0.65
    assert abs(attack.auc_ - 0.75) <= 3 * 0.025
    assert attack.tpr_at_fpr_[0.01] == 0.0
    assert attack.tpr_at_fpr_[0.9] == 1.0


def test_memorising_regressor_has_auc_one():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(200, 3))
    y = rng.normal(size=200)
    member = np.arange(200) < 100
    model = KNeighborsRegressor(n_neighbors=1).fit(X[member], y[member])
    attack = LossThresholdMembershipInference(
        model, fpr_levels=[0.02, 0.5], random_state=0
    ).fit(X, y, membership=member)
    assert attack.auc_ == 1.0
    assert_array_equal(attack.tpr_at_fpr_, [1.0, 1.0])


def test_data_independent_model_auc_is_chance(global_random_seed):
    # The model never saw the "members". Under that null hypothesis the AUC
    # (continuous scores) has mean 1/2 and variance (m + n + 1) / (12 m n)
    # (Hanley & McNeil, 1982); a 4-sigma band fails with probability 6e-5.
    attack = _null_attack(global_random_seed, 1000)
    m = n = 250
    se = math.sqrt((m + n + 1) / (12 * m * n))
    assert abs(attack.auc_ - 0.5) <= 4 * se


def test_uniform_dummy_ties_everything_at_auc_one_half():
    X, y = _random_labels(100, 2, seed=15)
    member = np.arange(100) < 50
    model = DummyClassifier(strategy="uniform").fit(X[member], y[member])
    attack = LossThresholdMembershipInference(model, random_state=0).fit(
        X, y, membership=member
    )
    assert attack.auc_ == 0.5
    assert attack.roc_[["fpr", "tpr"]].to_numpy().tolist() == [[0, 0], [1, 1]]


@pytest.mark.parametrize(
    "fpr_levels, match",
    [
        ((), "non-empty 1d"),
        ([[0.1, 0.2]], "non-empty 1d"),
        ((0.0, 0.01), r"open interval \(0, 1\)"),
        ((0.01, 1.0), r"open interval \(0, 1\)"),
        ((0.01, np.nan), r"open interval \(0, 1\)"),
        ((0.01, 0.01), "distinct"),
        (("a", 0.01), "real numbers"),
    ],
)
def test_bad_fpr_levels_raise_and_leave_no_state(fitted_tree, fpr_levels, match):
    model, X, y = fitted_tree
    member = np.arange(60) < 30
    attack = LossThresholdMembershipInference(model, random_state=0).fit(
        X, y, membership=member
    )
    attack.set_params(fpr_levels=fpr_levels)
    with pytest.raises(ValueError, match=match):
        attack.fit(X, y, membership=member)
    assert not any(k.endswith("_") for k in vars(attack))


@pytest.mark.parametrize(
    "tpr, fpr, delta, expected",
    [
        (0.8, 0.2, 0.0, math.log(4.0)),
        # log(0.8 / 0.3) = 0.98 < log(0.6 / 0.1) = log 6
        (0.9, 0.3, 0.1, math.log(6.0)),
        (0.3, 0.5, 0.0, 0.0),  # worse than guessing: nothing implied
        (0.5, 0.5, 0.0, 0.0),
        (0.5, 0.0, 0.0, math.inf),
        (1.0, 0.5, 0.0, math.inf),
        (0.0, 0.0, 0.0, 0.0),  # log(1 / 1) from the second inequality
        (0.05, 0.0, 0.1, 0.0),  # TPR below delta: the first ratio is void
        (0.6, 0.2, 0.1, math.log(0.5 / 0.2)),  # log 2.5 vs log(0.7 / 0.4)
    ],
)
def test_implied_epsilon_hand_values(tpr, fpr, delta, expected):
    assert _implied_epsilon(tpr, fpr, delta) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    "epsilon, delta, expected",
    [
        (0.0, 0.0, 0.0),
        (math.log(3.0), 0.0, 0.5),  # (3 - 1) / (3 + 1)
        (math.log(3.0), 0.1, 0.55),  # (3 - 1 + 0.2) / (3 + 1)
        (0.0, 0.2, 0.2),  # (1 - 1 + 0.4) / 2
        (math.inf, 0.0, 1.0),
        (1000.0, 0.0, 1.0),
    ],
)
def test_max_advantage_hand_values(epsilon, delta, expected):
    assert _max_advantage(epsilon, delta) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.0])
@pytest.mark.parametrize("delta", [0.0, 0.05])
def test_conversions_meet_at_the_corner_of_the_dp_region(epsilon, delta):
    # Both DP inequalities tight: fpr = (1 - delta) / (e + 1) and
    # tpr = e fpr + delta; the corner implies epsilon and has the largest
    # advantage.
    e = math.exp(epsilon)
    fpr = (1 - delta) / (e + 1)
    tpr = e * fpr + delta
    assert _implied_epsilon(tpr, fpr, delta) == pytest.approx(epsilon, rel=1e-12)
    assert _max_advantage(epsilon, delta) == pytest.approx(tpr - fpr, rel=1e-12)


def test_conversions_are_monotone():
    grid = np.linspace(0.0, 1.0, 21)
    for delta in (0.0, 0.05):
        eps = np.array([[_implied_epsilon(t, f, delta) for f in grid] for t in grid])
        assert (eps[1:] >= eps[:-1]).all()  # non-decreasing in TPR (inf too)
        assert (eps[:, 1:] <= eps[:, :-1]).all()  # non-increasing in FPR
        # TPR = 1 is infinitely implausible exactly when 1 - FPR - delta > 0
        assert_array_equal(np.isinf(eps[-1]), 1 - grid - delta > 1e-9)
        adv = [_max_advantage(e, delta) for e in np.linspace(0, 10, 50)]
        assert (np.diff(adv) > 0).all()


@pytest.fixture
def fitted_tree():
    X, y = _random_labels(60, 2, seed=8)
    member = np.arange(60) < 30
    return DecisionTreeClassifier(random_state=0).fit(X[member], y[member]), X, y


def test_bad_membership_raises(fitted_tree):
    model, X, y = fitted_tree
    attack = LossThresholdMembershipInference(model, random_state=0)
    member = np.arange(60) < 30
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        attack.fit(X, y, membership=member[:-1])
    with pytest.raises(ValueError, match="at least 2 members and 2 non-members"):
        attack.fit(X, y, membership=np.ones(60, dtype=bool))
    with pytest.raises(ValueError, match="0/1"):
        attack.fit(X, y, membership=member * 2)
    with pytest.raises(ValueError, match="held-out half of the split has only"):
        # 58 members, 2 non-members: a 2-row held-out half gets no non-member
        LossThresholdMembershipInference(model, test_size=2).fit(
            X, y, membership=np.arange(60) >= 2
        )
    with pytest.raises(ValueError, match='"all"'):
        attack.fit(X, y, membership=member, groups=np.where(member, "all", "b"))
    with pytest.raises(ValueError, match="not classes of the model"):
        attack.fit(X, y + 5, membership=member)
    with pytest.raises(ValueError, match="delta"):
        LossThresholdMembershipInference(model, delta=1.0).fit(X, y, membership=member)
    with pytest.raises(ValueError, match="both members and non-members"):
        attack.fit(X, y, membership=member).score(X, y, np.zeros(60))


def test_bad_model_raises(fitted_tree):
    _, X, y = fitted_tree
    member = np.arange(60) < 30
    scaler = StandardScaler().fit(X)
    with pytest.raises(TypeError, match=r"predict_proba.*predict"):
        LossThresholdMembershipInference(scaler).fit(X, y, membership=member)
    svc = SVC().fit(X, y)  # a classifier without predict_proba
    with pytest.raises(TypeError, match="predict_proba"):
        LossThresholdMembershipInference(svc).fit(X, y, membership=member)
    with pytest.raises(NotFittedError):
        LossThresholdMembershipInference(DecisionTreeClassifier()).fit(
            X, y, membership=member
        )
    with pytest.raises(NotFittedError):
        LossThresholdMembershipInference(fitted_tree[0]).predict(X, y)


def test_attack_report_bins_are_equal_count_and_ordered():
    rng = np.random.default_rng(9)
    fil = rng.exponential(size=103)
    success = rng.random(103) < 0.5
    report = attack_report(fil, success, n_bins=10).loc["all"]
    assert list(report.index) == list(range(1, 11))
    assert set(report["n"]) <= {10, 11} and report["n"].sum() == 103
    assert (report["fil_max"].to_numpy()[:-1] < report["fil_min"].to_numpy()[1:]).all()
    assert (report["fil_min"] <= report["fil_mean"]).all()
    assert (report["fil_mean"] <= report["fil_max"]).all()
    assert report["fil_min"].iloc[0] == fil.min()
    assert report["fil_max"].iloc[-1] == fil.max()


def test_attack_report_matches_direct_computation_on_permuted_input():
    rng = np.random.default_rng(10)
    n, n_bins = 120, 8
    fil = rng.normal(size=n)
    success = fil + rng.normal(size=n)  # a numeric score that rises with fil
    perm = rng.permutation(n)
    report = attack_report(fil[perm], success[perm], n_bins=n_bins).loc["all"]
    blocks = success[np.argsort(fil)].reshape(n_bins, n // n_bins)
    assert_allclose(report["success_mean"], blocks.mean(axis=1), rtol=1e-12)
    assert_allclose(
        report["success_sem"],
        blocks.std(axis=1, ddof=1) / math.sqrt(n // n_bins),
        rtol=1e-10,
    )
    assert_allclose(report["fil_mean"], np.sort(fil).reshape(n_bins, -1).mean(axis=1))
    assert (report["n"] == n // n_bins).all()
    # the report does not depend on the order of the examples
    pd.testing.assert_frame_equal(
        report, attack_report(fil, success, n_bins=n_bins).loc["all"]
    )


def test_attack_report_group_blocks_add_up():
    rng = np.random.default_rng(11)
    n = 200
    fil = rng.gamma(2.0, size=n)
    success = rng.random(n) < 0.3
    groups = rng.choice([2, 0, 1], size=n)
    report = attack_report(fil, success, groups=groups, n_bins=5)
    assert report.index.names == ["group", "fil_bin"]
    assert list(report.index.get_level_values("group").unique()) == ["all", 0, 1, 2]
    total = report.loc["all"]
    parts = [report.loc[g] for g in (0, 1, 2)]
    assert_array_equal(sum(p["n"] for p in parts), total["n"])
    successes = sum((p["n"] * p["success_mean"]).fillna(0.0) for p in parts)
    assert_allclose(successes, total["n"] * total["success_mean"], rtol=1e-12)
    # bins come from the global ranking: group g's bin-b examples, directly
    bins = np.empty(n, dtype=int)
    bins[np.argsort(fil)] = np.arange(n) // (n // 5) + 1
    for g in (0, 1, 2):
        for b in range(1, 6):
            mask = (groups == g) & (bins == b)
            assert report.loc[(g, b), "n"] == mask.sum()
            if mask.any():
                assert report.loc[(g, b), "success_mean"] == pytest.approx(
                    success[mask].mean()
                )
                assert report.loc[(g, b), "fil_max"] == fil[mask].max()


def test_attack_report_single_example_bins_have_nan_sem():
    report = attack_report([3.0, 1.0, 2.0], [1.0, 0.0, 1.0], n_bins=3)
    assert report["success_sem"].isna().all()
    assert_array_equal(report["success_mean"], [0.0, 1.0, 1.0])
    assert_array_equal(report["n"], [1, 1, 1])


def test_attack_report_bad_input_raises():
    fil, success = np.arange(10.0), np.ones(10)
    with pytest.raises(ValueError, match="same length"):
        attack_report(fil, success[:-1])
    with pytest.raises(ValueError, match="finite"):
        attack_report(np.append(fil[:-1], np.nan), success)
    with pytest.raises(ValueError, match="finite"):
        attack_report(fil, np.append(success[:-1], np.inf))
    with pytest.raises(ValueError, match="n_bins"):
        attack_report(fil, success, n_bins=0)
    with pytest.raises(ValueError, match="n_bins"):
        attack_report(fil, success, n_bins=11)
    with pytest.raises(TypeError, match="n_bins"):
        attack_report(fil, success, n_bins=2.5)
    with pytest.raises(TypeError, match="n_bins"):
        attack_report(fil, success, n_bins=True)
    with pytest.raises(ValueError, match="1d"):
        attack_report(fil.reshape(2, 5), success.reshape(2, 5))
    with pytest.raises(ValueError, match="length 10"):
        attack_report(fil, success, groups=np.zeros(9))
    with pytest.raises(ValueError, match='"all"'):
        attack_report(fil, success, groups=["all"] * 10)
    with pytest.raises(TypeError, match="real numbers"):
        attack_report(["a"] * 10, success)


def test_positional_membership_and_groups_are_deprecated():
    X, y = _random_labels(80, 3, seed=0)
    member = np.arange(80) < 40
    groups = np.arange(80) % 2
    model = DecisionTreeClassifier(random_state=0).fit(X[member], y[member])
    new = LossThresholdMembershipInference(model, random_state=0)
    new.fit(X, y, membership=member, groups=groups)
    old = LossThresholdMembershipInference(model, random_state=0)
    with pytest.warns(FutureWarning, match="membership, groups"):
        old.fit(X, y, member, groups)
    pd.testing.assert_frame_equal(old.report_, new.report_)
    assert new.model_ is model
    with pytest.raises(ValueError, match="requires membership"):
        LossThresholdMembershipInference(model).fit(X, y)
