# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

"""Checks of the brute-force FIL reference (tests/_reference.py) itself.

The explicit Jacobians are compared with central finite differences of minimisers that
are re-fitted from scratch after perturbing one coordinate of one example, and the
minimisers with scikit-learn's Ridge and LogisticRegression.
"""

import itertools

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.linear_model import LogisticRegression, Ridge

from tests._reference import (
    attribute_bases,
    brute_force_fil,
    explicit_jacobians,
    finite_difference_jacobian,
    hessian,
    make_problem,
    mixed_derivatives,
    objective,
    projector,
)

LOSSES = ["squared", "logistic"]
INTERCEPTS = ["none", "free", "penalized"]
LAMS = [0.0, 0.05]
WEIGHTS = [None, "zeros"]


def _n_eff(problem):
    """sum(omega): the number of rows when unweighted."""
    weights = problem["sample_weight"]
    return problem["X"].shape[0] if weights is None else float(np.sum(weights))


@pytest.mark.parametrize(
    "loss, intercept, lam, weights",
    list(itertools.product(LOSSES, INTERCEPTS, LAMS, WEIGHTS)),
)
def test_jacobian_matches_finite_differences_of_refits(loss, intercept, lam, weights):
    problem = make_problem(
        loss,
        n=30,
        d=4,
        fit_intercept=intercept != "none",
        penalize_intercept=intercept == "penalized",
        lam=lam,
        weights=weights,
        seed=1,
    )
    J = explicit_jacobians(
        problem["X"],
        problem["y"],
        problem["coef"],
        problem["intercept"],
        loss,
        lam,
        problem["sample_weight"],
        problem["penalize_intercept"],
    )
    n = problem["X"].shape[0]
    examples = [0, 7, n - 1]
    if problem["sample_weight"] is not None:
        # include one zero-weight example: its data cannot move the minimiser
        zero = np.flatnonzero(problem["sample_weight"] == 0)[0]
        assert_allclose(J[zero], 0.0, atol=0.0)
        examples.append(zero)
    for i in examples:
        J_fd = finite_difference_jacobian(problem, i)
        scale = np.abs(J[i]).max() if np.any(J[i]) else 1.0
        assert_allclose(J_fd, J[i], rtol=1e-6, atol=1e-7 * scale)


def high_precision_jacobian(problem, i, dps=50):
    """J_i from the same formula, evaluated in mpmath at ``dps`` digits.

    The inputs (the double-precision X, y, coef, ...) are taken as exact; the result
    is the exact Jacobian for those inputs, rounded to double.
    """
    mp = pytest.importorskip("mpmath")
    with mp.workdps(dps):
        X, y = problem["X"], problem["y"]
        n, d = X.shape
        fit_intercept = problem["intercept"] is not None
        wt = [mp.mpf(v) for v in problem["coef"]]
        rows = [[mp.mpf(v) for v in row] for row in X.tolist()]
        if fit_intercept:
            wt.append(mp.mpf(problem["intercept"]))
            rows = [[*row, mp.mpf(1)] for row in rows]
        p = len(wt)
        omega = problem["sample_weight"]
        omega = [mp.mpf(1)] * n if omega is None else [mp.mpf(v) for v in omega]
        H = mp.matrix(p, p)
        d1 = []
        for r, row in enumerate(rows):
            m = mp.fsum(a * b for a, b in zip(row, wt, strict=True))
            if problem["loss"] == "squared":
                d1.append(m - mp.mpf(y[r]))
                d2 = mp.mpf(1)
            else:
                s = 1 / (1 + mp.exp(-m))
                d1.append(s - mp.mpf(y[r]))
                d2 = s * (1 - s)
            for a in range(p):
                for b in range(p):
                    H[a, b] += omega[r] * d2 * row[a] * row[b]
            if r == i:
                d2_i = d2
        for a in range(p):
            if a < d or problem["penalize_intercept"]:
                H[a, a] += mp.fsum(omega) * mp.mpf(problem["lam"])
        M = mp.matrix(p, d + 1)
        for a in range(p):
            for j in range(d):
                M[a, j] = d2_i * rows[i][a] * wt[j] + (d1[i] if a == j else 0)
            M[a, d] = -rows[i][a]
        J = -omega[i] * (mp.inverse(H) * M)
        return np.array([[float(J[a, c]) for c in range(d + 1)] for a in range(p)])


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize(
    "scaling, lam", [(None, 0.0), ("bad", 0.0), ("bad", 1e-3), ("collinear", 1e-10)]
)
def test_jacobian_is_accurate_in_hard_cases(loss, scaling, lam):
    """Badly scaled columns and an ill-conditioned H (condition number ~1e8).

    Finite differences of double-precision refits cannot resolve these Jacobians
    (truncation and rounding both exceed 1e-6 when cond(H) ~ 1e8), so the explicit
    double-precision Jacobians are compared with the same formula in 50-digit
    arithmetic; the formula itself is checked by finite differences above. The
    reference must be at least ten times sharper than the 1e-8 at which the engine
    is judged against it. (Solving with the explicitly formed H would not be: its
    rounding alone costs ~cond(H) * eps ~ 1e-8 here; the QR factor costs
    ~sqrt(cond(H)) * eps.)
    """
    problem = make_problem(
        loss, n=50, d=8, lam=lam, scaling=scaling, weights="random", seed=2
    )
    J = explicit_jacobians(
        problem["X"],
        problem["y"],
        problem["coef"],
        problem["intercept"],
        loss,
        lam,
        problem["sample_weight"],
    )
    H = hessian(
        problem["X"],
        problem["y"],
        problem["coef"],
        problem["intercept"],
        loss,
        lam,
        problem["sample_weight"],
    )
    if scaling is not None:
        assert np.linalg.cond(H) > 1e7
    for i in [3, 20]:
        J_exact = high_precision_jacobian(problem, i)
        # relative to each column's largest entry (column scales differ by 1e6)
        err = np.abs(J[i] - J_exact).max(axis=0) / np.abs(J_exact).max(axis=0)
        assert np.all(err < 1e-9), err
        s = np.linalg.svd(J[i], compute_uv=False)[0]
        s_exact = np.linalg.svd(J_exact, compute_uv=False)[0]
        assert abs(s - s_exact) <= 1e-10 * s_exact


