# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

"""The output-perturbed estimators fitted on a row-chunked Dask array.

The NumPy fit of the same data is the reference: every fitted number must equal
it to 1e-12 relative (only the order of the floating-point sums differs), the
report computed from its lazy Dask DataFrame included. One test runs on a
two-process LocalCluster, as the data would be spread over workers; one checks
the exact leave-one-out column against refits by brute force.
"""

import functools

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
dask = pytest.importorskip("dask")
pytest.importorskip("pyarrow")

from sklearn_fil import (  # noqa: E402
    IRFILClassifier,
    OutputPerturbedLinearRegression,
    OutputPerturbedLogisticRegression,
)
from sklearn_fil.exceptions import ClippingWarning  # noqa: E402
from sklearn_fil.report_io import (  # noqa: E402
    read_privacy_report,
    write_privacy_report,
)
from tests._cluster import local_cluster  # noqa: E402

RTOL = 1e-12
# per_instance_gaussian_epsilon solves for ε to about 1e-15 absolute near ε = 0
# (its own rounding): the ε columns can agree no closer there
EPSILON_ATOL = 1e-14
# uneven blocks, one of 3 rows, summing to N
CHUNKS = (40, 3, 90, 70)
N = sum(CHUNKS)
# columns 2, 3, 4 are a 3-level one-hot group
GROUP = {"g": [2, 3, 4]}


