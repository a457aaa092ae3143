# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

"""The FIL engine on sparse input: the dense numbers, without densifying X.

Sparse X is checked three ways: against the brute-force reference of
tests/_reference.py (independent code, 1e-8), against the engine on the dense
array (1e-10 relative: the same maths, sums in another order), and for memory
(tracemalloc peak far below the n x d dense copy).
"""

import tracemalloc

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import sparse

from sklearn_fil.fisher import fisher_information_loss
from tests._reference import brute_force_fil, fit_minimiser

# sparse vs dense: the same arithmetic summed in another order
RTOL_DENSE = 1e-10
RTOL_REFERENCE = 1e-8
QUANTITIES = ["fil", "dfil", "attribute_fil", "total_attribute_fil", "dataset_fil"]


def _sparse_problem(loss, *, fit_intercept, weights, onehot, seed=0, n=60):
    """Features with 60% zeros (and one-hot columns 3-5), fitted exactly."""
    rng = np.random.default_rng(seed)
    d = 7
    X = rng.normal(size=(n, d)) * (rng.uniform(size=(n, d)) < 0.4)
    onehot_groups = None
    if onehot:
        X[:, 3:6] = np.eye(3)[rng.integers(0, 3, n)]
        onehot_groups = [[3, 4, 5]]
    margin = X @ rng.normal(scale=0.6, size=d) + 0.3 * fit_intercept
    if loss == "squared":
        y = margin + 0.5 * rng.normal(size=n)
    else:
        y = (rng.uniform(size=n) < 1 / (1 + np.exp(-margin))).astype(float)
    sample_weight = rng.uniform(0.2, 3.0, size=n) if weights else None
    lam = 0.05
    coef, intercept = fit_minimiser(
        X, y, loss, lam, sample_weight, fit_intercept, False, gtol=1e-12
    )
    kwargs = dict(
        loss=loss, lam=lam, sample_weight=sample_weight, onehot_groups=onehot_groups
    )
    return X, y, coef, intercept, kwargs


def _assert_same(result, expected, rtol):
    for name in QUANTITIES:
        assert_allclose(
            getattr(result, name), np.asarray(expected[name]), rtol=rtol, err_msg=name
        )


@pytest.mark.parametrize("loss", ["squared", "logistic"])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize(
    "weights, onehot, private_label",
    [
        (False, False, True),
        (True, False, True),
        (False, True, True),
        (True, True, False),
    ],
)
def test_sparse_matches_dense_and_reference(
    loss, fit_intercept, weights, onehot, private_label
):
    X, y, coef, intercept, kw = _sparse_problem(
        loss, fit_intercept=fit_intercept, weights=weights, onehot=onehot
    )
    groups = np.arange(X.shape[0]) % 3
    kw |= dict(sigma=0.7, private_label=private_label, groups=groups)
    sparse_result = fisher_information_loss(
        sparse.csr_array(X), y, coef, intercept, **kw
    )
    dense = fisher_information_loss(X, y, coef, intercept, **kw)
    _assert_same(sparse_result, vars(dense), RTOL_DENSE)
    assert sparse_result.attributes == dense.attributes
    for g, value in dense.group_fil.items():
        assert_allclose(sparse_result.group_fil[g], value, rtol=RTOL_DENSE)
    reference = brute_force_fil(X, y, coef, intercept, **kw)
    _assert_same(sparse_result, reference, RTOL_REFERENCE)
    for g, value in reference["group_fil"].items():
        assert_allclose(sparse_result.group_fil[g], value, rtol=RTOL_REFERENCE)


def _formats(X):
    """The same matrix in every scipy container the engine converts to CSR."""
    csr = sparse.csr_matrix(X)
    big = csr.copy()  # int64 indices, as scikit-learn's large-index checks use
    big.indices = big.indices.astype(np.int64)
    big.indptr = big.indptr.astype(np.int64)
    return {
        "csr_matrix": csr,
        "csr_array": sparse.csr_array(X),
        "csc_matrix": sparse.csc_matrix(X),
        "csc_array": sparse.csc_array(X),
        "coo_matrix": sparse.coo_matrix(X),
        "coo_array": sparse.coo_array(X),
        "lil_matrix": sparse.lil_matrix(X),
        "int64_indices": big,
    }


def test_every_sparse_format_gives_the_csr_numbers():
    X, y, coef, intercept, kw = _sparse_problem(
        "logistic", fit_intercept=True, weights=False, onehot=True
    )
    expected = fisher_information_loss(sparse.csr_array(X), y, coef, intercept, **kw)
    for name, Xs in _formats(X).items():
        result = fisher_information_loss(Xs, y, coef, intercept, **kw)
        for q in QUANTITIES:
            assert_array_equal(getattr(result, q), getattr(expected, q), err_msg=name)


def _noncanonical_csr(X):
    """``X`` as a CSR with every entry stored twice (two halves), unsorted."""
    coo = sparse.coo_matrix(X)
    half = coo.data / 2
    data = np.r_[half, coo.data - half]
    rows, cols = np.r_[coo.row, coo.row], np.r_[coo.col, coo.col]
    # by row, in a random order within each row
    order = np.lexsort((np.random.default_rng(0).permutation(data.size), rows))
    indptr = np.r_[0, np.cumsum(np.bincount(rows, minlength=X.shape[0]))]
    out = sparse.csr_matrix((data[order], cols[order], indptr), shape=X.shape)
    assert not out.has_canonical_format
    return out


