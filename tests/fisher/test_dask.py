# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

"""The FIL engine on a row-chunked Dask array.

The Dask path reduces the sums over examples in a tree of blocks and maps the
per-example pass over them: every number must equal the NumPy path's to 1e-12
relative (only the order of the floating-point sums differs), and the brute-force
reference of tests/_reference.py to the engine's own 1e-8. One test runs on a
two-process LocalCluster, as the data would be spread over workers.
"""

import functools

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

from sklearn_fil._glm import fit_glm  # noqa: E402
from sklearn_fil.exceptions import NotAMinimiserWarning  # noqa: E402
from sklearn_fil.fisher import fisher_information_loss  # noqa: E402
from tests._cluster import local_cluster  # noqa: E402
from tests._reference import brute_force_fil, make_problem  # noqa: E402

RTOL = 1e-12
PER_EXAMPLE = ["fil", "dfil", "mse_bound", "attribute_fil"]
TOTALS = ["total_attribute_fil", "dataset_fil"]


@functools.cache
def _problem(loss, fit_intercept, weights, onehot):
    return make_problem(
        loss,
        n=203,
        d=8 if onehot else 5,
        fit_intercept=fit_intercept,
        lam=0.05,
        weights=weights,
        onehot=onehot,
        seed=3 if loss == "squared" else 4,
    )


def _kwargs(problem, **extra):
    return {
        "loss": problem["loss"],
        "lam": problem["lam"],
        "sample_weight": problem["sample_weight"],
        "onehot_groups": problem["onehot_groups"],
        "sigma": 0.7,
    } | extra


def _dask_inputs(problem, chunks, dask_vectors, kw):
    """X as a Dask array; y, sample_weight and groups Dask or NumPy."""
    Xd = da.from_array(problem["X"], chunks=(chunks, -1))
    y = problem["y"]
    if dask_vectors:
        # chunked differently from X: the engine aligns them
        y = da.from_array(y, chunks=50)
        for key in ("sample_weight", "groups"):
            if kw.get(key) is not None:
                kw[key] = da.from_array(kw[key], chunks=70)
    return Xd, y, kw


def _computed(res):
    """The report's per-example fields computed together (one pass)."""
    values = dask.compute(*(getattr(res, name) for name in PER_EXAMPLE))
    return dict(zip(PER_EXAMPLE, values, strict=True))


def assert_equal_reports(res_dask, ref, rtol=RTOL):
    computed = _computed(res_dask)
    for name in PER_EXAMPLE:
        actual, desired = computed[name], getattr(ref, name)
        assert isinstance(actual, np.ndarray)
        assert actual.shape == desired.shape, name
        finite = np.isfinite(desired)
        assert_array_equal(np.isfinite(actual), finite, err_msg=name)
        assert_array_equal(actual[~finite], desired[~finite], err_msg=name)
        assert_allclose(actual[finite], desired[finite], rtol=rtol, atol=0)
    for name in TOTALS:
        assert_allclose(getattr(res_dask, name), getattr(ref, name), rtol=rtol, atol=0)
    assert res_dask.attributes == ref.attributes
    assert res_dask.n_private == ref.n_private
    if ref.group_fil is None:
        assert res_dask.group_fil is None
    else:
        assert list(res_dask.group_fil) == list(ref.group_fil)
        for g, value in ref.group_fil.items():
            assert_allclose(res_dask.group_fil[g], value, rtol=rtol, atol=0)


CASES = [
    # loss, fit_intercept, weights, onehot, private_label, groups, dask_vectors
    ("squared", True, None, False, True, False, False),
    ("squared", False, "random", False, False, True, True),
    ("squared", True, "zeros", True, True, True, False),
    ("logistic", True, None, False, True, True, True),
    ("logistic", False, "random", True, False, False, False),
    ("logistic", True, "zeros", True, True, True, True),
]


