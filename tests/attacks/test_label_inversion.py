# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""Attribute inversion of the label, by the name the privacy report gives it."""

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import expit
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from sklearn_fil import (
    OutputPerturbedLinearRegression,
    OutputPerturbedLogisticRegression,
    release,
)
from sklearn_fil.attacks import BlackBoxAttributeInversion, WhiteBoxAttributeInversion
from sklearn_fil.utils._pipeline import transform_dense
from sklearn_fil.utils.estimator_checks import attack_checks
from tests._reference import fit_minimiser

LAM = 1e-2
GRID = np.linspace(-2.0, 2.0, 5)  # candidate labels of a regressor


def _problem(loss, n=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    margin = X @ [1.5, -1.0, 0.5] - 0.3
    if loss == "squared":
        return X, margin + 0.3 * rng.standard_normal(n)
    return X, (rng.uniform(size=n) < expit(margin)).astype(float)


def _model(loss, **params):
    if loss == "squared":
        return OutputPerturbedLinearRegression(lam=LAM, **params)
    return OutputPerturbedLogisticRegression(lam=LAM, **params)


def _refit_label_distances(
    X, y, loss, model, candidates, data_norm=None, sample_weight=None
):
    """-||w' - w(y_i := a)|| by re-fitting the training objective from scratch."""
    released = np.append(model.coef_, model.intercept_)
    if not model.fit_intercept:
        released = model.coef_
    if data_norm is not None:
        X = X * np.minimum(1.0, data_norm / np.linalg.norm(X, axis=1))[:, None]
    out = np.empty((X.shape[0], len(candidates)))
    for i in range(X.shape[0]):
        for k, value in enumerate(candidates):
            yc = y.copy()
            yc[i] = value
            coef, b = fit_minimiser(
                X,
                yc,
                loss,
                lam=LAM,
                sample_weight=sample_weight,
                fit_intercept=model.fit_intercept,
            )
            w = coef if b is None else np.append(coef, b)
            out[i, k] = -np.linalg.norm(w - released)
    return out


@pytest.mark.parametrize("loss", ["squared", "logistic"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_white_box_label_matches_refitting(loss, fit_intercept):
    X, y = _problem(loss)
    model = _model(loss, sigma=0.05, fit_intercept=fit_intercept, random_state=0)
    model = model.fit(X, y).release()
    candidates = GRID if loss == "squared" else None
    attack = WhiteBoxAttributeInversion(model, attribute="y", candidates=candidates)
    attack.fit(X, y)
    values = GRID if loss == "squared" else [0.0, 1.0]
    expected = _refit_label_distances(X, y, loss, model, values)
    assert_allclose(attack.decision_function(X), expected, rtol=1e-8)
    assert_array_equal(attack.candidates_[:, 0], values)
    best = np.asarray(values)[np.argmax(expected, axis=1)]
    assert_array_equal(attack.transform(X)[:, 0], best)
    assert attack.attribute_name_ == "y" and attack.columns_.size == 0
    assert_array_equal(attack.get_feature_names_out(), ["y"])


def test_white_box_label_of_clipped_rows_matches_refitting():
    # clipping rescales the rows, never the label
    X, y = _problem("logistic")
    model = _model(
        "logistic", sigma=0.05, data_norm=1.0, penalize_intercept=False, random_state=0
    ).fit(X, y)
    assert np.mean(np.linalg.norm(X, axis=1) > 1.0) > 0.5
    attack = WhiteBoxAttributeInversion(model, attribute="y").fit(X, y)
    expected = _refit_label_distances(X, y, "logistic", model, [0, 1], data_norm=1.0)
    assert_allclose(attack.decision_function(X), expected, rtol=1e-8)


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_white_box_weighted_label_matches_weighted_refitting(loss):
    # the target keeps its weight omega_i with each candidate label
    X, y = _problem(loss)
    omega = np.random.default_rng(1).uniform(0.2, 3.0, len(y))
    model = _model(loss, sigma=0.05, random_state=0).fit(X, y, sample_weight=omega)
    candidates = GRID if loss == "squared" else None
    attack = WhiteBoxAttributeInversion(model, attribute="y", candidates=candidates)
    scores = attack.fit(X, y, sample_weight=omega).decision_function(X)
    values = GRID if loss == "squared" else [0.0, 1.0]
    expected = _refit_label_distances(X, y, loss, model, values, sample_weight=omega)
    assert_allclose(scores, expected, rtol=1e-8)


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_white_box_never_reads_the_hidden_label(loss):
    # example i's own label enters only where it cancels: another label of i
    # (the same release, the same knowledge of the others) moves nothing of i
    X, y = _problem(loss)
    model = _model(loss, sigma=0.1, random_state=0).fit(X, y).release()
    candidates = GRID if loss == "squared" else None
    i = 4
    attack = WhiteBoxAttributeInversion(model, attribute="y", candidates=candidates)
    scores = attack.fit(X, y).decision_function(X)[i]
    y_other = y.copy()
    y_other[i] = 1.0 - y[i] if loss == "logistic" else y[i] + 3.0
    other = attack.fit(X, y_other).decision_function(X)[i]
    assert_allclose(other, scores, rtol=1e-8)


@pytest.mark.parametrize(
    ("columns", "target"),
    [
        (None, None),  # the report's "y"
        (["a", "b", "c"], None),
        (["a", "b", "c"], "had_affair"),
        (["a", "b", "age"], "age"),  # a feature's name: the label is "y"
        (["a", "y", "age"], "age"),  # ... or "target" when a feature is "y"
        (None, "dose"),  # a named Series without feature names
    ],
)
def test_the_label_goes_by_the_name_of_the_report(columns, target):
    X, y = _problem("logistic")
    X = X if columns is None else pd.DataFrame(X, columns=columns)
    y = y if target is None else pd.Series(y, name=target)
    model = _model("logistic", sigma=0.1, random_state=0).fit(X, y)
    label = model.attribute_fil_.index[-1]  # the report's fil[<label>]
    assert f"fil[{label}]" in model.privacy_report_.columns
    attack = WhiteBoxAttributeInversion(model.release(), attribute=label).fit(X, y)
    assert attack.attribute_name_ == label
    assert attack.columns_.size == 0
    assert_array_equal(attack.get_feature_names_out(), [label])
    black = BlackBoxAttributeInversion(model, attribute=label).fit(X, y)
    assert black.attribute_name_ == label
    alias = WhiteBoxAttributeInversion(model, attribute="y").fit(X, y)
    if columns is not None and "y" in columns:
        assert_array_equal(alias.columns_, [1])  # "y" is then the feature
    else:
        assert alias.attribute_name_ == label  # "y" is the label too
        assert_array_equal(alias.decision_function(X), attack.decision_function(X))


def _affairs(n=200, seed=0):
    """Raw rows with a categorical and two numeric columns; a named string label."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(
        {
            "religion": rng.choice(["none", "some", "very"], n),
            "age": rng.normal(40.0, 10.0, n),
            "years_married": rng.gamma(2.0, 5.0, n),
        }
    )
    margin = (X["age"] - 40) / 5 - (X["years_married"] - 10) / 5
    margin += 2.0 * (X["religion"] == "none") - 1.0
    affair = rng.uniform(size=n) < expit(margin)
    return X, pd.Series(np.where(affair, "yes", "no"), name="had_affair")


def _affairs_pipeline(X, y, sigma):
    ct = ColumnTransformer(
        [
            ("onehot", OneHotEncoder(), ["religion"]),
            ("scale", StandardScaler(), ["age", "years_married"]),
        ]
    )
    clf = OutputPerturbedLogisticRegression(sigma=sigma, lam=LAM, random_state=0)
    return Pipeline([("ct", ct), ("clf", clf)]).fit(X, y)


@pytest.mark.parametrize("released", [False, True])
def test_white_box_recovers_the_label_through_a_pipeline(released):
    X, y = _affairs()
    pipe = _affairs_pipeline(X, y, sigma=1e-6)  # an informed adversary, tiny noise
    assert "fil[had_affair]" in pipe[-1].privacy_report_.columns
    target = release(pipe, public_prefix=True) if released else pipe
    attack = WhiteBoxAttributeInversion(target, attribute="had_affair").fit(X, y)
    guess = attack.transform(X)[:, 0]
    assert set(guess) <= set(pipe.classes_)
    assert_array_equal(attack.levels_, pipe.classes_)
    accuracy = np.mean(guess == y.to_numpy())
    majority = y.value_counts(normalize=True).max()
    assert attack.baseline_ == pytest.approx(majority)
    assert attack.score(X) == pytest.approx(accuracy)
    assert majority < 0.7 and accuracy >= 0.95
    # the same as attacking the final step on the transformed rows by hand
    Xt = transform_dense(pipe[:-1], X)
    by_hand = WhiteBoxAttributeInversion(target[-1], attribute="y")
    by_hand.fit(Xt, y.to_numpy())
    assert_array_equal(attack.decision_function(X), by_hand.decision_function(Xt))
    # the label is never read in transform: the rows are all it takes
    assert attack.score(X, y.iloc[::-1].to_numpy()) < attack.score(X)


def test_black_box_guesses_the_label_through_a_pipeline():
    X, y = _affairs()
    pipe = _affairs_pipeline(X, y, sigma=1e-6)
    attack = BlackBoxAttributeInversion(pipe, attribute="had_affair").fit(X, y)
    # by hand: the prior of each class (one pseudo-count) times its probability
    counts = np.array([np.sum(y == c) for c in pipe.classes_]) + 1.0
    prior = counts / counts.sum()
    expected = np.log(prior) + np.log(pipe.predict_proba(X))
    assert_allclose(attack.decision_function(X), expected)
    assert_array_equal(attack.transform(X)[:, 0], pipe.classes_[expected.argmax(1)])
    assert attack.score(X) > attack.baseline_


@pytest.mark.parametrize("classifier", [False, True])
def test_black_box_label_by_hand(classifier):
    X, y = _problem("logistic" if classifier else "squared", n=60)
    model = (LogisticRegression() if classifier else LinearRegression()).fit(X, y)
    values = [0.0, 1.0] if classifier else GRID
    attack = BlackBoxAttributeInversion(
        model, attribute="y", candidates=None if classifier else GRID
    ).fit(X, y)
    # eq. 31 with the label as the attribute, one example at a time
    nearest = np.argmin(np.abs(y[:, None] - np.asarray(values)[None]), axis=1)
    prior = np.bincount(nearest, minlength=len(values)) + 1.0
    prior /= prior.sum()
    mse = np.mean((model.predict(X) - y) ** 2)
    guesses = []
    for i in range(len(y)):
        x = X[i][None]
        if classifier:
            like = model.predict_proba(x)[0]
        else:
            like = np.exp(-0.5 * (np.asarray(values) - model.predict(x)[0]) ** 2 / mse)
        guesses.append(values[int(np.argmax(prior * like))])
    assert_array_equal(attack.transform(X)[:, 0], guesses)


def test_unknown_attributes_name_the_label():
    X, y = _affairs(n=60)
    pipe = _affairs_pipeline(X, y, sigma=0.1)
    for Attack in (WhiteBoxAttributeInversion, BlackBoxAttributeInversion):
        with pytest.raises(ValueError, match=r"(?=.*'had_affair')(?=.*religion)"):
            Attack(pipe, attribute="affair").fit(X, y)
    frame = X[["age", "years_married"]]
    model = _model("logistic", sigma=0.1, random_state=0).fit(frame, y)
    with pytest.raises(ValueError, match=r"features: age, years_married; the label: "):
        WhiteBoxAttributeInversion(model, attribute="affair").fit(frame, y)
    with pytest.raises(ValueError, match="classes_; pass candidates=None"):
        WhiteBoxAttributeInversion(
            model, attribute="had_affair", candidates=["no"]
        ).fit(frame, y)
    attack = WhiteBoxAttributeInversion(model, attribute="had_affair").fit(frame, y)
    with pytest.raises(ValueError, match="true labels"):
        attack.score(frame, y[:5])
    with pytest.raises(ValueError, match="not classes of the model"):
        WhiteBoxAttributeInversion(model, attribute="had_affair").fit(
            frame, y.replace("no", "maybe")
        )


def test_label_attacks_keep_the_attack_contract():
    X, y = _affairs(n=60)
    pipe = _affairs_pipeline(X, y, sigma=0.1)
    Xn, yn = _problem("squared")
    reg = _model("squared", sigma=0.1, random_state=0).fit(Xn, yn)
    cases = [
        (WhiteBoxAttributeInversion(pipe, attribute="had_affair"), (X, y)),
        (BlackBoxAttributeInversion(pipe, attribute="had_affair"), (X, y)),
        (WhiteBoxAttributeInversion(reg, attribute="y", candidates=GRID), (Xn, yn)),
    ]
    for case, fit_args in cases:
        for attack, check in attack_checks(case, *fit_args):
            check(attack, *fit_args)
