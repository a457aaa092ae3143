# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""A Pipeline's privacy numbers read in the user's original columns.

``report_io.attribute_fil`` and ``report_io.privacy_report`` name the final
step's attributes by the raw columns they came from. The transformed columns
of each raw column are looked up here from scikit-learn's own
``get_feature_names_out``, never from the map under test.
"""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.compose import ColumnTransformer
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import OneHotEncoder, PolynomialFeatures, StandardScaler

from sklearn_fil import OutputPerturbedLogisticRegression, release
from sklearn_fil.report_io import attribute_fil, privacy_report
from sklearn_fil.utils._pipeline import transform_dense
from tests._compas import CATEGORICAL, NUMERIC, compas, compas_columns

LABEL = "two_year_recid"
ORIGINAL = [*CATEGORICAL, *NUMERIC, LABEL]


def _glm(**params):
    defaults = dict(
        sigma=0.5,
        lam=0.05,
        data_norm=4.0,
        penalize_intercept=True,
        onehot_groups="auto",
        random_state=0,
    )
    return OutputPerturbedLogisticRegression(**{**defaults, **params})


def _data():
    X, y = compas()
    return X, pd.Series(y, name=LABEL)


def _fit(columns, **params):
    X, y = _data()
    return Pipeline([("ct", columns), ("clf", _glm(**params))]).fit(X, y)


def _transformed(pipe, column):
    """Indices of the prefix's output columns that ``column`` became."""
    names = list(pipe[:-1].get_feature_names_out())
    if column in NUMERIC:
        return [names.index(f"scale__{column}")]
    return [j for j, name in enumerate(names) if name.startswith(f"onehot__{column}_")]


def _key(pipe, cols):
    """The final step's name of the attribute on columns ``cols``."""
    names = getattr(pipe[-1], "feature_names_in_", None)
    names = [f"x{j}" for j in cols] if names is None else [names[j] for j in cols]
    return "|".join(names)


@pytest.fixture(scope="module")
def dense():
    return _fit(compas_columns())


def test_one_fil_per_original_column(dense):
    fil = attribute_fil(dense)
    assert fil.index.tolist() == ORIGINAL
    assert fil.name == dense[-1].attribute_fil_.name
    for column in ORIGINAL[:-1]:
        key = _key(dense, _transformed(dense, column))
        assert fil[column] == dense[-1].attribute_fil_[key]
    assert fil[LABEL] == dense[-1].attribute_fil_[LABEL]
    sd = attribute_fil(dense, sd=True)
    assert sd.index.tolist() == ORIGINAL
    assert_array_equal(sd.to_numpy(), dense[-1].attribute_fil_sd_.to_numpy())
    # the guarantee of the final step holds (intercept penalised, rows clipped)
    assert np.isfinite(dense[-1].epsilon_) and dense[-1].epsilon_ > 0


def test_equals_a_fit_on_the_transformed_rows_by_hand(dense):
    # the final step fitted by hand on the prefix's output, its one-hot groups
    # named after the raw columns from scikit-learn's own output names
    X, y = _data()
    names = list(dense[:-1].get_feature_names_out())
    Xt = pd.DataFrame(transform_dense(dense[:-1], X), columns=names)
    Xt = Xt.rename(columns={f"scale__{c}": c for c in NUMERIC})
    groups = {c: [names[j] for j in _transformed(dense, c)] for c in CATEGORICAL}
    by_hand = _glm(onehot_groups=groups).fit(Xt, y)
    fil = attribute_fil(dense)
    assert_allclose(fil[ORIGINAL], by_hand.attribute_fil_[ORIGINAL], rtol=1e-12)
    report = privacy_report(dense)
    columns = [f"fil[{c}]" for c in ORIGINAL]
    assert_allclose(report[columns], by_hand.privacy_report_[columns], rtol=1e-12)
    assert by_hand.epsilon_ == pytest.approx(dense[-1].epsilon_, rel=1e-12)


def test_privacy_report_renames_only_the_attribute_columns(dense):
    original = dense[-1].privacy_report_
    report = privacy_report(dense)
    renames = {}
    for column in ORIGINAL[:-1]:
        renames[f"fil[{_key(dense, _transformed(dense, column))}]"] = f"fil[{column}]"
    expected = original.rename(columns=renames)
    assert [f"fil[{c}]" for c in ORIGINAL] == [
        c for c in report.columns if c.startswith("fil[")
    ]
    pd.testing.assert_frame_equal(report, expected)
    assert report.attrs == original.attrs
    assert report.attrs["epsilon"] == dense[-1].epsilon_
    # a copy: the model's report is untouched
    report.attrs["epsilon"] = None
    report.iloc[:, 0] = -1.0
    assert original.attrs["epsilon"] == dense[-1].epsilon_
    assert (original["fil"] >= 0).all()


