"""Multinomial (softmax) logistic regression: fit, exact FIL and leave-one-out.

The objective, over the weights ``W`` of shape ``(K, p)`` (one row per class,
``p = d + fit_intercept``, the intercept last), is::

    F(W) = sum_i omega_i l(W x~_i, y_i) + 1/2 sum_j reg_j ||W[:, j]||^2,
    l(z, y) = logsumexp(z) - z_y = -sum_k y_k log softmax(z)_k,

``reg`` the penalty of :class:`sklearn_fil._glm.GLMProblem` (``n lam`` on
every column, except an unpenalised intercept). The vector of weights is
``W.ravel()`` (class-major: index ``k p + j``). With ``P = softmax(W x~)``,
``S = diag(P) - P P^T`` and ``g = P - e_y``::

    grad_W l = g x~^T,      Hessian of l = S (kron) x~ x~^T.

Gauge. ``l`` is invariant to ``W[:, j] -> W[:, j] + t 1``: every column of
the loss Hessian sums to zero over the classes. A penalised column has its
minimiser on ``sum_k W[k, j] = 0`` (the loss gradient sums to zero over the
classes, so stationarity leaves ``reg_j sum_k W[k, j] = 0``); an
unpenalised one (the intercept without a penalty, every column with
``lam=0``) is fixed there: every gradient sums to zero over the classes in
such a column, so Newton's iterates from zero stay on the gauge, and every
Hessian solved with (``hessian``) adds ``c_j (sum_k W[k, j])^2 / 2``, ``c_j``
the column's mean curvature over the classes, which makes it definite
without changing it on the gauge. Every data derivative ``M_i`` below sums
to zero over the classes too, so ``H^-1 M_i`` is the Jacobian of the
minimiser on the gauge, whatever the ``c_j``.

FIL (Hannun et al., 2021, with the label a one-hot group). The Jacobian of
the minimiser with respect to example ``i``'s coordinates ``z_i = [x_i,
y_i]`` is ``J_i = -omega_i H^-1 M_i``, ``M_i = d/dz_i grad_W l_i``::

    d/dx_j grad_W l = (S W[:, j]) x~^T + g e_j^T,
    d/dy_m grad_W l = (P - e_m) x~^T       (l = -sum_k y_k log P_k).

The label, like a constrained one-hot group of features, is measured on the
tangent space of "sum to one" (``K - 1`` coordinates; the ``P x~^T`` term
drops there). With ``B`` an orthonormal basis of the private coordinates,
the example's FIM is ``B^T J_i^T J_i B / sigma^2``: its largest eigenvalue
gives ``fil``, its trace ``dfil``, its diagonal blocks the per-attribute
FIL. These ``k x k`` matrices (``k`` private coordinates) are formed
exactly, in batches, as ``omega_i^2 (M_i B)^T H^-2 (M_i B)``: ``O(n (K
p)^2 (d + K))`` time, ``O((K p)^2)`` memory besides the batch. Over all
examples, attribute ``a`` has the FIM ``H^-1 C_a H^-1`` with ``C_a = sum_i
omega_i^2 (M_i B_a)(M_i B_a)^T``; the data set's sums every ``C_a``.

Leave-one-out. ``Delta_i = ||W*(D) - W*(D_-i)||`` (example ``i``'s loss
term removed, the penalty and ``n`` kept) by Newton's method on ``F_-i``
from the minimiser, with the fixed Hessian ``H(W*) - omega_i S_i (kron)
x~_i x~_i^T`` (chord steps, a gradient pass each), to the relative
tolerance ``tol``, all problems together in blocks: ``O(n^2 K p)`` per step
over all examples, ``O(n (K p)^3)`` for the inverses. A problem contracting
slower than half per step (a far minimiser) is finished by the damped
Newton of :func:`fit_multinomial`. About 3 s at ``n = 2000, d = 10, K =
3`` (the report: 0.1 s), on one core.

Certified interval (:func:`leave_one_out_interval`, ``O(n (K p)^2)`` after
``H^-1``). The argument of :mod:`sklearn_fil._leave_one_out` with the
softmax's third derivative. With ``psi(z) = logsumexp(z) - z_y``, ``P =
softmax(z)`` and ``E`` the mean under ``P``, ``D^2 psi(z)[v, v] = Var_P(v)``
and::

    D^3 psi(z)[u, v, v] = E[(u - E u)(v - E v)^2],

so ``|D^3 psi(z)[u, v, v]| <= osc(u) D^2 psi(z)[v, v]`` with ``osc(u) = max_k
u_k - min_k u_k <= min(2 ||u||_inf, sqrt(2) ||u||)``, and by Cauchy-Schwarz
``|D^3 psi(z)[a, t, t]| <= osc(t) (D^2 psi[a, a] D^2 psi[t, t])^(1/2)``.
Along ``z + s t`` the log of ``D^2 psi[v, v]`` moves at rate at most
``osc(t)``, so ``e^-osc(t) S(z) <= S(z + t) <= e^osc(t) S(z)``. The objective
is ``F~ = F + Q-part``: the penalty and, in unpenalised columns, the gauge
quadratic of :meth:`MultinomialProblem.hessian` (its minimiser is ``F``'s on
the gauge, so ``Delta_i`` is unchanged); ``H`` is its Hessian at the fitted
``W``, ``r`` its gradient, ``Q`` its constant part, ``K = H - Q`` the loss
part. The Newton step of ``F~_-i`` from ``W`` is ``v_i = H_-i^-1 (omega_i
g_i (kron) x~_i - r)``, ``H_-i = H - omega_i S_i (kron) x~_i x~_i^T``, by
Woodbury with a ``K x K`` solve per row (:func:`_interval_rows`). The
displacement ``t_j = V_i x~_j`` of row ``j``'s logits has ``osc(t_j) <=
sqrt(2) ||t_j|| <= T_i = sqrt(2) L ||v_i||`` (``L = max ||x~_j||``, Frobenius
``||v_i||``), and the Taylor remainder ``R_i = sum_{j != i} omega_j b_j
x~_j^T``, ``b_j = int_0^1 (1 - s) D^3 psi(z_j + s t_j)[t_j, t_j, .] ds``, has
``||b_j|| <= sqrt(2) e^T_i t_j^T S_j t_j / 2`` (``osc(a) <= sqrt(2)`` for a
unit ``a``), so::

    ||R_i||_F         <= (sqrt(2) L / 2) e^T_i v_i^T K v_i
    ||R_i||_{H_-i^-1} <= (1 / 2) e^T_i T_i (v_i^T K v_i)^(1/2)

the binary bounds with ``L`` replaced by ``sqrt(2) L`` (curvature rate 1).
Within ``rho`` of ``W + v_i`` the Hessian of ``F~_-i`` is at least
``e^-(T_i + sqrt(2) L rho) H_-i``, and ``lambda_min(H_-i) >= lambda_min(H)
- omega_i lambda_max(S_i) ||x~_i||^2`` (Weyl) with ``lambda_max(S) <=
min(1 - ||P||^2, max_k 2 P_k (1 - P_k))`` (trace; Gershgorin). The
localisation, the fit error ``e_0`` and the interval ``||v_i|| +- (e_i +
e_0)`` follow as in the binary module, with ``L -> sqrt(2) L``
(:func:`~sklearn_fil._glm.localised_distance`); rows not localised get ``(0, inf)``.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from dataclasses import dataclass, replace

import numpy as np
from scipy import linalg
from scipy.special import logsumexp, softmax

from sklearn_fil._glm import (
    SINGULAR_RTOL,
    GLMProblem,
    LeaveOneOutInterval,
    SPDFactor,
    _line_search,
    localised_distance,
    warn_unconverged,
    weighted_grams,
)
from sklearn_fil.utils._clipping import vector_norm
from sklearn_fil.utils._sparse import issparse

# Lipschitz constant of l(., y) in the logits: ||softmax(z) - e_y|| <= sqrt(2)
# (Sum_{k != y} P_k^2 + (1 - P_y)^2 <= 2 (1 - P_y)^2), so ||grad_W l||_F <=
# sqrt(2) ||x~||.
LIPSCHITZ = float(np.sqrt(2.0))
# Largest eigenvalue of S = diag(P) - P P^T is at most 1/2: the smoothness of
# l in the logits (the binary loss's is 1/4).
SMOOTHNESS = 0.5
# Bytes of the batch of per-example derivatives in the FIL pass.
_BATCH_BYTES = 2**23
# A leave-one-out chord iteration contracting slower than this gets a fresh
# Hessian.
_SLOW_RATE = 0.5
# Bytes of the n x K temporaries of one block of leave-one-out problems.
_LOO_BLOCK_BYTES = 2**25
# Relative error allowed, per unit of lambda_max(H) / lambda_min(H_-i), for
# the one-step shifts computed through H^-1 (as the binary module's).
_ROUNDING = 1e-12


@dataclass(frozen=True)
class MultinomialProblem:
    """A multinomial GLM: the data, the number of classes and the penalty.

    Attributes
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
        The rows as fitted.
    y : ndarray of shape (n_samples,)
        Class codes ``0 .. n_classes - 1``.
    omega : ndarray of shape (n_samples,)
        Example weights.
    n_classes : int
        ``K >= 2``.
    lam, fit_intercept, penalize_intercept
        As in :class:`sklearn_fil._glm.GLMProblem`.
    n_eff : float or None
        The ``n`` of the penalty (None: ``sum(omega)``).
    """

    X: object
    y: np.ndarray
    omega: np.ndarray
    n_classes: int
    lam: float
    fit_intercept: bool
    penalize_intercept: bool = False
    n_eff: float | None = None

    @property
    def glm(self):
        """The binary :class:`GLMProblem` of the same penalty and rows."""
        return GLMProblem(
            "logistic",
            self.lam,
            self.fit_intercept,
            self.penalize_intercept,
            self.X,
            None,
            self.omega,
            self.n_eff,
        )

    @property
    def shape(self):
        """``(K, p)`` of the weights."""
        return self.n_classes, self.X.shape[1] + self.fit_intercept

    def penalty_n(self):
        """The ``n`` of the penalty: ``n_eff``, or the sum of the weights."""
        return float(self.omega.sum()) if self.n_eff is None else self.n_eff

    def penalty(self):
        """``reg``: the penalty of each column (0 where it has none)."""
        return self.glm.penalty()

    def logits(self, W, rows=slice(None)):
        """``X~ W^T`` over ``rows``."""
        X = self.X[rows]
        d = X.shape[1]
        Z = np.asarray(X @ W[:, :d].T)
        return Z + W[:, d] if self.fit_intercept else Z

    def objective(self, W):
        Z = self.logits(W)
        losses = logsumexp(Z, axis=1) - Z[np.arange(Z.shape[0]), self.y]
        penalty = self.penalty() @ (W * W).sum(axis=0)
        return float(self.omega @ losses) + 0.5 * float(penalty)

    def gradient(self, W):
        """``grad F(W)``, shape ``(K, p)``."""
        G = softmax(self.logits(W), axis=1)
        G[np.arange(G.shape[0]), self.y] -= 1.0
        G *= self.omega[:, None]
        d = self.X.shape[1]
        out = np.empty(W.shape)
        out[:, :d] = np.asarray(self.X.T @ G).T
        if self.fit_intercept:
            out[:, d] = G.sum(axis=0)
        return out + self.penalty() * W

    def hessian(self, W):
        """``H(W)`` of ``F`` plus the gauge term, shape ``(K p, K p)``."""
        K, p = self.shape
        P = softmax(self.logits(W), axis=1)
        pairs = [(k, m) for k in range(K) for m in range(k, K)]
        # S_km = P_k (delta_km - P_m): off the diagonal the negated Gram of
        # the weights P_k P_m >= 0 (weighted_grams takes square roots)
        weights = [
            self.omega * P[:, k] * (1.0 - P[:, k] if k == m else P[:, m])
            for k, m in pairs
        ]
        grams = weighted_grams(self.X, weights, self.fit_intercept)
        H = np.zeros((K, p, K, p))
        for (k, m), gram in zip(pairs, grams, strict=True):
            H[k, :, m, :] = gram if k == m else -gram
            H[m, :, k, :] = H[k, :, m, :]
        reg = self.penalty()
        H[np.arange(K), :, np.arange(K), :] += np.diag(reg)
        # the gauge of each unpenalised column, at the column's mean curvature
        # (which keeps the Jacobi-scaled Hessian as well conditioned as F's)
        for j in np.flatnonzero(reg == 0):
            H[:, j, :, j] += np.trace(H[:, j, :, j]) / K
        return H.reshape(K * p, K * p)


def fit_multinomial(problem, tol, max_iter, *, W0=None, gtol=None):
    """Minimise ``F`` by damped Newton: ``(W, n_iter)``.

    The stopping rule of :func:`sklearn_fil._glm.fit_glm`: once the Newton
    step is below ``tol * (1 + ||W||)`` it is taken in full and the
    iteration stops, where (with ``gtol``) the gradient norm is also at most
    ``gtol`` (with strong convexity ``mu`` the weights are then within
    ``gtol / mu`` of the exact minimiser).
    """
    W = np.zeros(problem.shape) if W0 is None else np.array(W0, dtype=np.float64)
    shape = W.shape

    def objective(theta):
        return problem.objective(theta.reshape(shape))

    f = None
    for it in range(1, max_iter + 1):
        g = problem.gradient(W).ravel()
        step = SPDFactor(problem.hessian(W)).solve(g)
        if vector_norm(step) <= tol * (1.0 + vector_norm(W.ravel())):
            W = W - step.reshape(shape)
            if gtol is None or vector_norm(problem.gradient(W).ravel()) <= gtol:
                return W, it
            f = None
            continue
        theta, f = _line_search(
            objective, W.ravel(), objective(W.ravel()) if f is None else f, g, step
        )
        W = theta.reshape(shape)
    certify = "" if gtol is None else f" and the gradient norm {gtol:.3g}"
    raise ValueError(
        f"Newton's method did not reach the tolerance tol={tol}{certify} in "
        f"max_iter={max_iter} iterations: the objective may have no minimiser "
        "(separable classes with lam=0). Set lam > 0 or raise max_iter."
    )


def _tangent_basis(m):
    """``m x (m - 1)`` orthonormal basis of ``{v : sum(v) = 0}``."""
    return linalg.null_space(np.ones((1, m)))


def _layout(d, n_classes, onehot, private_label):
    """``(attributes, B, blocks)``: the engine's attribute order, the basis of
    the private coordinates (rows: the ``d`` features, then the ``K`` label
    indicators) and each attribute's columns of ``B``."""
    in_group = {int(j): g for g, cols in enumerate(onehot) for j in cols}
    columns, attributes = [], []
    for j in range(d):
        if j not in in_group:
            attributes.append((j,))
            columns.append(([j], np.ones((1, 1))))
        elif j == min(onehot[in_group[j]]):
            cols = [int(c) for c in onehot[in_group[j]]]
            attributes.append(tuple(cols))
            columns.append((cols, _tangent_basis(len(cols))))
    if private_label:
        attributes.append("label")
        columns.append((list(range(d, d + n_classes)), _tangent_basis(n_classes)))
    k = sum(basis.shape[1] for _, basis in columns)
    B = np.zeros((d + n_classes * private_label, k))
    blocks, start = [], 0
    for rows, basis in columns:
        B[np.ix_(rows, range(start, start + basis.shape[1]))] = basis
        blocks.append(slice(start, start + basis.shape[1]))
        start += basis.shape[1]
    return attributes, B, blocks


