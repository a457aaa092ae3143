"""Row-chunked Dask arrays: checks, sums over blocks, maps over blocks.

The FIL engine and the GLM fit make two kinds of pass over the rows: sums
(Grams, gradients, objectives) and per-example maps. Dask is imported only
here, and only when Dask input arrives.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import math
import operator

import numpy as np

# Partial results added per task of a tree reduction.
SPLIT_EVERY = 8


def is_dask(a):
    """Whether ``a`` is a Dask collection (without importing Dask)."""
    return hasattr(a, "__dask_graph__")


def check_row_chunked(X):
    """A float64 Dask array chunked by rows only, with at least 2 rows."""
    if X.ndim != 2:
        raise ValueError(f"X must be 2-dimensional; got {X.ndim} dimension(s).")
    if any(math.isnan(c) for c in X.chunks[0]):
        raise ValueError(
            "X has unknown chunk sizes (e.g. after boolean indexing); call "
            "X.compute_chunk_sizes() first."
        )
    if X.numblocks[1] != 1:
        raise ValueError(
            f"X must be chunked by rows only; got {X.numblocks[1]} chunks along "
            f"the features {X.chunks[1]}. Rechunk with X.rechunk({{1: -1}}) (each "
            "block then holds whole rows)."
        )
    if X.shape[0] < 2:
        raise ValueError(f"X needs at least 2 samples; got {X.shape[0]}.")
    if X.shape[1] < 1:
        raise ValueError("X needs at least 1 feature; got 0.")
    real = np.issubdtype(X.dtype, np.number) or X.dtype == bool
    if not real or np.issubdtype(X.dtype, np.complexfloating):
        raise ValueError(f"X must hold real numbers; got dtype {X.dtype}.")
    return X.astype(np.float64)


def rows_like(a, X, name, dtype=np.float64):
    """``a`` (1-D, one entry per row of ``X``) as a Dask array in its row chunks.

    ``a`` may be a NumPy or a Dask array; None stays None.
    """
    import dask.array as da

    if a is None:
        return None
    if not isinstance(a, da.Array):
        a = np.asarray(a, dtype=dtype)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional; got shape {a.shape}.")
    if a.shape[0] != X.shape[0]:
        raise ValueError(
            f"{name} has {a.shape[0]} entries but X has {X.shape[0]} samples."
        )
    if isinstance(a, da.Array):
        if dtype is not None:
            a = a.astype(dtype)
        return a.rechunk((X.chunks[0],))
    return da.from_array(a, chunks=(X.chunks[0],))


def _combine(merge, *parts):
    total = parts[0]
    for part in parts[1:]:
        total = merge(total, part)
    return total


def tree_sum(func, X, vectors, *args):
    """``sum_b func(X_b, *vectors_b, *args)`` over the row blocks, computed.

    ``vectors`` are Dask arrays in the row chunks of ``X``, or None (passed
    as None to every block); the results must support ``+``. Partial
    results are added ``SPLIT_EVERY`` at a time, so no task holds more than
    that many. Runs on the scheduler in use (a ``distributed`` client when
    one is active).
    """
    return tree_reduce(func, operator.add, X, vectors, *args)


def tree_reduce(func, merge, X, vectors, *args):
    """:func:`tree_sum` with ``merge(a, b)`` in place of ``a + b``.

    ``merge`` must be associative (the blocks are merged in a tree, in row
    order).
    """
    import dask

    nb = X.numblocks[0]
    columns = [X.to_delayed().ravel()] + [
        [None] * nb if v is None else v.to_delayed().ravel() for v in vectors
    ]
    parts = [
        dask.delayed(func, pure=True)(*blocks, *args)
        for blocks in zip(*columns, strict=True)
    ]
    while len(parts) > 1:
        parts = [
            dask.delayed(_combine, pure=True)(merge, *parts[i : i + SPLIT_EVERY])
            for i in range(0, len(parts), SPLIT_EVERY)
        ]
    (total,) = dask.compute(parts[0])
    return total


def _unwrap(func, X, *rest, n_vectors):
    vectors = [None if v is None else v[:, 0] for v in rest[:n_vectors]]
    return func(X, *vectors, *rest[n_vectors:])


def map_rows(func, X, vectors, n_columns, *args):
    """Lazy ``(n_samples, n_columns)`` array of ``func(X_b, *vectors_b, *args)``.

    ``func`` returns an ``(len(X_b), n_columns)`` float64 array per block;
    ``args`` are shared by every block and stored once in the graph.
    """
    import dask
    import dask.array as da

    columns = [None if v is None else v[:, None] for v in vectors]
    shared = [dask.delayed(a, pure=True) for a in args]
    return da.map_blocks(
        _unwrap,
        func,
        X,
        *columns,
        *shared,
        n_vectors=len(columns),
        token=getattr(func, "__name__", "map_rows").lstrip("_"),
        chunks=(X.chunks[0], (n_columns,)),
        dtype=np.float64,
        meta=np.empty((0, 0)),
    )


def check_dense_dask_array(X):
    """Refuse Dask collections other than a dense ``dask.array``, before any pass.

    A Dask DataFrame has no chunk sizes per row block until computed, and a
    block of scipy sparse rows is not what the estimators' passes take.
    """
    import dask.array as da
    from scipy import sparse

    if not isinstance(X, da.Array):
        raise TypeError(
            f"X is a {type(X).__module__}.{type(X).__name__}; the estimators take "
            "a dask.array chunked by rows (e.g. ddf.to_dask_array(lengths=True))."
        )
    if sparse.issparse(getattr(X, "_meta", None)):
        raise TypeError(
            "X is a Dask array of scipy sparse blocks; the estimators take dense "
            "row blocks on Dask (X.map_blocks(lambda b: b.toarray())), or an "
            "in-memory sparse matrix."
        )