@functools.cache
def _data(loss, onehot=True, seed=0):
    """X, y and weights (three of them 0); columns 2-4 one-hot if ``onehot``."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, 6))
    levels = np.eye(3)[rng.integers(0, 3, N)]
    if onehot:
        X[:, 2:5] = levels
    margin = X @ [0.8, -1.2, 0.5, -0.3, 0.1, 0.6] + 0.2
    if loss == "squared":
        y = margin + rng.normal(size=N)
    else:
        y = np.where(rng.uniform(size=N) < 1.0 / (1.0 + np.exp(-margin)), "b", "a")
    weights = rng.uniform(0.2, 3.0, N)
    weights[[5, 50, 100]] = 0.0
    return X, y, weights


def _fit_both(estimator, X, y, weights=None, dask_vectors=False, reference=None):
    """``(NumPy fit, Dask fit)`` of clones of ``estimator``.

    ``reference`` (default ``estimator``) is the one fitted on NumPy.
    """
    reference = estimator if reference is None else reference
    numpy_fit = clone(reference).fit(X, y, sample_weight=weights)
    Xd = da.from_array(X, chunks=(CHUNKS, -1))
    if dask_vectors:  # chunked differently from X: the fit aligns them
        y = da.from_array(y, chunks=60)
        weights = None if weights is None else da.from_array(weights, chunks=70)
    dask_fit = clone(estimator).fit(Xd, y, sample_weight=weights)
    return numpy_fit, dask_fit


def _assert_close(actual, desired, err_msg="", atol=0.0):
    """Equal to ``RTOL`` relative, or ``RTOL`` of the largest entry.

    A per-example FIL far below its column's largest comes from terms that
    cancel: the 1e-16 by which the two fits' weights differ (the order of
    their sums) then moves it by more than 1e-12 of itself.
    """
    actual, desired = np.asarray(actual, float), np.asarray(desired, float)
    finite = np.isfinite(desired)
    assert_array_equal(np.isfinite(actual), finite, err_msg=err_msg)
    assert_array_equal(actual[~finite], desired[~finite], err_msg=err_msg)
    if finite.any():
        atol = max(atol, RTOL * np.abs(desired[finite]).max())
    assert_allclose(
        actual[finite], desired[finite], rtol=RTOL, atol=atol, err_msg=err_msg
    )


def assert_equal_fits(dask_fit, numpy_fit):
    report = dask_fit.privacy_report_
    assert isinstance(report, dd.DataFrame)
    ref = numpy_fit.privacy_report_
    assert list(report.columns) == list(ref.columns)
    assert list(report.dtypes) == list(ref.dtypes)
    computed = report.compute()
    assert isinstance(computed, pd.DataFrame)
    assert computed.index.name == ref.index.name == "sample"
    assert_array_equal(computed.index, ref.index)
    for column in ref.columns:
        atol = EPSILON_ATOL if column.startswith("epsilon") else 0.0
        _assert_close(computed[column], ref[column], err_msg=column, atol=atol)
    for name in ("coef_", "intercept_", "dataset_fil_", "sigma_"):
        _assert_close(getattr(dask_fit, name), getattr(numpy_fit, name), name)
    for name in ("attribute_fil_", "attribute_fil_sd_"):
        actual, desired = getattr(dask_fit, name), getattr(numpy_fit, name)
        assert list(actual.index) == list(desired.index)
        assert actual.name == desired.name
        _assert_close(actual, desired, err_msg=name)
    g, g_ref = dask_fit.guarantee_, numpy_fit.guarantee_
    assert (g.epsilon is None) == (g_ref.epsilon is None)
    if g_ref.epsilon is not None:
        for name in ("epsilon", "delta", "sensitivity", "noise_std"):
            _assert_close(getattr(g, name), getattr(g_ref, name), err_msg=name)
    assert g.reason == g_ref.reason
    assert dask_fit.n_iter_ == numpy_fit.n_iter_
    assert dask_fit.n_features_in_ == numpy_fit.n_features_in_
    assert not hasattr(dask_fit, "feature_names_in_")
    assert dask_fit._weighted == numpy_fit._weighted
    if hasattr(numpy_fit, "classes_"):
        assert_array_equal(dask_fit.classes_, numpy_fit.classes_)
    if hasattr(numpy_fit, "n_clipped_"):
        assert dask_fit.n_clipped_ == numpy_fit.n_clipped_
    attrs, attrs_ref = report.attrs, ref.attrs
    # the partitions carry them too
    assert computed.attrs == attrs
    assert attrs.keys() == attrs_ref.keys()
    for key in attrs:
        if key == "dataset_fil":
            _assert_close(attrs[key], attrs_ref[key])
        elif key == "estimator_params":
            # the reference of a logistic fit reports the bound by setting
            expected = attrs_ref[key] | {
                k: v for k, v in attrs[key].items() if k == "per_instance_accounting"
            }
            assert attrs[key] == expected
        else:
            assert attrs[key] == attrs_ref[key], key


@pytest.mark.parametrize(
    "params, weighted, dask_vectors",
    [
        ({}, False, False),
        ({"fit_intercept": False, "lam": 0.05}, True, True),
        ({"onehot_groups": GROUP, "lam": 0.02, "private_label": False}, True, False),
    ],
)
def test_linear_regression_equals_numpy(params, weighted, dask_vectors):
    X, y, weights = _data("squared", onehot="onehot_groups" in params)
    estimator = OutputPerturbedLinearRegression(sigma=0.3, random_state=0, **params)
    with dask.config.set(scheduler="synchronous"):
        numpy_fit, dask_fit = _fit_both(
            estimator, X, y, weights if weighted else None, dask_vectors
        )
        assert "loo_sensitivity" in dask_fit.privacy_report_.columns
        assert_equal_fits(dask_fit, numpy_fit)


@pytest.mark.parametrize(
    "params, weighted, dask_vectors",
    [
        ({}, False, True),
        # the DP guarantee, with public weights
        (
            {
                "fit_intercept": False,
                "data_norm": 2.5,
                "public_sample_weight": True,
                "lam": 0.05,
            },
            True,
            True,
        ),
        (
            {
                "onehot_groups": GROUP,
                "data_norm": 2.5,
                "penalize_intercept": True,
                "target_epsilon": 2.0,
            },
            False,
            False,
        ),
        ({"onehot_groups": GROUP, "lam": 0.02}, True, False),
    ],
)
def test_logistic_regression_equals_numpy(params, weighted, dask_vectors):
    X, y, weights = _data("logistic")
    estimator = OutputPerturbedLogisticRegression(sigma=0.3, random_state=0, **params)
    # on Dask the report holds the strong-convexity bound (see the docstring)
    reference = clone(estimator).set_params(per_instance_accounting=False)
    with dask.config.set(scheduler="synchronous"):
        numpy_fit, dask_fit = _fit_both(
            estimator, X, y, weights if weighted else None, dask_vectors, reference
        )
        assert "loo_sensitivity_bound" in dask_fit.privacy_report_.columns
        assert_equal_fits(dask_fit, numpy_fit)
    if "data_norm" in params:
        assert dask_fit.epsilon_ is not None
        assert dask_fit.n_clipped_ > 0


def test_loo_sensitivity_against_refits():
    """Independent of both paths: refit without the example, by lstsq."""
    X, y, weights = _data("squared")
    lam = 0.05
    Xd = da.from_array(X, chunks=(CHUNKS, -1))
    with dask.config.set(scheduler="synchronous"):
        reg = OutputPerturbedLinearRegression(lam=lam, random_state=0)
        report = reg.fit(Xd, y, sample_weight=weights).privacy_report_.compute()
    Xt = np.column_stack([X, np.ones(N)])
    reg_diag = np.full(Xt.shape[1], lam * weights.sum() / weights.max())
    reg_diag[-1] = 0.0  # the intercept is not penalised

    def minimiser(omega):
        A = Xt.T @ (omega[:, None] * Xt) + np.diag(reg_diag)
        return np.linalg.solve(A, Xt.T @ (omega * y))

    omega = weights / weights.max()
    w = minimiser(omega)
    for i in (0, 44, 5, 200):  # 5 has weight 0: Delta = 0
        removed = omega.copy()
        removed[i] = 0.0
        expected = np.linalg.norm(w - minimiser(removed))
        assert_allclose(
            report["loo_sensitivity"].iloc[i], expected, rtol=1e-8, atol=1e-15
        )


def test_clipping_warns_as_in_memory():
    X, y, _ = _data("logistic")
    estimator = OutputPerturbedLogisticRegression(data_norm=0.5, random_state=0)
    with pytest.warns(ClippingWarning, match="clipped") as record_numpy:
        clone(estimator).fit(X, y)
    with dask.config.set(scheduler="synchronous"):
        with pytest.warns(ClippingWarning, match="median norm about") as record:
            clone(estimator).fit(da.from_array(X, chunks=(CHUNKS, -1)), y)
    assert record[0].filename == record_numpy[0].filename == __file__


# dask's Parquet I/O calls a pandas method that pandas 3.1 deprecates
PARQUET_WARNINGS = pytest.mark.filterwarnings("ignore:The inplace keyword")


@PARQUET_WARNINGS
def test_report_to_parquet_round_trip(tmp_path):
    X, y, weights = _data("squared", onehot=False)
    with dask.config.set(scheduler="synchronous"):
        reg = OutputPerturbedLinearRegression(random_state=0).fit(
            da.from_array(X, chunks=(CHUNKS, -1)), y, sample_weight=weights
        )
        report = reg.privacy_report_
        assert report.npartitions == len(CHUNKS)
        report.to_parquet(tmp_path / "report")
        back = dd.read_parquet(tmp_path / "report").compute()
        pd.testing.assert_frame_equal(back, report.compute(), check_index_type="equiv")
    # the report's context is written along, and read back by pandas
    in_pandas = pd.read_parquet(tmp_path / "report")
    assert in_pandas.attrs == back.attrs == report.attrs
    assert report.attrs["n"] == N
    assert report.attrs["estimator"] == "OutputPerturbedLinearRegression"


def test_write_privacy_report_of_a_dask_fit(tmp_path):
    """One CSV written partition by partition, read back as the NumPy fit's."""
    X, y, weights = _data("logistic")
    est = OutputPerturbedLogisticRegression(
        data_norm=4.0, onehot_groups=GROUP, random_state=0
    )
    # the Dask fit reports the leave-one-out bound, as this one
    bound = clone(est).set_params(per_instance_accounting=False)
    numpy_fit, dask_fit = _fit_both(est, X, y, weights, reference=bound)
    with dask.config.set(scheduler="synchronous"):
        csv, _ = write_privacy_report(dask_fit, tmp_path / "dask.csv")
    write_privacy_report(numpy_fit, tmp_path / "numpy.csv")
    back = read_privacy_report(csv)
    expected = read_privacy_report(tmp_path / "numpy.csv")
    assert back.shape == (N, numpy_fit.privacy_report_.shape[1])
    assert list(back.columns) == list(expected.columns)
    assert back.index.name == "sample"
    for column in back.columns:
        _assert_close(back[column], expected[column], column, atol=EPSILON_ATOL)
    assert back.attrs == dask_fit.privacy_report_.attrs
    assert back.attrs["n"] == N and back.attrs["epsilon"] == expected.attrs["epsilon"]


