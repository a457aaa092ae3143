"""The FIL engine's public entry point, and its path for data larger than memory.

:func:`fisher_information_loss` sends in-memory data (NumPy or sparse) to the
engine, :mod:`sklearn_fil.fisher._engine`, and a row-chunked Dask array to
:func:`dask_report`, which runs the engine's stages unchanged on the blocks of
rows (:mod:`sklearn_fil.utils._dask`). The engine knows nothing of this path:
no import circle.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from dataclasses import replace
from functools import partial
from types import SimpleNamespace

import numpy as np
from sklearn.utils import assert_all_finite

from sklearn_fil.fisher import _engine
from sklearn_fil.utils._dask import (
    check_row_chunked,
    is_dask,
    map_rows,
    rows_like,
    tree_sum,
)
from sklearn_fil.utils._onehot import check_onehot_groups


def fisher_information_loss(
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
    loss_hessian=None,
    chunk_size=None,
):
    """Fisher information loss of the Gaussian release of a fitted GLM.

    The model ``w* = argmin_w sum_i omega_i l(w^T x_i, y_i) + (n lam / 2)
    ||w||^2`` (``n = sum_i omega_i``, the number of examples when unweighted)
    is released as ``w' = w* + N(0, sigma^2 I)``. Its Fisher
    information about example ``i`` is ``J_i^T J_i / sigma^2`` with ``J_i =
    -omega_i H^{-1} [d(grad l_i)/dx_i, d(grad l_i)/dy_i]`` (Hannun et al.,
    2021, eq. 18 and 29). This function returns the per-example spectral and
    diagonal FIL, per-attribute FIL, and the FIL of attributes, groups and the
    whole data set, exactly, in ``O(n d^2 + d^3)`` time and ``O(n d)`` memory.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Training features (the private data). Sparse input (any scipy
        format, taken as CSR) is never densified: the products work on its
        stored values, the per-example pass on dense chunks of rows. It
        gives the numbers of the dense array to rounding (``1e-10``
        relative; the sums run in another order). A ``dask.array`` chunked
        by rows only (``X.rechunk({1: -1})``) runs on Dask, for data larger
        than memory: see Notes.
    y : array-like of shape (n_samples,)
        Training labels; in {0, 1} for the logistic loss. A NumPy or Dask
        array when ``X`` is a Dask array (as ``sample_weight`` and
        ``groups``); rechunked to the rows of ``X``.
    coef : array-like of shape (n_features,)
        The minimiser ``w*`` (without noise).
    intercept : float or None, default=None
        The fitted intercept, or None for a model without one. The intercept
        is a constant, non-private feature.
    loss : {"squared", "logistic"}, default="squared"
        ``(m - y)^2 / 2`` or the logistic loss.
    lam : float, default=0.0
        L2 strength; the penalty is ``(n lam / 2) ||w||^2`` with ``n`` the sum
        of the sample weights.
    sigma : float, default=1.0
        Standard deviation of the Gaussian output noise.
    sample_weight : array-like of shape (n_samples,), default=None
        Weights ``omega_i >= 0`` of the examples in the objective.
    penalize_intercept : bool, default=False
        Whether the penalty includes the intercept.
    private_label : bool, default=True
        Whether the label is a private coordinate of each example.
    onehot_groups : list of array-like of int, default=None
        Column indices of constrained categorical attributes: each group is a
        full one-hot encoding (values sum to one), measured as one attribute
        on the tangent space of the constraint.
    groups : array-like of shape (n_samples,), default=None
        Group label of each example, for the FIL of every group.
    loss_hessian : ndarray of shape (n_params, n_params), default=None
        The Hessian of the weighted loss at ``coef``, without the penalty:
        ``X~^T diag(omega_i l''_i) X~`` with ``X~ = [X, 1]`` (the intercept
        last), e.g. the Gram a Newton fit computed at its last step (for the
        squared loss it does not depend on ``coef``). Given, its pass over the
        data (a Gram, as costly as ``X.T @ X``) is saved. It is checked
        against the data on one of its columns, as scikit-learn checks a
        precomputed Gram, and must be symmetric. NumPy and sparse
        ``X`` only: on a Dask array the Gram is part of the one pass that
        computes every other sum.
    chunk_size : int, default=None
        Most rows processed at once by a thread; by default as many as keep
        its temporaries near 2 MiB, in cache. Results do not depend on it.

    Returns
    -------
    result : FisherInformationLoss
        The per-example, per-attribute, group and data-set FIL.

    Raises
    ------
    ValueError
        On non-finite input or margins ``X @ coef + intercept`` that
        overflow, labels outside {0, 1} for the logistic loss, ``sigma <= 0``,
        ``lam < 0``, a singular Hessian, or malformed groups.

    Warns
    -----
    UserWarning
        When ``coef`` is not a stationary point of the objective.

    Notes
    -----
    With ``K = H^{-1} Q H^{-1} = U diag(gamma) U^T`` (``Q`` the projector onto
    the private feature coordinates) the example's FIM is ``omega_i^2 (r_i^2 K
    + T B T^T)`` with ``T = H^{-1} [x_i, Q w]`` and a 2 x 2 matrix ``B``; in the
    basis ``U`` this is diagonal plus rank two, whose top eigenvalue is found
    exactly by a secular-equation solver (``sklearn_fil.fisher._kernels``).
    No projection onto a Krylov subspace is used, so the result is exact for
    badly scaled features and ill-conditioned ``H``.

    On a Dask array the same stages run on the blocks of rows (with the
    scheduler in use, e.g. a ``distributed`` cluster): one pass computes every
    sum over examples block by block and adds them in a tree, checking the
    values as it goes (the errors above come from that pass, before any
    result); the ``p x p`` algebra and the totals then run at once, and the
    per-example pass is mapped lazily over the blocks. The numbers equal the
    NumPy path's up to the order of the floating-point sums (``1e-12``
    relative in the tests). Compute the per-example fields together
    (``dask.compute``), or write them to disk without passing through the
    client, e.g. ``da.to_npy_stack(path, da.concatenate([res.fil[:, None],
    res.attribute_fil], axis=1))``.

    References
    ----------
    Hannun, Guo & van der Maaten (2021), *Measuring data leakage in
    machine-learning models with Fisher information*, UAI.
    Guo, Karrer, Chaudhuri & van der Maaten (2022), *Bounding training data
    reconstruction in private (deep) learning*, ICML.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fil.fisher import fisher_information_loss
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((50, 3))
    >>> y = X @ [1.0, -2.0, 0.5] + 0.1 * rng.standard_normal(50)
    >>> coef = np.linalg.solve(X.T @ X, X.T @ y)
    >>> res = fisher_information_loss(X, y, coef, sigma=0.1)
    >>> res.fil.shape, res.attribute_fil.shape, res.attributes
    ((50,), (50, 4), [(0,), (1,), (2,), 'label'])
    >>> bool(np.all(res.fil >= res.dfil))
    True

    The same report of a Dask array, chunked by rows:

    >>> import dask.array as da
    >>> res_dask = fisher_information_loss(
    ...     da.from_array(X, chunks=(20, 3)), y, coef, sigma=0.1
    ... )
    >>> type(res_dask.fil).__name__, round(res_dask.dataset_fil / res.dataset_fil, 9)
    ('Array', 1.0)
    >>> bool(np.allclose(res_dask.fil.compute(), res.fil, rtol=1e-12, atol=0))
    True
    """
    args = SimpleNamespace(**locals())  # every argument, by name
    if not is_dask(X):
        return _engine.report(args)
    if loss_hessian is not None:
        raise ValueError(
            "loss_hessian is for in-memory X: on a Dask array the Hessian's "
            "Gram is computed in the same pass as every other sum."
        )
    return dask_report(args)


def dask_report(args):
    """:func:`fisher_information_loss` of a Dask array (see its Notes).

    ``args`` holds the public function's arguments by name. The per-example
    fields slice one ``(n_samples, 3 + n_attributes)`` mapped array.
    """
    X = check_row_chunked(args.X)
    y = rows_like(args.y, X, "y")
    sample_weight = args.sample_weight
    omega = rows_like(sample_weight, X, "sample_weight")
    groups = rows_like(args.groups, X, "groups", dtype=None)
    # the model without data, what the stages after the sums read; the
    # one-hot layout is checked now, the values of every block in the pass
    model, layout = _engine.model(args, np.zeros((0, X.shape[1])))
    # unit weights (known without a pass) share the Hessian's Gram, as in NumPy
    same_gram = model.family.constant_curvature and (
        sample_weight is None
        or (
            not is_dask(sample_weight)
            and bool(np.all(np.asarray(sample_weight) == 1.0))
        )
    )
    sums = tree_sum(_block_sums, X, (y, omega, groups), model, layout, same_gram)
    return _engine._assemble(
        model, sums, layout, args.sigma, partial(_lazy_report, model, X, y, omega)
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
