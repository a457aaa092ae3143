"""Sparse (CSR) rows: canonical form, row scaling, overflow-safe row norms.

The estimators and the FIL engine take sparse input without densifying it:
every stage works on the ``nnz`` stored values, or on dense temporaries of a
chunk of rows. These are the row operations that have no scipy one-liner.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from scipy import sparse


def issparse(X):
    """Whether ``X`` is a scipy sparse array or matrix."""
    return sparse.issparse(X)


def as_csr(X):
    """``X`` as a canonical float64 :class:`scipy.sparse.csr_array`.

    Sorted indices without duplicates (duplicates summed), so that each
    stored value is one matrix entry. Shares the arrays of a canonical CSR
    input (no copy); never modifies the input, of any scipy sparse format.

    Examples
    --------
    >>> from scipy import sparse
    >>> from sklearn_fil.utils._sparse import as_csr
    >>> X = sparse.coo_matrix(([1.0, 2.0], ([0, 0], [1, 1])), shape=(2, 2))
    >>> as_csr(X).toarray()
    array([[0., 3.],
           [0., 0.]])
    """
    X = sparse.csr_array(X, dtype=np.float64, copy=False)
    if not X.has_canonical_format:
        # sum_duplicates works in place: on a copy, never on the caller's arrays
        X = X.copy()
        X.sum_duplicates()  # sorts the indices too
    return X


def row_ids(X):
    """Row index of every stored value of a CSR ``X``."""
    return np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))


def scale_rows(X, scale):
    """``diag(scale) @ X`` for a CSR ``X``, as a new CSR array (``nnz`` copy)."""
    out = X.copy()
    out.data *= np.repeat(scale, np.diff(X.indptr))
    return out


def entry_norms(rows, values, n):
    """Overflow-safe L2 norms of ``n`` rows given as (row id, value) pairs."""
    values = np.abs(values)
    scale = np.zeros(n)
    np.maximum.at(scale, rows, values)
    safe = np.where(scale > 0, scale, 1.0)
    return scale * np.sqrt(np.bincount(rows, (values / safe[rows]) ** 2, minlength=n))


def row_norms(X):
    """The sparse twin of :func:`sklearn_fil.utils._clipping.row_norms`."""
    return entry_norms(row_ids(X), X.data, X.shape[0])


def rowwise_dot(X, M):
    """``sum_j X[i, j] M[i, j]`` for every row of a CSR ``X`` and dense ``M``."""
    rows = row_ids(X)
    return np.bincount(rows, X.data * M[rows, X.indices], minlength=X.shape[0])