def _poisoned(X, chunks=(CHUNKS, -1)):
    """A Dask array whose every block raises when computed: no pass may run."""

    def explode(block):
        raise AssertionError("a pass over the data ran")

    return da.from_array(X, chunks=chunks).map_blocks(explode, dtype=np.float64)


@pytest.mark.parametrize(
    "estimator, X, error, match",
    [
        (IRFILClassifier(), None, TypeError, "does not take Dask arrays"),
        (
            OutputPerturbedLinearRegression(onehot_groups="auto"),
            None,
            ValueError,
            "give the groups as a dict",
        ),
        (
            OutputPerturbedLogisticRegression(per_instance_accounting=True),
            None,
            ValueError,
            "per_instance_accounting=True",
        ),
        (
            OutputPerturbedLinearRegression(),
            "sparse",
            TypeError,
            "scipy sparse blocks",
        ),
        (OutputPerturbedLinearRegression(), "frame", TypeError, "to_dask_array"),
        (
            OutputPerturbedLinearRegression(),
            "columns",
            ValueError,
            "chunked by rows only",
        ),
        (
            OutputPerturbedLogisticRegression(data_norm=1.0, onehot_groups=GROUP),
            None,
            ValueError,
            "leaves no norm",
        ),
    ],
)
def test_refused_before_any_pass(estimator, X, error, match):
    import scipy.sparse as sp

    Xn, y, _ = _data("squared")
    y = (y > 0).astype(float)
    if X is None:
        X = _poisoned(Xn)
    elif X == "sparse":
        X = da.from_array(Xn, chunks=(CHUNKS, -1)).map_blocks(
            sp.csr_matrix, meta=sp.csr_matrix((0, 0))
        )
    elif X == "frame":
        X = dd.from_dask_array(_poisoned(Xn))
    elif X == "columns":
        X = _poisoned(Xn, chunks=(CHUNKS, 3))
    with pytest.raises(error, match=match):
        estimator.fit(X, y)
    assert not hasattr(estimator, "coef_")


