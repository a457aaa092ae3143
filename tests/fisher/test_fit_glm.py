# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""The logistic fit's economies (subsample warm start, chord steps) change
how many full Hessians it takes, not where it stops."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.linear_model import LogisticRegression

from sklearn_fil import _glm

N, D, LAM = 50_000, 6, 1e-3


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((N, D)) * np.array([1e-2, 1.0, 1.0, 3.0, 1.0, 1e2])
    w = rng.standard_normal(D) / np.abs(X).mean(axis=0)
    y = (rng.random(N) < 1 / (1 + np.exp(-(X @ w + 0.3)))).astype(float)
    omega = rng.uniform(0.5, 2.0, N)
    return X, y, omega


def _penalty(X, omega, lam):
    problem = _glm.GLMProblem(
        family="logistic", lam=lam, fit_intercept=True, X=X, omega=omega
    )
    return problem.penalty()


def _fit(problem, monkeypatch=None, plain=False, **kwargs):
    """``fit_glm`` and the number of full-data Hessians it formed."""
    X, y, omega = problem
    counted = []
    original = _glm.RowPasses.newton_system

    def newton_system(self, w):
        counted.append(self.X.shape[0])
        return original(self, w)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_glm.RowPasses, "newton_system", newton_system)
        if plain:  # the damped Newton method without either economy
            mp.setattr(_glm, "WARM_START_ROWS", N)
            mp.setattr(_glm, "CHORD_CONTRACTION", 0.0)
        w, n_iter = _glm.fit_glm(
            X, y, omega, "logistic", LAM, True, False, 1e-10, 100, **kwargs
        )
    return w, n_iter, sum(rows == N for rows in counted)


def test_same_minimiser_with_fewer_hessians(problem):
    w, _, n_hessians = _fit(problem)
    w_plain, _, n_plain = _fit(problem, plain=True)
    assert n_plain >= 5
    assert n_hessians <= 3
    assert_allclose(w, w_plain, rtol=1e-12, atol=0)

    X, y, omega = problem
    clf = LogisticRegression(
        C=1.0 / (omega.sum() * LAM),
        l1_ratio=0.0,
        solver="newton-cholesky",
        tol=1e-14,
        max_iter=1000,
    ).fit(X, y, sample_weight=omega)
    assert_allclose(w[:-1], clf.coef_.ravel(), rtol=1e-8)
    assert_allclose(w[-1], clf.intercept_[0], rtol=1e-8)


def test_the_returned_weights_are_stationary_to_rounding(problem):
    # the gradient at the returned weights is at rounding level, which a
    # chord step stopped at the tolerance alone would not reach
    X, y, omega = problem
    w, _, _ = _fit(problem)
    passes = _glm.RowPasses(X, y, omega, "logistic", True)
    reg = _penalty(X, omega, LAM)
    grad = passes.gradient(w) + reg * w
    scale = np.abs(X).T @ omega
    assert np.linalg.norm(grad[:-1] / scale) < 1e-13


def test_a_settled_chord_step_saves_the_last_hessian(problem, monkeypatch):
    # where the chord steps contract so fast that the last one leaves an
    # error below the rounding of w, no fresh Hessian is formed for a last
    # full step: the weights are those of the fit that forms it. A stricter
    # contraction makes this problem take a second Hessian midway, after
    # which the chord steps contract about a millionfold each
    monkeypatch.setattr(_glm, "CHORD_CONTRACTION", 0.03)
    w, _, n_hessians = _fit(problem)
    monkeypatch.setattr(_glm, "_ROUNDING", 0.0)  # always end on a full step
    w_full, _, n_full = _fit(problem)
    assert n_hessians == n_full - 1
    assert_allclose(w, w_full, rtol=1e-14, atol=0)


def test_a_far_start_is_damped_and_still_converges(problem):
    w_ref, _, _ = _fit(problem, plain=True)
    w0 = 50 * np.ones(D + 1) / np.append(np.abs(problem[0]).mean(axis=0), 1.0)
    w, _, _ = _fit(problem, w0=w0)
    assert_allclose(w, w_ref, rtol=1e-12, atol=0)


def test_the_certificate_still_holds(problem):
    gtol = 1e-9
    w, _, _ = _fit(problem, gtol=gtol)
    X, y, omega = problem
    passes = _glm.RowPasses(X, y, omega, "logistic", True)
    reg = _penalty(X, omega, LAM)
    assert np.linalg.norm(passes.gradient(w) + reg * w) <= gtol


def test_a_subsample_without_a_minimiser_does_not_stop_the_fit(problem):
    # lam=0 and a column that is zero on every row of the strided subsample:
    # the subsample's Hessian is singular, the data's is not
    X, y, omega = problem
    X = X.copy()
    stride = N // _glm.WARM_START_ROWS
    X[::stride, 2] = 0.0
    w, _ = _glm.fit_glm(X, y, omega, "logistic", 0.0, True, False, 1e-10, 100)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_glm, "WARM_START_ROWS", N)
        w_plain, _ = _glm.fit_glm(X, y, omega, "logistic", 0.0, True, False, 1e-10, 100)
    assert_allclose(w, w_plain, rtol=1e-12, atol=0)


