# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""scikit-learn's estimator checks and our own over every public estimator."""

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_fil import (
    DPSGDClassifier,
    IRFILClassifier,
    IRFILRegressor,
    OutputPerturbedLinearRegression,
    OutputPerturbedLogisticRegression,
)
from sklearn_fil.utils.estimator_checks import private_estimator_checks

ESTIMATORS = [
    OutputPerturbedLinearRegression(sigma=0.1, lam=1e-3),
    OutputPerturbedLogisticRegression(sigma=0.1, lam=1e-2),
    IRFILRegressor(sigma=0.1, lam=1e-3, n_iter=3, tol=0.0),
    IRFILClassifier(sigma=0.1, lam=1e-2, n_iter=3, tol=0.0),
    DPSGDClassifier(batch_size=8, max_iter=2, learning_rate=0.5),
]


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


@pytest.mark.parametrize(
    "estimator, check",
    [pair for est in ESTIMATORS for pair in private_estimator_checks(est)],
    ids=lambda x: x.__name__ if callable(x) else type(x).__name__,
)
def test_private_estimator_contract(estimator, check):
    check(estimator)