def _numpy_and_dask_errors(estimator, X, y, weights=None):
    errors = []
    with dask.config.set(scheduler="synchronous"):
        for data in (X, da.from_array(X, chunks=(CHUNKS, -1))):
            with pytest.raises(ValueError) as info:
                clone(estimator).fit(data, y, sample_weight=weights)
            errors.append(str(info.value))
    return errors


@pytest.mark.parametrize(
    "case",
    [
        "nan_X",
        "inf_X",
        "nan_y",
        "negative_weight",
        "nan_weight",
        "zero_weights",
        "one_class",
        "continuous_labels",
        "onehot_values",
        "overflow",
    ],
)
def test_bad_values_raise_the_numpy_errors(case):
    X, y, weights = _data("squared")
    X, y, weights = X.copy(), y.copy(), None
    estimator = OutputPerturbedLinearRegression()
    labels = np.where(y > 0, 1, 0)
    if case == "nan_X":
        X[77, 1] = np.nan
    elif case == "inf_X":
        X[150, 0] = np.inf
    elif case == "nan_y":
        y[120] = np.nan
    elif case == "negative_weight":
        weights = np.ones(N)
        weights[130] = -1.0
    elif case == "nan_weight":
        weights = np.ones(N)
        weights[60] = np.nan
    elif case == "zero_weights":
        weights = np.zeros(N)
    elif case == "overflow":
        X[10, 0] = 1e160
    else:
        estimator = OutputPerturbedLogisticRegression()
        y = labels
        if case == "one_class":
            y = np.zeros(N)
        elif case == "continuous_labels":
            y = labels + 0.5 * (np.arange(N) == 180)
        elif case == "onehot_values":
            estimator.set_params(onehot_groups=GROUP)
            X[140, 2:5] = [1.0, 1.0, 0.0]
    numpy_error, dask_error = _numpy_and_dask_errors(estimator, X, y, weights)
    assert dask_error == numpy_error


