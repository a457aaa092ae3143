"""Attacks on a fitted Pipeline of a ColumnTransformer and a private GLM."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_array_equal
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_fil import OutputPerturbedLogisticRegression, release
from sklearn_fil.attacks import (
    BlackBoxAttributeInversion,
    GLMReconstructionAttack,
    LikelihoodRatioMembershipInference,
    LossThresholdMembershipInference,
    WhiteBoxAttributeInversion,
    attack_report,
)
from sklearn_fil.utils._clipping import clip_rows
from sklearn_fil.utils._pipeline import (
    original_columns,
    transform_dense,
)
from tests._compas import CATEGORICAL, NUMERIC, compas, compas_columns


@pytest.fixture(scope="module")
def compas_pipeline():
    X, y = compas()
    ct = compas_columns()
    clf = OutputPerturbedLogisticRegression(
        sigma=0.01, lam=1e-2, data_norm=5.0, random_state=0
    )
    return Pipeline([("ct", ct), ("clf", clf)]).fit(X, y), X, y


def test_original_columns_map_the_column_transformer(compas_pipeline):
    pipe, X, _ = compas_pipeline
    mapping = original_columns(pipe[:-1])
    names = pipe[:-1].get_feature_names_out()
    cols, levels = mapping["race"]
    assert_array_equal(names[cols], [f"onehot__race_{v}" for v in levels])
    assert_array_equal(levels, np.sort(X["race"].unique()))
    cols, levels = mapping["age"]
    assert levels is None and names[cols].tolist() == ["scale__age"]


@pytest.mark.parametrize("released", [False, True])
def test_attacks_name_the_columns_of_a_prefix_that_keeps_them(released):
    # a scaler fitted on a DataFrame keeps its column names: column j is j
    X, y = compas(n=150)  # few rows: the white-box scores are costly
    X = X[NUMERIC]
    clf = OutputPerturbedLogisticRegression(sigma=0.01, data_norm=5.0, random_state=0)
    pipe = make_pipeline(StandardScaler(), clf).fit(X, y)
    target = release(pipe, public_prefix=True) if released else pipe
    Xt = transform_dense(pipe[:-1], X)
    for j, name in enumerate(NUMERIC):
        assert pipe[:-1].get_feature_names_out()[j] == name
        attack = WhiteBoxAttributeInversion(target, attribute=name).fit(X, y)
        by_hand = WhiteBoxAttributeInversion(
            pipe[-1].release() if released else pipe[-1], attribute=j
        ).fit(Xt, y)
        scores = by_hand.decision_function(Xt)
        assert_array_equal(attack.decision_function(X), scores)
        raw = np.sort(X[name].unique())
        assert_array_equal(attack.transform(X)[:, 0], raw[np.argmax(scores, axis=1)])
        black = BlackBoxAttributeInversion(target, attribute=name).fit(X, y)
        assert set(black.transform(X)[:, 0]) <= set(raw)


@pytest.mark.parametrize("released", [False, True])
@pytest.mark.parametrize("attribute", ["race", "sex", "age"])
def test_white_box_on_a_pipeline_equals_the_attack_by_hand(
    compas_pipeline, attribute, released
):
    pipe, X, y = compas_pipeline
    target = release(pipe, public_prefix=True) if released else pipe
    attack = WhiteBoxAttributeInversion(target, attribute=attribute).fit(X, y)
    Xt = transform_dense(pipe[:-1], X)
    cols, levels = original_columns(pipe[:-1])[attribute]
    by_hand = WhiteBoxAttributeInversion(
        pipe[-1].release() if released else pipe[-1],
        attribute=cols.tolist() if cols.size > 1 else int(cols[0]),
    ).fit(Xt, y)
    assert_array_equal(attack.decision_function(X), by_hand.decision_function(Xt))
    best = np.argmax(by_hand.decision_function(Xt), axis=1)
    # results in original terms: the level names, or the raw values
    raw = levels if levels is not None else np.sort(X[attribute].unique())
    assert_array_equal(attack.transform(X)[:, 0], raw[best])
    assert attack.score(X) == np.mean(raw[best] == X[attribute].to_numpy())
    # the attacked column is never read: it may be missing
    hidden = X.assign(**{attribute: np.nan})
    assert_array_equal(attack.decision_function(hidden), attack.decision_function(X))


def test_baselines_are_the_prior_guess(compas_pipeline):
    pipe, X, y = compas_pipeline
    for attribute in ("race", "sex"):
        attack = WhiteBoxAttributeInversion(pipe, attribute=attribute).fit(X, y)
        majority = X[attribute].value_counts(normalize=True).max()
        assert attack.baseline_ == pytest.approx(majority, abs=1e-15)
    # a numeric attribute scored on a grid: the baseline is minus its variance
    grid = WhiteBoxAttributeInversion(
        pipe, attribute="priors_count", candidates=[0, 2, 5, 10]
    ).fit(X, y)
    assert grid.baseline_ == pytest.approx(-np.var(X["priors_count"]))
    assert grid.score(X) <= 0


def test_black_box_queries_the_pipeline_with_raw_strings(compas_pipeline):
    pipe, X, y = compas_pipeline
    attack = BlackBoxAttributeInversion(pipe, attribute="sex").fit(X, y)
    assert set(attack.transform(X)[:, 0]) <= set(X["sex"])
    assert attack.baseline_ == pytest.approx(
        X["sex"].value_counts(normalize=True).max()
    )
    # by hand: prior times the probability of the known label
    scores = []
    for level, prior in zip(attack.levels_, attack.prior_, strict=True):
        proba = pipe.predict_proba(X.assign(sex=level))[np.arange(len(y)), y]
        scores.append(np.log(prior) + np.log(proba))
    np.testing.assert_allclose(attack.decision_function(X), np.column_stack(scores))


def test_a_failed_fit_on_a_pipeline_leaves_no_state(compas_pipeline):
    pipe, X, y = compas_pipeline
    attack = WhiteBoxAttributeInversion(pipe, attribute="race").fit(X, y)
    with pytest.raises(TypeError, match="DataFrame"):
        attack.fit(X.to_numpy(), y)
    assert not [a for a in vars(attack) if a.endswith("_")]
    with pytest.raises(ValueError, match="original column"):
        WhiteBoxAttributeInversion(pipe, attribute="nope").fit(X, y)


def test_baseline_without_a_pipeline():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.standard_normal((120, 2)), rng.integers(0, 3, 120)])
    y = (X[:, 0] > 0).astype(int)
    model = OutputPerturbedLogisticRegression(sigma=0.1, random_state=0).fit(X, y)
    attack = WhiteBoxAttributeInversion(model, attribute=2).fit(X, y)
    _, counts = np.unique(X[:, 2], return_counts=True)
    assert attack.baseline_ == counts.max() / 120


def test_reconstruction_on_a_pipeline_equals_the_attack_by_hand(compas_pipeline):
    pipe, X, y = compas_pipeline
    Xt = transform_dense(pipe[:-1], X)
    attack = GLMReconstructionAttack(pipe).fit(X, y)
    by_hand = GLMReconstructionAttack(pipe[-1]).fit(Xt, y)
    assert_array_equal(attack.transform(X), by_hand.transform(Xt))
    assert attack.score(X) == by_hand.score(Xt)
    # the baseline: guess every (clipped) feature's mean
    clipped = clip_rows(Xt, 5.0)[0]
    assert attack.baseline_ == pytest.approx(-np.mean(np.var(clipped, axis=0)))
    result = attack.check_bound(X)
    assert_array_equal(result.prior_variance, np.var(clipped, axis=0))
    assert result.report["prior_mse"].iloc[0] == pytest.approx(
        np.mean(np.var(clipped, axis=0))
    )
    released = GLMReconstructionAttack(release(pipe, public_prefix=True)).fit(X, y)
    assert released.transform(X).shape == Xt.shape


def test_likelihood_ratio_on_a_pipeline_equals_the_attack_by_hand(compas_pipeline):
    pipe, X, y = compas_pipeline
    Xt = transform_dense(pipe[:-1], X)
    attack = LikelihoodRatioMembershipInference(pipe).fit(X, y)
    by_hand = LikelihoodRatioMembershipInference(pipe[-1]).fit(Xt, y)
    pd.testing.assert_frame_equal(
        attack.report_.reset_index(drop=True), by_hand.report_.reset_index(drop=True)
    )
    published = release(pipe, public_prefix=True)
    assert_array_equal(
        attack.decision_function(published), by_hand.decision_function(published[-1])
    )
    assert attack.baseline_ == attack.fpr


def test_loss_threshold_on_a_pipeline_with_raw_rows(compas_pipeline):
    pipe, X_train, _ = compas_pipeline
    X, y = compas(n=600)  # the first 400 rows trained the pipeline
    member = np.r_[np.ones(400, dtype=int), np.zeros(200, dtype=int)]
    # non-members whose categories the encoder knows
    known = np.all([X[c].isin(X_train[c]) for c in CATEGORICAL], axis=0)
    X, y, member = X[known], y[known], member[known]
    attack = LossThresholdMembershipInference(pipe, random_state=0)
    attack.fit(X, y, membership=member)
    proba = pipe.predict_proba(X)[np.arange(len(y)), y]
    np.testing.assert_allclose(attack.decision_function(X, y), np.log(proba))
    assert attack.baseline_["auc"] == 0.5 and attack.baseline_["advantage"] == 0.0
    assert 0.5 <= attack.baseline_["accuracy"] <= 1.0


def test_attack_report_shows_the_baseline(compas_pipeline):
    pipe, X, y = compas_pipeline
    attack = WhiteBoxAttributeInversion(pipe, attribute="race").fit(X, y)
    success = attack.transform(X)[:, 0] == X["race"].to_numpy()
    report = attack_report(
        np.arange(len(y), dtype=float), success, n_bins=4, baseline=attack.baseline_
    )
    assert report.columns[-1] == "baseline"
    assert (report["baseline"] == attack.baseline_).all()
    assert "baseline" not in attack_report(np.arange(4.0), np.ones(4), n_bins=2)
