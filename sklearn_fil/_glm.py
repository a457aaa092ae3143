"""The numerics of regularised GLMs, shared by the engine, estimators and attacks.

The objective is ``F(w) = sum_i omega_i l(w^T x~_i, y_i) + 1/2 sum_j reg_j w_j^2``
with ``x~ = [x, 1]`` when there is an intercept and ``reg = n lam`` on every
coordinate (``n = sum_i omega_i``), except an unpenalised intercept. This
module owns the problem (:class:`GLMProblem`), the chunked Gram, the
factorisation of the Hessian (:class:`SPDFactor`, through which every linear
solve goes) and Newton's method.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import warnings
from collections import deque
from dataclasses import dataclass, replace

import numpy as np
from scipy import linalg, sparse
from sklearn.exceptions import ConvergenceWarning

from sklearn_fil._losses import get_family
from sklearn_fil._threads import (
    cache_rows,
    gram_block_rows,
    row_blocks,
    row_parallel,
    small_work,
)
from sklearn_fil.utils._clipping import vector_norm
from sklearn_fil.utils._dask import is_dask
from sklearn_fil.utils._sparse import as_csr, issparse, scale_rows

# Smallest eigenvalue of the Jacobi-scaled (unit-diagonal) Hessian, relative
# to its largest, below which the Hessian is singular to working precision:
# the minimiser is then not unique and its FIL unbounded.
SINGULAR_RTOL = 1e3 * np.finfo(np.float64).eps
# A logistic fit on at least 4 x this many rows starts from the minimiser on
# an evenly strided subsample of this many rows (see fit_glm).
WARM_START_ROWS = 10_000
# A reused Hessian is kept while each step is at most this fraction of the
# previous one (see fit_glm).
CHORD_CONTRACTION = 0.1
# Armijo's sufficient decrease, a fraction of the decrease g^T step predicts.
_ARMIJO = 1e-4
# Margin change (times the curvature rate) beyond which the bound of
# _decrease_certified is not tried (it holds there only with a tiny loss
# Gram next to the penalty; the line search then decides).
_MAX_MARGIN_CHANGE = 30.0
# Relative rounding of the weights below which a predicted error is at the
# level of the iterate's own rounding (see fit_glm).
_ROUNDING = 4.0 * np.finfo(np.float64).eps


def check_squares_finite(largest, shape, sums, remedy):
    """Refuse entries whose squares overflow float64 sums over ``shape`` rows.

    ``largest`` is the largest magnitude in ``X``; ``sums`` names what adds
    their squares (the Hessian's Gram, the FIL), ``remedy`` ends the error's
    advice (``"."`` or another way out).
    """
    if not np.isfinite(largest * largest * shape[0] * shape[1]):
        raise ValueError(
            f"X has entries up to {largest:.3g} in magnitude: the sums of their "
            f"squares in {sums} overflow float64. Rescale the features (e.g. "
            f"with StandardScaler){remedy}"
        )


@dataclass(frozen=True)
class GLMProblem:
    """A regularised GLM: its loss family, penalty, intercept and data.

    Its objective is the module's ``F``. The fit, the FIL engine, the
    leave-one-out refits and the attacks' recipe (a problem without data)
    describe their GLM with it.

    Attributes
    ----------
    family : family of :mod:`sklearn_fil._losses`, or its name
        The loss family (a name is looked up).
    lam : float
        L2 strength: the penalty is ``(n lam / 2) ||w||^2``.
    fit_intercept, penalize_intercept : bool
        Whether there is an intercept (the last weight, of a constant
        feature 1), and whether it is penalised.
    X, y, omega : arrays or None
        The rows (dense, CSR or a row-chunked Dask array), the targets and
        the example weights.
    n_eff : float or None
        The ``n`` of the penalty (a leave-one-out problem keeps the full
        data's); None: ``sum(omega)``.
    """

    family: object
    lam: float
    fit_intercept: bool
    penalize_intercept: bool = False
    X: object = None
    y: object = None
    omega: object = None
    n_eff: float | None = None

    def __post_init__(self):
        object.__setattr__(self, "family", get_family(self.family))

    @property
    def loss(self):
        """The family's name."""
        return self.family.name

    @property
    def n_params(self):
        """Number of weights, the intercept included."""
        return self.X.shape[1] + self.fit_intercept

    def penalty(self, n_eff=None):
        """Diagonal ``reg`` of the penalty's Hessian; ``n_eff`` overrides ``n``."""
        if n_eff is None:
            n_eff = self.omega.sum() if self.n_eff is None else self.n_eff
        reg = np.full(self.n_params, n_eff * self.lam)
        if self.fit_intercept and not self.penalize_intercept:
            reg[-1] = 0.0
        return reg

    def penalised_hessian(self, gram, n_eff=None):
        """``gram + diag(reg)``: the Hessian of ``F`` from its loss Gram."""
        return gram + np.diag(self.penalty(n_eff))

    def augment(self, X=None):
        """``[X, 1]`` with an intercept, else ``X`` (dense or CSR; ``X`` by default)."""
        X = self.X if X is None else X
        if not self.fit_intercept:
            return X
        ones = np.ones((X.shape[0], 1))
        return as_csr(sparse.hstack([X, ones])) if issparse(X) else np.hstack([X, ones])

    def margin(self, w, X=None):
        """``X~ w`` over the rows ``X`` (the problem's by default)."""
        X = self.X if X is None else X
        d = X.shape[1]
        return X @ w[:d] + (w[d] if self.fit_intercept else 0.0)


def weighted_gram(X, weights, has_intercept):
    """:func:`weighted_grams` of one weight vector ``weights >= 0``."""
    return weighted_grams(X, [weights], has_intercept)[0]


def weighted_grams(X, weights, has_intercept):
    """``[X~^T diag(w) X~ for w in weights]`` in one pass over the rows of ``X``.

    Dense ``X`` is read once, in blocks of rows that stay in cache while each
    weight vector scales them and BLAS takes their Gram; the blocks run in
    parallel (:func:`~sklearn_fil._threads.row_parallel`). Unit weights skip
    the scaling. A sparse (CSR) ``X`` takes a sparse product per weight
    vector instead, on an ``nnz`` copy.
    """
    if issparse(X):
        return [_sparse_weighted_gram(X, w, has_intercept) for w in weights]
    n, d = X.shape
    p = d + has_intercept
    unit = [bool(np.all(w == 1.0)) for w in weights]
    block = gram_block_rows(d)

    def segment(rows):
        grams = np.zeros((len(weights), p, p))
        size = min(block, rows.stop - rows.start)
        buffer, ones = np.empty((size, d)), np.ones(size)
        for sl in row_blocks(rows, block):
            Xb = np.ascontiguousarray(X[sl])  # a copy only of strided rows
            for gram, w, plain in zip(grams, weights, unit, strict=True):
                if plain:  # column sums by GEMV rather than Xb.sum(axis=0)
                    A, col = Xb, Xb.T @ ones[: len(Xb)]
                else:
                    sw = np.sqrt(w[sl])
                    A = np.multiply(Xb, sw[:, None], out=buffer[: len(Xb)])
                    col = A.T @ sw
                gram[:d, :d] += A.T @ A
                if has_intercept:
                    gram[:d, d] += col
        return grams

    grams = sum(row_parallel(segment, n))
    if has_intercept:
        grams[:, d, :d] = grams[:, :d, d]
        grams[:, d, d] = [w.sum() for w in weights]
    return list(grams)


def _sparse_weighted_gram(X, weights, has_intercept):
    """:func:`weighted_gram` of a CSR ``X``: ``A^T A`` with ``A = diag(sqrt(w)) X``.

    ``A^T A`` (rather than ``X^T (w X)``) takes the same product for the
    entries ``(j, k)`` and ``(k, j)``; the explicit symmetrisation only
    removes any difference in the order of their sums.
    """
    d = X.shape[1]
    p = d + has_intercept
    A = scale_rows(X, np.sqrt(weights))
    block = (A.T @ A).toarray()
    gram = np.zeros((p, p))
    gram[:d, :d] = 0.5 * (block + block.T)
    if has_intercept:
        col = X.T @ weights
        gram[:d, d] = col
        gram[d, :d] = col
        gram[d, d] = weights.sum()
    return gram


def augment_rmatvec(X, v, has_intercept):
    """``[X, 1]^T v``."""
    out = X.T @ v
    return np.append(out, v.sum()) if has_intercept else out


class SPDFactor:
    """Jacobi-scaled eigendecomposition of a positive definite Hessian.

    ``H = D^-1 S D^-1`` with ``D = diag(H)^-1/2`` and unit-diagonal ``S =
    V diag(e) V^T``. Solves ``D V diag(1/e) V^T D b`` keep full relative
    accuracy when ``H`` is ill-conditioned only because the features have
    very different scales (a column scaled by ``1e4`` and another by
    ``1e-4`` make ``cond(H)`` about ``1e16`` but leave ``S`` well
    conditioned).

    Parameters
    ----------
    H : ndarray of shape (p, p)
        Symmetric Hessian.
    reg : ndarray of shape (p,), default=None
        Added to the diagonal of ``H`` (the penalty), without a copy of ``H``.

    Raises
    ------
    ValueError
        When ``S`` is singular to working precision (smallest eigenvalue at
        most ``SINGULAR_RTOL`` times the largest): the minimiser is then not
        unique, or not determined to working precision, and its FIL unbounded.
    """

    def __init__(self, H, reg=None):
        diag = np.diag(H) if reg is None else np.diag(H) + reg
        if not np.all(diag > 0):
            j = int(np.argmin(diag))
            raise ValueError(
                f"The Hessian of the objective has a zero diagonal entry (weight "
                f"{j}): that weight is not determined by the data. This happens "
                "without a penalty on it (lam=0, or an unpenalised intercept) when "
                "its column is zero wherever the example weights and curvatures "
                "are not, e.g. with separable classes; set lam > 0."
            )
        self.scale = 1.0 / np.sqrt(diag)
        S = H * np.outer(self.scale, self.scale)
        if reg is not None:
            S[np.diag_indices_from(S)] = diag * self.scale**2  # ones, to rounding
        with small_work(*S.shape):
            eval_, evec = linalg.eigh(S)
        if not eval_[-1] > 0 or eval_[0] <= SINGULAR_RTOL * eval_[-1]:
            raise ValueError(
                "The Hessian of the objective is singular to working precision "
                "even after scaling every feature to unit curvature (smallest/"
                f"largest eigenvalue {eval_[0]:.3e}/{eval_[-1]:.3e}): the "
                "minimiser is not determined and its Fisher information loss is "
                "unbounded. This happens with lam=0 when there are fewer "
                "examples than parameters, collinear columns or separable "
                "classes; set lam > 0."
            )
        self.eigenvalues = eval_
        self.eigenvectors = evec

    def solve(self, b):
        """``H^-1 b`` for a vector ``b``."""
        V = self.eigenvectors
        return self.scale * (V @ ((V.T @ (self.scale * b)) / self.eigenvalues))

    def inverse(self):
        """``H^-1`` as a dense matrix."""
        V = self.eigenvectors
        with small_work(*V.shape):
            inverse = (V / self.eigenvalues) @ V.T
        return inverse * np.outer(self.scale, self.scale)


def fit_glm(
    X,
    y,
    omega,
    loss,
    lam,
    fit_intercept,
    penalize_intercept,
    tol,
    max_iter,
    w0=None,
    gtol=None,
    return_loss_hessian=False,
):
    """Minimise ``sum_i omega_i l(w^T x~_i, y_i) + (n lam / 2) ||w||^2``.

    Exact for the squared loss (with ``gtol``, refined until certified, see
    below); damped Newton for the logistic loss, from ``w0``. Once the Newton
    step is below ``tol * (1 + ||w||)`` it is taken in full and the iteration
    stops: quadratic convergence leaves an error of order ``tol^2``. With
    ``gtol`` it stops only where, in addition, the gradient norm is at most
    ``gtol`` (a certificate: with strong convexity ``mu``, the returned
    weights are within ``gtol / mu`` of the exact minimiser, whatever
    ``tol``).

    Each full Hessian is a pass over the rows as costly as a Gram, so the
    logistic fit saves them twice over, without changing where it stops:

    * without ``w0``, on at least ``4 * WARM_START_ROWS`` rows, it starts
      from the minimiser of the same objective on an evenly strided subsample
      of about ``WARM_START_ROWS`` rows (its own ``n`` in the penalty), which
      is within a few percent of the full minimiser;
    * a Hessian is reused for further steps (chord steps: a gradient pass
      each) while their norms shrink at least ``1 / CHORD_CONTRACTION``-fold
      per step. Slower contraction or a damped step computes a fresh
      Hessian. A chord step below the tolerance ends the fit only where the
      contraction so far (``rho``, the ratio of the last two steps) predicts
      an error ``rho / (1 - rho)`` times the step no larger than a last full
      step would leave (``tol`` times the tolerance) or than the rounding of
      ``w`` (the error estimate of simplified Newton methods, Deuflhard 2004);
      otherwise a fresh Hessian gives a last full Newton step, and the
      stopping rule above holds as stated.

    Between Hessians, its passes are the gradients of the chord steps: a full
    Newton step whose margin changes certify the line search's decrease
    (:func:`_decrease_certified`) takes no pass for the objective, and a
    Hessian formed where a chord step was just rejected takes that step's
    gradient.

    ``X`` may be a Dask array chunked by rows (``y`` and ``omega`` then NumPy
    or Dask arrays): every pass over the rows is then a sum over its blocks,
    added in a tree (:class:`DaskRowPasses`), and the iterates equal the
    in-memory ones up to the order of those sums.

    Returns
    -------
    w : ndarray of shape (p,)
        The minimiser, intercept last.
    n_iter : int
        Iterations on the full data, Newton or chord (for the squared loss,
        the solves: 1, more where ``gtol`` asked for refinement).
    loss_hessian : ndarray of shape (p, p) or None
        Only with ``return_loss_hessian``: ``X~^T diag(omega l'') X~`` at
        ``w``, without the penalty, when the fit computed it there: for the
        squared loss (whose ``l'' = 1`` does not depend on ``w``), None for
        the logistic loss (its last Hessian is at the step's start).
    """
    problem = GLMProblem(loss, lam, fit_intercept, penalize_intercept, X, y, omega)
    w, n_iter, gram = newton(problem, tol, max_iter, w0=w0, gtol=gtol)
    return (w, n_iter, gram) if return_loss_hessian else (w, n_iter)


def newton(problem, tol, max_iter, *, w0=None, gtol=None):
    """:func:`fit_glm` of a :class:`GLMProblem`: ``(w, n_iter, loss_hessian)``.

    The package's one Newton solver, for the fit and the leave-one-out refits.
    """
    family = problem.family
    passes = (DaskRowPasses if is_dask(problem.X) else RowPasses)(
        problem.X, problem.y, problem.omega, family, problem.fit_intercept
    )
    n_eff = passes.n_eff if problem.n_eff is None else problem.n_eff
    reg = problem.penalty(n_eff)
    if family.constant_curvature:  # one exact step from zero
        gram, g = passes.newton_system(np.zeros(reg.size))
        factor = SPDFactor(gram, reg)
        w, n_iter = _refine(passes, factor, reg, -factor.solve(g), gtol)
        return w, n_iter, gram
    if w0 is None and problem.X.shape[0] >= 4 * WARM_START_ROWS:
        w0 = _warm_start(problem, tol, max_iter)
    w = np.zeros(reg.size) if w0 is None else w0.copy()
    w, n_iter = _damped_newton(passes, reg, w, tol, max_iter, gtol)
    return w, n_iter, None


def _warm_start(problem, tol, max_iter):
    """The minimiser on an evenly strided subsample (its own ``n``), or None."""
    X, y, omega = _strided_rows(problem.X, problem.y, problem.omega, WARM_START_ROWS)
    try:
        with small_work(*X.shape):
            sub = replace(problem, X=X, y=y, omega=omega, n_eff=None)
            return newton(sub, tol, max_iter)[0]
    except ValueError:
        # the subsample may have no unique minimiser where the data do
        # (lam=0: separable, or a column zero on its rows): start at zero
        return None


def _refine(passes, factor, reg, w, gtol, max_steps=3):
    """The exact solve ``w``, refined until its gradient is at most ``gtol``.

    ``(w, n_solves)``. Rounding leaves the solve of the normal equations a
    gradient of about ``cond * eps`` of its terms; each step of iterative
    refinement (a gradient pass and a solve with the same ``factor``)
    divides it by about ``1 / (cond * eps)``. Without ``gtol``, ``w`` as
    it is.
    """
    if gtol is None:
        return w, 1
    for n_solves in range(1, max_steps + 2):
        g = passes.gradient(w) + reg * w
        if vector_norm(g) <= gtol:
            return w, n_solves
        w = w - factor.solve(g)
    raise ValueError(
        f"The solve of the normal equations did not reach the gradient norm "
        f"{gtol:.3g} that certifies the guarantee after {max_steps} steps of "
        f"iterative refinement (gradient norm {vector_norm(g):.3g}): the "
        "penalised Gram matrix is too ill-conditioned. Raise lam or rescale "
        "the features."
    )


def _damped_newton(passes, reg, w, tol, max_iter, gtol):
    """Newton's iteration of :func:`fit_glm` from ``w``: ``(w, n_iter)``."""
    rate = passes.family.curvature_rate

    def objective(w):
        return passes.objective(w) + 0.5 * float(reg @ (w * w))

    def certified(w):
        return gtol is None or vector_norm(passes.gradient(w) + reg * w) <= gtol

    f, factor, last = None, None, np.inf
    for it in range(1, max_iter + 1):
        small = tol * (1.0 + vector_norm(w))
        if factor is not None:  # a chord step with the last Hessian
            step = factor.solve(passes.gradient(w) + reg * w)
            size = vector_norm(step)
            if small < size <= CHORD_CONTRACTION * last:
                w, f, last = w - step, None, size
                continue
            # the error the contraction so far predicts after this step: no
            # larger than a full step's (tol * small) or the rounding of w
            rho = size / last
            settled = max(tol * small, _ROUNDING * (1.0 + vector_norm(w)))
            if size <= small and rho < 1 and rho / (1 - rho) * size <= settled:
                if certified(w - step):
                    return w - step, it
        gram, g = passes.newton_system(w)
        g = g + reg * w
        factor = SPDFactor(gram, reg)
        step = factor.solve(g)
        if vector_norm(step) <= small:
            # inside the region of quadratic convergence: a last full step
            if certified(w - step):
                return w - step, it
            w, f, factor = w - step, None, None  # not certified yet: go on
            continue
        if _decrease_certified(passes, rate, w, step, g, gram, reg):
            w_new, f = w - step, None  # the line search's first trial
        else:
            w_new, f = _line_search(
                objective, w, objective(w) if f is None else f, g, step
            )
        if np.array_equal(w_new, w - step):
            last = vector_norm(step)
        else:  # damped: too far from the minimiser to reuse this Hessian
            factor, last = None, np.inf
        w = w_new
    certify = "" if gtol is None else f" and the gradient norm {gtol:.3g}"
    raise ValueError(
        f"Newton's method did not reach the tolerance tol={tol}{certify} in "
        f"max_iter={max_iter} iterations: the objective may have no minimiser "
        "(separable classes with lam=0). Set lam > 0 or raise max_iter."
    )


def _strided_rows(X, y, omega, size):
    """Every ``len(X) // size``-th row of ``X``, ``y`` and ``omega``, in memory."""
    rows = slice(None, None, X.shape[0] // size)
    parts = (X[rows], y[rows], omega[rows])
    if is_dask(X):
        import dask

        parts = dask.compute(*parts)
    # contiguous copies: BLAS takes strided rows only through a slow loop
    return tuple(np.ascontiguousarray(a) if not issparse(a) else a for a in parts)


class RowPasses:
    """The sums over the rows that Newton's method needs, on arrays in memory.

    ``objective(w) = sum_i omega_i l_i``, ``gradient(w) = X~^T omega r`` and
    ``newton_system(w) = (X~^T diag(omega c) X~, X~^T omega r)``, without the
    penalty. Newton asks for them at the same ``w`` in turn, and for a trial
    step beside the point it steps from, so the margins (and gradients) at
    the last two ``w`` are kept.
    """

    def __init__(self, X, y, omega, loss, fit_intercept):
        self.X, self.y, self.omega = X, y, omega
        self.family = get_family(loss)
        self.fit_intercept = fit_intercept
        self.n_features = X.shape[1]
        self.n_eff = float(omega.sum())
        self._kept = deque(maxlen=2)  # [w, margin, gradient or None]

    def _entry(self, w):
        """The kept ``[w, margin, gradient or None]`` of ``w``, made the
        newest; None if not kept."""
        for k, entry in enumerate(self._kept):
            if np.array_equal(entry[0], w):
                del self._kept[k]
                self._kept.append(entry)
                return entry
        return None

    def _margin_entry(self, w):
        """:meth:`_entry` of ``w``, its margins ``X~ w`` computed if needed."""
        entry = self._entry(w)
        if entry is not None:
            return entry
        d = self.n_features
        b = w[d] if self.fit_intercept else 0.0
        if np.any(w[:d]):
            margin = self.X @ w[:d] + b
        else:  # Newton's start: no pass over X
            margin = np.full(self.X.shape[0], b)
        self._kept.append([w.copy(), margin, None])
        return self._kept[-1]

    def margin(self, w):
        """``X~ w``."""
        return self._margin_entry(w)[1]

    def margin_change(self, w, w_new):
        """``max_i |x~_i^T (w_new - w)|``, keeping the margins at both.

        The gradient at ``w_new`` comes with its margins (one read of a dense
        ``X``, :meth:`_gradient_entry`): a step taken asks for it next.
        """
        old = self.margin(w)
        new = self._gradient_entry(w_new)[1]
        return float(np.max(np.abs(new - old), initial=0.0))

    def objective(self, w):
        return float(self.omega @ self.family.value(self.margin(w), self.y))

    def gradient(self, w):
        return self._gradient_entry(w)[2]

    def _gradient_entry(self, w):
        """:meth:`_entry` of ``w`` with its margins and gradient, computed if
        needed (in one read of a dense ``X``: :meth:`_fused_entry`)."""
        entry = self._entry(w)
        if entry is None:
            if not issparse(self.X):
                return self._fused_entry(w)
            entry = self._margin_entry(w)
        if entry[2] is None:
            r, _ = self.family.derivatives(entry[1], self.y)
            entry[2] = augment_rmatvec(self.X, self.omega * r, self.fit_intercept)
        return entry

    def _fused_entry(self, w):
        """:meth:`_gradient_entry` of a new ``w``, for a dense ``X``.

        Each cache-sized block of rows takes its margins, then its part of
        ``X~^T omega r`` while it is still in cache (a segment's rows at
        once, 26 MB at d = 100, took 1.46 times as long at n = 10^6: a
        second read from memory); the segments of blocks run in parallel
        (:func:`~sklearn_fil._threads.row_parallel`). A Newton system at a
        new ``w`` takes its gradient and margins from here too.
        """
        X, y, omega, d = self.X, self.y, self.omega, self.n_features
        margin = np.empty(X.shape[0])
        block = cache_rows(d)

        def segment(rows):
            gradient = np.zeros(w.size)
            for sl in row_blocks(rows, block):
                Xb = X[sl]
                m = np.matmul(Xb, w[:d], out=margin[sl])
                if self.fit_intercept:
                    m += w[d]
                v = omega[sl] * self.family.derivatives(m, y[sl])[0]
                gradient[:d] += Xb.T @ v
                if self.fit_intercept:
                    gradient[d] += v.sum()
            return gradient

        self._kept.append([w.copy(), margin, sum(row_parallel(segment, X.shape[0]))])
        return self._kept[-1]

    def newton_system(self, w):
        _, margin, g = self._gradient_entry(w)
        _, c = self.family.derivatives(margin, self.y)
        return weighted_gram(self.X, self.omega * c, self.fit_intercept), g


class DaskRowPasses:
    """:class:`RowPasses` of a row-chunked Dask array: each a tree of block sums."""

    def __init__(self, X, y, omega, loss, fit_intercept):
        from sklearn_fil.utils._dask import check_row_chunked, rows_like

        self.X = check_row_chunked(X)
        self.y = rows_like(y, self.X, "y")
        self.omega = rows_like(omega, self.X, "sample_weight")
        self.family, self.fit_intercept = get_family(loss), fit_intercept
        self.n_features = X.shape[1]
        self.n_eff = float(self._sum("n_eff", None))

    def _sum(self, method, w):
        from sklearn_fil.utils._dask import tree_sum

        return tree_sum(
            _block_pass,
            self.X,
            (self.y, self.omega),
            method,
            w,
            self.family,
            self.fit_intercept,
        )

    def margin_change(self, w, w_new):
        """Unknown (``inf``): the margins of a Dask array are not kept, so
        a step's decrease is judged by the objective."""
        return np.inf

    def objective(self, w):
        return float(self._sum("objective", w))

    def gradient(self, w):
        return self._sum("gradient", w)

    def newton_system(self, w):
        system = self._sum("newton_system", w)
        return system[:, :-1], system[:, -1]


def _block_pass(X, y, omega, method, w, loss, fit_intercept):
    """One :class:`RowPasses` sum on one block, as an array (sums add)."""
    passes = RowPasses(X, y, omega, loss, fit_intercept)
    if method == "n_eff":
        return passes.n_eff
    if method == "newton_system":
        return np.column_stack(passes.newton_system(w))
    return getattr(passes, method)(w)


def _decrease_certified(passes, rate, w, step, g, gram, reg):
    """Whether the full Newton step decreases ``F`` enough for
    :func:`_line_search`, judged from the margins it moves, without ``F``.

    With ``|l'''| <= R l''`` (``rate``, the family's ``curvature_rate``),
    each term's curvature changes at most by ``exp(R |t|)`` along a margin
    change ``t``, so ``l(m + t) <= l(m) + l'(m) t + l''(m) t^2 phi(R |t|) /
    2`` with ``phi(T) = 2 (e^T - 1 - T) / T^2``, increasing from ``phi(0) =
    1``. Summed over the rows, with ``T`` the largest margin change and the
    penalty exactly quadratic::

        F(w - s) <= F(w) - g^T s + (phi(T) s^T G s + s^T diag(reg) s) / 2

    (``G`` the loss Gram). The test asks the decrease ``_ARMIJO g^T s`` of
    the line search with a slack of as much again (far above the rounding of
    the quadratic forms). Where it holds, the line search takes the full
    step in exact arithmetic too, so the iterates are the same while the
    objective's passes are saved (the margins, kept, serve the next
    gradient). Its own test on rounded objectives can differ only where the
    decrease is below their rounding, near the tolerance, where it would
    backtrack on noise.
    """
    T = rate * passes.margin_change(w, w - step)
    if not T <= _MAX_MARGIN_CHANGE:  # phi(T) > 1e10 (or inf: not known)
        return False
    phi = 1.0 + T if T < 1e-3 else 2.0 * (np.expm1(T) - T) / (T * T)
    gs = float(g @ step)
    bound = 0.5 * (phi * float(step @ gram @ step) + float(reg @ (step * step)))
    return bound <= (1.0 - 2.0 * _ARMIJO) * gs


def _line_search(objective, w, f, g, step):
    """Backtracking (Armijo) along ``-step`` on a convex objective."""
    # the slack admits steps whose decrease is below the rounding of f
    slack = 16 * np.finfo(float).eps * abs(f)
    t = 1.0
    while True:
        w_new = w - t * step
        f_new = objective(w_new)
        if f_new <= f - _ARMIJO * t * float(g @ step) + slack or t < 1e-10:
            return w_new, f_new
        t *= 0.5


def warn_unconverged(sensitivity, max_iter, stacklevel=2):
    """Warn of the leave-one-out problems whose ``sensitivity`` is NaN."""
    failed = np.isnan(sensitivity)
    if failed.any():
        warnings.warn(
            f"The leave-one-out minimiser of {failed.sum()} of {failed.size} "
            f"examples did not converge in max_iter={max_iter} Newton steps (their "
            "leave-one-out sensitivity is NaN): without a penalty, removing an "
            "example can leave an objective with no minimiser. Set lam > 0.",
            ConvergenceWarning,
            stacklevel=stacklevel + 1,
        )


@dataclass(frozen=True)
class LeaveOneOutInterval:
    """Certified brackets of the leave-one-out sensitivities of a GLM.

    Attributes
    ----------
    lower, upper : ndarray of shape (n_samples,)
        ``lower <= Delta_i = ||w* - w_-i|| <= upper`` (the Frobenius norm
        of a multinomial model's weights):
        ``(0, inf)`` where no interval is certified, ``(0, 0)`` where
        ``omega_i = 0``.
    reach : ndarray of shape (n_samples,)
        Upper bound on ``||w - w_-i||``, from the given weights (the released
        centre) to the exact leave-one-out minimiser.
    fit_error : float
        Upper bound ``e_0`` on ``||w - w*||``, from the given weights to the
        exact minimiser on all the data.
    """

    lower: np.ndarray
    upper: np.ndarray
    reach: np.ndarray
    fit_error: float


def localised_distance(g_euclid, T, g_dual, lam, L, rate=1.0):
    """Certified ``||u - argmin F_-i||`` from the remainder bounds at ``u`` (arrays).

    ``g_euclid`` and ``g_dual`` bound the gradient of ``F_-i`` at ``u`` in
    the Euclidean and ``H_-i^-1`` norms; ``u`` is ``T / L`` from the
    expansion point; ``lam`` bounds ``lambda_min(H_-i)``; the loss's
    curvature changes by at most ``e^(rate |t|)`` over a margin step ``t``.
    Within ``rho = 4 g_euclid e^(rate T) / lam`` the Hessian is at least
    ``alpha H_-i``, ``alpha = e^-(rate (T + L rho))``, which localises the
    minimiser in that ball where ``rate L rho <= ln 2``; ``inf`` where it
    does not (see :mod:`sklearn_fil._leave_one_out`).
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        rho = 4.0 * g_euclid * np.exp(rate * T) / lam
        alpha = np.exp(-rate * (T + L * rho))
        error = np.minimum(g_euclid / (alpha * lam), g_dual / (alpha * np.sqrt(lam)))
        ok = (lam > 0) & (rate * L * rho <= np.log(2.0))
    return np.where(ok, np.where(g_euclid > 0, error, 0.0), np.inf)