def _newton_step(X, y, omega, w, lam):
    """Penalty, loss Gram, penalised gradient and Newton step at ``w``."""
    passes = _glm.RowPasses(X, y, omega, "logistic", True)
    reg = _penalty(X, omega, lam)
    gram, g = passes.newton_system(w)
    g = g + reg * w
    return reg, gram, g, _glm.SPDFactor(gram, reg).solve(g)


def _objective(X, y, omega, w, reg):
    m = X @ w[:-1] + w[-1]
    return float(omega @ np.logaddexp(0.0, m) - omega @ (y * m)) + 0.5 * reg @ (w * w)


@pytest.mark.parametrize("seed", range(5))
def test_the_decrease_bound_holds(seed):
    # F(w - s) <= F(w) - g^T s + (phi(T) s^T G s + s^T diag(reg) s) / 2, the
    # bound _decrease_certified rests on, against the objective summed
    # directly (np.logaddexp), from starts near and far from the minimiser;
    # with the curvature taken as constant (R = 0, the squared loss's) the
    # bound fails from the far starts: the test has the power to see it
    rng = np.random.default_rng(seed)
    n, d, lam = 400, 5, 1e-3
    X = rng.standard_normal((n, d)) * rng.uniform(0.3, 3.0, d)
    y = (rng.random(n) < 0.5).astype(float)
    omega = rng.uniform(0.5, 2.0, n)
    broken = 0
    for scale in (0.01, 0.3, 1.0, 3.0):
        w = scale * rng.standard_normal(d + 1)
        reg, gram, g, step = _newton_step(X, y, omega, w, lam)
        T = np.abs(X @ step[:-1] + step[-1]).max()
        decrease = _objective(X, y, omega, w, reg) - _objective(
            X, y, omega, w - step, reg
        )
        for rate, counted in ((1.0, False), (0.0, True)):
            RT = rate * T
            if RT > _glm._MAX_MARGIN_CHANGE:  # the bound is not tried there
                continue
            phi = 1.0 if RT == 0 else 2.0 * (np.expm1(RT) - RT) / RT**2
            bound = g @ step - 0.5 * (phi * step @ gram @ step + reg @ (step * step))
            if counted:
                broken += decrease < bound
            else:
                assert decrease >= bound - 1e-10 * abs(g @ step)
    assert broken >= 1


def test_certified_steps_are_the_line_search_steps(problem, monkeypatch):
    # the certificate replaces the objective's passes where the line search
    # would take the full step: the iterates are the same to the bit, and on
    # this problem no objective is evaluated at all
    evaluations = []
    real = _glm.RowPasses.objective

    def objective(self, w):
        evaluations.append(self.X.shape[0])
        return real(self, w)

    monkeypatch.setattr(_glm.RowPasses, "objective", objective)
    w, _, _ = _fit(problem)
    assert N not in evaluations
    monkeypatch.setattr(_glm, "_decrease_certified", lambda *args: False)
    w_searched, _, _ = _fit(problem)
    assert N in evaluations
    np.testing.assert_array_equal(w, w_searched)


def test_a_newton_system_after_a_chord_step_reuses_its_gradient(problem, monkeypatch):
    # the gradient at w is one pass over the rows: a Newton system formed at
    # the point of a rejected chord step takes the chord step's
    X, y, omega = problem
    passes = _glm.RowPasses(X, y, omega, "logistic", True)
    w = np.full(D + 1, 0.01)
    g = passes.gradient(w)
    products = []  # passes that take X^T v: alone, or fused with the margins
    real, fused = _glm.augment_rmatvec, _glm.RowPasses._fused_entry
    monkeypatch.setattr(
        _glm, "augment_rmatvec", lambda *a: products.append(1) or real(*a)
    )
    monkeypatch.setattr(
        _glm.RowPasses, "_fused_entry", lambda *a: products.append(1) or fused(*a)
    )
    _, g_system = passes.newton_system(w)
    assert products == []
    assert g_system is g
    fresh = _glm.RowPasses(X, y, omega, "logistic", True)
    assert_allclose(fresh.newton_system(w)[1], g, rtol=1e-12)
    assert products == [1]


def test_a_step_s_margin_change_keeps_the_gradient_there(problem, monkeypatch):
    # a full step is judged by the margins it moves; the gradient at its end,
    # which the next step asks for, comes from the same read of X
    X, y, omega = problem
    w = np.full(D + 1, 0.01)
    w_new = w - np.linspace(-1e-3, 1e-3, D + 1)
    expected = _glm.RowPasses(X, y, omega, "logistic", True).gradient(w_new)
    passes = _glm.RowPasses(X, y, omega, "logistic", True)
    change = passes.margin_change(w, w_new)
    assert_allclose(change, np.max(np.abs(X @ (w_new - w)[:D] + (w_new - w)[D])))
    reads = []
    monkeypatch.setattr(_glm, "augment_rmatvec", lambda *a: reads.append(1))
    monkeypatch.setattr(_glm.RowPasses, "_fused_entry", lambda *a: reads.append(1))
    assert_allclose(passes.gradient(w_new), expected, rtol=1e-12)
    assert reads == []
