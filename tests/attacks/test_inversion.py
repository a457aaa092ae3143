# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""Attribute inversion: against re-fitting from scratch and the threat model."""

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import expit
from sklearn.dummy import DummyRegressor
from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge
from sklearn.preprocessing import FunctionTransformer

from sklearn_fil import (
    IRFILClassifier,
    IRFILRegressor,
    OutputPerturbedLinearRegression,
    OutputPerturbedLogisticRegression,
)
from sklearn_fil.attacks import BlackBoxAttributeInversion, WhiteBoxAttributeInversion
from sklearn_fil.attacks._base import target_glm
from tests._reference import fit_minimiser, loss_derivatives

LAM = 1e-2


def _problem(loss, n=40, levels=3, seed=0):
    """Three normal features and a categorical attribute in column 3."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.standard_normal((n, 3)), rng.integers(0, levels, n)])
    margin = X @ [1.0, -1.0, 0.5, 0.8] - 0.6
    if loss == "squared":
        y = margin + 0.3 * rng.standard_normal(n)
    else:
        y = (rng.uniform(size=n) < expit(margin)).astype(float)
    return X, y


def _model(loss, **params):
    if loss == "squared":
        return OutputPerturbedLinearRegression(lam=LAM, **params)
    return OutputPerturbedLogisticRegression(lam=LAM, **params)


def _refit_distances(X, y, loss, model, cols, candidates, **fit_params):
    """-||w' - w(a)|| by re-fitting the training objective from scratch."""
    released = (
        np.append(model.coef_, model.intercept_)
        if model.fit_intercept
        else (model.coef_)
    )
    out = np.empty((X.shape[0], len(candidates)))
    for i in range(X.shape[0]):
        for k, value in enumerate(candidates):
            Xc = X.copy()
            Xc[i, cols] = value
            if getattr(model, "data_norm", None) is not None:
                norms = np.linalg.norm(Xc, axis=1)
                Xc = Xc * np.minimum(1.0, model.data_norm / norms)[:, None]
            coef, b = fit_minimiser(
                Xc, y, loss, lam=LAM, fit_intercept=model.fit_intercept, **fit_params
            )
            w = coef if b is None else np.append(coef, b)
            out[i, k] = -np.linalg.norm(w - released)
    return out