@pytest.mark.parametrize(
    "loss, fit_intercept, weights, onehot, private_label, groups, dask_vectors", CASES
)
def test_dask_equals_numpy(
    loss, fit_intercept, weights, onehot, private_label, groups, dask_vectors
):
    problem = _problem(loss, fit_intercept, weights, onehot)
    n = problem["X"].shape[0]
    group_labels = np.arange(n) % 4 if groups else None
    kw = _kwargs(problem, private_label=private_label, groups=group_labels)
    args = (problem["X"], problem["y"], problem["coef"], problem["intercept"])
    ref = fisher_information_loss(*args, **kw)
    # uneven blocks, some smaller than the engine's chunk and some larger
    Xd, y, kw_d = _dask_inputs(problem, (40, 3, 90, 70), dask_vectors, dict(kw))
    with dask.config.set(scheduler="synchronous"):
        res = fisher_information_loss(
            Xd, y, problem["coef"], problem["intercept"], chunk_size=32, **kw_d
        )
        assert all(isinstance(getattr(res, name), da.Array) for name in PER_EXAMPLE)
        assert_equal_reports(res, ref)


def test_dask_against_brute_force():
    """Independent of the NumPy path: the materialised Jacobians."""
    problem = _problem("logistic", True, "random", True)
    groups = np.arange(problem["X"].shape[0]) % 3
    kw = _kwargs(problem, groups=groups)
    ref = brute_force_fil(
        problem["X"], problem["y"], problem["coef"], problem["intercept"], **kw
    )
    Xd = da.from_array(problem["X"], chunks=(64, -1))
    with dask.config.set(scheduler="synchronous"):
        res = fisher_information_loss(
            Xd, problem["y"], problem["coef"], problem["intercept"], **kw
        )
        computed = _computed(res)
    for name in PER_EXAMPLE:
        assert_allclose(computed[name], ref[name], rtol=1e-8)
    for name in TOTALS:
        assert_allclose(getattr(res, name), ref[name], rtol=1e-8)
    for g in ref["group_fil"]:
        assert_allclose(res.group_fil[g], ref["group_fil"][g], rtol=1e-8)


def test_per_example_pass_runs_once_when_computed_together():
    """The fields slice one mapped array: computing them together maps once."""
    problem = _problem("squared", True, None, False)
    Xd = da.from_array(problem["X"], chunks=(50, -1))
    with dask.config.set(scheduler="synchronous"):
        res = fisher_information_loss(
            Xd, problem["y"], problem["coef"], problem["intercept"], lam=0.05
        )
    mapped = set()
    for name in PER_EXAMPLE:
        graph = dict(getattr(res, name).__dask_graph__())
        mapped |= {key for key in graph if "block_report" in str(key)}
    assert len(mapped) == Xd.numblocks[0]


def test_not_a_minimiser_warns():
    problem = _problem("squared", True, None, False)
    Xd = da.from_array(problem["X"], chunks=(50, -1))
    with dask.config.set(scheduler="synchronous"):
        with pytest.warns(NotAMinimiserWarning, match="not a minimiser") as record:
            fisher_information_loss(Xd, problem["y"], problem["coef"] + 0.1, lam=0.05)
    # attributed to the caller, as on the NumPy path
    assert record[0].filename == __file__


def _bad(X, y, **kw):
    with dask.config.set(scheduler="synchronous"):
        fisher_information_loss(X, y, np.zeros(X.shape[-1]), **kw)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda X: da.from_array(X, chunks=(50, 2)), r"chunked by rows only.*rechunk"),
        (lambda X: da.from_array(X[:, 0], chunks=50), "2-dimensional"),
        (lambda X: da.from_array(X[:1], chunks=50), "at least 2 samples"),
        (lambda X: da.from_array(X.astype(complex), chunks=(50, -1)), "real numbers"),
    ],
)
def test_bad_dask_arrays(make, match):
    X = np.random.default_rng(0).normal(size=(100, 3))
    with pytest.raises(ValueError, match=match):
        _bad(make(X), np.zeros(len(make(X))))


def test_unknown_chunks():
    X = da.from_array(np.random.default_rng(0).normal(size=(100, 3)), chunks=(30, -1))
    X = X[X[:, 0] > 0]
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        _bad(X, np.zeros(3))


