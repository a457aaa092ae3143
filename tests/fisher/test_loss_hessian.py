# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

"""One Hessian per fit: the engine, the fit and the leave-one-out refits share it.

A Gram is as costly as ``X.T @ X``; the linear fit used to compute the same one
three times. The shared matrix must give the numbers of the recomputed one, a
wrong matrix must be refused before any work, and the fit must compute one Gram.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import sparse

from sklearn_fil import _glm, _leave_one_out
from sklearn_fil.exceptions import NotAMinimiserWarning
from sklearn_fil.fisher import _engine, fisher_information_loss
from sklearn_fil.linear_model import (
    OutputPerturbedLinearRegression,
    OutputPerturbedLogisticRegression,
)
from tests._reference import hessian, make_problem

FIELDS = ["fil", "dfil", "attribute_fil", "total_attribute_fil", "dataset_fil"]


def _loss_hessian(problem):
    """``X~^T diag(omega l'') X~`` from the brute-force reference (lam = 0)."""
    return hessian(
        problem["X"],
        problem["y"],
        problem["coef"],
        problem["intercept"],
        loss=problem["loss"],
        lam=0.0,
        sample_weight=problem["sample_weight"],
    )


def _run(problem, **kwargs):
    return fisher_information_loss(
        problem["X"],
        problem["y"],
        problem["coef"],
        problem["intercept"],
        loss=problem["loss"],
        lam=problem["lam"],
        sample_weight=problem["sample_weight"],
        penalize_intercept=problem["penalize_intercept"],
        **kwargs,
    )


@pytest.mark.parametrize("loss", ["squared", "logistic"])
@pytest.mark.parametrize("weights", [None, "random"])
def test_given_loss_hessian_gives_the_same_report(loss, weights):
    problem = make_problem(loss, n=60, d=4, lam=0.05, weights=weights)
    computed = _run(problem)
    given = _run(problem, loss_hessian=_loss_hessian(problem))
    for field in FIELDS:
        assert_allclose(getattr(given, field), getattr(computed, field), rtol=1e-12)
    # the result's Hessian is the penalised one: the reference's at lam
    H = hessian(
        problem["X"],
        problem["y"],
        problem["coef"],
        problem["intercept"],
        loss=loss,
        lam=problem["lam"],
        sample_weight=problem["sample_weight"],
        penalize_intercept=problem["penalize_intercept"],
    )
    assert_allclose(computed.hessian, H, rtol=1e-12, atol=1e-12 * np.abs(H).max())


def test_given_loss_hessian_skips_the_gram(monkeypatch):
    problem = make_problem("squared", n=50, d=3, lam=0.1)
    H0 = _loss_hessian(problem)
    calls = []
    real = _glm.weighted_grams

    def spy(X, weights, *args):
        calls.extend(weights)
        return real(X, weights, *args)

    monkeypatch.setattr(_glm, "weighted_grams", spy)
    monkeypatch.setattr(_engine, "weighted_grams", spy)
    _run(problem)
    n_computed = len(calls)
    calls.clear()
    _run(problem, loss_hessian=H0)
    assert n_computed == 1 and calls == []


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda H, p: H + np.diag(np.full(len(H), 0.1 * 50)), "does not match"),
        (lambda H, p: H[:-1, :-1], "must have shape"),
        (lambda H, p: H + np.triu(np.full(H.shape, 1e-3), 1), "symmetric"),
        (lambda H, p: np.where(np.eye(len(H)) > 0, np.nan, H), "NaN"),
        # the Gram of other weights (the weights of another fit)
        (lambda H, p: 2.0 * H, "does not match"),
    ],
)
def test_wrong_loss_hessian_is_refused(mutate, match):
    problem = make_problem("squared", n=50, d=4, lam=0.1)
    H = mutate(_loss_hessian(problem), problem)
    with pytest.raises(ValueError, match=match):
        _run(problem, loss_hessian=H)


def test_loss_hessian_at_another_coef_is_refused():
    problem = make_problem("logistic", n=80, d=4, lam=0.1)
    other = dict(problem, coef=problem["coef"] + 0.5)
    with pytest.raises(ValueError, match="does not match"):
        _run(problem, loss_hessian=_loss_hessian(other))


def test_loss_hessian_on_sparse_and_not_on_dask():
    da = pytest.importorskip("dask.array")
    problem = make_problem("squared", n=40, d=4, lam=0.1)
    H0 = _loss_hessian(problem)
    sparse_problem = dict(problem, X=sparse.csr_array(problem["X"]))
    assert_allclose(
        _run(sparse_problem, loss_hessian=H0).fil, _run(problem).fil, rtol=1e-12
    )
    dask_problem = dict(problem, X=da.from_array(problem["X"], chunks=(20, 4)))
    with pytest.raises(ValueError, match="Dask"):
        _run(dask_problem, loss_hessian=H0)


def test_fit_glm_returns_the_loss_hessian_of_the_squared_loss_only():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((70, 3))
    y = X @ [1.0, 2.0, -1.0] + rng.standard_normal(70)
    omega = rng.uniform(0.5, 2.0, 70)
    *_, gram = _glm.fit_glm(
        X, y, omega, "squared", 0.1, True, False, None, 1, return_loss_hessian=True
    )
    Xt = np.column_stack([X, np.ones(70)])
    assert_allclose(gram, Xt.T @ (omega[:, None] * Xt), rtol=1e-13)
    yb = (y > 0).astype(float)
    *_, none = _glm.fit_glm(
        X, yb, omega, "logistic", 0.1, True, False, 1e-10, 50, return_loss_hessian=True
    )
    assert none is None


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_leave_one_out_with_the_engines_hessian(loss):
    problem = make_problem(loss, n=40, d=3, lam=0.1)
    X, y = problem["X"], problem["y"]
    w = np.append(problem["coef"], problem["intercept"])
    omega = np.ones(len(X))
    args = (X, y, w, omega, loss, 0.1, True, problem["penalize_intercept"])
    H = _run(problem).hessian
    assert_allclose(
        _leave_one_out.leave_one_out(*args, hessian=H).sensitivity,
        _leave_one_out.leave_one_out(*args).sensitivity,
        rtol=1e-10,
    )


@pytest.mark.parametrize("loss", ["squared", "logistic"])
@pytest.mark.parametrize("weights", [None, "random"])
def test_result_gradient_is_the_penalised_gradient(loss, weights):
    # away from the minimiser (where it would be rounding) the gradient of
    # sum_i omega_i l_i + (sum(omega) lam / 2) ||w||^2, by NumPy
    problem = make_problem(loss, n=50, d=3, lam=0.1, weights=weights)
    problem["coef"] = problem["coef"] + [0.3, -0.2, 0.1]
    X, y, coef, b = (problem[k] for k in ("X", "y", "coef", "intercept"))
    omega = problem["sample_weight"]
    omega = np.ones(len(X)) if omega is None else omega
    m = X @ coef + b
    r = m - y if loss == "squared" else 1.0 / (1.0 + np.exp(-m)) - y
    w = np.append(coef, b)
    reg = np.append(np.full(3, omega.sum() * 0.1), 0.0)  # intercept unpenalised
    expected = np.column_stack([X, np.ones(len(X))]).T @ (omega * r) + reg * w
    with pytest.warns(NotAMinimiserWarning):
        result = _run(problem)
    assert_allclose(result.gradient, expected, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_leave_one_out_with_the_engines_gradient(loss):
    # weights off the minimiser, so that the refinement's gradient matters:
    # the refits from the engine's gradient equal those from their own pass
    problem = make_problem(loss, n=40, d=3, lam=0.1)
    problem["coef"] = problem["coef"] + 1e-6
    X, y = problem["X"], problem["y"]
    w = np.append(problem["coef"], problem["intercept"])
    args = (X, y, w, np.ones(len(X)), loss, 0.1, True, problem["penalize_intercept"])
    result = _run(problem)  # within the stationarity check's 1e-6
    own = _leave_one_out.leave_one_out(*args)
    given = _leave_one_out.leave_one_out(*args, gradient=result.gradient)
    assert_allclose(given.sensitivity, own.sensitivity, rtol=1e-10)
    assert_allclose(given.minimiser, own.minimiser, rtol=1e-12)
    # a wrong gradient moves the refined minimiser: the argument is used
    wrong = _leave_one_out.leave_one_out(*args, gradient=2.0 * result.gradient)
    assert not np.allclose(wrong.minimiser, own.minimiser, rtol=1e-9, atol=0)


def test_linear_fit_refits_make_no_gradient_pass(monkeypatch):
    # the refits' Newton refinement takes the engine's gradient
    rng = np.random.default_rng(2)
    X = rng.standard_normal((200, 4))
    y = X @ [1.0, -1.0, 0.5, 0.0] + 0.3 * rng.standard_normal(200)
    calls = []
    real = _glm.RowPasses.gradient

    def spy(self, w):
        calls.append(w.copy())
        return real(self, w)

    monkeypatch.setattr(_glm.RowPasses, "gradient", spy)
    est = OutputPerturbedLinearRegression(lam=0.05, random_state=0).fit(X, y)
    assert est.privacy_report_["loo_sensitivity"].notna().all()  # refits ran
    assert calls == []


@pytest.mark.parametrize(
    "cls, n_grams",
    # linear: the fit's Gram serves the report and the refits; logistic: the
    # report's Hessian at the minimiser serves the refits
    [(OutputPerturbedLinearRegression, 1), (OutputPerturbedLogisticRegression, None)],
)
def test_a_fit_computes_each_hessian_once(monkeypatch, cls, n_grams):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((300, 4))
    y = X @ [1.0, -1.0, 0.5, 0.0] + 0.3 * rng.standard_normal(300)
    if cls is OutputPerturbedLogisticRegression:
        y = (y > 0).astype(float)
    weights = []
    real = _glm.weighted_grams

    def spy(X, ws, *args):  # every Gram, whichever module asks for it
        weights.extend(w.copy() for w in ws)
        return real(X, ws, *args)

    monkeypatch.setattr(_glm, "weighted_grams", spy)
    monkeypatch.setattr(_engine, "weighted_grams", spy)
    est = cls(lam=0.05, random_state=0).fit(X, y)
    assert est.privacy_report_["loo_sensitivity"].notna().all()  # refits ran
    if n_grams is not None:
        assert len(weights) == n_grams
    # no two Grams with the same weights: none is computed twice
    for i, a in enumerate(weights):
        for b in weights[i + 1 :]:
            assert not np.array_equal(a, b)
    # the report is the engine's, every sum recomputed
    monkeypatch.undo()
    w, _ = _glm.fit_glm(X, y, np.ones(300), est._loss, 0.05, True, False, 1e-12, 100)
    ref = fisher_information_loss(
        X, y, w[:-1], w[-1], loss=est._loss, lam=0.05, sigma=est.sigma_
    )
    assert_allclose(est.privacy_report_["fil"], ref.fil, rtol=1e-8)


@pytest.mark.parametrize("given", [False, True])
def test_the_margins_are_computed_once(given, monkeypatch):
    # the margins check X, serve the given Hessian's check and the report: one
    # product X @ coef and one evaluation of the derivatives per call
    from sklearn_fil._losses import LOSSES

    problem = make_problem("logistic", n=60, d=4, lam=0.05)
    calls = []
    family = LOSSES["logistic"]
    real = family.derivatives
    monkeypatch.setattr(
        family, "derivatives", staticmethod(lambda m, y: calls.append(1) or real(m, y))
    )
    _run(problem, loss_hessian=_loss_hessian(problem) if given else None)
    assert calls == [1]
