# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

"""The released GLMs on sparse input: the dense fit's numbers, X never densified.

Every estimator is fitted on a dense array and on the same matrix as CSR: the
privacy report, the released weights and the guarantee agree to 1e-10
relative (the same arithmetic summed in another order; the dense numbers are
checked against brute force elsewhere). The sparse row operations are checked
against their dense twins, the leave-one-out sensitivities against
brute-force refits, and the memory with tracemalloc.
"""

import tracemalloc
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import sparse
from scipy.special import expit
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from sklearn_fil import (
    IRFILClassifier,
    IRFILRegressor,
    OutputPerturbedLinearRegression,
    OutputPerturbedLogisticRegression,
)
from sklearn_fil._glm import GLMProblem
from sklearn_fil._leave_one_out import _Problem, leave_one_out
from sklearn_fil.linear_model._output_perturbation import AUTO_EXACT_MAX_SAMPLES
from sklearn_fil.utils import _clipping, _sparse
from sklearn_fil.utils._onehot import detect_onehot_groups
from tests.linear_model.test_leave_one_out import brute_force

RTOL = 1e-10


def _data(n=120, seed=0):
    """Sparse numeric columns 0-2, a 3-level one-hot block 3-5, column 6 binary."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 7)) * (rng.uniform(size=(n, 7)) < 0.5)
    X[:, 3:6] = np.eye(3)[rng.integers(0, 3, n)]
    X[:, 6] = rng.integers(0, 2, n)
    margin = X @ rng.normal(size=7)
    y_reg = margin + 0.3 * rng.normal(size=n)
    y_clf = (rng.uniform(size=n) < expit(margin)).astype(int)
    weights = rng.uniform(0.2, 2.0, n)
    return X, y_reg, y_clf, weights


def _assert_same_fit(sparse_est, dense_est):
    report, expected = sparse_est.privacy_report_, dense_est.privacy_report_
    assert list(report.columns) == list(expected.columns)
    assert_allclose(report.to_numpy(), expected.to_numpy(), rtol=RTOL)
    assert_allclose(sparse_est.attribute_fil_, dense_est.attribute_fil_, rtol=RTOL)
    assert_allclose(sparse_est.dataset_fil_, dense_est.dataset_fil_, rtol=RTOL)
    # the same noise (random_state) on minimisers equal to rounding
    assert_allclose(sparse_est.coef_, dense_est.coef_, rtol=RTOL, atol=1e-13)
    assert_allclose(sparse_est.intercept_, dense_est.intercept_, rtol=RTOL)


CASES = [
    (OutputPerturbedLinearRegression(sigma=0.5, lam=0.1), "reg"),
    (OutputPerturbedLinearRegression(fit_intercept=False, private_label=False), "reg"),
    (OutputPerturbedLinearRegression(lam=0.1, onehot_groups={"c": [3, 4, 5]}), "reg"),
    (OutputPerturbedLogisticRegression(sigma=0.5, lam=0.05), "clf"),
    (
        OutputPerturbedLogisticRegression(fit_intercept=False, onehot_groups="auto"),
        "clf",
    ),
    (
        OutputPerturbedLogisticRegression(
            lam=0.05, data_norm=2.0, penalize_intercept=True, onehot_groups="auto"
        ),
        "clf",
    ),
    (
        OutputPerturbedLogisticRegression(
            lam=0.05, data_norm=2.5, fit_intercept=False, private_label=False
        ),
        "clf",
    ),
    (IRFILRegressor(lam=0.1, n_iter=3, tol=0.0), "reg"),
    (IRFILClassifier(lam=0.1, n_iter=3, tol=0.0, onehot_groups="auto"), "clf"),
]


# IRFIL sets its own weights: no sample_weight
WEIGHTED_CASES = [
    (est, task, weighted)
    for est, task in CASES
    for weighted in (False, True)
    if not (weighted and isinstance(est, IRFILRegressor | IRFILClassifier))
]


@pytest.mark.parametrize(
    "est, task, weighted",
    WEIGHTED_CASES,
    ids=[f"{est!r}"[:60] + ("-weighted" * w) for est, _, w in WEIGHTED_CASES],
)
def test_sparse_fit_matches_dense_fit(est, task, weighted):
    X, y_reg, y_clf, weights = _data()
    y = y_reg if task == "reg" else y_clf
    fit_kw = {"sample_weight": weights} if weighted else {}
    est = clone(est).set_params(random_state=0)
    dense = clone(est).fit(X, y, **fit_kw)
    for Xs in (sparse.csr_matrix(X), sparse.csc_array(X)):
        fitted = clone(est).fit(Xs, y, **fit_kw)
        _assert_same_fit(fitted, dense)
        assert_allclose(fitted.predict(Xs), dense.predict(X), rtol=RTOL)
    if getattr(est, "data_norm", None):
        assert fitted.n_clipped_ == dense.n_clipped_ > 0
        if not weighted:  # private weights: no guarantee
            assert_allclose(fitted.epsilon_, dense.epsilon_, rtol=RTOL)
    if est.onehot_groups == "auto":
        assert fitted._onehot_groups == dense._onehot_groups == {"x3|x4|x5": [3, 4, 5]}


def test_sparse_input_is_declared_in_the_tags():
    for est, _ in CASES:
        assert est.__sklearn_tags__().input_tags.sparse


def test_non_finite_sparse_input_is_refused():
    X, y_reg, _, _ = _data()
    Xs = sparse.csr_array(X)
    Xs.data[0] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        OutputPerturbedLinearRegression().fit(Xs, y_reg)


def _raw_frame(n=150, seed=0):
    import pandas as pd

    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "age": rng.normal(40, 10, n),
            "priors": rng.poisson(2, n).astype(float),
            "race": rng.choice(["A", "B", "C", "D"], n),
            "sex": rng.choice(["F", "M"], n),
        }
    )
    logit = 0.05 * (frame["age"] - 40) - 0.3 * frame["priors"] + (frame["sex"] == "M")
    y = (rng.uniform(size=n) < expit(logit)).astype(int)
    return frame, y


def test_pipeline_with_sparse_column_transformer_matches_dense_output():
    """OneHotEncoder + StandardScaler(with_mean=False), sparse or dense output."""
    frame, y = _raw_frame()

    def pipeline(sparse_threshold):
        prep = ColumnTransformer(
            [
                ("onehot", OneHotEncoder(), ["race", "sex"]),
                ("scale", StandardScaler(with_mean=False), ["age", "priors"]),
            ],
            sparse_threshold=sparse_threshold,
        )
        model = OutputPerturbedLogisticRegression(
            lam=0.05,
            data_norm=5.0,
            penalize_intercept=True,
            onehot_groups="auto",
            random_state=0,
        )
        return Pipeline([("prep", prep), ("model", model)])

    sparse_pipe = pipeline(1.0).fit(frame, y)
    dense_pipe = pipeline(0.0).fit(frame, y)
    assert sparse.issparse(sparse_pipe[:-1].transform(frame))
    assert not sparse.issparse(dense_pipe[:-1].transform(frame))
    _assert_same_fit(sparse_pipe[-1], dense_pipe[-1])
    # one FIL per original categorical column, found in the sparse output
    assert len(sparse_pipe[-1]._onehot_groups) == 2
    assert_allclose(sparse_pipe[-1].epsilon_, dense_pipe[-1].epsilon_, rtol=RTOL)
    assert_array_equal(sparse_pipe.predict(frame), dense_pipe.predict(frame))


# -- the sparse row operations against their dense twins -----------------------


def test_sparse_row_norms_and_clipping_match_the_dense_twins():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 6)) * (rng.uniform(size=(50, 6)) < 0.5)
    X[:, 4:6] = np.eye(2)[rng.integers(0, 2, 50)]
    X[0, :4] = 0.0  # no free entries
    X[1, :4] = [3e200, 0.0, 4e200, 0.0]  # squares overflow
    X[2, :4] = [3e-200, 0.0, 0.0, 4e-200]  # squares underflow
    X[3] = 0.0  # an empty row
    Xs = sparse.csr_array(X)
    assert_allclose(_sparse.row_norms(Xs), _clipping.row_norms(X), rtol=1e-15)
    X[3, 4] = 1.0
    X[1, :4] /= 1e200
    Xs = sparse.csr_array(X)
    for exempt in ([], [4, 5]):
        clipped, n_clipped = _clipping.clip_rows(Xs, 1.5, exempt=exempt)
        expected, n_expected = _clipping.clip_rows(X, 1.5, exempt=exempt)
        assert n_clipped == n_expected > 0
        assert_allclose(clipped.toarray(), expected, rtol=1e-15)
        assert_allclose(Xs.toarray(), X)  # the input is kept
    with pytest.raises(ValueError, match="same norm in every row"):
        _clipping.clip_rows(Xs, 1.5, exempt=[0])


def test_detect_onehot_groups_reads_sparse_columns():
    rng = np.random.default_rng(0)
    n = 40
    X = np.column_stack(
        [
            rng.normal(size=n),
            np.eye(3)[rng.integers(0, 3, n)],
            np.zeros(n),  # a level that never occurs joins its block
            rng.integers(0, 2, n),  # binary, alone: no group
            np.eye(2)[rng.integers(0, 2, n)],
        ]
    )
    expected = {"x1|x2|x3|x4": [1, 2, 3, 4], "x6|x7": [6, 7]}
    assert detect_onehot_groups(X) == expected
    assert detect_onehot_groups(sparse.csr_array(X)) == expected
    names = [f"f{j}" for j in range(8)]
    assert detect_onehot_groups(sparse.csr_matrix(X), names) == detect_onehot_groups(
        X, names
    )


# -- leave-one-out on sparse rows ------------------------------------------------


@pytest.mark.parametrize("loss", ["squared", "logistic"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_leave_one_out_on_sparse_rows_matches_brute_force(loss, fit_intercept):
    rng = np.random.default_rng(3)
    n, d = 40, 5
    X = rng.normal(size=(n, d)) * (rng.uniform(size=(n, d)) < 0.5)
    if loss == "squared":
        y = X @ rng.normal(size=d) + rng.normal(size=n)
    else:
        y = (rng.uniform(size=n) < expit(X @ rng.normal(size=d))).astype(float)
    omega = rng.uniform(0.2, 1.0, n)
    ref, w = brute_force(X, y, omega, loss, 0.05, fit_intercept, False)
    args = (y, w.astype(float), omega, loss, 0.05, fit_intercept, False)
    dense = leave_one_out(X, *args, return_shifts=True)
    res = leave_one_out(sparse.csr_array(X), *args, return_shifts=True)
    assert_allclose(res.sensitivity, ref, rtol=1e-8)
    assert_allclose(res.sensitivity, dense.sensitivity, rtol=RTOL)
    assert_allclose(res.shifts, dense.shifts, rtol=RTOL, atol=1e-14)


def test_leave_one_out_newton_path_on_sparse_rows(monkeypatch):
    """Far-apart minimisers finish with their own (sparse) Hessian."""
    rng = np.random.default_rng(0)
    n = 15
    X = 3.0 * rng.standard_normal((n, 3)) * (rng.uniform(size=(n, 3)) < 0.7)
    y = (rng.uniform(size=n) < 0.5).astype(float)
    omega = np.ones(n)
    calls = []
    newton = _Problem._newton

    def spy(self, U, idx, tol, max_iter):
        calls.append(len(idx))
        return newton(self, U, idx, tol, max_iter)

    monkeypatch.setattr(_Problem, "_newton", spy)
    ref, w = brute_force(X, y, omega, "logistic", 1e-3, True, False)
    res = leave_one_out(
        sparse.csr_array(X), y, w.astype(float), omega, "logistic", 1e-3, True, False
    )
    assert sum(calls) > 0
    assert_allclose(res.sensitivity, ref, rtol=1e-8)


def test_derivative_difference_on_sparse_rows_where_it_overflows():
    """The overflow-safe branch reads the sparse rows like the dense ones."""
    rng = np.random.default_rng(0)
    n = 30
    X = rng.standard_normal((n, 2)) * (rng.uniform(size=(n, 2)) < 0.7)
    m = np.r_[rng.normal(0, 5, n - 2), 800.0, -800.0]
    omega = rng.uniform(0.5, 1, n)
    U = np.array([[1e-9, -2e-9, 3e-9], [0.3, -0.2, 0.1], [0.0, 0.0, -800.0]])
    got = {}
    for name, Xa in (("dense", X), ("sparse", sparse.csr_array(X))):
        problem = _Problem(
            GLMProblem(
                family="logistic", lam=1.0, fit_intercept=True, X=Xa, omega=omega
            ),
            np.eye(3),
            np.zeros(3),
            m,
            expit(m),
            np.ones(n),
        )
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got[name] = problem._weighted_dpsi(U)
    assert_allclose(got["sparse"], got["dense"], rtol=1e-13, atol=1e-300)


# -- memory ------------------------------------------------------------------------


def _onehot_csr(n, levels, seed=0):
    """Two numeric columns then one-hot blocks, built as CSR without a dense copy."""
    rng = np.random.default_rng(seed)
    k = 2 + len(levels)
    offsets = np.cumsum([2, *levels])[:-1]
    codes = [
        off + rng.integers(0, m, n) for off, m in zip(offsets, levels, strict=True)
    ]
    indices = np.column_stack([np.zeros(n, int), np.ones(n, int), *codes]).ravel()
    numeric = [0.3 * rng.normal(size=n) for _ in range(2)]
    data = np.column_stack([*numeric, *[np.ones(n)] * len(levels)]).ravel()
    indptr = np.arange(0, n * k + 1, k)
    X = sparse.csr_array((data, indices, indptr), shape=(n, 2 + sum(levels)))
    y = (rng.uniform(size=n) < expit(X @ rng.normal(size=X.shape[1]))).astype(int)
    return X, y


def test_sparse_fit_never_densifies_X():
    """Peak traced memory of a fit far below the n x d dense array (17 MB).

    The dense temporaries are per block of rows, bounded by a constant that
    does not grow with n (a few MiB). The estimator is fitted once before, on
    enough rows for the certified interval, so that compiling the kernels is
    not traced.
    """
    n, levels = 12_000, (60, 60, 58)
    X, y = _onehot_csr(n, levels)
    est = OutputPerturbedLogisticRegression(
        lam=0.01,
        data_norm=2.5,
        penalize_intercept=True,
        onehot_groups="auto",
        random_state=0,
    )
    warm = AUTO_EXACT_MAX_SAMPLES + 1
    est.fit(X[:warm], y[:warm])
    tracemalloc.start()
    try:
        est.fit(X, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(est._onehot_groups) == 3
    dense_bytes = n * X.shape[1] * 8
    print(f"peak {peak / 1e6:.1f} MB, dense X {dense_bytes / 1e6:.1f} MB")
    # besides the per-chunk temporaries the fit holds a few p x p matrices
    # (p = 181: 0.26 MB each), which do not grow with n
    assert peak < dense_bytes / 2.5, (peak, dense_bytes)
