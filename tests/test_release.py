# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""sklearn_fil.release: an estimator's or a fitted Pipeline's publishable form.

A pipeline's prefix is published as fitted, unprotected by the final model's
noise: releasing one warns unless the caller declares it public.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.exceptions import NotFittedError
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import OneHotEncoder, PolynomialFeatures, StandardScaler

import sklearn_fil
from sklearn_fil import (
    DPSGDClassifier,
    IRFILRegressor,
    OutputPerturbedLinearRegression,
    OutputPerturbedLogisticRegression,
    release,
)
from sklearn_fil.exceptions import PrivacyLeakWarning, UtilityWarning


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(
        {
            "age": rng.normal(40, 10, 80),
            "income": rng.normal(3, 1, 80),
            "city": rng.choice(["a", "b", "c"], 80),
        }
    )
    y = (X["age"] + 10 * (X["city"] == "a") + rng.normal(0, 5, 80) > 45).astype(int)
    return X, y.to_numpy()


def _model():
    return OutputPerturbedLogisticRegression(sigma=0.1, lam=0.1, random_state=0)


@pytest.fixture(scope="module")
def pipe(data):
    prefix = ColumnTransformer(
        [
            ("num", StandardScaler(), ["age", "income"]),
            ("cat", OneHotEncoder(sparse_output=False), ["city"]),
        ]
    )
    return make_pipeline(prefix, _model()).fit(*data)


def test_release_is_exported():
    assert "release" in sklearn_fil.__all__
    assert sklearn_fil.release is release


@pytest.mark.parametrize(
    "estimator",
    [
        OutputPerturbedLinearRegression(sigma=0.1, random_state=0),
        OutputPerturbedLogisticRegression(sigma=0.1, random_state=0),
        IRFILRegressor(sigma=0.1, n_iter=2, tol=0.1, random_state=0),
        DPSGDClassifier(batch_size=20, max_iter=1, random_state=0),
    ],
    ids=lambda e: type(e).__name__,
)
def test_an_estimator_releases_as_its_release(data, estimator):
    X = data[0][["age", "income"]].to_numpy() / 100.0
    y = data[1]
    fitted = estimator.fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no prefix: nothing to warn about
        released = release(fitted)
    expected = fitted.release()
    assert type(released) is type(fitted)
    assert not hasattr(released, "privacy_report_")
    np.testing.assert_array_equal(released.predict(X), expected.predict(X))
    np.testing.assert_array_equal(released.predict(X), fitted.predict(X))


def test_a_pipeline_releases_its_prefix_and_final_release(data, pipe):
    X, _ = data
    with pytest.warns(PrivacyLeakWarning, match=r"\['columntransformer'\]"):
        released = release(pipe)
    assert isinstance(released, Pipeline)
    assert [name for name, _ in released.steps] == [name for name, _ in pipe.steps]
    # the same noise: the same predictions, on raw rows
    np.testing.assert_array_equal(released.predict(X), pipe.predict(X))
    np.testing.assert_array_equal(released.predict_proba(X), pipe.predict_proba(X))
    final = released[-1]
    assert not hasattr(final, "privacy_report_")
    assert not hasattr(released, "privacy_report_")
    assert final.get_params()["random_state"] is None
    assert final.guarantee_ is pipe[-1].guarantee_
    # the prefix is a copy: refitting the original pipeline leaves it alone
    assert released[0] is not pipe[0]
    means = released[0].named_transformers_["num"].mean_.copy()
    make_pipeline(pipe[0], _model()).fit(X.iloc[:40], data[1][:40])
    np.testing.assert_array_equal(released[0].named_transformers_["num"].mean_, means)


def test_a_public_prefix_releases_without_warning(data):
    X, y = data
    X_public = X[["age", "income"]].iloc[:20]
    scaler = FrozenEstimator(StandardScaler().fit(X_public))
    pipe = make_pipeline(scaler, _model()).fit(X[["age", "income"]], y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", UtilityWarning)  # the fit's, not release's
        released = release(pipe, public_prefix=True)
        # nothing fitted before the model: nothing to warn about
        bare = make_pipeline("passthrough", _model()).fit(X[["age", "income"]], y)
        release(bare)
    np.testing.assert_array_equal(
        released.predict(X[["age", "income"]]), pipe.predict(X[["age", "income"]])
    )
    with pytest.warns(PrivacyLeakWarning, match="public_prefix=True"):
        release(pipe)


def test_a_nested_pipeline_releases_its_last_step(data):
    X, y = data
    X = X[["age", "income"]]
    inner = make_pipeline(PolynomialFeatures(2), _model())
    pipe = make_pipeline(StandardScaler(), inner).fit(X, y)
    with pytest.warns(
        PrivacyLeakWarning, match="'standardscaler', 'polynomialfeatures'"
    ):
        released = release(pipe)
    assert isinstance(released[-1], Pipeline)
    assert not hasattr(released[-1][-1], "privacy_report_")
    np.testing.assert_array_equal(released.predict(X), pipe.predict(X))


def test_what_cannot_be_released_raises(data, pipe):
    X, y = data
    X = X[["age", "income"]]
    with pytest.raises(TypeError, match="Cannot release model, a LogisticRegression"):
        release(LogisticRegression().fit(X, y))
    with pytest.raises(TypeError, match="its last step 'logisticregression'"):
        release(make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y))
    search = GridSearchCV(_model(), {"lam": [0.1, 1.0]}, cv=2).fit(X, y)
    with pytest.raises(TypeError, match="release its best_estimator_"):
        release(search)
    with pytest.raises(TypeError, match="public_prefix must be True or False"):
        release(pipe, public_prefix="yes")
    with pytest.raises(NotFittedError):
        release(make_pipeline(StandardScaler(), _model()))
