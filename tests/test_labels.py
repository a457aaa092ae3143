# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""The targets every estimator takes: missing labels, and the label set.

``classes_`` is published by ``release()``; read from the data it tells
neighbours apart, so a classifier takes the label set in advance
(``classes``) or its guarantee names it public.
"""

import numpy as np
import pandas as pd
import pytest

from sklearn_fil import (
    DPSGDClassifier,
    IRFILClassifier,
    IRFILRegressor,
    OutputPerturbedLinearRegression,
    OutputPerturbedLogisticRegression,
)
from sklearn_fil.utils._labels import LABEL_SET
from sklearn_fil.utils.estimator_checks import check_release_same_on_neighbours

ESTIMATORS = [
    OutputPerturbedLinearRegression(sigma=0.1, lam=1e-2),
    OutputPerturbedLogisticRegression(sigma=0.1, lam=1e-2),
    IRFILRegressor(sigma=0.1, lam=1e-2, n_iter=1, tol=0),
    IRFILClassifier(sigma=0.1, lam=1e-2, n_iter=1, tol=0),
    DPSGDClassifier(batch_size=5, max_iter=1),
]
CLASSIFIERS = [e for e in ESTIMATORS if hasattr(e, "predict_proba")]


def _data(n=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2)) * 0.3
    return X, np.r_[np.zeros(n // 2, int), np.ones(n - n // 2, int)]


def _dp_logistic(**params):
    return OutputPerturbedLogisticRegression(
        sigma=1.0, lam=1.0, data_norm=1.0, fit_intercept=False, **params
    )


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("missing", [np.nan, None, pd.NA], ids=["nan", "None", "pd.NA"])
def test_missing_label_is_named(estimator, missing):
    X, y = _data()
    y = pd.Series(y, dtype=object, name="outcome")
    y.iloc[[4, 7]] = missing
    with pytest.raises(
        ValueError, match=r"Input y \(the target\).* missing values, at rows 4, 7\."
    ):
        estimator.fit(X, y)
    assert not hasattr(estimator, "coef_") and not hasattr(estimator, "coefs_")


def test_infinite_regression_target_is_named():
    X, _ = _data()
    y = np.linspace(0, 1, len(X))
    y[3] = np.inf
    with pytest.raises(ValueError, match=r"missing or infinite values, at rows 3\."):
        OutputPerturbedLinearRegression().fit(X, y)


@pytest.mark.parametrize("estimator", CLASSIFIERS, ids=lambda e: type(e).__name__)
def test_given_classes_are_the_label_set(estimator):
    X, y = _data()
    est = estimator.set_params(classes=["a", "b"], random_state=0)
    est.fit(X, np.where(y == 1, "b", "a"))
    np.testing.assert_array_equal(est.classes_, ["a", "b"])
    np.testing.assert_array_equal(est.release().classes_, ["a", "b"])
    with pytest.raises(
        ValueError, match=r"labels outside classes=\['a', 'b'\]: \['c'\]"
    ):
        est.fit(X, np.where(y == 1, "c", "a"))
    assert not hasattr(est, "classes_")  # the failed fit left nothing


def test_binary_models_need_two_given_classes():
    X, y = _data()
    estimator = IRFILClassifier(n_iter=1, tol=0)
    with pytest.raises(
        ValueError, match="exactly 2 classes; the classes parameter has 3"
    ):
        estimator.set_params(classes=[0, 1, 2]).fit(X, y)
    # the output-perturbed model is multinomial over a given label set of 3
    multinomial = _dp_logistic(classes=[0, 1, 2]).fit(X, y)
    assert multinomial.coef_.shape == (3, X.shape[1])
    assert LABEL_SET not in multinomial.guarantee_.public


def test_guarantee_names_the_label_set_public_only_when_read_from_data():
    X, y = _data()
    assert LABEL_SET in _dp_logistic().fit(X, y).guarantee_.public
    assert LABEL_SET not in _dp_logistic(classes=[0, 1]).fit(X, y).guarantee_.public


def test_issue_reproduction_is_closed():
    """Issue 30: relabelling the only positive example changed ``classes_``."""
    X, y = _data()
    y = np.zeros(len(X), int)
    y[-1] = 1
    y3 = y.copy()
    y3[-1] = 7
    with pytest.raises(ValueError, match="labels outside"):
        _dp_logistic(classes=[0, 1]).fit(X, y3)
    y0 = np.zeros(len(X), int)  # the neighbour with the only "1" relabelled 0
    a = _dp_logistic(classes=[0, 1], random_state=0).fit(X, y).release()
    b = _dp_logistic(classes=[0, 1], random_state=0).fit(X, y0).release()
    np.testing.assert_array_equal(a.classes_, b.classes_)
    assert a.guarantee_ == b.guarantee_


@pytest.mark.parametrize(
    "estimator",
    [
        _dp_logistic(),
        _dp_logistic(target_epsilon=1.0),
        OutputPerturbedLogisticRegression(
            lam=0.1, data_norm=2.0, penalize_intercept=True, onehot_groups="auto"
        ),
        OutputPerturbedLinearRegression(lam=0.1, data_norm=2.0, label_bound=0.5),
        OutputPerturbedLinearRegression(
            target_epsilon=1.0, data_norm=2.0, label_bound=0.5
        ),
        DPSGDClassifier(batch_size=8, max_iter=2, hidden_layer_sizes=(3,)),
        DPSGDClassifier(
            batch_size=8,
            max_iter=2,
            sampling="poisson",
            neighboring_relation="add_remove",
            public_n_samples=40,
        ),
        DPSGDClassifier(batch_size=8, max_iter=1, target_epsilon=2.0),
    ],
    ids=lambda e: type(e).__name__,
)
def test_guaranteed_releases_do_not_tell_neighbours_apart(estimator):
    check_release_same_on_neighbours(estimator)


class _LeakyLogistic(OutputPerturbedLogisticRegression):
    """Publishes the number of clipped rows, a count over the private data."""

    def release(self):
        released = super().release()
        released.n_clipped_ = self.n_clipped_
        return released


@pytest.mark.filterwarnings("ignore::sklearn_fil.exceptions.ClippingWarning")
def test_neighbour_check_catches_a_leaky_release():
    # the check's data: rows scaled to a largest norm of 1, the first
    # replaced by half of itself; clip it on one side only
    from sklearn_fil.utils.estimator_checks import _data as check_data

    X, _ = check_data()
    norm = float(np.linalg.norm(X.iloc[0]))
    leaky = _LeakyLogistic(lam=0.1, data_norm=0.75 * norm, fit_intercept=False)
    with pytest.raises(AssertionError, match=r"release\(\)\.n_clipped_ tells"):
        check_release_same_on_neighbours(leaky)
