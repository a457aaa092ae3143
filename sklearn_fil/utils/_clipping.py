"""Overflow-safe row norms and the row clipping of the DP guarantees.

The estimators and the attacks, which re-run the training recipe, clip with
the same :func:`clip_rows`, so the two can never drift apart.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

from sklearn_fil.utils import _sparse


def row_norms(X):
    """L2 norm of every finite row (dense or CSR), without overflow or underflow.

    ``np.linalg.norm(X, axis=1)`` squares the entries, so it returns ``inf``
    for rows whose entries exceed about ``1e154`` and ``0`` for rows of
    entries below about ``1e-154``. Dividing each row by its largest absolute
    entry first keeps every square in ``[0, 1]``; the result is exact to a
    few ulps for every finite row.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fil.utils._clipping import row_norms
    >>> row_norms(np.array([[3e200, 4e200], [3e-200, 4e-200]])) / 5
    array([1.e+200, 1.e-200])
    """
    if _sparse.issparse(X):
        return _sparse.row_norms(X)
    X = np.asarray(X, dtype=np.float64)
    scale = np.max(np.abs(X), axis=1, initial=0.0)
    safe = np.where(scale > 0, scale, 1.0)
    return scale * np.sqrt(np.einsum("ij,ij->i", X / safe[:, None], X / safe[:, None]))


def vector_norm(v):
    """Overflow-safe L2 norm of one vector (see :func:`row_norms`)."""
    return float(row_norms(np.reshape(v, (1, -1)))[0])


def clip_rows(X, max_norm, exempt=()):
    """Scale every row down to L2 norm at most ``max_norm``.

    Columns in ``exempt`` (the 0/1 columns of one-hot groups) are left as
    they are; the others are clipped to the norm budget that remains,
    ``sqrt(max_norm^2 - k)``, where ``k`` is the squared norm of the exempt
    block, which must be the same in every row (a row of ``k`` one-hot
    groups has exactly ``k`` ones). Every clipped row then has norm at most
    ``max_norm`` and its one-hot entries keep their meaning.

    Parameters
    ----------
    X : {ndarray, csr_array} of shape (n_samples, n_features)
        Finite rows.
    max_norm : float
        Bound on the L2 norm of every returned row, > 0.
    exempt : sequence of int, default=()
        Columns not to rescale, of the same norm, below ``max_norm``, in every row.

    Returns
    -------
    clipped : {ndarray, csr_array} of shape (n_samples, n_features)
        A new array, of the input's kind; rows already within the bound are
        unchanged.
    n_clipped : int
        Number of rows that were rescaled.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fil.utils._clipping import clip_rows
    >>> X = np.array([[3.0, 4.0, 1.0, 0.0], [0.1, 0.0, 0.0, 1.0]])
    >>> clipped, n_clipped = clip_rows(X, 2.0, exempt=[2, 3])
    >>> clipped[0], n_clipped
    (array([1.03923048, 1.38564065, 1.        , 0.        ]), 1)
    """
    exempt = np.asarray(exempt, dtype=np.intp)
    if _sparse.issparse(X):
        return _clip_csr(X, max_norm, exempt)
    X = np.asarray(X, dtype=np.float64)
    budget = float(max_norm)
    if exempt.size:
        fixed = np.einsum("ij,ij->i", X[:, exempt], X[:, exempt])
        budget = _free_budget(fixed, max_norm)
    free = np.setdiff1d(np.arange(X.shape[1]), exempt)
    scale, n_clipped = _row_scales(row_norms(X[:, free]), budget)
    clipped = X.copy()
    clipped[:, free] *= scale[:, None]
    return clipped, n_clipped


def _clip_csr(X, max_norm, exempt):
    """:func:`clip_rows` of a CSR ``X``, on its stored values."""
    n, d = X.shape
    rows = _sparse.row_ids(X)
    is_exempt = np.zeros(d, dtype=bool)
    is_exempt[exempt] = True
    on_exempt = is_exempt[X.indices]
    budget = float(max_norm)
    if exempt.size:
        fixed = np.bincount(rows[on_exempt], X.data[on_exempt] ** 2, minlength=n)
        budget = _free_budget(fixed, max_norm)
    free = ~on_exempt
    norms = _sparse.entry_norms(rows[free], X.data[free], n)
    scale, n_clipped = _row_scales(norms, budget)
    clipped = X.copy()
    clipped.data[free] *= scale[rows[free]]
    return clipped, n_clipped


def _free_budget(fixed, max_norm):
    """Norm left to the free columns, given each row's exempt squared norm.

    ``sqrt(max_norm^2 - fixed)`` as a product of square roots: no square of
    ``max_norm`` to overflow.
    """
    exempt = np.sqrt(fixed[0])
    if np.ptp(fixed) > 0 or not exempt < max_norm:
        raise ValueError(
            f"The exempt columns must have the same norm in every row, below "
            f"max_norm = {max_norm:g}; got norms from {np.sqrt(fixed.min()):g} "
            f"to {np.sqrt(fixed.max()):g}."
        )
    return float(np.sqrt(max_norm - exempt) * np.sqrt(max_norm + exempt))


def _row_scales(norms, budget):
    """Factor of every row that brings its norm within ``budget``; how many."""
    over = norms > budget
    scale = np.ones_like(norms)
    scale[over] = budget / norms[over]
    return scale, int(over.sum())