def example_derivatives(problem, W, rows, private_label=True):
    """``M_i = d/dz_i grad_W l_i`` of the rows ``rows``, times ``omega_i``.

    Returns
    -------
    M : ndarray of shape (n_rows, K p, d + K) or (n_rows, K p, d)
        Columns: the ``d`` features, then (``private_label``) the ``K``
        label indicators.
    """
    K, p = problem.shape
    Xt = _dense_rows(problem, rows)
    b, d = Xt.shape[0], problem.X.shape[1]
    P = softmax(problem.logits(W, rows), axis=1)
    G = P.copy()
    G[np.arange(b), problem.y[rows]] -= 1.0
    # S W[:, :d] = P * W - P (P^T W), row by row
    T = P[:, :, None] * W[None, :, :d] - P[:, :, None] * (P @ W[:, :d])[:, None, :]
    c = d + K * private_label
    M = np.zeros((b, K, p, c))
    M[..., :d] = T[:, :, None, :] * Xt[:, None, :, None]
    M[:, :, np.arange(d), np.arange(d)] += G[:, :, None]
    if private_label:
        eye = np.eye(K)
        M[..., d:] = (P[:, :, None] - eye)[:, :, None, :] * Xt[:, None, :, None]
    M *= problem.omega[rows, None, None, None]
    return M.reshape(b, K * p, c)


