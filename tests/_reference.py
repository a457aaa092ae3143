# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

"""Brute-force reference for the Fisher information loss of output-perturbed GLMs.

This module is test support, not library code. It materialises every per-example
Jacobian ``J_i = -omega_i H^{-1} [d(grad_w l_i)/dx_i, d(grad_w l_i)/dy_i]`` as an
explicit ``(p, d + 1)`` matrix and takes norms with ``np.linalg.svd``. It is slow
(``O(n d^3)``) and deliberately shares no code with ``sklearn_fil.fisher``.

Conventions
-----------
* margin ``m_i = coef @ x_i + intercept``; ``xt_i = [x_i, 1]`` and
  ``wt = [coef, intercept]`` with an intercept, ``xt_i = x_i`` and ``wt = coef``
  without; ``p = len(wt)``.
* objective ``sum_i omega_i l(m_i, y_i) + (n lam / 2) (|coef|^2 +
  [penalize_intercept] intercept^2)`` with ``n = X.shape[0]``;
  squared ``l = (m - y)^2 / 2``, logistic ``l = -y log s(m) - (1 - y) log(1 - s(m))``.
* data coordinates of example ``i``: its ``d`` features then its label (index ``d``).
  The intercept's constant 1 is not a data coordinate.
"""

import numpy as np
from scipy.linalg import solve_triangular
from scipy.special import expit

__all__ = [
    "attribute_bases",
    "brute_force_fil",
    "explicit_jacobians",
    "finite_difference_jacobian",
    "fit_minimiser",
    "hessian",
    "hessian_factor",
    "loss_derivatives",
    "make_problem",
    "mixed_derivatives",
    "objective",
    "projector",
]


# ---------------------------------------------------------------------------
# Loss, objective and minimiser
# ---------------------------------------------------------------------------


def _design(X, fit_intercept):
    X = np.asarray(X, dtype=np.float64)
    if fit_intercept:
        return np.hstack([X, np.ones((X.shape[0], 1))])
    return X


def _full_weights(coef, intercept):
    coef = np.asarray(coef, dtype=np.float64)
    if intercept is None:
        return coef.copy()
    return np.append(coef, float(intercept))


def _penalty_diagonal(d, fit_intercept, penalize_intercept):
    """Diagonal of R: 1 on coef coordinates, [penalize_intercept] on the intercept."""
    if not fit_intercept:
        return np.ones(d)
    return np.append(np.ones(d), 1.0 if penalize_intercept else 0.0)


def _weights(sample_weight, n):
    if sample_weight is None:
        return np.ones(n)
    return np.asarray(sample_weight, dtype=np.float64).copy()