def test_duplicate_entries_are_summed_and_the_input_kept():
    """Repeated (row, column) entries mean their sum (scipy's rule)."""
    X, y, coef, intercept, kw = _sparse_problem(
        "squared", fit_intercept=True, weights=False, onehot=False
    )
    X_dup = _noncanonical_csr(X)
    before = (X_dup.data.copy(), X_dup.indices.copy(), X_dup.indptr.copy())
    result = fisher_information_loss(X_dup, y, coef, intercept, **kw)
    dense = fisher_information_loss(X, y, coef, intercept, **kw)
    _assert_same(result, vars(dense), RTOL_DENSE)
    for array, copy in zip(
        (X_dup.data, X_dup.indices, X_dup.indptr), before, strict=True
    ):
        assert_array_equal(array, copy)  # the caller's matrix is untouched


def test_onehot_groups_are_checked_on_sparse_columns():
    X, y, coef, intercept, kw = _sparse_problem(
        "squared", fit_intercept=True, weights=False, onehot=True
    )
    X_bad = X.copy()
    X_bad[0, 3:6] = [1.0, 1.0, 0.0]  # two ones in one row
    with pytest.raises(ValueError, match="is not a one-hot encoding"):
        fisher_information_loss(sparse.csr_array(X_bad), y, coef, intercept, **kw)
    X_bad = X.copy()
    X_bad[0, 3:6] = [0.5, 0.5, 0.0]  # sums to one, not 0/1
    with pytest.raises(ValueError, match="is not a one-hot encoding"):
        fisher_information_loss(sparse.csr_array(X_bad), y, coef, intercept, **kw)


@pytest.mark.parametrize("value, message", [(np.nan, "NaN"), (np.inf, "infinity")])
def test_non_finite_sparse_values_are_refused(value, message):
    X, y, coef, intercept, kw = _sparse_problem(
        "squared", fit_intercept=True, weights=False, onehot=False
    )
    Xs = sparse.csr_array(X)
    Xs.data[3] = value
    with pytest.raises(ValueError, match=f"Input X contains {message}"):
        fisher_information_loss(Xs, y, coef, intercept, **kw)


def test_sparse_results_do_not_depend_on_chunk_size():
    X, y, coef, intercept, kw = _sparse_problem(
        "logistic", fit_intercept=True, weights=True, onehot=True
    )
    Xs = sparse.csr_array(X)
    whole = fisher_information_loss(Xs, y, coef, intercept, **kw)
    for chunk in (1, 7):
        part = fisher_information_loss(Xs, y, coef, intercept, chunk_size=chunk, **kw)
        for q in ("fil", "dfil", "attribute_fil"):
            assert_allclose(getattr(part, q), getattr(whole, q), rtol=1e-14)


def onehot_csr(n, levels, seed=0):
    """``len(levels)`` one-hot blocks (OneHotEncoder's layout) and two numeric
    columns, as a CSR array built without a dense copy."""
    rng = np.random.default_rng(seed)
    cols = [rng.normal(size=n), rng.normal(size=n)]
    offsets = np.cumsum([2, *levels])[:-1]
    codes = [
        off + rng.integers(0, k, n) for off, k in zip(offsets, levels, strict=True)
    ]
    indices = np.column_stack([np.zeros(n, int), np.ones(n, int), *codes]).ravel()
    data = np.column_stack([*cols, *[np.ones(n)] * len(levels)]).ravel()
    indptr = np.arange(0, n * (2 + len(levels)) + 1, 2 + len(levels))
    d = 2 + sum(levels)
    groups = [list(range(off, off + k)) for off, k in zip(offsets, levels, strict=True)]
    return sparse.csr_array((data, indices, indptr), shape=(n, d)), groups


def test_sparse_engine_never_densifies_X():
    """Peak traced memory far below the n x d dense array (17 MB here).

    The per-chunk products are bounded by a constant (``chunk_size`` rows),
    not by ``n``; a small chunk keeps that constant below the test's scale.
    The kernels run once first, so their compilation is not traced.
    """
    n, levels = 12_000, (60, 60, 58)
    Xs, groups = onehot_csr(n, levels)
    d = Xs.shape[1]
    rng = np.random.default_rng(1)
    y = rng.normal(size=n)
    coef = 0.1 * rng.normal(size=d)
    kw = dict(lam=0.1, onehot_groups=groups, chunk_size=500)
    with pytest.warns(UserWarning, match="not a minimiser"):
        fisher_information_loss(Xs[:300], y[:300], coef, 0.2, **kw)
    tracemalloc.start()
    try:
        with pytest.warns(UserWarning, match="not a minimiser"):
            result = fisher_information_loss(Xs, y, coef, 0.2, **kw)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert np.all(np.isfinite(result.fil))
    dense_bytes = n * d * 8
    print(f"peak {peak / 1e6:.1f} MB, dense X {dense_bytes / 1e6:.1f} MB")
    assert peak < dense_bytes / 3, (peak, dense_bytes)