def multinomial_fil(problem, W, sigma, *, private_label=True, onehot=()):
    """Exact FIL of the release ``W + N(0, sigma^2 I)`` (module docstring).

    Parameters
    ----------
    problem : MultinomialProblem
    W : ndarray of shape (K, p)
        The minimiser.
    sigma : float
        Noise std of the release.
    private_label : bool, default=True
        Whether the label is private (a group of ``K - 1`` coordinates).
    onehot : sequence of array-like of int, default=()
        Columns of each constrained one-hot group of features.

    Returns
    -------
    fields : dict
        The fields of the engine's
        :class:`~sklearn_fil.fisher.FisherInformationLoss` (see there; the
        estimator makes one of them), ``hessian`` and ``gradient`` over
        ``W.ravel()``; the label, when private, is one attribute of ``K - 1``
        private coordinates.
    """
    K, p = problem.shape
    d = p - problem.fit_intercept
    attributes, B, blocks = _layout(d, K, onehot, private_label)
    H = problem.hessian(W)
    H_inv = SPDFactor(H).inverse()
    H_inv2 = H_inv @ H_inv
    n, k = problem.X.shape[0], B.shape[1]
    fil, dfil = np.empty(n), np.empty(n)
    attribute_fil = np.empty((n, len(attributes)))
    C = np.zeros((len(attributes), K * p, K * p))
    batch = max(1, _BATCH_BYTES // (8 * K * p * (B.shape[0] + k)))
    for start in range(0, n, batch):
        rows = slice(start, min(n, start + batch))
        MB = example_derivatives(problem, W, rows, private_label) @ B
        fim = np.swapaxes(MB, 1, 2) @ (H_inv2 @ MB)  # (b, k, k), times sigma^2
        fil[rows] = np.sqrt(np.maximum(np.linalg.eigvalsh(fim)[:, -1], 0.0))
        dfil[rows] = np.sqrt(np.maximum(np.trace(fim, axis1=1, axis2=2), 0.0) / k)
        for a, cols in enumerate(blocks):
            top = np.linalg.eigvalsh(fim[:, cols, cols])[:, -1]
            attribute_fil[rows, a] = np.sqrt(np.maximum(top, 0.0))
            Ma = np.swapaxes(MB[:, :, cols], 0, 1).reshape(K * p, -1)
            C[a] += Ma @ Ma.T
    fil, dfil, attribute_fil = fil / sigma, dfil / sigma, attribute_fil / sigma
    with np.errstate(divide="ignore"):
        mse_bound = 1.0 / dfil**2

    def top(A):
        return float(np.sqrt(max(linalg.eigvalsh(H_inv @ A @ H_inv)[-1], 0.0)))

    return dict(
        fil=fil,
        dfil=dfil,
        mse_bound=mse_bound,
        attribute_fil=attribute_fil,
        attributes=attributes,
        total_attribute_fil=np.array([top(Ca) for Ca in C]) / sigma,
        dataset_fil=top(C.sum(axis=0)) / sigma,
        group_fil=None,
        n_private=k,
        hessian=H,
        gradient=problem.gradient(W).ravel(),
    )


def _refit_without(problem, W_hat, i, tol, max_iter):
    """``||W_-i - W_hat||`` by the damped Newton of :func:`fit_multinomial`
    from ``W_hat``; NaN where it fails (no minimiser, or no convergence)."""
    omega = problem.omega.copy()
    omega[i] = 0.0
    try:
        W, _ = fit_multinomial(replace(problem, omega=omega), tol, max_iter, W0=W_hat)
    except ValueError:
        return np.nan
    return vector_norm((W - W_hat).ravel())


def leave_one_out_sensitivity(problem, W, *, tol=1e-10, max_iter=100):
    """``Delta_i = ||W*(D) - W*(D_-i)||`` of every example (module docstring).

    ``W*(D)`` is ``W`` refined by one Newton step (a fit stopped at a looser
    tolerance does not shift ``Delta_i``); ``D_-i`` keeps the penalty's
    ``n``. The problems iterate together, in blocks whose ``n x K``
    temporaries stay near ``_LOO_BLOCK_BYTES``; one contracting slower than
    ``_SLOW_RATE`` per step is finished alone with fresh Hessians. ``inf``
    where removing the example leaves a singular Hessian or, in an
    unpenalised column, no example of its class; NaN (with a warning) where
    the iteration did not converge in ``max_iter`` steps.

    Returns
    -------
    sensitivity : ndarray of shape (n_samples,)
    """
    problem = replace(problem, n_eff=float(problem.penalty_n()))
    H = problem.hessian(W)
    W_hat = W - SPDFactor(H).solve(problem.gradient(W).ravel()).reshape(W.shape)
    H_hat = problem.hessian(W_hat)
    n, K = problem.X.shape[0], W.shape[0]
    sensitivity = np.zeros(n)
    rows = np.flatnonzero(problem.omega > 0)
    if np.any(problem.penalty() == 0):
        # the only example of its class: without it that class's logits
        # decrease without bound in an unpenalised column (no minimiser)
        alone = np.bincount(problem.y[rows], minlength=K)[problem.y[rows]] == 1
        sensitivity[rows[alone]] = np.inf
        rows = rows[~alone]
    block = max(1, _LOO_BLOCK_BYTES // (8 * 4 * n * K))
    for start in range(0, rows.size, block):
        part = rows[start : start + block]
        delta, slow = _refit_block(problem, W_hat, H_hat, part, tol, max_iter)
        sensitivity[part] = delta
        for i in part[slow]:
            sensitivity[i] = _refit_without(problem, W_hat, i, tol, max_iter)
    warn_unconverged(sensitivity, max_iter)
    return sensitivity


def _removed_inverses(problem, H, W, rows):
    """``(H_-i)^-1`` of the rows (Jacobi-scaled inverses) and which are singular."""
    K, p = problem.shape
    Xt = _dense_rows(problem, rows)
    P = softmax(problem.logits(W, rows), axis=1)
    S = P[:, :, None] * (np.eye(K) - P[:, None, :])
    update = np.einsum("bkm,bj,bl->bkjml", S, Xt, Xt).reshape(len(rows), K * p, -1)
    H_minus = H - problem.omega[rows, None, None] * update
    scale = 1.0 / np.sqrt(np.diag(H))
    A = H_minus * np.outer(scale, scale)
    eig = np.linalg.eigvalsh(A)
    singular = ~(eig[:, 0] > SINGULAR_RTOL * eig[:, -1])
    A[singular] = np.eye(K * p)
    return np.linalg.inv(A) * np.outer(scale, scale), singular


def _dense_rows(problem, rows):
    """``X~`` of the rows, dense."""
    Xb = problem.X[rows]
    Xb = Xb.toarray() if issparse(Xb) else np.asarray(Xb)
    return np.hstack([Xb, np.ones((len(Xb), 1))]) if problem.fit_intercept else Xb


def _block_gradients(problem, W_hat, U, rows, Xt_rows):
    """``grad F_-i(W_hat + U_i)`` of the problems of ``rows``, ``(b, K, p)``.

    The logits are laid out ``(K, n, b)``: the softmax's reductions over the
    classes are then elementwise operations on ``n x b`` slices.
    """
    X, omega = problem.X, problem.omega
    b, K, p = U.shape
    n, d = X.shape
    Wb = W_hat + U
    Wd = Wb[:, :, :d].transpose(2, 1, 0).reshape(d, K * b)  # columns (k, t)
    Z = np.asarray(X @ Wd).reshape(n, K, b).transpose(1, 0, 2)
    if problem.fit_intercept:
        Z = Z + Wb[:, :, d].T[:, None, :]
    G = np.exp(Z - Z.max(axis=0))
    G /= G.sum(axis=0)
    G[problem.y, np.arange(n), :] -= 1.0
    G *= omega[None, :, None]
    # every problem's own example out: its term at its own weights
    own = G[:, rows, np.arange(b)].T  # (b, K)
    out = np.empty((b, K, p))
    XtG = np.asarray(X.T @ G.transpose(1, 0, 2).reshape(n, K * b))
    out[:, :, :d] = XtG.reshape(d, K, b).transpose(2, 1, 0)
    if problem.fit_intercept:
        out[:, :, d] = G.sum(axis=1).T
    out -= own[:, :, None] * Xt_rows[:, None, :]
    return out + problem.penalty() * Wb


def _refit_block(problem, W_hat, H_hat, rows, tol, max_iter):
    """Chord Newton on the problems of ``rows`` together: ``(Delta, slow)``."""
    inverses, singular = _removed_inverses(problem, H_hat, W_hat, rows)
    Xt_rows = _dense_rows(problem, rows)
    b, (K, p) = len(rows), W_hat.shape
    U = np.zeros((b, K, p))
    last = np.full(b, np.inf)
    active = ~singular
    slow = np.zeros(b, dtype=bool)
    delta = np.where(singular, np.inf, np.nan)
    for _ in range(max_iter):
        if not active.any():
            break
        idx = np.flatnonzero(active)
        g = _block_gradients(problem, W_hat, U[idx], rows[idx], Xt_rows[idx])
        step = np.einsum("bij,bj->bi", inverses[idx], g.reshape(len(idx), -1))
        U[idx] -= step.reshape(-1, K, p)
        size = np.linalg.norm(step, axis=1)
        norm = np.linalg.norm(U[idx].reshape(len(idx), -1), axis=1)
        done = (size <= tol * norm) | (size == 0.0)
        delta[idx[done]] = norm[done]
        stalled = ~done & (size > _SLOW_RATE * last[idx])
        slow[idx[stalled]] = True
        last[idx] = size
        active[idx[done | stalled]] = False
    return delta, slow


def _constant_hessian(problem, H):
    """``Q``: the part of ``H`` that does not depend on ``W`` (the penalty and
    the gauge terms of :meth:`MultinomialProblem.hessian`), ``(K p, K p)``.

    A gauge column ``j`` got ``c_j = t_j / K`` added to every entry of its
    ``K x K`` block, ``t_j`` the block's trace before: the trace after is
    ``2 t_j``, so ``c_j`` is the trace after over ``2 K``.
    """
    K, p = problem.shape
    reg = problem.penalty()
    Q = np.zeros((K, p, K, p))
    Q[np.arange(K), :, np.arange(K), :] = np.diag(reg)
    H4 = H.reshape(K, p, K, p)
    for j in np.flatnonzero(reg == 0):
        Q[:, j, :, j] = np.trace(H4[:, j, :, j]) / (2 * K)
    return Q.reshape(K * p, K * p)


def _interval_rows(problem, W, H_inv, a, Xt, rows):
    """``(V, drop)``: the one-step shifts ``v_i`` and Weyl drops of the rows.

    ``v_i = H_-i^-1 (omega_i g_i (kron) x~_i - r) = A_i c_i - a`` with ``A_i =
    H^-1 U_i``, ``U_i = I_K (kron) x~_i``, ``a = H^-1 r`` and, by Woodbury with
    ``C_i = omega_i S_i`` (singular), ``c_i = omega_i g_i + C_i (I - M_i
    C_i)^-1 (M_i omega_i g_i - U_i^T a)``, ``M_i = U_i^T H^-1 U_i``. The drop
    ``omega_i lambda_max(S_i) ||x~_i||^2`` bounds the Weyl decrease, with
    ``lambda_max(S) <= min(1 - ||P||^2, max_k 2 P_k (1 - P_k))`` (trace,
    Gershgorin). A row whose ``I - M_i C_i`` is singular gets ``v_i = inf``.
    """
    K, p = problem.shape
    b = len(Xt)
    omega = problem.omega[rows]
    P = softmax(problem.logits(W, rows), axis=1)
    g = omega[:, None] * P
    g[np.arange(b), problem.y[rows]] -= omega
    C = omega[:, None, None] * (P[:, :, None] * (np.eye(K) - P[:, None, :]))
    # A[i, m] = H^-1[:, m p:(m + 1) p] x~_i (H^-1 symmetric)
    A = (Xt @ H_inv.reshape(K, p, K * p).transpose(1, 0, 2).reshape(p, -1)).reshape(
        b, K, K * p
    )
    M = np.einsum("bmkl,bl->bkm", A.reshape(b, K, K, p), Xt)
    Ua = Xt @ a.reshape(K, p).T
    system = np.eye(K) - M @ C
    rhs = np.einsum("bkm,bm->bk", M, g) - Ua
    drop = np.minimum(1.0 - (P * P).sum(axis=1), (2.0 * P * (1.0 - P)).max(axis=1))
    drop *= omega * (Xt * Xt).sum(axis=1)
    ok = np.isfinite(np.linalg.cond(system))
    system[~ok] = np.eye(K)
    c = g + np.einsum("bkm,bm->bk", C, np.linalg.solve(system, rhs[..., None])[..., 0])
    V = np.einsum("bmj,bm->bj", A, c) - a
    V[~ok] = np.inf
    return V, drop


def leave_one_out_interval(problem, W):
    """Certified intervals of every ``Delta_i``, ``O(n (K p)^2)`` after ``H^-1``.

    The one-step estimate of each leave-one-out minimiser from the fitted
    ``W`` (the released centre), bracketed by the softmax's Taylor remainder
    and local strong convexity (module docstring), as the binary
    :func:`sklearn_fil._leave_one_out.leave_one_out_interval`.

    Returns
    -------
    result : sklearn_fil._glm.LeaveOneOutInterval
        ``lower <= Delta_i <= upper``, ``reach`` bounds the distance from
        ``W`` to ``W*(D_-i)``, ``fit_error`` that from ``W`` to ``W*(D)``
        (Frobenius norms).
    """
    problem = replace(problem, n_eff=float(problem.penalty_n()))
    W = np.asarray(W, dtype=np.float64)
    H = problem.hessian(W)
    Q = _constant_hessian(problem, H)
    # the gradient of F plus the gauge quadratic (Q less the penalty)
    r = problem.gradient(W).ravel() + Q @ W.ravel() - (problem.penalty() * W).ravel()
    eig = np.linalg.eigvalsh(H)
    lam_min = eig[0] - 1e3 * np.finfo(float).eps * eig[-1]
    factor = SPDFactor(H)
    H_inv, a = factor.inverse(), factor.solve(r)
    n = problem.X.shape[0]
    size, vKv, drop, sqnorm = (np.empty(n) for _ in range(4))
    block = max(1, _BATCH_BYTES // (8 * H.shape[0] * (problem.n_classes + 2)))
    for start in range(0, n, block):
        rows = slice(start, min(n, start + block))
        Xt = _dense_rows(problem, rows)
        V, drop[rows] = _interval_rows(problem, W, H_inv, a, Xt, rows)
        sqnorm[rows] = (Xt * Xt).sum(axis=1)
        vHv = np.einsum("bj,bj->b", V @ H, V)
        vQv = np.einsum("bj,bj->b", V @ Q, V)
        size[rows] = np.linalg.norm(V, axis=1)
        with np.errstate(invalid="ignore"):
            vKv[rows] = np.maximum(vHv - vQv, 1e-12 * vHv)
    # sqrt(2) max ||x~_j|| over the rows in the objective
    L = float(np.sqrt(2.0 * sqnorm[problem.omega > 0].max(initial=0.0)))
    g_dual = np.sqrt(max(float(a @ r), 0.0))  # ||r||_{H^-1}
    fit_error = float(localised_distance(np.linalg.norm(r), 0.0, g_dual, lam_min, L))
    lam_i = lam_min - drop
    T = L * size
    grow = np.exp(T)
    error = localised_distance(
        0.5 * L * grow * vKv, T, 0.5 * grow * T * np.sqrt(vKv), lam_i, L
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        error += _ROUNDING * eig[-1] / lam_i * size
    error[~(np.isfinite(size) & (lam_i > 0))] = np.inf
    upper = size + error + fit_error
    lower = np.maximum(size - error - fit_error, 0.0)
    reach = size + error
    zero = problem.omega == 0
    upper[zero] = lower[zero] = reach[zero] = 0.0
    return LeaveOneOutInterval(lower, upper, reach, fit_error)