@pytest.mark.parametrize("loss", ["squared", "logistic"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_white_box_matches_refitting(loss, fit_intercept):
    X, y = _problem(loss)
    model = _model(loss, sigma=0.05, fit_intercept=fit_intercept, random_state=0)
    model.fit(X, y)
    attack = WhiteBoxAttributeInversion(model.release(), attribute=3).fit(X, y)
    expected = _refit_distances(X, y, loss, model, [3], [0.0, 1.0, 2.0])
    assert_allclose(attack.decision_function(X), expected, rtol=1e-8)
    assert_array_equal(attack.transform(X)[:, 0], np.argmax(expected, axis=1))


def test_white_box_one_hot_group_matches_refitting():
    # A one-hot attribute (levels in columns 3..5) of a logistic model.
    rng = np.random.default_rng(1)
    n = 30
    level = rng.integers(0, 3, n)
    X = np.column_stack([rng.standard_normal((n, 3)), np.eye(3)[level]])
    y = (rng.uniform(size=n) < expit(X @ [1, -1, 0.5, 1, 0, -1])).astype(float)
    model = OutputPerturbedLogisticRegression(
        sigma=0.05, lam=LAM, onehot_groups={"level": [3, 4, 5]}, random_state=0
    ).fit(X, y)
    attack = WhiteBoxAttributeInversion(model, attribute="level").fit(X, y)
    expected = _refit_distances(X, y, "logistic", model, [3, 4, 5], np.eye(3))
    assert_allclose(attack.decision_function(X), expected, rtol=1e-8)
    assert_array_equal(attack.candidates_, np.eye(3))
    assert_array_equal(attack.transform(X), np.eye(3)[np.argmax(expected, axis=1)])


def test_white_box_clipped_rows_match_refitting():
    # data_norm clips every row before training; the candidate row is clipped
    # as a whole, so the attribute's value also rescales the other features.
    X, y = _problem("logistic")
    model = OutputPerturbedLogisticRegression(
        sigma=0.05, lam=LAM, data_norm=1.5, penalize_intercept=True, random_state=0
    ).fit(X, y)
    assert np.mean(np.linalg.norm(X, axis=1) > 1.5) > 0.5
    attack = WhiteBoxAttributeInversion(model.release(), attribute=3).fit(X, y)
    expected = _refit_distances(
        X, y, "logistic", model, [3], [0.0, 1.0, 2.0], penalize_intercept=True
    )
    assert_allclose(attack.decision_function(X), expected, rtol=1e-8)


def test_white_box_one_step_is_one_newton_step_from_the_release():
    # Independent one-step: the exact gradient and Hessian of the modified
    # problem at w', one Newton step, its distance to w'.
    X, y = _problem("logistic")
    model = _model("logistic", sigma=0.3, random_state=0).fit(X, y)
    attack = WhiteBoxAttributeInversion(model, attribute=3, method="one_step")
    scores = attack.fit(X, y).decision_function(X)
    w = np.append(model.coef_, model.intercept_)
    reg = np.full(4 + 1, X.shape[0] * LAM)
    reg[-1] = 0.0
    for i, value in [(0, 0.0), (5, 2.0), (17, 1.0)]:
        Xc = X.copy()
        Xc[i, 3] = value
        Xt = np.column_stack([Xc, np.ones(len(X))])
        r, c = loss_derivatives(Xt @ w, y, "logistic")
        grad = Xt.T @ r + reg * w
        H = (Xt * c[:, None]).T @ Xt + np.diag(reg)
        step = np.linalg.solve(H, grad)
        assert_allclose(scores[i, int(value)], -np.linalg.norm(step), rtol=1e-9)


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_white_box_never_reads_the_hidden_value(loss):
    X, y = _problem(loss)
    model = _model(loss, sigma=0.1, random_state=0).fit(X, y).release()
    i = 7
    attack = WhiteBoxAttributeInversion(model, attribute=3, candidates=[0, 1, 2])
    scores = attack.fit(X, y).decision_function(X)[i]
    X_hidden = X.copy()
    X_hidden[:, 3] = np.nan  # the targets' own values are never read in transform
    assert_allclose(attack.decision_function(X_hidden)[i], scores, rtol=1e-12)
    X_other = X.copy()
    X_other[i, 3] = 2.0 if X[i, 3] != 2.0 else 0.0  # a different truth, same model
    other = WhiteBoxAttributeInversion(model, attribute=3, candidates=[0, 1, 2])
    assert_allclose(other.fit(X_other, y).decision_function(X)[i], scores, rtol=1e-8)


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_white_box_recovers_the_truth_without_noise_and_guesses_with_much(loss):
    X, y = _problem(loss, n=150, seed=3)
    model = _model(loss, sigma=1e-9, random_state=0).fit(X, y)
    attack = WhiteBoxAttributeInversion(model, attribute=3).fit(X, y)
    assert attack.score(X) == 1.0
    # Huge noise: the guess no longer depends on the truth, so the accuracy is
    # that of guessing (1/3 for three balanced levels) up to sampling error.
    accuracies = [
        WhiteBoxAttributeInversion(
            _model(loss, sigma=1e4, random_state=seed).fit(X, y), attribute=3
        )
        .fit(X, y)
        .score(X)
        for seed in range(8)
    ]
    se = np.sqrt(1 / 3 * 2 / 3 / (8 * 150))
    assert abs(np.mean(accuracies) - 1 / 3) < 4 * se + 0.02


def test_white_box_numeric_grid_scores_the_squared_error():
    X, y = _problem("squared")
    X[:, 3] = X[:, 3] + 0.25  # true values between the grid points
    model = _model("squared", sigma=1e-9, random_state=0).fit(X, y)
    grid = np.linspace(0, 3, 13)
    attack = WhiteBoxAttributeInversion(model, attribute=3, candidates=grid)
    guess = attack.fit(X, y).transform(X)[:, 0]
    assert_allclose(guess, X[:, 3])  # the truth is on the grid of 0.25 steps
    X_off = X.copy()
    X_off[:, 3] += 0.1
    attack_off = WhiteBoxAttributeInversion(
        _model("squared", sigma=1e-9, random_state=0).fit(X_off, y),
        attribute=3,
        candidates=grid,
    ).fit(X_off, y)
    err = attack_off.transform(X_off)[:, 0] - X_off[:, 3]
    assert attack_off.score(X_off) == pytest.approx(-np.mean(err**2))


def test_white_box_dataframe_names():
    X, y = _problem("squared")
    frame = pd.DataFrame(X, columns=["a", "b", "c", "blood"])
    model = _model("squared", sigma=0.01, random_state=0).fit(frame, y)
    attack = WhiteBoxAttributeInversion(model, attribute="blood").fit(frame, y)
    assert attack.attribute_name_ == "blood"
    assert_array_equal(attack.get_feature_names_out(), ["blood"])
    assert_array_equal(attack.columns_, [3])


def _black_box_by_hand(model, X, y, col, candidates, classifier):
    """Eq. 31 written out: prior times performance, one example at a time."""
    counts = np.array([np.sum(X[:, col] == c) for c in candidates]) + 1.0
    prior = counts / counts.sum()
    mse = None if classifier else np.mean((model.predict(X) - y) ** 2)
    guesses = []
    for i in range(X.shape[0]):
        post = []
        for k, c in enumerate(candidates):
            x = X[i].copy()
            x[col] = c
            if classifier:
                proba = model.predict_proba(x[None])[0]
                like = proba[list(model.classes_).index(y[i])]
            else:
                like = np.exp(-0.5 * (model.predict(x[None])[0] - y[i]) ** 2 / mse)
            post.append(prior[k] * like)
        guesses.append(candidates[int(np.argmax(post))])
    return np.array(guesses)


@pytest.mark.parametrize("classifier", [False, True])
def test_black_box_matches_equation_31(classifier):
    X, y = _problem("logistic" if classifier else "squared", n=60)
    model = (LogisticRegression() if classifier else LinearRegression()).fit(X, y)
    attack = BlackBoxAttributeInversion(model, attribute=3).fit(X, y)
    expected = _black_box_by_hand(model, X, y, 3, [0.0, 1.0, 2.0], classifier)
    assert_array_equal(attack.transform(X)[:, 0], expected)
    assert attack.score(X) == pytest.approx(np.mean(expected == X[:, 3]))


def test_black_box_falls_back_to_the_prior_when_the_model_ignores_the_attribute():
    X, y = _problem("squared", n=90)
    X[:, 3] = np.r_[np.zeros(50), np.ones(25), 2 * np.ones(15)]
    model = LinearRegression().fit(X[:, :3], y)
    # a pipeline that drops the attribute: predictions never depend on it
    from sklearn.pipeline import make_pipeline

    pipe = make_pipeline(FunctionTransformer(lambda Z: Z[:, :3]), model)
    pipe.fit(X, y)
    attack = BlackBoxAttributeInversion(pipe, attribute=3).fit(X, y)
    assert_array_equal(attack.transform(X)[:, 0], 0.0)  # the most frequent value
    assert attack.score(X) == pytest.approx(50 / 90)
    assert_allclose(attack.prior_, np.array([51, 26, 16]) / 93)


def test_black_box_attacks_a_released_private_model():
    X, y = _problem("squared", n=200, seed=5)
    X[:, 3] *= 3.0  # a strong attribute effect
    model = _model("squared", sigma=1e-6, random_state=0).fit(X, y).release()
    attack = BlackBoxAttributeInversion(model, attribute=3).fit(X, y)
    assert attack.score(X) > 0.8
    assert attack.mse_ == pytest.approx(np.mean((model.predict(X) - y) ** 2))


def test_bad_input():
    X, y = _problem("squared")
    model = _model("squared", sigma=0.1, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="not a feature"):
        WhiteBoxAttributeInversion(model, attribute="age").fit(X, y)
    with pytest.raises(ValueError, match="outside"):
        WhiteBoxAttributeInversion(model, attribute=9).fit(X, y)
    with pytest.raises(TypeError, match="candidates must be numbers"):
        WhiteBoxAttributeInversion(model, attribute=3, candidates=["A", "B"]).fit(X, y)
    with pytest.raises(TypeError, match="got Ridge"):
        WhiteBoxAttributeInversion(Ridge().fit(X, y), attribute=3).fit(X, y)
    irfil = IRFILRegressor(sigma=0.1, n_iter=1, tol=0.0, random_state=0).fit(X, y)
    with pytest.raises(TypeError, match=r"IRFIL.*sample_weight"):
        WhiteBoxAttributeInversion(irfil, attribute=3).fit(X, y)
    with pytest.raises(TypeError, match="neither"):
        BlackBoxAttributeInversion(FunctionTransformer().fit(X), attribute=3).fit(X, y)
    with pytest.raises(ValueError, match="not a one-hot encoding"):
        WhiteBoxAttributeInversion(model, attribute=[2, 3]).fit(X, y)
    many = np.random.default_rng(0).standard_normal((300, 4))  # 300 distinct values
    with pytest.raises(ValueError, match="distinct values"):
        WhiteBoxAttributeInversion(model, attribute=0).fit(many, many @ [1, 1, 1, 1])
    attack = WhiteBoxAttributeInversion(model, attribute=3).fit(X, y)
    with pytest.raises(ValueError, match="order given to fit"):
        attack.transform(X[:10])
    bb = BlackBoxAttributeInversion(DummyRegressor().fit(X, y), attribute=3)
    with pytest.raises(ValueError, match="one entry per row"):
        bb.fit(X, y[:5])


def test_failed_fit_leaves_no_state():
    # as for the estimators: a failed refit does not keep the previous fit,
    # whose state would describe another data set
    X, y = _problem("logistic")
    classifier = LogisticRegression().fit(X, y)
    attack = BlackBoxAttributeInversion(classifier, attribute=3)
    with pytest.raises(ValueError, match="not classes of the model"):
        attack.fit(X, y + 5)  # checked after the attribute and candidates
    assert not [name for name in vars(attack) if name.endswith("_")]
    attack.fit(X, y)
    with pytest.raises(ValueError, match="not classes of the model"):
        attack.fit(X[:20], y[:20] + 5)
    params = attack.get_params(deep=False)
    assert [name for name in vars(attack) if name not in params] == []


def _weights(n, seed=0):
    """Non-uniform positive example weights."""
    return np.random.default_rng(seed).uniform(0.2, 3.0, n)


@pytest.mark.parametrize("loss", ["squared", "logistic"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_white_box_weighted_matches_weighted_refitting(loss, fit_intercept):
    # The candidate problems keep the attacked row's weight: brute force
    # re-fits sum_i omega_i l + (sum(omega) lam / 2) ||w||^2 from scratch.
    X, y = _problem(loss)
    omega = _weights(len(X))
    model = _model(loss, sigma=0.05, fit_intercept=fit_intercept, random_state=0)
    model.fit(X, y, sample_weight=omega)
    attack = WhiteBoxAttributeInversion(model.release(), attribute=3)
    scores = attack.fit(X, y, sample_weight=omega).decision_function(X)
    expected = _refit_distances(
        X, y, loss, model, [3], [0.0, 1.0, 2.0], sample_weight=omega
    )
    assert_allclose(scores, expected, rtol=1e-8)
    assert_array_equal(attack.transform(X)[:, 0], np.argmax(expected, axis=1))
    # the unweighted objective is a different problem
    unweighted = _refit_distances(X, y, loss, model, [3], [0.0, 1.0, 2.0])
    assert np.max(np.abs(unweighted - expected)) > 1e-3


def test_white_box_weighted_clipped_one_step_matches_by_hand():
    # One Newton step of the weighted, clipped objective at w', by hand.
    X, y = _problem("logistic")
    omega = _weights(len(X), seed=1)
    model = OutputPerturbedLogisticRegression(
        sigma=0.3, lam=LAM, data_norm=1.5, penalize_intercept=False, random_state=0
    ).fit(X, y, sample_weight=omega)
    attack = WhiteBoxAttributeInversion(model, attribute=3, method="one_step")
    scores = attack.fit(X, y, sample_weight=omega).decision_function(X)
    w = np.append(model.coef_, model.intercept_)
    reg = np.full(4 + 1, omega.sum() * LAM)
    reg[-1] = 0.0
    for i, value in [(0, 0.0), (5, 2.0), (17, 1.0)]:
        Xc = X.copy()
        Xc[i, 3] = value
        Xc = Xc * np.minimum(1.0, 1.5 / np.linalg.norm(Xc, axis=1))[:, None]
        Xt = np.column_stack([Xc, np.ones(len(X))])
        r, c = loss_derivatives(Xt @ w, y, "logistic")
        grad = Xt.T @ (omega * r) + reg * w
        H = (Xt * (omega * c)[:, None]).T @ Xt + np.diag(reg)
        step = np.linalg.solve(H, grad)
        assert_allclose(scores[i, int(value)], -np.linalg.norm(step), rtol=1e-9)


def test_white_box_weighted_reproducer_scores_one():
    # The reported bug: attacking a weighted target by re-running unweighted
    # training scored 0.915 here, its best minimisers 0.033 from the release.
    rng = np.random.default_rng(0)
    n = 200
    X = np.column_stack([rng.standard_normal((n, 3)), rng.integers(0, 2, n)])
    y = X @ [1.0, -1.0, 0.5, 2.0] + 0.5 * rng.standard_normal(n)
    omega = rng.uniform(0.1, 5.0, n)
    model = OutputPerturbedLinearRegression(sigma=1e-9, lam=1e-3, random_state=0)
    release = model.fit(X, y, sample_weight=omega).release()
    attack = WhiteBoxAttributeInversion(release, attribute=3)
    attack.fit(X, y, sample_weight=omega)
    assert attack.score(X) == 1.0
    # the truth's minimiser is the un-noised one: its distance is the noise
    best = -attack.decision_function(X).max(axis=1)
    assert best.max() < 1e-7
    # the old behaviour: an adversary re-running unweighted training
    wrong = WhiteBoxAttributeInversion(release, attribute=3)
    wrong.fit(X, y, sample_weight=np.ones(n))
    assert wrong.score(X) < 0.95
    assert np.max(-wrong.decision_function(X).max(axis=1)) > 1e-2


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_white_box_unit_weights_are_the_unweighted_attack(loss):
    X, y = _problem(loss)
    model = _model(loss, sigma=0.05, random_state=0).fit(X, y).release()
    plain = WhiteBoxAttributeInversion(model, attribute=3).fit(X, y)
    unit = WhiteBoxAttributeInversion(model, attribute=3)
    unit.fit(X, y, sample_weight=np.ones(len(X)))
    assert_array_equal(unit.decision_function(X), plain.decision_function(X))
    # constant weights give the unweighted minimiser: no weights needed
    const = _model(loss, sigma=0.05, random_state=0)
    const.fit(X, y, sample_weight=np.full(len(X), 2.5))
    assert not target_glm(const, "attack").weighted
    WhiteBoxAttributeInversion(const, attribute=3).fit(X, y)


def test_weighted_flag_is_kept_by_release():
    X, y = _problem("squared")
    model = _model("squared", sigma=0.1, random_state=0)
    model.fit(X, y, sample_weight=_weights(len(X)))
    assert model._weighted and model.release()._weighted
    assert target_glm(model.release(), "attack", informed=True).weighted
    model.fit(X, y)  # a refit without weights clears the flag
    assert not model._weighted and not model.release()._weighted


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_white_box_refuses_a_weighted_target_without_weights(loss):
    X, y = _problem(loss)
    model = _model(loss, sigma=0.1, random_state=0)
    model.fit(X, y, sample_weight=_weights(len(X)))
    attack = WhiteBoxAttributeInversion(model.release(), attribute=3)
    with pytest.raises(ValueError, match="trained with sample weights; pass"):
        attack.fit(X, y)
    assert not [name for name in vars(attack) if name.endswith("_")]
    with pytest.raises(ValueError, match=r"inconsistent|shape"):
        attack.fit(X, y, sample_weight=np.ones(len(X) - 1))
    with pytest.raises(ValueError, match="positive sum"):
        attack.fit(X, y, sample_weight=-np.ones(len(X)))
    # the adversary's weights on an unweighted target are used as given
    plain = _model(loss, sigma=0.05, random_state=0).fit(X, y)
    omega = _weights(len(X))
    scores = WhiteBoxAttributeInversion(plain, attribute=3)
    scores = scores.fit(X, y, sample_weight=omega).decision_function(X)
    expected = _refit_distances(X, y, loss, plain, [3], [0, 1, 2], sample_weight=omega)
    assert_allclose(scores, expected, rtol=1e-8)


@pytest.mark.parametrize("Model", [IRFILRegressor, IRFILClassifier])
def test_white_box_attacks_irfil_with_its_weights(Model):
    # The informed adversary of Hannun et al. (Figure 7) knows the IRFIL
    # weights: with them the attack re-runs the final weighted fit exactly
    # (the weights sum to n, the penalty is sum(omega) lam / 2 ||w||^2).
    loss = "squared" if Model is IRFILRegressor else "logistic"
    X, y = _problem(loss)
    model = Model(sigma=0.05, lam=LAM, n_iter=2, tol=0.0, random_state=0).fit(X, y)
    omega = model.privacy_report_["weight"].to_numpy()
    assert np.ptp(omega) > 0.1
    with pytest.raises(TypeError, match="IRFIL"):
        WhiteBoxAttributeInversion(model, attribute=3).fit(X, y)
    attack = WhiteBoxAttributeInversion(model.release(), attribute=3)
    scores = attack.fit(X, y, sample_weight=omega).decision_function(X)
    expected = _refit_distances(
        X,
        y,
        loss,
        model,
        [3],
        [0.0, 1.0, 2.0],
        sample_weight=omega,
        penalize_intercept=model.penalize_intercept,
    )
    assert_allclose(scores, expected, rtol=1e-8)
    exact = Model(sigma=1e-9, lam=LAM, n_iter=2, tol=0.0, random_state=0).fit(X, y)
    weights = exact.privacy_report_["weight"].to_numpy()
    attack = WhiteBoxAttributeInversion(exact, attribute=3)
    assert attack.fit(X, y, sample_weight=weights).score(X) == 1.0


def test_white_box_positional_sample_weight_is_deprecated_and_fit_counts_steps():
    X, y = _problem("logistic")
    model = _model("logistic", sigma=0.1, random_state=0).fit(X, y)
    omega = np.ones(len(y))
    new = WhiteBoxAttributeInversion(model, attribute=3)
    new.fit(X, y, sample_weight=omega)
    assert new.n_iter_ >= 1  # fitted state: set by fit, not by the verb
    with pytest.warns(FutureWarning, match="sample_weight"):
        old = WhiteBoxAttributeInversion(model, attribute=3).fit(X, y, omega)
    assert_array_equal(old.transform(X), new.transform(X))
    # rows other than fit's are solved afresh, the fitted state left as it was
    other = X.copy()
    other[:, 0] += 0.5
    n_iter = new.n_iter_
    assert not np.array_equal(new.decision_function(other), new.decision_function(X))
    assert new.n_iter_ == n_iter