@PARQUET_WARNINGS
def test_local_cluster_equals_numpy(tmp_path):
    """Two worker processes on 127.0.0.1, as CI runs it."""
    X, y, weights = _data("logistic")
    estimator = OutputPerturbedLogisticRegression(
        sigma=0.3,
        data_norm=2.5,
        penalize_intercept=True,
        public_sample_weight=True,
        onehot_groups=GROUP,
        random_state=0,
    )
    reference = clone(estimator).set_params(per_instance_accounting=False)
    linear = OutputPerturbedLinearRegression(sigma=0.3, lam=0.01, random_state=0)
    y_linear = _data("squared")[1]
    with local_cluster():
        numpy_fit, dask_fit = _fit_both(estimator, X, y, weights, True, reference)
        assert_equal_fits(dask_fit, numpy_fit)
        numpy_fit, dask_fit = _fit_both(linear, X, y_linear, weights, True)
        assert_equal_fits(dask_fit, numpy_fit)
        # the workers write the partitions
        dask_fit.privacy_report_.to_parquet(tmp_path / "report")
        back = dd.read_parquet(tmp_path / "report").compute()
    pd.testing.assert_frame_equal(
        back, numpy_fit.privacy_report_, rtol=RTOL, check_index_type="equiv"
    )


def test_release_and_predict_after_a_dask_fit():
    X, y, _ = _data("logistic")
    with dask.config.set(scheduler="synchronous"):
        clf = OutputPerturbedLogisticRegression(random_state=0).fit(
            da.from_array(X, chunks=(CHUNKS, -1)), y
        )
    released = clf.release()
    assert not hasattr(released, "privacy_report_")
    assert_array_equal(released.predict(X), clf.predict(X))
    assert set(clf.predict(X)) <= {"a", "b"}


@pytest.mark.parametrize("with_label", [True, False])
def test_variances_with_a_block_of_zero_weights(with_label):
    """The tree merge of the blocks' moments, against np.average directly."""
    from sklearn_fil._report import attribute_variances

    X, y, weights = _data("squared")
    weights = weights.copy()
    weights[40:43] = 0.0  # the whole 3-row block
    attributes = [(0,), (2, 3, 4)] + (["label"] * with_label)
    with dask.config.set(scheduler="synchronous"):
        variance = attribute_variances(
            da.from_array(X, chunks=(CHUNKS, -1)),
            da.from_array(y, chunks=60) if with_label else None,
            attributes,
            da.from_array(weights, chunks=(CHUNKS,)),
        )

    def var(v):
        return np.average((v - np.average(v, weights=weights)) ** 2, weights=weights)

    expected = [var(X[:, 0]), sum(var(X[:, j]) for j in (2, 3, 4))]
    expected += [var(y)] * with_label
    assert_allclose(variance, expected, rtol=1e-13)


def test_weight_stats_of_other_dask_weights():
    """Weights the first pass did not summarise take one pass of their own."""
    reg = OutputPerturbedLinearRegression()
    with dask.config.set(scheduler="synchronous"):
        stats = reg._weight_stats(da.from_array(np.array([0.5, 1.0, 0.0]), chunks=2))
        assert stats == (3, 1.5, False)
        assert reg._weight_stats(da.ones(4, chunks=3)) == (4, 4.0, True)