def test_sparse_prefix_output_gives_the_same(dense):
    sparse = _fit(compas_columns().set_params(sparse_threshold=1.0))
    X, _ = _data()
    assert sp.issparse(sparse[:-1].transform(X))
    pd.testing.assert_series_equal(
        attribute_fil(sparse), attribute_fil(dense), check_exact=False, rtol=1e-10
    )
    assert_array_equal(privacy_report(sparse).columns, privacy_report(dense).columns)


def test_pandas_prefix_output_names_the_same(dense):
    columns = ColumnTransformer(
        [
            ("onehot", OneHotEncoder(sparse_output=False), CATEGORICAL),
            ("scale", StandardScaler(), NUMERIC),
        ]
    ).set_output(transform="pandas")
    pipe = _fit(columns)
    assert pipe[-1].feature_names_in_[0] == "onehot__sex_Female"
    pd.testing.assert_series_equal(
        attribute_fil(pipe), attribute_fil(dense), check_exact=False, rtol=1e-10
    )


def test_levels_measured_on_their_own():
    pipe = _fit(compas_columns(), onehot_groups=None)
    X, _ = _data()
    fil = attribute_fil(pipe)
    levels = [f"{c}={level}" for c in CATEGORICAL for level in np.sort(X[c].unique())]
    assert fil.index.tolist() == [*levels, *NUMERIC, LABEL]
    names = pipe[:-1].get_feature_names_out()
    for j, name in enumerate(names[: len(levels)]):
        column, level = levels[j].split("=")
        assert name == f"onehot__{column}_{level}"
        assert fil[levels[j]] == pipe[-1].attribute_fil_[f"x{j}"]


def test_a_prefix_that_keeps_its_columns():
    X, y = _data()
    pipe = make_pipeline(StandardScaler(), _glm()).fit(X[NUMERIC], y)
    assert_array_equal(pipe[:-1].get_feature_names_out(), NUMERIC)
    fil = attribute_fil(pipe)
    assert fil.index.tolist() == [*NUMERIC, LABEL]
    assert_array_equal(fil.to_numpy(), pipe[-1].attribute_fil_.to_numpy())


def test_unmapped_columns_keep_their_names():
    X, y = _data()
    poly = make_pipeline(
        PolynomialFeatures(degree=2, include_bias=False), StandardScaler()
    )
    pipe = make_pipeline(poly, _glm()).fit(X[NUMERIC], y)
    pd.testing.assert_series_equal(attribute_fil(pipe), pipe[-1].attribute_fil_)
    assert_array_equal(privacy_report(pipe).columns, pipe[-1].privacy_report_.columns)
    # in a ColumnTransformer: the one-hot groups named, the polynomial columns not
    columns = ColumnTransformer(
        [
            ("onehot", OneHotEncoder(), CATEGORICAL),
            ("poly", poly, NUMERIC),
        ]
    )
    pipe = Pipeline([("ct", columns), ("clf", _glm())]).fit(X, y)
    fil = attribute_fil(pipe)
    n_onehot = sum(X[c].nunique() for c in CATEGORICAL)
    unmapped = [f"x{j}" for j in range(n_onehot, n_onehot + 5)]
    assert fil.index.tolist() == [*CATEGORICAL, *unmapped, LABEL]
    assert_array_equal(fil.to_numpy(), pipe[-1].attribute_fil_.to_numpy())


def test_an_estimator_is_read_as_it_is(dense):
    clf = dense[-1]
    pd.testing.assert_series_equal(attribute_fil(clf), clf.attribute_fil_)
    pd.testing.assert_frame_equal(privacy_report(clf), clf.privacy_report_)
    assert privacy_report(clf) is not clf.privacy_report_


def test_clear_errors(dense):
    X, y = _data()
    with pytest.raises(ValueError, match="released copy"):
        attribute_fil(release(dense, public_prefix=True))
    with pytest.raises(ValueError, match="released copy"):
        privacy_report(dense[-1].release())
    with pytest.raises(NotFittedError):
        attribute_fil(make_pipeline(StandardScaler(), _glm()))
    with pytest.raises(TypeError, match="sd must be a bool"):
        attribute_fil(dense, sd="yes")
    # a raw column named as the label: two attributes would share a name
    X = X[NUMERIC].assign(**{LABEL: np.arange(len(y)) % 3})
    pipe = make_pipeline(StandardScaler(), _glm()).fit(X, y)
    for read in (attribute_fil, privacy_report):
        with pytest.raises(ValueError, match="same name twice"):
            read(pipe)
