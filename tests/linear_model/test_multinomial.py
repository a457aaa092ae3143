# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""Multinomial OutputPerturbedLogisticRegression against independent oracles.

The oracles here share no code with :mod:`sklearn_fil._multinomial`: the
per-example loss is written as ``-sum_k y_k log softmax(W x~)_k``, its
gradient by hand, every second derivative (the Hessian, ``M_i``) by central
finite differences of that gradient, the minimisers by a Newton iteration on
those (with a pseudo-inverse: the softmax's gauge is left singular), and the
Jacobians ``J_i = -omega_i H^+ M_i`` are materialised. Finite differences of
re-fitted minimisers check the implicit-function Jacobian itself.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import linalg
from sklearn.datasets import load_iris
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_fil import IRFILClassifier, OutputPerturbedLogisticRegression
from sklearn_fil._multinomial import (
    LIPSCHITZ,
    MultinomialProblem,
    fit_multinomial,
    leave_one_out_sensitivity,
    multinomial_fil,
)
from sklearn_fil.fisher import FisherInformationLoss

pytestmark = pytest.mark.filterwarnings("ignore:.*no better than a constant")

# ---------------------------------------------------------------------------
# the oracle


def _augment(X, fit_intercept):
    return np.hstack([X, np.ones((len(X), 1))]) if fit_intercept else X


def _example_gradient(W, xt, y_vec):
    """grad_W of -sum_k y_k log softmax(W xt)_k, by hand: (sum(y) P - y) xt^T."""
    z = W @ xt
    P = np.exp(z - z.max())
    P /= P.sum()
    return np.outer(y_vec.sum() * P - y_vec, xt)


def _total_gradient(W, Xt, Y, omega, reg):
    g = sum(
        o * _example_gradient(W, x, yv) for x, yv, o in zip(Xt, Y, omega, strict=True)
    )
    return g + reg * W


def _derivative(f, z, c, h):
    """d f / d z_c by the five-point central stencil (error O(h^4))."""

    def at(t):
        zz = z.copy()
        zz[c] += t
        return f(zz)

    return (8 * (at(h) - at(-h)) - (at(2 * h) - at(-2 * h))) / (12 * h)


def _fd_hessian(W, Xt, Y, omega, reg, h=1e-4):
    """Finite differences of the analytic total gradient, symmetrised."""
    K, p = W.shape

    def gradient(theta):
        return _total_gradient(theta.reshape(K, p), Xt, Y, omega, reg).ravel()

    H = np.column_stack([_derivative(gradient, W.ravel(), c, h) for c in range(K * p)])
    return 0.5 * (H + H.T)


def _oracle_fit(Xt, Y, omega, reg, W0=None):
    """Newton with the finite-difference Hessian's pseudo-inverse, from 0.

    Every gradient sums to zero over the classes in the unpenalised columns,
    so the iterates stay on the gauge sum_k W[k, j] = 0 there.
    """
    K, p = Y.shape[1], Xt.shape[1]
    W = np.zeros((K, p)) if W0 is None else W0.copy()
    for _ in range(100):
        g = _total_gradient(W, Xt, Y, omega, reg)
        H = _fd_hessian(W, Xt, Y, omega, reg)
        step = (linalg.pinv(H, rtol=1e-8) @ g.ravel()).reshape(K, p)
        W = W - step
        if np.linalg.norm(step) <= 1e-15 * (1 + np.linalg.norm(W)):
            break
    return W


def _fd_M(W, xt, y_vec, d, h=1e-4):
    """d/dz grad_W l over z = [x (d), y (K)], by finite differences."""
    z = np.concatenate([xt[:d], y_vec])

    def gradient(zz):
        return _example_gradient(W, np.concatenate([zz[:d], xt[d:]]), zz[d:]).ravel()

    return np.column_stack(
        [_derivative(gradient, z, c, h * max(1.0, abs(z[c]))) for c in range(z.size)]
    )


def _basis(d, K, onehot=()):
    """Orthonormal basis of the private coordinates, and each attribute's."""
    blocks, names = [], []
    grouped = {j for cols in onehot for j in cols}
    for j in range(d):
        if j not in grouped:
            e = np.zeros((d + K, 1))
            e[j] = 1.0
            blocks.append(e)
            names.append((j,))
        for cols in onehot:
            if j == min(cols):
                blocks.append(_tangent(d + K, cols))
                names.append(tuple(cols))
    blocks.append(_tangent(d + K, range(d, d + K)))
    names.append("label")
    return blocks, names


def _tangent(size, cols):
    """Orthonormal basis (QR of the centring) of sum-zero vectors on cols."""
    cols = list(cols)
    m = len(cols)
    Q, _ = np.linalg.qr(np.eye(m) - 1.0 / m)
    B = np.zeros((size, m - 1))
    B[cols] = Q[:, : m - 1]
    return B


def _oracle_report(X, y, K, omega, lam, fit_intercept, penalize_intercept, sigma):
    n, d = X.shape
    Xt = _augment(X, fit_intercept)
    Y = np.eye(K)[y]
    reg = np.full(Xt.shape[1], omega.sum() * lam)
    if fit_intercept and not penalize_intercept:
        reg[-1] = 0.0
    W = _oracle_fit(Xt, Y, omega, reg)
    H_pinv = linalg.pinv(_fd_hessian(W, Xt, Y, omega, reg), rtol=1e-8)
    blocks, _ = _basis(d, K)
    B = np.hstack(blocks)
    J = [-omega[i] * H_pinv @ _fd_M(W, Xt[i], Y[i], d) for i in range(n)]
    fil = [np.linalg.norm(Ji @ B, 2) / sigma for Ji in J]
    dfil = [np.linalg.norm(Ji @ B) / np.sqrt(B.shape[1]) / sigma for Ji in J]
    att = [[np.linalg.norm(Ji @ Ba, 2) / sigma for Ba in blocks] for Ji in J]
    total = [np.linalg.norm(np.hstack([Ji @ Ba for Ji in J]), 2) for Ba in blocks]
    dataset = np.linalg.norm(np.hstack([Ji @ B for Ji in J]), 2) / sigma
    return (
        W,
        np.array(fil),
        np.array(dfil),
        np.array(att),
        np.array(total) / sigma,
        dataset,
    )


def _data(n=30, d=3, K=3, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * scale
    y = np.argmax(X @ rng.normal(size=(d, K)) + rng.normal(size=(n, K)), axis=1)
    y[:K] = np.arange(K)  # every class present
    return X, y


# ---------------------------------------------------------------------------
# fit and report against the oracle


@pytest.mark.parametrize(
    "fit_intercept, penalize_intercept, weighted",
    [(False, False, False), (True, True, False), (True, False, True)],
)
def test_report_matches_brute_force_jacobians(
    fit_intercept, penalize_intercept, weighted
):
    X, y = _data(n=25, d=3, K=3, seed=1)
    X[:, 1] *= 10.0  # badly scaled features
    K, sigma, lam = 3, 0.7, 0.05
    omega = (
        np.random.default_rng(2).uniform(0.2, 1.0, len(y))
        if weighted
        else np.ones(len(y))
    )
    W_o, fil, dfil, att, total, dataset = _oracle_report(
        X, y, K, omega, lam, fit_intercept, penalize_intercept, sigma
    )
    problem = MultinomialProblem(X, y, omega, K, lam, fit_intercept, penalize_intercept)
    W, _ = fit_multinomial(problem, 1e-12, 100)
    np.testing.assert_allclose(W, W_o, rtol=1e-9, atol=1e-11)
    res = FisherInformationLoss(**multinomial_fil(problem, W, sigma))
    assert res.attributes == [(0,), (1,), (2,), "label"]
    assert res.n_private == 3 + K - 1
    np.testing.assert_allclose(res.fil, fil, rtol=1e-8)
    np.testing.assert_allclose(res.dfil, dfil, rtol=1e-8)
    np.testing.assert_allclose(res.attribute_fil, att, rtol=1e-8)
    np.testing.assert_allclose(res.total_attribute_fil, total, rtol=1e-8)
    assert res.dataset_fil == pytest.approx(dataset, rel=1e-8)
    np.testing.assert_allclose(res.mse_bound, 1 / dfil**2, rtol=1e-8)


def test_onehot_group_matches_brute_force():
    X, y = _data(n=24, d=2, K=4, seed=3)
    levels = np.arange(24) % 3
    X = np.hstack([X, np.eye(3)[levels]])  # a constrained group: columns 2, 3, 4
    K, sigma, lam, d = 4, 1.3, 0.1, X.shape[1]
    omega = np.ones(len(y))
    Xt = _augment(X, True)
    Y = np.eye(K)[y]
    reg = np.full(d + 1, len(y) * lam)
    W_o = _oracle_fit(Xt, Y, omega, reg)
    H_inv = np.linalg.inv(_fd_hessian(W_o, Xt, Y, omega, reg))
    blocks, names = _basis(d, K, onehot=[(2, 3, 4)])
    B = np.hstack(blocks)
    J = [-H_inv @ _fd_M(W_o, Xt[i], Y[i], d) for i in range(len(y))]
    problem = MultinomialProblem(X, y, omega, K, lam, True, True)
    W, _ = fit_multinomial(problem, 1e-12, 100)
    res = FisherInformationLoss(
        **multinomial_fil(problem, W, sigma, onehot=[np.array([2, 3, 4])])
    )
    assert res.attributes == names
    assert res.n_private == 2 + 2 + 3
    np.testing.assert_allclose(
        res.fil, [np.linalg.norm(Ji @ B, 2) / sigma for Ji in J], rtol=1e-8
    )
    np.testing.assert_allclose(
        res.attribute_fil,
        [[np.linalg.norm(Ji @ Ba, 2) / sigma for Ba in blocks] for Ji in J],
        rtol=1e-8,
    )


def test_jacobian_matches_finite_differences_of_refits():
    """The implicit-function Jacobian against re-fitted minimisers."""
    X, y = _data(n=20, d=2, K=3, seed=4)
    K, lam, i, h = 3, 0.1, 5, 1e-5
    omega = np.ones(len(y))
    problem = MultinomialProblem(X, y, omega, K, lam, True, True)
    W, _ = fit_multinomial(problem, 1e-13, 100)
    Xt = _augment(X, True)
    reg = np.full(3, len(y) * lam)
    Y = np.eye(K)[y].astype(float)
    columns = []
    for c in range(X.shape[1] + K):
        fits = []
        for s in (1.0, -1.0):
            Xp, Yp = Xt.copy(), Y.copy()
            if c < X.shape[1]:
                Xp[i, c] += s * h
            else:
                Yp[i, c - X.shape[1]] += s * h
            fits.append(_oracle_fit(Xp, Yp, omega, reg, W0=W).ravel())
        columns.append((fits[0] - fits[1]) / (2 * h))
    J_fd = np.column_stack(columns)
    blocks, _ = _basis(X.shape[1], K)
    B = np.hstack(blocks)
    res = FisherInformationLoss(**multinomial_fil(problem, W, 1.0))
    assert res.fil[i] == pytest.approx(np.linalg.norm(J_fd @ B, 2), rel=1e-6)
    assert res.dfil[i] == pytest.approx(
        np.linalg.norm(J_fd @ B) / np.sqrt(B.shape[1]), rel=1e-6
    )


def test_fit_matches_scikit_learn():
    """The minimiser is scikit-learn's multinomial one's, C = 1 / (n lam)."""
    X, y = load_iris(return_X_y=True)
    lam = 1e-3
    problem = MultinomialProblem(X, y, np.ones(len(y)), 3, lam, False, False)
    W, _ = fit_multinomial(problem, 1e-12, 100)
    ref = LogisticRegression(
        C=1 / (len(y) * lam), fit_intercept=False, tol=1e-12, max_iter=10_000
    ).fit(X, y)
    np.testing.assert_allclose(W, ref.coef_, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------
# leave-one-out and the sensitivity


@pytest.mark.parametrize(
    "fit_intercept, penalize_intercept, weighted",
    [(True, True, False), (True, False, True), (False, False, False)],
)
def test_leave_one_out_matches_brute_force_refits(
    fit_intercept, penalize_intercept, weighted
):
    X, y = _data(n=15, d=2, K=3, seed=5, scale=2.0)
    K, lam = 3, 0.02
    omega = np.ones(len(y))
    if weighted:
        omega = np.random.default_rng(1).uniform(0.3, 1.0, len(y))
        omega[3] = 0.0  # a zero weight: Delta = 0
    problem = MultinomialProblem(X, y, omega, K, lam, fit_intercept, penalize_intercept)
    W, _ = fit_multinomial(problem, 1e-12, 100)
    sens = leave_one_out_sensitivity(problem, W)
    Xt, Y = _augment(X, fit_intercept), np.eye(K)[y]
    reg = np.full(Xt.shape[1], omega.sum() * lam)  # n kept
    if fit_intercept and not penalize_intercept:
        reg[-1] = 0.0
    W_o = _oracle_fit(Xt, Y, omega, reg)
    for i in range(len(y)):
        w_i = omega.copy()
        w_i[i] = 0.0
        W_i = _oracle_fit(Xt, Y, w_i, reg, W0=W_o)
        assert sens[i] == pytest.approx(np.linalg.norm(W_i - W_o), rel=1e-8), i


def test_softmax_gradient_bound_is_sqrt2_and_attained():
    """max ||softmax(z) - e_y|| over random logits: below sqrt(2), and near it."""
    rng = np.random.default_rng(0)
    Z = rng.normal(scale=rng.uniform(0, 30, size=(200_000, 1)), size=(200_000, 4))
    P = np.exp(Z - Z.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    y = rng.integers(0, 4, size=len(Z))
    P[np.arange(len(Z)), y] -= 1.0
    norms = np.linalg.norm(P, axis=1)
    assert norms.max() <= LIPSCHITZ
    assert norms.max() > 1.41  # the binary constant 1 would be wrong


def test_replace_one_refits_within_the_sensitivity(global_random_seed):
    """No replace-one neighbour moves the exact minimiser further than Delta."""
    rng = np.random.default_rng(global_random_seed)
    n, d, K, lam, norm = 12, 2, 3, 0.3, 1.0
    X, y = _data(n=n, d=d, K=K, seed=global_random_seed)
    X /= np.linalg.norm(X, axis=1, keepdims=True).max()
    est = OutputPerturbedLogisticRegression(
        sigma=1.0, lam=lam, penalize_intercept=True, data_norm=norm, random_state=0
    ).fit(X, y)
    Delta = est.guarantee_.sensitivity
    assert Delta == pytest.approx(
        (1 + 2e-6) * 2 * LIPSCHITZ * np.hypot(norm, 1.0) / (n * lam), rel=1e-12
    )
    Xt, Y, omega = _augment(X, True), np.eye(K)[y], np.ones(n)
    reg = np.full(d + 1, n * lam)
    W = _oracle_fit(Xt, Y, omega, reg)
    worst = 0.0
    for _ in range(40):
        i = rng.integers(n)
        Xp, Yp = Xt.copy(), Y.copy()
        u = rng.normal(size=d)
        Xp[i, :d] = norm * u / np.linalg.norm(u)  # on the clipping sphere
        Yp[i] = np.eye(K)[rng.integers(K)]
        worst = max(worst, np.linalg.norm(_oracle_fit(Xp, Yp, omega, reg, W0=W) - W))
    assert worst <= Delta
    assert worst > 0.1 * Delta  # the neighbours do move it


# ---------------------------------------------------------------------------
# the estimator


def _iris(n_per_class=15):
    X, y = load_iris(return_X_y=True)
    rows = np.concatenate([np.flatnonzero(y == k)[:n_per_class] for k in range(3)])
    X = X[rows] / np.linalg.norm(X[rows], axis=1).max()
    return X, np.array(["setosa", "versicolor", "virginica"])[y[rows]]


def test_estimator_report_is_the_numerics_at_the_minimiser():
    X, y = _iris()
    params = dict(sigma=0.3, lam=0.05, penalize_intercept=True, data_norm=1.0)
    est = OutputPerturbedLogisticRegression(**params, random_state=0).fit(X, y)
    codes = np.searchsorted(est.classes_, y)
    omega = np.ones(len(y))
    W_o, fil, dfil, att, total, dataset = _oracle_report(
        X, codes, 3, omega, 0.05, True, True, 0.3
    )
    report = est.privacy_report_
    assert list(report.columns) == [
        "fil",
        "dfil",
        "mse_bound",
        "fil[x0]",
        "fil[x1]",
        "fil[x2]",
        "fil[x3]",
        "fil[y]",
        "rel_mse_bound",
        "loo_sensitivity",
        "epsilon",
        "epsilon_replace_one",
    ]
    np.testing.assert_allclose(report["fil"], fil, rtol=1e-8)
    np.testing.assert_allclose(report["dfil"], dfil, rtol=1e-8)
    np.testing.assert_allclose(report.iloc[:, 3:8], att, rtol=1e-8)
    np.testing.assert_allclose(est.attribute_fil_, total, rtol=1e-8)
    assert est.dataset_fil_ == pytest.approx(dataset, rel=1e-8)
    assert est.coef_.shape == (3, 4) and est.intercept_.shape == (3,)
    # the release is the minimiser plus noise of std sigma (up to the gauge)
    released = np.column_stack([est.coef_, est.intercept_])
    assert np.std(released - W_o) == pytest.approx(0.3, rel=0.6)
    # the label's unit: 1 - sum pi^2 over K - 1 = 2 coordinates
    k_label = 2
    var_label = 1 - 3 * (1 / 3) ** 2
    assert est.attribute_fil_sd_["y"] == pytest.approx(
        total[-1] * np.sqrt(var_label / k_label)
    )
    assert set(est.predict(X)) <= set(est.classes_)
    proba = est.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(est.classes_[proba.argmax(axis=1)], est.predict(X))


def test_guarantee_and_per_instance_columns():
    X, y = _iris()
    est = OutputPerturbedLogisticRegression(
        sigma=0.5, lam=0.1, penalize_intercept=True, data_norm=1.0, random_state=0
    ).fit(X, y)
    g = est.guarantee_
    assert g.neighboring_relation == "replace_one"
    assert "classes" in " ".join(g.public) or "label" in " ".join(g.public)
    report = est.privacy_report_
    n = len(y)
    bound = LIPSCHITZ * np.sqrt(2.0) / (n * 0.1)  # omega_i sqrt(2) L / (n lam)
    assert (report["loo_sensitivity"] <= bound).all()
    assert (report["epsilon"] <= report["epsilon_replace_one"]).all()
    assert (report["epsilon_replace_one"] <= est.epsilon_ * (1 + 1e-12)).all()
    # above the exact threshold: the bound column
    est_b = OutputPerturbedLogisticRegression(
        sigma=0.5,
        lam=0.1,
        penalize_intercept=True,
        data_norm=1.0,
        per_instance_accounting=False,
        random_state=0,
    ).fit(X, y)
    np.testing.assert_allclose(
        est_b.privacy_report_["loo_sensitivity_bound"], bound, rtol=1e-12
    )


def test_target_epsilon_calibrates_the_multinomial_noise():
    X, y = _iris()
    est = OutputPerturbedLogisticRegression(
        target_epsilon=1.0,
        lam=0.1,
        penalize_intercept=True,
        data_norm=1.0,
        random_state=0,
    ).fit(X, y)
    assert est.epsilon_ == pytest.approx(1.0, rel=1e-6)
    binary = OutputPerturbedLogisticRegression(
        target_epsilon=1.0,
        lam=0.1,
        penalize_intercept=True,
        data_norm=1.0,
        random_state=0,
    ).fit(X[y != "virginica"], y[y != "virginica"])
    # the same n and clipping: sqrt(2) times the binary model's noise
    assert est.guarantee_.sensitivity / binary.guarantee_.sensitivity == pytest.approx(
        np.sqrt(2.0) * 20 / 30
    )


def test_string_target_with_missing_values_through_a_pipeline():
    X, y = load_iris(return_X_y=True)
    X = X.copy()
    X[::7, 1] = np.nan
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    frame = pd.DataFrame(X, columns=["sl", "sw", "pl", "pw"])
    pipe = make_pipeline(
        SimpleImputer(),
        StandardScaler(),
        OutputPerturbedLogisticRegression(
            sigma=0.05, lam=1e-3, penalize_intercept=True, data_norm=5.0, random_state=0
        ),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pipe.fit(frame, pd.Series(names, name="species"))
    model = pipe[-1]
    assert list(model.classes_) == ["setosa", "versicolor", "virginica"]
    assert pipe.score(frame, names) > 0.8
    assert "fil[species]" in model.privacy_report_.columns
    assert model.epsilon_ > 0


def test_classes_parameter_fixes_the_label_set():
    X, y = _iris()
    keep = y != "virginica"
    est = OutputPerturbedLogisticRegression(
        classes=["setosa", "versicolor", "virginica"],
        lam=0.1,
        penalize_intercept=True,
        random_state=0,
    ).fit(X[keep], y[keep])
    assert est.coef_.shape == (3, 4)
    # the absent class is the least probable everywhere
    assert (est.predict_proba(X).argmin(axis=1) == 2).mean() > 0.9
    # without a penalty on its intercept, its logit would go to -inf
    with pytest.raises(ValueError, match="no training example"):
        OutputPerturbedLogisticRegression(
            classes=["setosa", "versicolor", "virginica"], lam=0.1
        ).fit(X[keep], y[keep])


def test_binary_models_refuse_more_classes():
    X, y = _iris()
    with pytest.raises(ValueError, match="binary"):
        IRFILClassifier().fit(X, y)
    da = pytest.importorskip("dask.array")
    with pytest.raises(ValueError, match="memory only"):
        OutputPerturbedLogisticRegression().fit(da.from_array(X, chunks=(15, 4)), y)


def test_attacks_that_rerun_the_binary_recipe_refuse_a_multinomial_model():
    from sklearn_fil.attacks import (
        GLMReconstructionAttack,
        LikelihoodRatioMembershipInference,
        LossThresholdMembershipInference,
        WhiteBoxAttributeInversion,
    )

    X, y = _iris()
    est = OutputPerturbedLogisticRegression(
        sigma=0.01, lam=0.01, penalize_intercept=True, data_norm=1.0, random_state=0
    ).fit(X, y)
    for attack in (
        GLMReconstructionAttack(est),
        LikelihoodRatioMembershipInference(est),
        WhiteBoxAttributeInversion(est, attribute=0),
    ):
        with pytest.raises(ValueError, match="multinomial model of 3 classes"):
            attack.fit(X, y)
    # the loss-threshold attack queries predict_proba: it runs, on K columns
    member = np.arange(len(y)) % 2 == 0
    attack = LossThresholdMembershipInference(est.release(), random_state=0)
    attack.fit(X, y, membership=member)
    assert 0.0 <= attack.tpr_ <= 1.0


def test_release_of_neighbours_differs_only_in_the_noised_weights():
    X, y = _iris()
    params = dict(sigma=0.1, lam=0.1, data_norm=1.0, random_state=0)
    params["classes"] = ["setosa", "versicolor", "virginica"]
    a = OutputPerturbedLogisticRegression(**params).fit(X, y).release()
    X2, y2 = X.copy(), y.copy()
    X2[0], y2[0] = X[-1], y[-1]  # replace one example
    b = OutputPerturbedLogisticRegression(**params).fit(X2, y2).release()
    assert not hasattr(a, "privacy_report_")
    np.testing.assert_array_equal(a.classes_, b.classes_)
    assert a.guarantee_ == b.guarantee_
    assert a.coef_.shape == b.coef_.shape == (3, 4)
    assert not np.array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(
        a.predict(X), a.classes_[a.decision_function(X).argmax(1)]
    )


def test_sparse_input_gives_the_dense_numbers():
    sp = pytest.importorskip("scipy.sparse")
    X, y = _iris()
    X[X < 0.3] = 0.0
    params = dict(sigma=0.2, lam=0.05, data_norm=1.0, random_state=0)
    dense = OutputPerturbedLogisticRegression(**params).fit(X, y)
    sparse = OutputPerturbedLogisticRegression(**params).fit(sp.csr_array(X), y)
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=1e-10, atol=1e-12)
    pd.testing.assert_frame_equal(
        sparse.privacy_report_, dense.privacy_report_, rtol=1e-9, atol=0
    )


def test_onehot_groups_auto_through_the_estimator():
    X, y = _iris()
    levels = np.arange(len(y)) % 3
    frame = pd.DataFrame(X[:, :2] * 0.5, columns=["a", "b"])
    for k, name in enumerate(["c_u", "c_v", "c_w"]):
        frame[name] = (levels == k).astype(float)
    est = OutputPerturbedLogisticRegression(
        sigma=0.5, lam=0.1, data_norm=2.0, onehot_groups="auto", random_state=0
    ).fit(frame, y)
    assert list(est.attribute_fil_.index) == ["a", "b", "c", "y"]
    problem = MultinomialProblem(
        frame.to_numpy(),
        np.searchsorted(est.classes_, y),
        np.ones(len(y)),
        3,
        0.1,
        True,
        True,
    )
    W, _ = fit_multinomial(problem, 1e-12, 100)
    res = FisherInformationLoss(
        **multinomial_fil(problem, W, 0.5, onehot=[np.array([2, 3, 4])])
    )
    np.testing.assert_allclose(est.attribute_fil_, res.total_attribute_fil, rtol=1e-8)
    assert "onehot_groups" in est.guarantee_.public


def test_the_only_example_of_a_class_has_no_leave_one_out_minimiser():
    """Without a penalty on the intercept, removing a class's only example
    leaves its logit free to decrease for ever: Delta_i = inf."""
    X, y = _data(n=15, d=2, K=3, seed=6)
    y[:] = np.where(y == 2, 1, y)
    y[0] = 2  # the only example of class 2
    problem = MultinomialProblem(X, y, np.ones(15), 3, 0.1, True, False)
    W, _ = fit_multinomial(problem, 1e-12, 100)
    sens = leave_one_out_sensitivity(problem, W)
    assert sens[0] == np.inf
    assert np.isfinite(sens[1:]).all()


def test_auto_lam_uses_the_multinomial_loss_constants():
    from sklearn_fil.accounting import default_delta, output_perturbation_lam

    X, y = _iris()
    est = OutputPerturbedLogisticRegression(
        target_epsilon=2.0, data_norm=1.0, random_state=0
    ).fit(X, y)
    n = len(y)
    expected = output_perturbation_lam(
        n,
        3 * (4 + 1),  # K (d + 1) weights
        np.sqrt(2.0),  # L = sqrt(data_norm^2 + 1)
        2.0,
        default_delta(n),
        lipschitz=np.sqrt(2.0),
        smoothness=0.5,
    )
    assert est.lam_ == pytest.approx(expected, rel=1e-12)
    assert est.penalize_intercept_ is True
    assert est.epsilon_ == pytest.approx(2.0, rel=1e-6)


def test_leave_one_out_blocks_do_not_change_the_result(monkeypatch):
    import sklearn_fil._multinomial as numerics

    X, y = _data(n=30, d=3, K=4, seed=7)
    problem = MultinomialProblem(X, y, np.ones(30), 4, 0.05, True, True)
    W, _ = fit_multinomial(problem, 1e-12, 100)
    whole = leave_one_out_sensitivity(problem, W)
    monkeypatch.setattr(numerics, "_LOO_BLOCK_BYTES", 8 * 4 * 30 * 4 * 7)  # 7 a block
    np.testing.assert_allclose(leave_one_out_sensitivity(problem, W), whole, rtol=1e-12)


# ---------------------------------------------------------------------------
# certified leave-one-out intervals (issue 32 item 4, multinomial)


def _softmax_hessian(z):
    P = np.exp(z - z.max())
    P /= P.sum()
    return np.diag(P) - np.outer(P, P)


def _osc(u):
    return u.max() - u.min()


def test_softmax_third_derivative_bounds_hold_numerically(global_random_seed):
    """The inequalities the certified interval rests on (``_multinomial``'s
    module docstring), with the third derivative by central differences of
    the Hessian and the Taylor remainder from the gradient by hand."""
    rng = np.random.default_rng(global_random_seed)
    worst = 0.0
    for _ in range(300):
        K = int(rng.integers(3, 7))
        z = rng.normal(size=K) * rng.choice([0.3, 2.0, 6.0])
        u, v, a = rng.normal(size=(3, K))
        S = _softmax_hessian(z)
        h = 1e-5
        D3 = (_softmax_hessian(z + h * u) - _softmax_hessian(z - h * u)) / (2 * h)
        d3 = v @ D3 @ v
        slack = 1e-8 * (1.0 + np.abs(D3).max())
        # |D^3 psi[u, v, v]| <= osc(u) D^2 psi[v, v] <= 2 ||u||_inf D^2 psi[v, v]
        assert abs(d3) <= _osc(u) * (v @ S @ v) + slack
        assert _osc(u) <= 2 * np.abs(u).max() + 1e-15
        assert _osc(u) <= np.sqrt(2.0) * np.linalg.norm(u) + 1e-15
        worst = max(worst, abs(d3) / (_osc(u) * (v @ S @ v)))
        # |D^3 psi[a, t, t]| <= osc(t) (D^2 psi[a, a] D^2 psi[t, t])^(1/2)
        D3a = (_softmax_hessian(z + h * a) - _softmax_hessian(z - h * a)) / (2 * h)
        assert abs(v @ D3a @ v) <= _osc(v) * np.sqrt((a @ S @ a) * (v @ S @ v)) + slack
        # e^-osc(t) S(z) <= S(z + t) <= e^osc(t) S(z) (on v)
        t = rng.normal(size=K) * rng.choice([0.1, 1.0, 3.0])
        St = v @ _softmax_hessian(z + t) @ v
        assert St >= np.exp(-_osc(t)) * (v @ S @ v) * (1 - 1e-12)
        assert St <= np.exp(_osc(t)) * (v @ S @ v) * (1 + 1e-12)
        # the remainder of the gradient P - e_y: <= sqrt(2) e^osc(t) t^T S t / 2
        P, Pt = np.exp(z) / np.exp(z).sum(), np.exp(z + t) / np.exp(z + t).sum()
        rem = np.linalg.norm(Pt - P - S @ t)
        assert rem <= np.sqrt(2.0) * np.exp(_osc(t)) * (t @ S @ t) / 2 * (1 + 1e-9)
    # the constant osc(u) is not loose by more than a small factor
    assert worst > 0.1


def _interval_data(n, d=4, K=4, seed=0, norm=1.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X *= norm * rng.uniform(0.2, 1.0, size=(n, 1)) / np.linalg.norm(X, axis=1)[:, None]
    y = np.argmax(3 * X @ rng.normal(size=(d, K)) + rng.normal(size=(n, K)), axis=1)
    return X, y


@pytest.mark.parametrize(
    "fit_intercept, penalize_intercept, weighted",
    [(True, True, False), (True, False, True), (False, False, False)],
)
def test_interval_contains_the_exact_leave_one_out(
    fit_intercept, penalize_intercept, weighted
):
    from sklearn_fil._multinomial import leave_one_out_interval

    X, y = _interval_data(600)
    omega = np.ones(600)
    if weighted:
        omega = np.random.default_rng(5).uniform(0.3, 1.0, size=600)
        omega[:5] = 0.0
    problem = MultinomialProblem(
        X, y, omega, 4, 0.01, fit_intercept, penalize_intercept
    )
    W, _ = fit_multinomial(problem, 1e-8, 100)
    interval = leave_one_out_interval(problem, W)
    exact = leave_one_out_sensitivity(problem, W, tol=1e-12)
    assert np.all(interval.lower <= exact)
    assert np.all(exact <= interval.upper)
    assert np.all(exact <= interval.reach + interval.fit_error)
    certified = np.isfinite(interval.upper)
    assert certified.mean() > 0.7
    certified &= omega > 0
    width = (interval.upper - interval.lower)[certified] / exact[certified]
    # measured: 0.04 to 0.07 (relative width about sqrt(2) L ||v|| cond / 2)
    assert np.median(width) < 0.2
    # the centre, the one-step estimate, is much closer than the certified
    # half-width (measured: median 7e-4; 8e-3 without the Woodbury term)
    centre = (interval.upper + interval.lower)[certified] / 2
    assert np.median(np.abs(centre / exact[certified] - 1)) < 3e-3


def _newton_refit(Xt, Y, omega, lam):
    """The minimiser of the penalised softmax objective (every weight
    penalised), by Newton's method with the Hessian written here."""
    p = Xt.shape[1]
    K = Y.shape[1]
    W = np.zeros((K, p))
    for _ in range(50):
        Z = Xt @ W.T
        P = np.exp(Z - Z.max(axis=1, keepdims=True))
        P /= P.sum(axis=1, keepdims=True)
        g = ((omega[:, None] * (P - Y)).T @ Xt + lam * omega.size * W).ravel()
        S = omega[:, None, None] * (
            P[:, :, None] * np.eye(K) - P[:, :, None] * P[:, None, :]
        )
        H = np.einsum("ikm,ij,il->kjml", S, Xt, Xt).reshape(K * p, K * p)
        H += lam * omega.size * np.eye(K * p)
        step = np.linalg.solve(H, g)
        W -= step.reshape(K, p)
        if np.linalg.norm(step) < 1e-14 * (1 + np.linalg.norm(W)):
            break
    return W


def test_estimator_epsilon_is_per_example_above_the_exact_threshold():
    n, K = 2500, 4
    X, y = _interval_data(n, K=K, seed=1, norm=2.0)
    est = OutputPerturbedLogisticRegression(
        sigma=0.2, lam=0.01, data_norm=2.0, random_state=0
    ).fit(X, y)
    report = est.privacy_report_
    upper = report["loo_sensitivity_bound"].to_numpy()
    lower = report["loo_sensitivity_lower"].to_numpy()
    assert np.unique(report["epsilon"]).size > n // 2
    bound = LIPSCHITZ * np.hypot(2.0, 1.0) / (n * 0.01)
    assert np.all(upper <= bound * (1 + 1e-12))
    # measured: 0.024 (90 % of rows below 0.05)
    assert np.median((upper - lower) / upper) < 0.05
    # a few rows refitted here, with every weight penalised (the default
    # penalize_intercept with data_norm)
    Xt = np.hstack([X, np.ones((n, 1))])
    Y = np.eye(K)[y]
    W = _newton_refit(Xt, Y, np.ones(n), 0.01)
    order = np.argsort(upper)
    for i in order[[0, n // 2, n - 1]]:
        omega = np.ones(n)
        omega[i] = 0.0
        delta = np.linalg.norm(_newton_refit(Xt, Y, omega, 0.01) - W)
        assert lower[i] <= delta <= upper[i]
        assert (upper[i] - lower[i]) / delta < 0.25  # measured: at most 0.12
