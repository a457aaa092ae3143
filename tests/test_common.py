# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""scikit-learn's estimator checks and our own over every public estimator."""

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.datasets import make_classification
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_fil import (
    DPSGDClassifier,
    IRFILClassifier,
    IRFILRegressor,
    OutputPerturbedLinearRegression,
    OutputPerturbedLogisticRegression,
)
from sklearn_fil.attacks import (
    BlackBoxAttributeInversion,
    GLMReconstructionAttack,
    GradientLabelAttack,
    LikelihoodRatioMembershipInference,
    LiRAMembershipInference,
    LossThresholdMembershipInference,
    RMIAMembershipInference,
    WhiteBoxAttributeInversion,
)
from sklearn_fil.utils.estimator_checks import (
    attack_checks,
    check_attack_results_leave_attack_unchanged,
    expected_failed_checks,
    private_estimator_checks,
)

ESTIMATORS = [
    OutputPerturbedLinearRegression(),  # the defaults, lam=0 included
    OutputPerturbedLinearRegression(sigma=0.1, lam=1e-3),
    OutputPerturbedLogisticRegression(sigma=0.1, lam=1e-2),
    IRFILRegressor(sigma=0.1, lam=1e-3, n_iter=3, tol=0.0),
    IRFILClassifier(sigma=0.1, lam=1e-2, n_iter=3, tol=0.0),
    DPSGDClassifier(batch_size=8, max_iter=2, learning_rate=0.5),
]


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=expected_failed_checks)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


@pytest.mark.parametrize(
    "estimator, check",
    [pair for est in ESTIMATORS for pair in private_estimator_checks(est)],
    ids=lambda x: x.__name__ if callable(x) else type(x).__name__,
)
def test_private_estimator_contract(estimator, check):
    check(estimator)


def _attack_cases():
    """``(attack, fit_args)`` for every attack, on fitted private models."""
    X, y = make_classification(
        n_samples=40, n_features=4, n_informative=3, n_redundant=0, random_state=0
    )
    X = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    X["d"] = (X["d"] > 0).astype(float)  # a binary attribute to invert
    y_reg = X.to_numpy() @ [1.0, -2.0, 0.5, 1.0]
    member = np.r_[np.ones(20, int), np.zeros(20, int)]
    clf = OutputPerturbedLogisticRegression(
        sigma=0.1, lam=0.1, data_norm=4.0, penalize_intercept=True, random_state=0
    ).fit(X, y)
    reg = OutputPerturbedLinearRegression(sigma=0.1, lam=0.1, random_state=0).fit(
        X, y_reg
    )
    irfil = IRFILRegressor(sigma=0.1, n_iter=2, tol=0, random_state=0).fit(X, y_reg)
    weights = irfil.privacy_report_["weight"].to_numpy()
    net = DPSGDClassifier(
        hidden_layer_sizes=(6,),
        noise_multiplier=1e-3,
        clipping="hard",
        batch_size=4,
        sampling="shuffle",
        max_iter=1,
        record_steps=[1],
        random_state=0,
    ).fit(X, y)
    step = net.recorded_steps_[0]
    # a Pipeline on raw rows: a string column one-hot encoded, the rest scaled
    raw = X.drop(columns="d").assign(g=np.where(X["d"] > 0, "yes", "no"))
    prefix = ColumnTransformer(
        [("onehot", OneHotEncoder(), ["g"]), ("scale", StandardScaler(), ["a", "b"])],
        remainder="passthrough",
    )
    pipe = Pipeline(
        [
            ("prefix", prefix),
            ("clf", OutputPerturbedLogisticRegression(sigma=0.1, random_state=0)),
        ]
    ).fit(raw, y)
    membership, weights, step = (
        {"membership": member},
        {"sample_weight": weights},
        {"step": step},
    )
    return [
        (WhiteBoxAttributeInversion(pipe, attribute="g"), (raw, y), {}),
        (WhiteBoxAttributeInversion(pipe, attribute="a"), (raw, y), {}),
        (BlackBoxAttributeInversion(pipe, attribute="g"), (raw, y), {}),
        (GLMReconstructionAttack(pipe), (raw, y), {}),
        (LossThresholdMembershipInference(pipe, random_state=0), (raw, y), membership),
        (LikelihoodRatioMembershipInference(pipe), (raw, y), {}),
        (GradientLabelAttack(net, variant="last_hidden"), (X,), step),
        (GradientLabelAttack(net, variant="general", layer=0), (X,), step),
        (WhiteBoxAttributeInversion(clf, attribute="d"), (X, y), {}),
        (WhiteBoxAttributeInversion(reg, attribute="d"), (X, y_reg), {}),
        (WhiteBoxAttributeInversion(irfil, attribute="d"), (X, y_reg), weights),
        (BlackBoxAttributeInversion(clf, attribute="d"), (X, y), {}),
        (GLMReconstructionAttack(clf), (X, y), {}),
        (GLMReconstructionAttack(reg), (X, y_reg), {}),
        (LossThresholdMembershipInference(clf, random_state=0), (X, y), membership),
        (LikelihoodRatioMembershipInference(clf), (X, y), {}),
        (LikelihoodRatioMembershipInference(reg), (X, y_reg), {}),
        (
            LiRAMembershipInference(clf, n_shadow_models=4, random_state=0),
            (X, y),
            membership,
        ),
        (RMIAMembershipInference(pipe, random_state=0), (raw, y), membership),
    ]


def _attack_id(x):
    if callable(x):
        return x.__name__
    if isinstance(x, tuple):
        return f"{len(x)}args"
    if isinstance(x, dict):
        return ",".join(x) or "-"
    return f"{type(x).__name__}({type(x.model).__name__})"


@pytest.mark.parametrize(
    "attack, fit_args, fit_params, check",
    [
        (attack, fit_args, fit_params, check)
        for case, fit_args, fit_params in _attack_cases()
        for attack, check in attack_checks(case, *fit_args, **fit_params)
    ],
    ids=_attack_id,
)
def test_attack_contract(attack, fit_args, fit_params, check):
    check(attack, *fit_args, **fit_params)


class _RecordingAttack(GLMReconstructionAttack):
    """Breaks the contract: its transform sets an attribute."""

    def transform(self, X):
        self.n_transformed_ = len(X)
        return super().transform(X)


def test_results_check_catches_an_attack_that_changes_in_its_verb():
    attack, fit_args, _ = _attack_cases()[-4]  # GLMReconstructionAttack(reg)
    check_attack_results_leave_attack_unchanged(attack, *fit_args)
    with pytest.raises(AssertionError, match="transform changed the attack"):
        check_attack_results_leave_attack_unchanged(
            _RecordingAttack(attack.model), *fit_args
        )