@pytest.mark.parametrize("loss", LOSSES)
def test_mixed_derivatives_match_finite_differences_of_the_gradient(loss):
    """d(grad_wt l_i)/d(x_i, y_i) against central differences of grad_wt l_i."""
    problem = make_problem(loss, n=12, d=4, lam=0.1, seed=3)
    X, y = problem["X"], problem["y"]
    coef, intercept = problem["coef"], problem["intercept"]
    M = mixed_derivatives(X, y, coef, intercept, loss)
    wt = np.append(coef, intercept)
    h = 1e-6

    def grad_i(x_i, y_i):
        # gradient of l at one example == objective gradient of a 1-example problem
        _, g = objective(wt, x_i[None, :], np.array([y_i]), loss, 0.0, None, True, 0)
        return g

    for i in range(X.shape[0]):
        for c in range(X.shape[1] + 1):
            e = np.zeros(X.shape[1] + 1)
            e[c] = h
            plus = grad_i(X[i] + e[:-1], y[i] + e[-1])
            minus = grad_i(X[i] - e[:-1], y[i] - e[-1])
            assert_allclose((plus - minus) / (2 * h), M[i, :, c], rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("intercept", INTERCEPTS)
def test_hessian_matches_finite_differences_of_the_objective_gradient(loss, intercept):
    problem = make_problem(
        loss,
        n=20,
        d=3,
        fit_intercept=intercept != "none",
        penalize_intercept=intercept == "penalized",
        lam=0.2,
        weights="random",
        seed=4,
    )
    args = (
        problem["X"],
        problem["y"],
        problem["loss"],
        problem["lam"],
        problem["sample_weight"],
        problem["intercept"] is not None,
        problem["penalize_intercept"],
    )
    wt = problem["coef"]
    if problem["intercept"] is not None:
        wt = np.append(wt, problem["intercept"])
    H = hessian(
        problem["X"],
        problem["y"],
        problem["coef"],
        problem["intercept"],
        loss,
        problem["lam"],
        problem["sample_weight"],
        problem["penalize_intercept"],
    )
    h = 1e-6
    H_fd = np.column_stack(
        [
            (objective(wt + h * e, *args)[1] - objective(wt - h * e, *args)[1])
            / (2 * h)
            for e in np.eye(len(wt))
        ]
    )
    assert_allclose(H_fd, H, rtol=1e-7, atol=1e-7 * np.abs(H).max())
    assert_allclose(H, H.T)
    # and the fitted minimiser is stationary
    assert np.linalg.norm(objective(wt, *args)[1]) < 1e-11 * np.abs(H).max()


@pytest.mark.parametrize("lam", [1e-3, 0.05, 1.0])
@pytest.mark.parametrize("weights", [None, "random"])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_logistic_minimiser_matches_sklearn(lam, weights, fit_intercept):
    problem = make_problem(
        "logistic",
        n=60,
        d=5,
        fit_intercept=fit_intercept,
        lam=lam,
        weights=weights,
        seed=5,
    )
    n = _n_eff(problem)  # the penalty scales with sum(omega)
    clf = LogisticRegression(
        C=1.0 / (n * lam),
        l1_ratio=0.0,  # the L2 penalty (``penalty="l2"`` is deprecated)
        fit_intercept=fit_intercept,
        solver="newton-cholesky",
        tol=1e-14,
        max_iter=1000,
    )
    clf.fit(problem["X"], problem["y"], sample_weight=problem["sample_weight"])
    assert_allclose(clf.coef_.ravel(), problem["coef"], rtol=1e-8, atol=1e-10)
    if fit_intercept:
        assert_allclose(clf.intercept_[0], problem["intercept"], rtol=1e-8)


@pytest.mark.parametrize("lam", [0.0, 1e-3, 0.05, 1.0])
@pytest.mark.parametrize("weights", [None, "random"])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_squared_minimiser_matches_sklearn(lam, weights, fit_intercept):
    problem = make_problem(
        "squared",
        n=40,
        d=5,
        fit_intercept=fit_intercept,
        lam=lam,
        weights=weights,
        seed=6,
    )
    n = _n_eff(problem)  # the penalty scales with sum(omega)
    # Ridge's objective is sum_i w_i (y_i - m_i)^2 + alpha |coef|^2 = 2 x ours.
    # With fit_intercept it centres the data, which is the unpenalised intercept.
    reg = Ridge(alpha=n * lam, fit_intercept=fit_intercept, solver="cholesky")
    reg.fit(problem["X"], problem["y"], sample_weight=problem["sample_weight"])
    assert_allclose(reg.coef_, problem["coef"], rtol=1e-10, atol=1e-12)
    if fit_intercept:
        assert_allclose(reg.intercept_, problem["intercept"], rtol=1e-10)


@pytest.mark.parametrize("private_label", [True, False])
@pytest.mark.parametrize("groups", [None, [[2, 3, 4], [6, 7]], [[5, 1]]])
def test_projector(private_label, groups):
    d = 8
    N = projector(d, groups, private_label)
    n_groups = 0 if groups is None else len(groups)
    k = d - n_groups + int(private_label)
    assert N.shape == (d + 1, k)
    assert_allclose(N.T @ N, np.eye(k), atol=1e-14)
    # N N^T is the projector P of the conventions
    P = np.eye(d + 1)
    for g in groups or []:
        P[np.ix_(g, g)] = np.eye(len(g)) - 1.0 / len(g)
    if not private_label:
        P[d, d] = 0.0
    assert_allclose(N @ N.T, P, atol=1e-14)

    attributes = [a for a, _, _ in attribute_bases(d, groups, private_label)]
    firsts = [min(a) for a in attributes if a != "label"]
    assert firsts == sorted(firsts)
    assert (attributes[-1] == "label") == private_label
    covered = sorted(j for a in attributes if a != "label" for j in a)
    assert covered == list(range(d))


def test_brute_force_report_basic_facts():
    problem = make_problem("logistic", n=30, d=8, lam=0.05, onehot=True, seed=7)
    groups = np.arange(30) % 4
    res = brute_force_fil(
        problem["X"],
        problem["y"],
        problem["coef"],
        problem["intercept"],
        loss="logistic",
        lam=0.05,
        sigma=0.5,
        onehot_groups=problem["onehot_groups"],
        groups=groups,
    )
    assert res["n_private"] == 8 - 2 + 1
    assert res["attributes"] == [(0,), (1,), (2, 3, 4), (5,), (6, 7), "label"]
    # a one-hot group's FIL ignores the (non-tangent) all-ones direction
    J = res["jacobians"]
    ones = np.zeros(9)
    ones[[2, 3, 4]] = 1.0
    moved = J + 5.0 * np.einsum("ia,c->iac", np.ones((30, J.shape[1])), ones)
    assert_allclose(moved @ res["projector"], J @ res["projector"], atol=1e-12)
    assert np.all(res["fil"] >= res["attribute_fil"].max(axis=1) * (1 - 1e-12))
    assert np.all(res["fil"] >= res["dfil"] * (1 - 1e-12))
    assert res["dataset_fil"] >= res["fil"].max() * (1 - 1e-12)
    assert res["dataset_fil"] <= np.sqrt(np.sum(res["fil"] ** 2)) * (1 + 1e-12)
    per_group = np.array(list(res["group_fil"].values()))
    assert np.all(per_group <= res["dataset_fil"] * (1 + 1e-12))
    assert_allclose(res["mse_bound"], 1.0 / res["dfil"] ** 2)
