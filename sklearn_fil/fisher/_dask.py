"""Fisher information loss on a row-chunked Dask array: data larger than memory.

The engine's stages run unchanged; only the passes over the rows move to the
blocks (:mod:`sklearn_fil.utils._dask`). The sums over examples (the Grams of
the Hessian and of the totals) are computed block by block with the engine's
``_example_sums`` and added in a tree, one read of the data; the ``p x p``
algebra then runs on the client exactly as on the NumPy path; the
per-example pass maps the engine's chunked pass over the blocks, lazily.
Results equal the NumPy path's up to the order of the floating-point sums.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from dataclasses import replace
from functools import partial

import numpy as np
from sklearn.utils import assert_all_finite

from sklearn_fil._losses import get_family
from sklearn_fil.fisher import _engine
from sklearn_fil.utils._dask import (
    check_row_chunked,
    is_dask,
    map_rows,
    rows_like,
    tree_sum,
)
from sklearn_fil.utils._onehot import check_onehot_groups


def dask_fisher_information_loss(
    X,
    y,
    coef,
    intercept=None,
    *,
    loss="squared",
    lam=0.0,
    sigma=1.0,
    sample_weight=None,
    penalize_intercept=False,
    private_label=True,
    onehot_groups=None,
    groups=None,
    chunk_size=None,
):
    """:func:`~sklearn_fil.fisher.fisher_information_loss` of a Dask array.

    ``X`` is a ``dask.array`` chunked by rows only; ``y``, ``sample_weight``
    and ``groups`` are Dask or NumPy arrays, rechunked to its rows. One
    tree-reduced pass computes every sum over examples and checks the values
    block by block (non-finite entries, labels, negative weights and one-hot
    groups raise the engine's errors from that pass, before any result); the
    totals are then computed at once. The per-example fields are lazy Dask
    arrays slicing one ``(n_samples, 3 + n_attributes)`` mapped array.
    """
    family = get_family(loss)
    X = check_row_chunked(X)
    y = rows_like(y, X, "y")
    omega = rows_like(sample_weight, X, "sample_weight")
    groups = rows_like(groups, X, "groups", dtype=None)
    coef, intercept = _engine._check_model(coef, X.shape[1], intercept, lam, sigma)
    # the layout is checked now, the values of every block in the first pass
    onehot = check_onehot_groups(onehot_groups, np.zeros((0, X.shape[1])))
    chunk = _engine._check_chunk(chunk_size)
    # unit weights (known without a pass) share the Hessian's Gram, as in NumPy
    same_gram = family.constant_curvature and (
        sample_weight is None
        or (
            not is_dask(sample_weight)
            and bool(np.all(np.asarray(sample_weight) == 1.0))
        )
    )
    # the model without data: what the stages after the sums read
    model = _engine._Problem(
        None, None, coef, intercept, family, lam, None, penalize_intercept, chunk
    )
    layout = _engine._AttributeLayout.of(X.shape[1], onehot, private_label)
    sums = tree_sum(_block_sums, X, (y, omega, groups), model, layout, same_gram)
    return _engine._assemble(
        model, sums, layout, sigma, partial(_lazy_report, model, X, y, omega)
    )


def _block_problem(model, Xb, yb, omegab):
    """The engine's problem on one block of rows."""
    omegab = np.ones(Xb.shape[0]) if omegab is None else omegab
    return replace(model, X=Xb, y=yb, omega=omegab)


def _block_sums(Xb, yb, omegab, groupsb, model, layout, same_gram):
    """The value checks of the NumPy path and the engine's sums, on one block."""
    assert_all_finite(Xb, input_name="X")
    assert_all_finite(yb, input_name="y")
    model.family.check_y(yb)
    if omegab is not None:
        assert_all_finite(omegab, input_name="sample_weight")
        if np.any(omegab < 0):
            raise ValueError("sample_weight must be non-negative.")
    check_onehot_groups(layout.onehot or None, Xb)
    block = _block_problem(model, Xb, yb, omegab)
    return _engine._example_sums(block, layout.private_label, groupsb, same_gram)


def _block_report(Xb, yb, omegab, model, rotations):
    """``[fil, dfil, mse_bound, attribute_fil]`` of one block of rows."""
    block = _block_problem(model, Xb, yb, omegab)
    return np.column_stack(_engine._per_example_report(block, rotations))


def _lazy_report(model, X, y, omega, rotations):
    """The per-example fields: lazy slices of one mapped Dask array."""
    n_columns = 3 + len(rotations.layout.attributes)
    table = map_rows(_block_report, X, (y, omega), n_columns, model, rotations)
    return table[:, 0], table[:, 1], table[:, 2], table[:, 3:]