def test_bad_values_raise_from_the_first_pass():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 3))
    y = (rng.uniform(size=100) < 0.5).astype(float)
    X_nan = X.copy()
    X_nan[77, 1] = np.nan
    chunks = (30, -1)
    with pytest.raises(ValueError, match="NaN"):
        _bad(da.from_array(X_nan, chunks=chunks), y)
    with pytest.raises(ValueError, match=r"labels in \{0, 1\}"):
        _bad(da.from_array(X, chunks=chunks), y + 2.0, loss="logistic")
    with pytest.raises(ValueError, match="non-negative"):
        _bad(da.from_array(X, chunks=chunks), y, sample_weight=-np.ones(100))
    with pytest.raises(ValueError, match="one-hot"):
        _bad(da.from_array(X, chunks=chunks), y, onehot_groups=[[0, 1]])
    with pytest.raises(ValueError, match="y has 99 entries"):
        _bad(da.from_array(X, chunks=chunks), y[:99])
    with pytest.raises(ValueError, match="singular"):
        _bad(da.from_array(np.zeros((100, 3)) + 1.0, chunks=chunks), y)


def test_local_cluster_equals_numpy():
    """Two worker processes on 127.0.0.1, as CI runs it."""
    problem = _problem("logistic", True, "random", True)
    groups = np.arange(problem["X"].shape[0]) % 3
    kw = _kwargs(problem, groups=groups)
    args = (problem["X"], problem["y"], problem["coef"], problem["intercept"])
    ref = fisher_information_loss(*args, **kw)
    with local_cluster():
        Xd = da.from_array(problem["X"], chunks=(60, -1))
        res = fisher_information_loss(Xd, *args[1:], **kw)
        assert_equal_reports(res, ref)


@pytest.mark.parametrize("loss", ["squared", "logistic"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_fit_glm_on_dask_equals_numpy(loss, fit_intercept):
    """Newton on tree-reduced Grams: the iterates of the in-memory fit."""
    problem = _problem(loss, True, "random", False)
    X, y, omega = problem["X"], problem["y"], problem["sample_weight"]
    args = (loss, 0.05, fit_intercept, False, 1e-10, 50)
    w, n_iter = fit_glm(X, y, omega, *args, gtol=1e-9)
    Xd = da.from_array(X, chunks=(45, -1))
    with dask.config.set(scheduler="synchronous"):
        w_d, n_iter_d = fit_glm(
            Xd, da.from_array(y, chunks=60), omega, *args, gtol=1e-9
        )
    assert n_iter_d == n_iter
    assert_allclose(w_d, w, rtol=RTOL, atol=0)
    # the minimiser: the gradient of the objective vanishes (independent check)
    Xt = np.column_stack([X, np.ones(len(X))]) if fit_intercept else X
    reg = np.full(Xt.shape[1], 0.05 * omega.sum())
    if fit_intercept:
        reg[-1] = 0.0
    m = Xt @ w_d
    r = m - y if loss == "squared" else 1.0 / (1.0 + np.exp(-m)) - y
    assert np.linalg.norm(Xt.T @ (omega * r) + reg * w_d) < 1e-8


def test_fit_glm_on_dask_with_warm_start_equals_numpy():
    """Enough rows for the subsample warm start and chord steps of the fit."""
    from sklearn_fil._glm import WARM_START_ROWS

    rng = np.random.default_rng(5)
    n, d = 4 * WARM_START_ROWS, 4
    X = rng.normal(size=(n, d))
    y = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-X @ [1.0, -1.0, 0.5, 0.0]))) * 1.0
    omega = np.ones(n)
    args = ("logistic", 1e-3, True, False, 1e-10, 50)
    w, n_iter = fit_glm(X, y, omega, *args)
    with dask.config.set(scheduler="synchronous"):
        w_d, n_iter_d = fit_glm(
            da.from_array(X, chunks=(n // 4, -1)),
            da.from_array(y, chunks=n // 4),
            omega,
            *args,
        )
    assert n_iter_d == n_iter
    assert_allclose(w_d, w, rtol=RTOL, atol=0)
