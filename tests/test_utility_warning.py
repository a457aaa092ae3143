# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""UtilityWarning: a release no better than a constant on its training rows.

The verdict against the baseline and margin computed here; the warning on
models that cannot beat it (labels independent of the features, so that no
noised direction beats the majority rate by design) and its absence on good
ones, for every released estimator; it points at the caller's ``fit``."""

import math
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression

from sklearn_fil import (
    DPSGDClassifier,
    IRFILClassifier,
    OutputPerturbedLinearRegression,
    OutputPerturbedLogisticRegression,
)
from sklearn_fil.exceptions import UtilityWarning
from sklearn_fil.utils._baseline import fit_quality


def test_verdict_of_a_classifier():
    y = np.array(["a"] * 30 + ["b"] * 70)
    margin = 2 * math.sqrt(0.7 * 0.3 / 100)  # two binomial standard errors
    below = fit_quality(0.7 + margin - 1e-9, y, 5, classifier=True)
    assert below.baseline == 0.7 and below.majority_class == "b"
    assert below.margin == pytest.approx(margin, rel=1e-15)
    assert not below.useful
    assert fit_quality(0.7 + margin + 1e-9, y, 5, classifier=True).useful


def test_verdict_of_a_regressor():
    n, d = 200, 8
    chance = (d + 2 * math.sqrt(2 * d)) / n  # E R^2 = d/n, sd about sqrt(2d)/n
    y = np.arange(n, dtype=float)
    assert not fit_quality(chance - 1e-9, y, d, classifier=False).useful
    quality = fit_quality(chance + 1e-9, y, d, classifier=False)
    assert quality.useful and quality.baseline == 0.0 and quality.metric == "R^2"


def _independent_labels(seed, n=400):
    """Labels independent of X, 70 % positive: no model beats the majority."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (rng.uniform(size=n) < 0.7).astype(int)
    return X, y


def _useless(estimator, X, y):
    with pytest.warns(UtilityWarning) as record:
        estimator.fit(X, y)
    (warning,) = [w for w in record if w.category is UtilityWarning]
    assert warning.filename == __file__  # the caller's fit
    return str(warning.message)


def test_warns_on_a_useless_logistic_release(global_random_seed):
    X, y = _independent_labels(global_random_seed)
    # a training accuracy above 0.7 + 2 se would need 0.746 by chance
    model = OutputPerturbedLogisticRegression(
        target_epsilon=0.05, data_norm=2.0, random_state=global_random_seed
    )
    message = _useless(model, X, y)
    assert "majority rate" in message and "(always 1)" in message
    assert "raise target_epsilon" in message and "lam_=" in message
    assert "not part of release()" in message


def test_warns_on_a_useless_regression_and_irfil(global_random_seed):
    X, y = make_regression(n_samples=200, n_features=3, random_state=0)
    _useless(OutputPerturbedLinearRegression(sigma=1e3, random_state=0), X, y)
    X, y = _independent_labels(global_random_seed, n=200)
    _useless(IRFILClassifier(sigma=30.0, n_iter=2, random_state=0), X, y)


def test_warns_on_a_useless_dpsgd(global_random_seed):
    X, y = _independent_labels(global_random_seed)
    model = DPSGDClassifier(
        noise_multiplier=50.0, max_iter=2, random_state=global_random_seed
    )
    assert "raise target_epsilon" in _useless(model, X, y)


@pytest.mark.parametrize(
    "estimator",
    [
        OutputPerturbedLogisticRegression(target_epsilon=3.0, data_norm=2.0),
        OutputPerturbedLogisticRegression(sigma=0.05),
        DPSGDClassifier(target_epsilon=3.0, max_iter=3, learning_rate=0.5),
    ],
    ids=["target", "sigma", "dpsgd"],
)
def test_no_warning_on_a_useful_release(estimator, global_random_seed):
    X, y = make_classification(
        n_samples=2000, n_features=4, class_sep=2.0, random_state=global_random_seed
    )
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    estimator.set_params(random_state=global_random_seed)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UtilityWarning)
        estimator.fit(X, y)
    assert estimator.score(X, y) > 0.8


def test_no_warning_on_a_useful_regression():
    X, y = make_regression(n_samples=200, n_features=3, noise=1.0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UtilityWarning)
        OutputPerturbedLinearRegression(sigma=0.01, random_state=0).fit(X, y)


def test_release_carries_no_verdict(global_random_seed):
    X, y = _independent_labels(global_random_seed)
    model = OutputPerturbedLogisticRegression(sigma=50.0, random_state=0)
    with pytest.warns(UtilityWarning):
        model.fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UtilityWarning)
        released = model.release()  # publishes nothing computed from the rows
    assert not any("quality" in name or "score" in name for name in vars(released))
