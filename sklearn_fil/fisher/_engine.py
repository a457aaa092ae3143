"""Fisher information loss of output-perturbed generalised linear models."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import warnings
from dataclasses import dataclass
from functools import cached_property, partial

import numpy as np
from scipy import linalg
from sklearn.utils import assert_all_finite, check_array, check_consistent_length

from sklearn_fil._glm import GLMProblem, SPDFactor, augment_rmatvec, weighted_grams
from sklearn_fil._losses import get_family
from sklearn_fil._threads import (
    cache_rows,
    one_numba_thread,
    row_blocks,
    row_parallel,
    small_work,
)
from sklearn_fil.exceptions import NotAMinimiserWarning
from sklearn_fil.utils._onehot import check_onehot_groups
from sklearn_fil.utils._sparse import as_csr, issparse

# Gradient norm, relative to the size of its terms, above which ``coef`` is
# not taken for a minimiser (the implicit-function Jacobian needs one).
_STATIONARITY_RTOL = 1e-6

_NOT_MINIMISER_MSG = (
    "coef is not a minimiser of the regularised objective: the relative "
    "gradient norm is {:.2e} (> {:.0e}). The Fisher information loss is only "
    "defined at the minimiser; fit to a tighter tolerance."
)


@dataclass(frozen=True)
class FisherInformationLoss:
    """Fisher information loss of an output-perturbed GLM.

    Every quantity already includes the factor ``1 / sigma`` of the release
    ``w' = w* + N(0, sigma^2 I)``. On a Dask ``X`` the per-example fields
    (``fil``, ``dfil``, ``mse_bound``, ``attribute_fil``) are lazy Dask arrays
    slicing one mapped array (compute or store them together: the pass over
    the data then runs once); the other fields are computed.

    Attributes
    ----------
    fil : ndarray of shape (n_samples,)
        Per-example FIL ``eta_i``: the spectral norm of the example's
        Jacobian over its private coordinates, divided by ``sigma``.
    dfil : ndarray of shape (n_samples,)
        Diagonal FIL ``bar-eta_i = sqrt(Tr(I_i) / k)``.
    mse_bound : ndarray of shape (n_samples,)
        ``1 / dfil^2``: Guo et al. (2022, Thm 2) lower bound on the
        per-coordinate MSE of any unbiased reconstruction of the example.
    attribute_fil : ndarray of shape (n_samples, n_attributes)
        Per-example, per-attribute FIL ``eta_ij``.
    attributes : list
        One entry per column of ``attribute_fil``: a tuple of feature
        indices (one index, or the columns of a constrained one-hot group),
        then ``"label"`` when the label is private.
    total_attribute_fil : ndarray of shape (n_attributes,)
        FIL of each attribute over all examples together.
    dataset_fil : float
        FIL of the whole training set.
    group_fil : dict or None
        FIL of each group of examples, keyed by group label.
    n_private : int
        Number ``k`` of private coordinates per example.
    hessian : ndarray of shape (n_params, n_params)
        Hessian ``H`` of the regularised objective at ``coef`` (intercept
        last), the matrix whose inverse every Jacobian holds.
    gradient : ndarray of shape (n_params,)
        Gradient of the regularised objective at ``coef`` (intercept last),
        whose norm relative to the size of its terms is the stationarity
        check's (see Warns of :func:`fisher_information_loss`).
    """

    fil: np.ndarray
    dfil: np.ndarray
    mse_bound: np.ndarray
    attribute_fil: np.ndarray
    attributes: list
    total_attribute_fil: np.ndarray
    dataset_fil: float
    group_fil: dict | None
    n_private: int
    hessian: np.ndarray
    gradient: np.ndarray


def _row_kernel(name):
    """The kernel ``name`` of :mod:`sklearn_fil.fisher._kernels`, or on one numba
    thread its serial twin (compiled when installing where that applies)."""
    from sklearn_fil._compiled import compiled
    from sklearn_fil.fisher import _kernels

    if one_numba_thread():
        return compiled(getattr(_kernels, f"{name}_serial"))
    return getattr(_kernels, name)


def _top_eig(M):
    """Largest eigenvalue of a symmetric PSD matrix (0 for an empty one).

    LAPACK's ``dsyevr``, which computes the one eigenvalue, can fail ("Internal
    Error") on a top eigenvalue repeated hundreds of times (as identical
    canaries in their own columns make); the full divide-and-conquer ``evd``
    then computes all of them, to the same rounding.
    """
    d = M.shape[0]
    if d == 0:
        return 0.0
    try:
        top = linalg.eigvalsh(M, subset_by_index=[d - 1, d - 1])[0]
    except linalg.LinAlgError:
        top = linalg.eigvalsh(M, driver="evd")[-1]
    return max(float(top), 0.0)


def model(args, onehot_rows, **data):
    """The checked model of ``args`` on ``data``, and its attribute layout.

    ``args`` holds the arguments of the public function by name;
    ``onehot_rows`` are the rows the one-hot groups are checked on now (none
    on the Dask path, which checks each block's values in its pass).
    """
    d = onehot_rows.shape[1]
    coef = check_array(args.coef, dtype=np.float64, ensure_2d=False, input_name="coef")
    if coef.shape != (d,):
        raise ValueError(f"coef must have shape ({d},); got {coef.shape}.")
    intercept = args.intercept
    if intercept is not None:
        intercept = float(intercept)
        if not np.isfinite(intercept):
            raise ValueError(f"intercept must be finite; got {intercept}.")
    lam, sigma, chunk = args.lam, args.sigma, args.chunk_size
    if not (np.isfinite(lam) and lam >= 0):
        raise ValueError(f"lam must be a finite number >= 0; got {lam}.")
    if not (np.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma must be a finite number > 0; got {sigma}.")
    onehot = check_onehot_groups(args.onehot_groups, onehot_rows)
    if chunk is not None:  # most rows of a block of the per-example pass
        chunk = int(chunk)
        if chunk < 1:
            raise ValueError(f"chunk_size must be >= 1; got {args.chunk_size}.")
    problem = _Problem(
        family=args.loss,
        lam=lam,
        fit_intercept=intercept is not None,
        penalize_intercept=args.penalize_intercept,
        coef=coef,
        intercept=intercept,
        chunk=chunk,
        **data,
    )
    return problem, _AttributeLayout.of(d, onehot, args.private_label)


def _check_data(args):
    """``X``, ``y``, the sample weights and the groups of ``args``, checked."""
    X = check_array(
        args.X,
        accept_sparse="csr",
        dtype=np.float64,
        ensure_min_samples=2,
        # dense X: its margins' pass checks it (see _check_finite_margin)
        ensure_all_finite=issparse(args.X),
        input_name="X",
    )
    if issparse(X):
        X = as_csr(X)
    y = check_array(args.y, dtype=np.float64, ensure_2d=False, input_name="y")
    if y.ndim != 1:
        raise ValueError(f"y must be 1-dimensional; got shape {y.shape}.")
    check_consistent_length(X, y)
    get_family(args.loss).check_y(y)
    omega = args.sample_weight
    if omega is None:
        omega = np.ones(X.shape[0])
    else:
        omega = check_array(
            omega, dtype=np.float64, ensure_2d=False, input_name="sample_weight"
        )
        check_consistent_length(X, omega)
        if np.any(omega < 0):
            raise ValueError("sample_weight must be non-negative.")
    groups = args.groups
    if groups is not None:
        groups = np.asarray(groups)
        check_consistent_length(X, groups)
    return X, y, omega, groups


def report(args):
    """:func:`~sklearn_fil.fisher.fisher_information_loss` of NumPy or sparse
    ``X``; ``args`` holds its arguments by name."""
    X, y, omega, groups = _check_data(args)
    loss_hessian = args.loss_hessian
    if loss_hessian is not None:
        p = X.shape[1] + (args.intercept is not None)
        loss_hessian = _check_loss_hessian(loss_hessian, p)
    problem, layout = model(args, X, X=X, y=y, omega=omega, loss_hessian=loss_hessian)
    # the margins check X, then the given Hessian is checked against the data
    _check_finite_margin(problem)
    if loss_hessian is not None:
        _match_loss_hessian(problem)
    same_gram = problem.family.constant_curvature and bool(np.all(omega == 1.0))
    # small data: one thread for the whole report (see small_work)
    with small_work(X.shape[0], problem.n_params):
        # the stages, called from here as from the Dask path: a warning of
        # _hessian is then as many frames from the public function's caller
        sums = _example_sums(problem, layout.private_label, groups, same_gram)
        return _assemble(
            problem, sums, layout, args.sigma, partial(_per_example_report, problem)
        )


def _check_finite_margin(problem):
    """Refuse non-finite ``X``, and margins that overflow, from the margins.

    A NaN or infinite entry of ``X`` makes its row's margin ``x_i^T w + b``
    NaN or infinite whatever ``w`` (``0 * inf`` is NaN), so the margins,
    which the report needs first, check ``X`` without a pass of its own
    (scikit-learn's check is one more read of ``X``). Only where a margin is
    not finite is ``X`` read again, for scikit-learn's error.
    """
    with np.errstate(over="ignore", invalid="ignore"):  # the error says it
        margin = problem.margins
    if np.all(np.isfinite(margin)):
        return
    assert_all_finite(problem.X, input_name="X")
    raise ValueError(
        "X @ coef overflows (a margin is not finite with finite X and coef): "
        "rescale the features."
    )


@dataclass(frozen=True, kw_only=True)
class _Problem(GLMProblem):
    """A validated GLM at its minimiser, with the per-example derivatives.

    ``r`` and ``c`` are the residuals ``dl/dm`` and curvatures ``d2l/dm2`` at
    the margins. ``X`` is a dense array or a canonical CSR array. The stages
    after :func:`_example_sums` read only the model (``coef``, ``intercept``
    and the penalty), so the Dask path runs them on a problem without data.
    ``loss_hessian``, when the caller has it, is the Gram ``X~^T diag(omega
    c) X~`` (checked by :func:`_check_loss_hessian` and
    :func:`_match_loss_hessian`).
    """

    coef: np.ndarray
    intercept: float | None
    chunk: int | None
    loss_hessian: np.ndarray | None = None

    @property
    def n_params(self):
        return self.coef.size + self.fit_intercept

    @property
    def w(self):
        return np.append(self.coef, self.intercept) if self.fit_intercept else self.coef

    @cached_property
    def margins(self):
        return self.margin(self.w)

    @cached_property
    def derivatives(self):
        return self.family.derivatives(self.margins, self.y)

    @cached_property
    def omega2(self):
        return self.omega * self.omega

    def rows(self, rows):
        """``X`` over ``rows`` (all of it, uncopied, for ``None``)."""
        return self.X if rows is None else self.X[rows]

    def grams(self, weights, rows=None):
        """``[X~^T diag(w) X~ for w in weights]`` over ``rows``, in one pass."""
        return weighted_grams(self.rows(rows), weights, self.fit_intercept)

    def rmatvec(self, v, rows=None):
        """``X~^T v`` over ``rows``."""
        return augment_rmatvec(self.rows(rows), v, self.fit_intercept)


# Relative difference between a given loss Hessian and one of its columns
# recomputed from the data above which it is refused: the two sums run in
# different orders, so they agree to rounding, not bitwise.
_LOSS_HESSIAN_RTOL = 1e-8


def _check_loss_hessian(loss_hessian, p):
    """``loss_hessian`` checked for shape, finite values and symmetry; no data
    read (:func:`_match_loss_hessian` checks it against the data)."""
    H = check_array(loss_hessian, dtype=np.float64, input_name="loss_hessian")
    if H.shape != (p, p):
        raise ValueError(
            f"loss_hessian must have shape ({p}, {p}) (the intercept last); got "
            f"{H.shape}."
        )
    size = np.sqrt(np.outer(*2 * [np.abs(np.diag(H))]))  # bounds |H_jk| if PSD
    if not np.all(np.abs(H - H.T) <= _LOSS_HESSIAN_RTOL * size):
        raise ValueError(
            f"loss_hessian must be symmetric (to a relative {_LOSS_HESSIAN_RTOL:.0e})."
        )
    return 0.5 * (H + H.T)


def _match_loss_hessian(problem):
    """Refuse ``problem.loss_hessian`` unless one of its columns is the data's.

    Column ``j = d // 2`` of ``X~^T diag(omega c) X~`` costs one read of
    ``X`` (a ``p x p`` Gram costs ``p / 2`` products with it), and catches a
    Hessian of other data, other weights, another ``coef`` (logistic), or
    with the penalty added.
    """
    H = problem.loss_hessian
    X, j = problem.X, problem.coef.size // 2
    _, c = problem.derivatives
    kappa = problem.omega * c
    if issparse(X):
        column = problem.rmatvec(kappa * X[:, [j]].toarray().ravel())
    else:  # one read of X
        from sklearn_fil.fisher._kernels import gram_column

        column = gram_column(X, kappa, j)
        column = column if problem.fit_intercept else column[:-1]
    # |sum_i kappa_i x_ij x_ik| <= sqrt(H_jj H_kk) (Cauchy-Schwarz, kappa >= 0)
    # bounds the terms, hence the rounding, of entry k
    err = np.abs(column - H[:, j])
    bound = _LOSS_HESSIAN_RTOL * np.sqrt(abs(column[j]) * np.abs(np.diag(H)))
    if not np.all(err <= bound):
        k = int(np.argmax(err - bound))
        raise ValueError(
            f"loss_hessian does not match the data: its entry ({k}, {j}) is "
            f"{H[k, j]:.6e}, X~^T diag(omega l'') X~ has {column[k]:.6e}. Pass "
            "the Hessian of the weighted loss at coef, without the penalty."
        )


def _assemble(problem, sums, layout, sigma, per_example):
    """The result from the sums over examples and a per-example pass.

    ``per_example(rotations)`` returns ``fil, dfil, mse_bound,
    attribute_fil``: NumPy arrays here, lazy Dask arrays on the Dask path.
    """
    # the p x p algebra on one thread when p is small (see small_work)
    p = problem.n_params
    with small_work(p, p):
        H, H_inv, gradient = _hessian(problem, sums)
        rotations = _Rotations.of(problem, H_inv, layout, sigma)
    fil, dfil, mse_bound, attribute_fil = per_example(rotations)
    with small_work(p, p):
        total_attribute_fil, dataset_fil, group_fil = _totals(
            problem, sums, H_inv, layout, sigma
        )
    return FisherInformationLoss(
        fil=fil,
        dfil=dfil,
        mse_bound=mse_bound,
        attribute_fil=attribute_fil,
        attributes=layout.attributes,
        total_attribute_fil=total_attribute_fil,
        dataset_fil=float(dataset_fil),
        group_fil=group_fil,
        n_private=layout.n_private,
        hessian=H,
        gradient=gradient,
    )


@dataclass
class _Sums:
    """The sums over examples that the Hessian and the totals need.

    With ``X~ = [X, 1]``: ``hess = X~^T diag(omega c) X~``, ``grad = X~^T
    omega r``, ``grad_scale`` the same sum of the terms' sizes, ``C2 = X~^T
    diag(omega^2 c^2) X~`` (None: equal to ``hess``), ``C0 = X~^T diag(
    omega^2) X~`` (None: not needed, or equal to ``C2``), ``s = X~^T omega^2 c
    r``, ``rho2 = sum omega^2 r^2`` and ``n_eff = sum omega``; ``groups`` maps
    each group label to its ``(C2, C0, s, rho2)``. Every field adds over
    disjoint sets of rows, which is how the Dask path reduces them.
    """

    n_eff: float
    hess: np.ndarray
    grad: np.ndarray
    grad_scale: np.ndarray
    C2: np.ndarray | None
    C0: np.ndarray | None
    s: np.ndarray
    rho2: float
    groups: dict | None

    def __add__(self, other):
        add = lambda a, b: None if a is None else a + b  # noqa: E731
        groups = None
        if self.groups is not None:
            groups = dict(self.groups)
            for key, parts in other.groups.items():
                mine = groups.get(key)
                groups[key] = (
                    parts
                    if mine is None
                    else tuple(add(a, b) for a, b in zip(mine, parts, strict=True))
                )
        return _Sums(
            self.n_eff + other.n_eff,
            self.hess + other.hess,
            self.grad + other.grad,
            self.grad_scale + other.grad_scale,
            add(self.C2, other.C2),
            add(self.C0, other.C0),
            self.s + other.s,
            self.rho2 + other.rho2,
            groups,
        )


def _example_sums(problem, private_label, groups, same_gram):
    """:class:`_Sums` over the rows of ``problem``; ``groups`` labels them.

    ``same_gram``: the squared loss with unit weights, whose ``C2`` is
    ``hess``.
    """
    r, c = problem.derivatives
    omega, omega2 = problem.omega, problem.omega2
    # the size of the terms that cancel in the gradient at a minimiser
    r_scale = omega * problem.family.residual_scale(problem.margins, problem.y)
    cc, cr = omega2 * c * c, omega2 * c * r
    grad, s, grad_scale = _gradient_sums(problem, omega * r, cr, r_scale)
    group_sums = None
    if groups is not None:
        group_sums = {}
        for label_value in np.unique(groups):
            idx = np.flatnonzero(groups == label_value)
            key = label_value.item() if hasattr(label_value, "item") else label_value
            grams = problem.grams([cc[idx], omega2[idx]][: 1 + private_label], idx)
            group_sums[key] = (
                grams[0],
                grams[1] if private_label else None,
                problem.rmatvec(cr[idx], idx),
                float(omega2[idx] @ (r[idx] ** 2)),
            )
    # the Grams this report needs, in one pass over the rows
    weights = {}
    if not same_gram:
        weights["C2"] = cc
    if private_label and not problem.family.constant_curvature:
        weights["C0"] = omega2
    if problem.loss_hessian is None:
        weights["hess"] = omega * c
    grams = dict(zip(weights, problem.grams(list(weights.values())), strict=True))
    return _Sums(
        n_eff=float(omega.sum()),
        hess=grams.get("hess", problem.loss_hessian),
        grad=grad,
        grad_scale=grad_scale,
        C2=grams.get("C2"),
        C0=grams.get("C0"),
        s=s,
        rho2=float(omega2 @ (r * r)),
        groups=group_sums,
    )


def _hessian(problem, sums):
    """``H``, ``H^-1`` and the gradient at ``coef``; warns when it is no minimiser."""
    w = problem.w
    reg = problem.penalty(sums.n_eff)
    H = sums.hess + np.diag(reg)
    H_inv = SPDFactor(H).inverse()  # a singular H is an error
    grad = sums.grad + reg * w
    grad_scale = sums.grad_scale + np.abs(reg * w)
    rel_grad = np.linalg.norm(grad) / max(
        np.linalg.norm(grad_scale), np.finfo(float).tiny
    )
    if rel_grad > _STATIONARITY_RTOL:
        warnings.warn(
            _NOT_MINIMISER_MSG.format(rel_grad, _STATIONARITY_RTOL),
            NotAMinimiserWarning,
            stacklevel=5,
        )
    return H, H_inv, grad


def _gradient_sums(problem, u, v, w):
    """``X~^T u``, ``X~^T v`` and ``|X~|^T |w|``: one numba pass over dense ``X``.

    Sparse ``X`` takes products on its stored values (``|X|`` an ``nnz``
    copy).
    """
    X = problem.X
    if issparse(X):
        sums = [X.T @ u, X.T @ v, abs(X).T @ np.abs(w)]
    else:
        sums = list(_row_kernel("gradient_sums")(X, u, v, w))
    if problem.fit_intercept:
        sums = [
            np.append(x, t.sum()) for x, t in zip(sums, (u, v, np.abs(w)), strict=True)
        ]
    return sums


@dataclass(frozen=True)
class _AttributeLayout:
    """Which report column each private coordinate feeds.

    Attributes are the plain features, the constrained one-hot groups (in
    order of their first column), then the label. ``Q`` projects the weights
    onto the private feature coordinates (one-hot groups on their sum-to-one
    tangent space; the intercept is never private).
    """

    attributes: list
    onehot: list
    feat_col: np.ndarray
    grp_col: np.ndarray
    label_col: int
    n_private: int

    @classmethod
    def of(cls, d, onehot, private_label):
        in_group = np.full(d, -1)
        for g, cols in enumerate(onehot):
            in_group[cols] = g
        attributes = []
        feat_col = np.full(d, -1, dtype=np.int64)
        grp_col = np.zeros(len(onehot), dtype=np.int64)
        for j in range(d):
            g = in_group[j]
            if g < 0:
                feat_col[j] = len(attributes)
                attributes.append((j,))
            elif j == onehot[g].min():
                grp_col[g] = len(attributes)
                attributes.append(tuple(int(k) for k in onehot[g]))
        label_col = -1
        if private_label:
            label_col = len(attributes)
            attributes.append("label")
        n_private = d - len(onehot) + int(private_label)
        return cls(attributes, onehot, feat_col, grp_col, label_col, n_private)

    @property
    def private_label(self):
        return self.label_col >= 0

    def projector(self, p):
        d = self.feat_col.size
        Q = np.zeros((p, p))
        Q[np.arange(d), np.arange(d)] = 1.0
        for cols in self.onehot:
            Q[np.ix_(cols, cols)] -= 1.0 / cols.size
        return Q


@dataclass(frozen=True)
class _Rotations:
    """What every chunk of the per-example pass shares.

    ``K = H^-1 Q H^-1 = (Q H^-1)^T (Q H^-1)`` from the SVD of ``Q H^-1``
    (singular values in decreasing order): ``gamma`` its eigenvalues,
    ``rot[:, :p] = Phi`` maps ``x~_i`` to ``U^T H^-1 x~_i`` and ``rot[:, p:]``
    to ``H^-2 x~_i`` (the intercept's row is ``offset``).
    """

    rot: np.ndarray
    offset: np.ndarray
    gamma: np.ndarray
    yv: np.ndarray
    beta0: float
    w_feat: np.ndarray
    hdiag: np.ndarray
    grp_data: tuple
    layout: "_AttributeLayout"
    inv_sigma: float

    @classmethod
    def of(cls, problem, H_inv, layout, sigma):
        w, d = problem.w, problem.coef.size
        p = w.size
        H_inv2 = H_inv @ H_inv
        Q = layout.projector(p)
        v = Q @ w
        _, sv, Vt = linalg.svd(Q @ H_inv)
        Phi = H_inv @ Vt.T  # rows of X~ @ Phi are U^T H^-1 x_i
        rot = np.hstack([Phi, H_inv2[:, :d]])
        return cls(
            rot=np.ascontiguousarray(rot[:d]),
            offset=rot[d] if problem.fit_intercept else np.zeros(p + d),
            gamma=np.ascontiguousarray(sv**2),
            yv=np.ascontiguousarray(Phi.T @ v),
            beta0=float(v @ v),
            w_feat=np.ascontiguousarray(w[:d]),
            hdiag=np.ascontiguousarray(np.diag(H_inv2)[:d]),
            grp_data=_group_rotations(layout.onehot, H_inv2, w),
            layout=layout,
            inv_sigma=1.0 / sigma,
        )

    def run(self, X, rows, Z, r, c, omega2, fil, dfil, attribute_fil):
        """The rows ``rows``: a GEMM (into ``Z`` when dense), then the kernel."""
        p = self.gamma.size
        chunk = X[rows]
        if issparse(X):  # a dense product; np.matmul(out=) takes no sparse operand
            Z = np.ascontiguousarray(chunk @ self.rot)
        else:
            Z = np.matmul(chunk, self.rot, out=Z[: chunk.shape[0]])
        _row_kernel("per_example_fil")(
            Z,  # C-contiguous [YU, G]
            self.offset[:p],
            self.offset[p:],
            r,
            c,
            omega2,
            self.gamma,
            self.yv,
            self.beta0,
            float(self.gamma.sum()),
            self.w_feat,
            self.hdiag,
            self.layout.feat_col,
            *self.grp_data,
            self.layout.grp_col,
            self.layout.label_col,
            self.inv_sigma,
            1.0 / self.layout.n_private,
            fil,
            dfil,
            attribute_fil,
        )


def _per_example_pass(problem, rotations):
    """Per-example and per-attribute FIL, block by block of rows.

    Each block is one GEMM into a reused, cache-sized buffer, then the numba
    kernel on it while it is still in cache (the kernel adds the intercept
    row of the rotation); segments of blocks run in parallel
    (:func:`~sklearn_fil._threads.row_parallel`).
    """
    X = problem.X
    r, c = problem.derivatives
    n = X.shape[0]
    fil, dfil = np.empty(n), np.empty(n)
    attribute_fil = np.empty((n, len(rotations.layout.attributes)))
    omega2 = problem.omega2
    width = rotations.rot.shape[1]
    block = cache_rows(width)
    if problem.chunk is not None:
        block = min(block, problem.chunk)

    def segment(rows):
        Z = None
        if not issparse(X):
            Z = np.empty((min(block, rows.stop - rows.start), width))
        for sl in row_blocks(rows, block):
            rotations.run(
                X, sl, Z, r[sl], c[sl], omega2[sl], fil[sl], dfil[sl], attribute_fil[sl]
            )

    row_parallel(segment, n)
    return fil, dfil, attribute_fil


def _per_example_report(problem, rotations):
    """The per-example pass, with the MSE bound ``1 / dfil^2``."""
    fil, dfil, attribute_fil = _per_example_pass(problem, rotations)
    with np.errstate(divide="ignore"):
        mse_bound = 1.0 / dfil**2
    return fil, dfil, mse_bound, attribute_fil


def _totals(problem, sums, H_inv, layout, sigma):
    """FIL of every attribute over all examples, of the data set, of groups."""
    w = problem.w
    C2 = sums.hess if sums.C2 is None else sums.C2
    C0 = None
    if layout.private_label:
        C0 = C2 if problem.family.constant_curvature else sums.C0
    total = _attribute_totals(w, H_inv, C2, C0, sums.s, sums.rho2, layout.attributes)
    total_attribute_fil = np.sqrt(np.maximum(total, 0.0)) / sigma

    Q = layout.projector(w.size)
    v = Q @ w
    beta0 = float(v @ v)

    def block_fil(C2_S, C0_S, s_S, rho2_S):
        A = rho2_S * Q + beta0 * C2_S + np.outer(s_S, v) + np.outer(v, s_S)
        if C0_S is not None:
            A = A + C0_S
        return np.sqrt(_top_eig(H_inv @ A @ H_inv)) / sigma

    dataset_fil = block_fil(C2, C0, sums.s, sums.rho2)
    if sums.groups is None:
        return total_attribute_fil, dataset_fil, None
    group_fil = {key: block_fil(*sums.groups[key]) for key in sorted(sums.groups)}
    return total_attribute_fil, dataset_fil, group_fil


def _attribute_totals(w, H_inv, C2, C0, s, rho2, attributes):
    """Squared FIL of each attribute over all examples.

    Attribute ``a`` has the matrix ``H^-1 A_a H^-1`` with ``A_a = ||v_a||^2 C2
    + (s v_a^T + v_a s^T) + rho2 Q_a``. For a plain feature ``j`` this is
    ``w_j^2 M2 + [H^-1 e_j, H^-1 s] [[rho2, w_j], [w_j, 0]] [...]^T``: the
    per-example kernel again, in the eigenbasis of the shared ``M2 = H^-1 C2
    H^-1``.
    """
    from sklearn_fil._compiled import compiled
    from sklearn_fil.fisher._kernels import top_eigenvalue

    top_eigenvalue = compiled(top_eigenvalue)
    p = w.size
    total = np.empty(len(attributes))
    M2 = H_inv @ C2 @ H_inv
    s_h = H_inv @ s
    m2_eval, m2_evec = linalg.eigh(M2)
    m2_eval = np.ascontiguousarray(np.maximum(m2_eval[::-1], 0.0))
    m2_evec = m2_evec[:, ::-1]
    rot_e = np.ascontiguousarray((m2_evec.T @ H_inv).T)  # row j: U^T H^-1 e_j
    rot_s = np.ascontiguousarray(m2_evec.T @ s_h)
    work_a, work_b = np.empty(p), np.empty(p)
    for a_idx, att in enumerate(attributes):
        if att == "label":
            total[a_idx] = _top_eig(H_inv @ C0 @ H_inv)
        elif len(att) == 1:
            j = att[0]
            total[a_idx] = top_eigenvalue(
                m2_eval, w[j] ** 2, rot_e[j], rot_s, rho2, w[j], work_a, work_b
            )
        else:
            cols = np.asarray(att)
            Qa = np.zeros((p, p))
            Qa[np.ix_(cols, cols)] = np.eye(cols.size) - 1.0 / cols.size
            vh = H_inv @ (Qa @ w)
            A = (
                float(w @ Qa @ w) * M2
                + np.outer(s_h, vh)
                + np.outer(vh, s_h)
                + rho2 * (H_inv @ Qa @ H_inv)
            )
            total[a_idx] = _top_eig(A)
    return total


def _group_rotations(onehot, H_inv2, w):
    """Shared eigen-data of each constrained group's per-example problem."""
    ptr = np.zeros(len(onehot) + 1, dtype=np.int64)
    cols_all, rot_all, gamma_all, w_all = [], [], [], []
    for g, cols in enumerate(onehot):
        m = cols.size
        P = np.eye(m) - 1.0 / m
        ev, U = linalg.eigh(P @ H_inv2[np.ix_(cols, cols)] @ P)
        order = np.argsort(ev)[::-1]
        ev, U = np.maximum(ev[order], 0.0), U[:, order]
        R = U.T @ P
        ptr[g + 1] = ptr[g] + m
        cols_all.append(cols)
        rot_all.append(R.ravel())
        gamma_all.append(ev)
        w_all.append(R @ w[cols])
    cat = lambda parts, dtype: (  # noqa: E731
        np.ascontiguousarray(np.concatenate(parts), dtype=dtype)
        if parts
        else np.zeros(0, dtype)
    )
    return (
        ptr,
        cat(cols_all, np.int64),
        cat(rot_all, np.float64),
        cat(gamma_all, np.float64),
        cat(w_all, np.float64),
    )