def loss_derivatives(margin, y, loss):
    """Return (dl/dm, d2l/dm2) at the given margins; d(dl/dm)/dy = -1 for both."""
    margin = np.asarray(margin, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if loss == "squared":
        return margin - y, np.ones_like(margin)
    if loss == "logistic":
        s = expit(margin)
        return s - y, s * (1.0 - s)
    raise ValueError(f"unknown loss {loss!r}")


def _loss_values(margin, y, loss):
    if loss == "squared":
        return 0.5 * (margin - y) ** 2
    # -y log s(m) - (1 - y) log(1 - s(m)) = log(1 + e^m) - y m
    return np.logaddexp(0.0, margin) - y * margin


def objective(wt, X, y, loss, lam, sample_weight, fit_intercept, penalize_intercept):
    """Value and gradient (with respect to wt) of the weighted regularised objective."""
    Xt = _design(X, fit_intercept)
    n, d = np.shape(X)
    omega = _weights(sample_weight, n)
    n_eff = omega.sum()  # the penalty is (sum(omega) lam / 2) |w|^2
    rdiag = _penalty_diagonal(d, fit_intercept, penalize_intercept)
    margin = Xt @ wt
    d1, _ = loss_derivatives(margin, y, loss)
    value = omega @ _loss_values(margin, y, loss) + 0.5 * n_eff * lam * (rdiag @ wt**2)
    grad = Xt.T @ (omega * d1) + n_eff * lam * rdiag * wt
    return value, grad


def _hessian_full(wt, Xt, y, loss, lam, omega, rdiag):
    n_eff = omega.sum()  # the penalty is (sum(omega) lam / 2) |w|^2
    _, d2 = loss_derivatives(Xt @ wt, y, loss)
    H = np.einsum("i,ia,ib->ab", omega * d2, Xt, Xt)
    return H + n_eff * lam * np.diag(rdiag)


def fit_minimiser(
    X,
    y,
    loss="squared",
    lam=0.0,
    sample_weight=None,
    fit_intercept=False,
    penalize_intercept=False,
    *,
    w0=None,
    gtol=1e-12,
    max_iter=200,
):
    """Minimise the objective to (near) machine precision.

    Squared loss: the minimiser is the least-squares solution of the augmented system
    ``[sqrt(omega) Xt; sqrt(n lam R)] wt = [sqrt(omega) y; 0]`` (solved with ``lstsq``,
    which avoids squaring the condition number). Logistic loss: Newton's method with
    a backtracking line search, from ``w0`` (default zeros), until the gradient norm
    is at most ``gtol`` times its value at ``wt = 0`` (plus a tiny absolute floor for
    rounding).

    Returns
    -------
    coef : ndarray of shape (d,)
    intercept : float or None
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, d = X.shape
    Xt = _design(X, fit_intercept)
    p = Xt.shape[1]
    omega = _weights(sample_weight, n)
    n_eff = omega.sum()  # the penalty is (sum(omega) lam / 2) |w|^2
    rdiag = _penalty_diagonal(d, fit_intercept, penalize_intercept)

    if loss == "squared":
        sw = np.sqrt(omega)
        A = np.vstack([sw[:, None] * Xt, np.diag(np.sqrt(n_eff * lam * rdiag))])
        b = np.concatenate([sw * y, np.zeros(p)])
        wt = np.linalg.lstsq(A, b, rcond=None)[0]
        # One Newton step on the exact quadratic as iterative refinement; kept only
        # when it reduces the gradient norm.
        args = (X, y, loss, lam, omega, fit_intercept, penalize_intercept)
        _, g = objective(wt, *args)
        H = _hessian_full(wt, Xt, y, loss, lam, omega, rdiag)
        wt_new = wt - np.linalg.solve(H, g)
        _, g_new = objective(wt_new, *args)
        if np.linalg.norm(g_new) < np.linalg.norm(g):
            wt = wt_new
    elif loss == "logistic":
        args = (X, y, loss, lam, omega, fit_intercept, penalize_intercept)
        wt = np.zeros(p) if w0 is None else np.array(w0, dtype=np.float64)
        _, g_zero = objective(np.zeros(p), *args)
        # Rounding floor: the gradient is a sum of n terms of size |omega x (s - y)|.
        floor = 64 * np.finfo(float).eps * np.linalg.norm(np.abs(Xt).T @ np.abs(omega))
        tol = max(gtol * np.linalg.norm(g_zero), floor)
        f, g = objective(wt, *args)
        for _ in range(max_iter):
            gnorm = np.linalg.norm(g)
            if gnorm <= tol:
                break
            H = _hessian_full(wt, Xt, y, loss, lam, omega, rdiag)
            step = -np.linalg.solve(H, g)
            slope = g @ step
            t = 1.0
            while True:
                w_try = wt + t * step
                f_try, g_try = objective(w_try, *args)
                armijo = f_try <= f + 1e-4 * t * slope
                # Near the optimum f stops resolving progress; a decrease of the
                # gradient norm under the full Newton step is then the right test.
                if armijo or (t == 1.0 and np.linalg.norm(g_try) < gnorm):
                    break
                t *= 0.5
                if t < 1e-20:
                    raise RuntimeError("line search failed in fit_minimiser")
            wt, f, g = w_try, f_try, g_try
        else:
            raise RuntimeError(
                f"Newton did not converge: |grad| = {np.linalg.norm(g):.3e} > {tol:.3e}"
            )
    else:
        raise ValueError(f"unknown loss {loss!r}")

    if fit_intercept:
        return wt[:d].copy(), float(wt[d])
    return wt.copy(), None


# ---------------------------------------------------------------------------
# Hessian and explicit per-example Jacobians
# ---------------------------------------------------------------------------


def hessian(
    X,
    y,
    coef,
    intercept=None,
    loss="squared",
    lam=0.0,
    sample_weight=None,
    penalize_intercept=False,
):
    """H = sum_i omega_i d2l_i xt_i xt_i^T + n lam R, shape (p, p)."""
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    fit_intercept = intercept is not None
    Xt = _design(X, fit_intercept)
    wt = _full_weights(coef, intercept)
    omega = _weights(sample_weight, n)
    rdiag = _penalty_diagonal(d, fit_intercept, penalize_intercept)
    return _hessian_full(wt, Xt, np.asarray(y, float), loss, lam, omega, rdiag)


def mixed_derivatives(X, y, coef, intercept=None, loss="squared"):
    """Stack of M_i = [d(grad_wt l_i)/dx_i, d(grad_wt l_i)/dy_i], shape (n, p, d + 1).

    grad_wt l(m, y) = l'(m, y) xt with m = coef @ x + intercept, so for a feature j

        d(grad_wt l)_a / dx_j = l''(m) xt_a coef_j + l'(m) [a == j]

    (the intercept row a = d has no Kronecker term: its xt_a = 1 is constant), and

        d(grad_wt l)_a / dy = (d l'/dy) xt_a = -xt_a

    for both the squared loss (l' = m - y) and the logistic loss (l' = s(m) - y).
    """
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    coef = np.asarray(coef, dtype=np.float64)
    fit_intercept = intercept is not None
    Xt = _design(X, fit_intercept)
    p = Xt.shape[1]
    margin = Xt @ _full_weights(coef, intercept)
    d1, d2 = loss_derivatives(margin, y, loss)

    E = np.zeros((p, d))  # d xt / d x: identity on the feature rows
    E[:d, :d] = np.eye(d)
    M = np.empty((n, p, d + 1))
    M[:, :, :d] = np.einsum("i,ia,j->iaj", d2, Xt, coef) + np.einsum("i,aj->iaj", d1, E)
    M[:, :, d] = -Xt
    return M


def hessian_factor(
    X,
    y,
    coef,
    intercept=None,
    loss="squared",
    lam=0.0,
    sample_weight=None,
    penalize_intercept=False,
):
    """Upper-triangular F with F^T F = H, from a QR factorisation of the square root
    design ``A = [sqrt(omega_i l''_i) xt_i (rows); sqrt(n lam R)]`` (``A^T A = H``).

    Solving with F instead of H avoids forming H in floating point, whose rounding
    alone perturbs its smallest eigenvalue by a relative ~cond(H) * eps; with F the
    error is ~sqrt(cond(H)) * eps, so the reference stays a sharp judge when H is
    ill-conditioned.
    """
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    fit_intercept = intercept is not None
    Xt = _design(X, fit_intercept)
    omega = _weights(sample_weight, n)
    n_eff = omega.sum()  # the penalty is (sum(omega) lam / 2) |w|^2
    _, d2 = loss_derivatives(Xt @ _full_weights(coef, intercept), y, loss)
    rdiag = _penalty_diagonal(d, fit_intercept, penalize_intercept)
    A = np.vstack(
        [np.sqrt(omega * d2)[:, None] * Xt, np.diag(np.sqrt(n_eff * lam * rdiag))]
    )
    return np.linalg.qr(A, mode="r")


def explicit_jacobians(
    X,
    y,
    coef,
    intercept=None,
    loss="squared",
    lam=0.0,
    sample_weight=None,
    penalize_intercept=False,
):
    """Per-example Jacobians J_i = -omega_i H^{-1} M_i, shape (n, p, d + 1).

    ``H^{-1} M_i`` is computed as ``F^{-1} F^{-T} M_i`` with the triangular factor of
    :func:`hessian_factor`.
    """
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    F = hessian_factor(
        X, y, coef, intercept, loss, lam, sample_weight, penalize_intercept
    )
    p = F.shape[0]
    M = mixed_derivatives(X, y, coef, intercept, loss)
    omega = _weights(sample_weight, n)
    rhs = M.transpose(1, 0, 2).reshape(p, -1)  # [M_1, ..., M_n]
    HinvM = solve_triangular(F, solve_triangular(F, rhs, trans="T"))
    HinvM = HinvM.reshape(p, n, -1).transpose(1, 0, 2)
    return -omega[:, None, None] * HinvM


# ---------------------------------------------------------------------------
# Private coordinates and attributes
# ---------------------------------------------------------------------------


def _sum_zero_basis(m):
    """(m, m - 1) orthonormal basis of {v in R^m : sum(v) = 0}."""
    P = np.eye(m) - np.full((m, m), 1.0 / m)
    eigval, eigvec = np.linalg.eigh(P)
    return eigvec[:, eigval > 0.5]


def _check_groups(d, onehot_groups):
    groups = [] if onehot_groups is None else [list(g) for g in onehot_groups]
    seen = set()
    for g in groups:
        if len(g) < 2:
            raise ValueError("a one-hot group needs at least two columns")
        for j in g:
            if not 0 <= j < d or j in seen:
                raise ValueError(f"bad one-hot group column {j}")
            seen.add(j)
    return groups


def attribute_bases(d, onehot_groups=None, private_label=True):
    """Attributes and, for each, (columns of J, orthonormal basis of its tangent space).

    Returns a list of ``(attribute, columns, basis)`` where ``attribute`` is a tuple of
    feature indices or the string ``"label"``, ``columns`` the indices into the
    ``d + 1`` data coordinates and ``basis`` a ``(len(columns), r)`` matrix with
    orthonormal columns (identity for plain features and the label; the sum-to-one
    tangent space for a constrained one-hot group). Attributes are ordered by their
    first (smallest) column, the label last.
    """
    groups = _check_groups(d, onehot_groups)
    in_group = {j for g in groups for j in g}
    items = [((j,), [j], np.eye(1)) for j in range(d) if j not in in_group]
    items += [(tuple(g), list(g), _sum_zero_basis(len(g))) for g in groups]
    items.sort(key=lambda item: min(item[1]))
    if private_label:
        items.append(("label", [d], np.eye(1)))
    return items


def projector(d, onehot_groups=None, private_label=True):
    """(d + 1, k) matrix N with orthonormal columns spanning the private tangent space.

    ``N N^T`` is the projector P of the conventions, so ``J P`` and ``J N`` have the
    same nonzero singular values.
    """
    blocks = []
    for _, cols, basis in attribute_bases(d, onehot_groups, private_label):
        block = np.zeros((d + 1, basis.shape[1]))
        block[cols, :] = basis
        blocks.append(block)
    if not blocks:
        return np.zeros((d + 1, 0))
    return np.hstack(blocks)


# ---------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------


def _spectral_norm(A):
    if A.size == 0:
        return 0.0
    return float(np.linalg.svd(A, compute_uv=False)[0])


def _hstack_examples(J):
    """[J_1, ..., J_n] for a stack of shape (n, p, c): shape (p, n c)."""
    return J.transpose(1, 0, 2).reshape(J.shape[1], -1)


def brute_force_fil(
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
):
    """Every quantity of the FIL report, from the explicit Jacobian stack.

    Returns a dict with keys ``fil``, ``dfil``, ``mse_bound``, ``attribute_fil``,
    ``attributes``, ``total_attribute_fil``, ``dataset_fil``, ``group_fil``,
    ``n_private`` and, for inspection, ``jacobians`` (n, p, d + 1) and ``projector``.
    """
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    J = explicit_jacobians(
        X, y, coef, intercept, loss, lam, sample_weight, penalize_intercept
    )
    N = projector(d, onehot_groups, private_label)
    k = N.shape[1]
    JN = J @ N  # (n, p, k)

    fil = np.array([_spectral_norm(JN[i]) for i in range(n)]) / sigma
    dfil = np.sqrt(np.einsum("iak,iak->i", JN, JN) / k) / sigma
    with np.errstate(divide="ignore"):
        mse_bound = 1.0 / dfil**2

    items = attribute_bases(d, onehot_groups, private_label)
    attribute_fil = np.empty((n, len(items)))
    total_attribute_fil = np.empty(len(items))
    for a, (_, cols, basis) in enumerate(items):
        Ja = J[:, :, cols] @ basis  # (n, p, r)
        attribute_fil[:, a] = [_spectral_norm(Ja[i]) for i in range(n)]
        total_attribute_fil[a] = _spectral_norm(_hstack_examples(Ja))
    attribute_fil /= sigma
    total_attribute_fil /= sigma

    dataset_fil = _spectral_norm(_hstack_examples(JN)) / sigma
    group_fil = None
    if groups is not None:
        groups = np.asarray(groups)
        group_fil = {
            g: _spectral_norm(_hstack_examples(JN[groups == g])) / sigma
            for g in np.unique(groups)
        }

    return {
        "fil": fil,
        "dfil": dfil,
        "mse_bound": mse_bound,
        "attribute_fil": attribute_fil,
        "attributes": [item[0] for item in items],
        "total_attribute_fil": total_attribute_fil,
        "dataset_fil": dataset_fil,
        "group_fil": group_fil,
        "n_private": k,
        "jacobians": J,
        "projector": N,
    }


# ---------------------------------------------------------------------------
# Test problems
# ---------------------------------------------------------------------------

ONEHOT_GROUPS_D8 = [[2, 3, 4], [6, 7]]


def make_problem(
    loss="squared",
    n=40,
    d=5,
    *,
    fit_intercept=True,
    penalize_intercept=False,
    lam=0.0,
    weights=None,
    normalise_weights=False,
    onehot=False,
    scaling=None,
    seed=0,
    gtol=1e-12,
):
    """A small problem with its minimiser fitted to high precision.

    Parameters
    ----------
    weights : {None, "random", "zeros"}
        ``"random"``: positive weights in [0.2, 3]; ``"zeros"``: the same with five
        examples given weight zero.
    normalise_weights : bool
        Rescale the weights to sum to n (as IRFIL keeps them), so that a penalty
        scaled by n and one scaled by sum(omega) coincide.
    onehot : bool
        Columns ``[2, 3, 4]`` are a 3-level and ``[6, 7]`` a 2-level one-hot group
        (real 0/1 columns, one 1 per row); needs ``d == 8`` and ``lam > 0``.
    scaling : {None, "bad", "collinear", "mildly-collinear"}
        ``"bad"`` multiplies column j by ``10 ** linspace(-3, 3, d)[j]``;
        ``"collinear"`` makes columns 3 and 4 nearly equal so that H has a condition
        number of about 1e8 (about 1e6 for ``"mildly-collinear"``).

    Returns
    -------
    dict with keys X, y, coef, intercept, sample_weight, onehot_groups, loss, lam,
    penalize_intercept.
    """
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    onehot_groups = None
    if onehot:
        if d != 8:
            raise ValueError("onehot problems have d == 8")
        X[:, [2, 3, 4]] = np.eye(3)[np.arange(n) % 3][rng.permutation(n)]
        X[:, [6, 7]] = np.eye(2)[np.arange(n) % 2][rng.permutation(n)]
        onehot_groups = [list(g) for g in ONEHOT_GROUPS_D8]
    if scaling == "bad":
        X *= 10.0 ** np.linspace(-3, 3, d)
    elif scaling == "collinear":
        X[:, 4] = X[:, 3] + 3e-4 * rng.normal(size=n)
    elif scaling == "mildly-collinear":
        X[:, 4] = X[:, 3] + 3e-3 * rng.normal(size=n)
    elif scaling is not None:
        raise ValueError(scaling)

    w_true = rng.normal(scale=0.6, size=d)
    if scaling == "bad":
        w_true /= 10.0 ** np.linspace(-3, 3, d)
    margin = X @ w_true + (0.3 if fit_intercept else 0.0)
    if loss == "squared":
        y = margin + 0.5 * rng.normal(size=n)
    else:
        y = (rng.uniform(size=n) < expit(margin)).astype(np.float64)

    sample_weight = None
    if weights is not None:
        sample_weight = rng.uniform(0.2, 3.0, size=n)
        if weights == "zeros":
            sample_weight[rng.choice(n, size=5, replace=False)] = 0.0
        if normalise_weights:
            sample_weight *= n / sample_weight.sum()
    coef, intercept = fit_minimiser(
        X,
        y,
        loss,
        lam,
        sample_weight,
        fit_intercept,
        penalize_intercept,
        gtol=gtol,
    )
    return {
        "X": X,
        "y": y,
        "coef": coef,
        "intercept": intercept,
        "sample_weight": sample_weight,
        "onehot_groups": onehot_groups,
        "loss": loss,
        "lam": lam,
        "penalize_intercept": penalize_intercept,
    }


def finite_difference_jacobian(problem, i, rel_step=1e-5):
    """Central differences of re-fitted minimisers w.r.t. (x_i, y_i): (p, d + 1).

    ``problem`` is a dict as returned by :func:`make_problem`. Coordinate c of example
    i (a feature, or the label for c = d) is moved by ``+-h``,
    ``h = rel_step * max(1, |z_ic|)``, and the minimiser re-fitted from scratch
    (warm-started at the unperturbed one, to the rounding floor). This uses no
    derivative formula at all.
    """
    X, y = problem["X"], problem["y"]
    d = X.shape[1]
    fit_intercept = problem["intercept"] is not None
    w0 = _full_weights(problem["coef"], problem["intercept"])
    args = (
        problem["loss"],
        problem["lam"],
        problem["sample_weight"],
        fit_intercept,
        problem["penalize_intercept"],
    )
    columns = []
    for c in range(d + 1):
        h = rel_step * max(1.0, abs(X[i, c] if c < d else y[i]))
        w = []
        for sign in (1.0, -1.0):
            Xp, yp = X.copy(), y.copy()
            if c < d:
                Xp[i, c] += sign * h
            else:
                yp[i] += sign * h
            coef, intercept = fit_minimiser(Xp, yp, *args, w0=w0, gtol=1e-15)
            w.append(_full_weights(coef, intercept))
        columns.append((w[0] - w[1]) / (2.0 * h))
    return np.column_stack(columns)
