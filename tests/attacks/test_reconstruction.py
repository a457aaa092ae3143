# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""The informed-adversary GLM reconstruction attack, against derivations by hand.

Every expected value is derived here independently of the attack: the
training problems are re-solved in closed form or re-fitted, the Fisher
information is built from its closed form ``J = -H^-1 (r E + x~ w^T)`` for
the squared loss, and the roots of the first-order condition are found with
scipy's ``brentq`` from the true rows.
"""

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import brentq
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import Ridge
from sklearn.utils import Bunch

from sklearn_fil import (
    IRFILClassifier,
    IRFILRegressor,
    OutputPerturbedLinearRegression,
    OutputPerturbedLogisticRegression,
)
from sklearn_fil.attacks import GLMReconstructionAttack
from tests._reference import fit_minimiser

LAM = 1e-2
CLIP = 1.5  # data_norm of the logistic models: rows of norm > 1.5 are clipped
# The DP accounting of a logistic model with data_norm overflows harmlessly
# (to an infinite epsilon) at sigma = 1e-9.
_EPSILON_OVERFLOW = pytest.mark.filterwarnings(
    "ignore:overflow encountered in exp:RuntimeWarning"
)


def _rows(n, d, rng, radius=(1.0, 2.0)):
    """Rows in random directions with norms uniform in ``radius``."""
    X = rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X * rng.uniform(*radius, size=(n, 1))


def _problem(loss, n=40, d=3, seed=0):
    """Features, targets and model class; rows of norm in [1, 2]."""
    rng = np.random.default_rng(seed)
    X = _rows(n, d, rng)
    w = np.array([1.5, -2.0, 1.0, 0.5, -1.0][:d])
    if loss == "squared":
        return X, X @ w + 0.1 * rng.standard_normal(n), OutputPerturbedLinearRegression
    logits = 2.0 * (X @ w) + 0.5 * rng.standard_normal(n)
    return X, np.where(logits > 0, "yes", "no"), OutputPerturbedLogisticRegression


def _model(Model, sigma, fit_intercept, random_state=0):
    extra = {}
    if Model is OutputPerturbedLogisticRegression:  # the reference's free intercept
        extra = {"data_norm": CLIP, "penalize_intercept": False}
    return Model(
        sigma=sigma,
        lam=LAM,
        fit_intercept=fit_intercept,
        random_state=random_state,
        **extra,
    )


def _clipped(X, logistic):
    if not logistic:
        return X
    norms = np.linalg.norm(X, axis=1)
    return X * np.minimum(1.0, CLIP / norms)[:, None]


def _derivative(loss, m, y):
    """dl/dm by hand: ``m - y``, or ``sigmoid(m) - y``."""
    return m - y if loss == "squared" else 1.0 / (1.0 + np.exp(-m)) - y


def _weights(model):
    if model.fit_intercept:
        return np.append(model.coef_, model.intercept_)
    return np.asarray(model.coef_)


def _augment(X, fit_intercept):
    return np.hstack([X, np.ones((len(X), 1))]) if fit_intercept else X


def _other_roots(loss, Xc, y01, w):
    """The second exact solution of each row's first-order condition (no intercept).

    For the row ``x`` with margin ``m`` and residual ``r = l'(m, y)``, every
    ``z = x r / t`` whose own residual is ``t`` solves ``t z = r x``. Squared
    loss: ``t (t + y) = r m``, whose other root is ``t = -m``. Logistic loss:
    with ``u = (2y - 1) m``, ``u expit(-u)`` takes each value below its peak
    twice; the other ``u`` is found with brentq. NaN where there is none.
    """
    m = Xc @ w
    r = _derivative(loss, m, y01)
    if loss == "squared":
        t_other = -m
    else:
        s = 2.0 * y01 - 1.0
        u = s * m
        peak = brentq(lambda v: v * np.exp(v) / (1.0 + np.exp(v)) - 1.0, 0.5, 3.0)
        t_other = np.full(len(m), np.nan)
        for i, ui in enumerate(u):
            b = ui / (1.0 + np.exp(ui))
            if ui <= 0 or abs(ui - peak) < 1e-9:
                continue
            lo, hi = (peak, 60.0) if ui < peak else (0.0, peak)
            uo = brentq(lambda v, b=b: v / (1.0 + np.exp(v)) - b, lo, hi, xtol=1e-15)
            t_other[i] = -s[i] / (1.0 + np.exp(uo))
    return Xc * (r / t_other)[:, None]


def _prior_norm(Xc):
    """Root-mean-square norm of the other rows, by an explicit deletion."""
    sq = np.sum(Xc**2, axis=1)
    return np.sqrt(np.array([np.delete(sq, i).mean() for i in range(len(sq))]))


@_EPSILON_OVERFLOW
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_noise_free_limit_recovers_every_row(loss, fit_intercept):
    # With sigma -> 0 the release is the minimiser, where the first-order
    # condition holds exactly: every row comes back (as training clipped it).
    X, y, Model = _problem(loss)
    Xc = _clipped(X, loss == "logistic")
    model = _model(Model, 1e-9, fit_intercept).fit(X, y)
    if not fit_intercept:
        # The data suit the documented root rule: each row's second exact
        # solution is farther (by norm ratio) from the other rows' RMS norm.
        y01 = (y == "yes").astype(float) if loss == "logistic" else y
        other = _other_roots(loss, Xc, y01, _weights(model))
        prior = _prior_norm(Xc)
        miss_true = np.abs(np.log(np.linalg.norm(Xc, axis=1) / prior))
        miss_other = np.abs(np.log(np.linalg.norm(other, axis=1) / prior))
        assert np.all(np.isnan(miss_other) | (miss_other > miss_true + 0.1))
    attack = GLMReconstructionAttack(model.release()).fit(X, y)
    mse = attack.reconstruction_mse(X)
    assert np.max(mse) < 1e-8 * np.mean(Xc**2)
    np.testing.assert_allclose(attack.transform(X), Xc, rtol=0, atol=1e-4)
    assert attack.score(X) == pytest.approx(-mse.mean())


@_EPSILON_OVERFLOW
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_large_noise_hides_the_rows(loss, fit_intercept):
    # sigma = 10 swamps the gradient signal: on average the reconstructions
    # are worse than guessing the mean of the data.
    X, y, Model = _problem(loss)
    variance = np.mean(np.var(_clipped(X, loss == "logistic"), axis=0))
    for seed in range(3):
        model = _model(Model, 10.0, fit_intercept, random_state=seed).fit(X, y)
        attack = GLMReconstructionAttack(model.release()).fit(X, y)
        assert -attack.score(X) > variance
        # the same attack at sigma = 1e-9 for contrast
        exact = _model(Model, 1e-9, fit_intercept, random_state=seed).fit(X, y)
        assert -GLMReconstructionAttack(exact).fit(X, y).score(X) < 1e-8 * variance


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_never_reads_the_target_row(loss, fit_intercept):
    # Changing row i's features in what the adversary is given (the release
    # kept) must leave row i's reconstruction unchanged, while every other
    # row's reconstruction moves (row i is knowledge for those).
    X, y, Model = _problem(loss)
    release = _model(Model, 1e-3, fit_intercept).fit(X, y).release()
    before = GLMReconstructionAttack(release).fit(X, y).transform(X)
    for i in (0, 7, 39):
        X_mod = X.copy()
        X_mod[i] = -3.0 * X[i - 1]  # norm 3-6: clipped for the logistic model
        after = GLMReconstructionAttack(release).fit(X_mod, y).transform(X_mod)
        np.testing.assert_allclose(after[i], before[i], rtol=1e-10, atol=0)
        others = np.delete(np.arange(len(X)), i)
        assert np.all(np.abs(after[others] - before[others]).max(axis=1) > 1e-6)
    # transform ignores the values it is given (the targets' features)
    attack = GLMReconstructionAttack(release).fit(X, y)
    np.testing.assert_array_equal(attack.transform(np.full_like(X, np.nan)), before)


def _squared_fisher(X, y, fit_intercept, sigma):
    """Minimiser, FIM of each example's features and the attack's error map.

    ``w* = H^-1 X~^T y``; ``J_i = -H^-1 (r_i E + x~_i w_d^T)`` (E: the feature
    coordinates); with an intercept the attack's first-order error is ``L_i
    delta`` with ``L_i = -[I, -x_i] (H - x~_i x~_i^T) / r_i``.
    """
    n, d = X.shape
    Xt = _augment(X, fit_intercept)
    p = Xt.shape[1]
    reg = np.full(p, n * LAM)
    if fit_intercept:
        reg[-1] = 0.0
    H = Xt.T @ Xt + np.diag(reg)
    w = np.linalg.solve(H, Xt.T @ y)
    r = Xt @ w - y
    E = np.eye(p)[:, :d]
    fims, maps = [], []
    for i in range(n):
        J = -np.linalg.solve(H, r[i] * E + np.outer(Xt[i], w[:d]))
        fims.append(J.T @ J / sigma**2)
        if fit_intercept:
            A = np.hstack([np.eye(d), -X[i][:, None]])
            L = -A @ (H - np.outer(Xt[i], Xt[i])) / r[i]
            np.testing.assert_allclose(L @ J, np.eye(d), atol=1e-8)  # unbiased
        else:
            L = np.linalg.inv(J)  # the only locally unbiased estimator
        maps.append(L)
    return w, fims, maps


@pytest.mark.parametrize(("d", "fit_intercept"), [(1, False), (3, False), (3, True)])
def test_realised_mse_respects_the_fil_bound(d, fit_intercept):
    # Linear regression at small sigma, where the attack is unbiased to first
    # order: its error is L_i delta (delta: the noise), with expected
    # per-coordinate MSE sigma^2 ||L_i||_F^2 / d >= Tr(I_i^-1) / d >= d /
    # Tr(I_i) (Cramer-Rao, then Cauchy-Schwarz). Without an intercept L_i =
    # J_i^-1 and the attack attains Cramer-Rao, which meets the trace bound
    # only for an isotropic I_i, as when d = 1; for H near a multiple of the
    # identity I_i has eigenvalues in the ratio (r_i + m_i)^2 : r_i^2
    # (residual, margin), so for d = 3 the realised MSE is 25 to 4e8 times
    # the bound here. With an intercept the attack solves for the scale t_i
    # as a free unknown instead of the residual of x_i, and is not efficient:
    # 1.2 to 4 times Cramer-Rao here for d = 3, and up to 1e7 times for
    # d = 1 (rows with a small residual).
    n, sigma, draws = 30, 1e-8, 300
    rng = np.random.default_rng(1)
    X = _rows(n, d, rng)
    y = X @ np.array([1.5, -2.0, 1.0][:d]) + 0.1 * rng.standard_normal(n)
    w, fims, maps = _squared_fisher(X, y, fit_intercept, sigma)
    # The first order holds when the noise's pull on the gradient, about
    # sigma ||H||, is far below every residual (the reconstruction divides
    # by the noisy residual: heavy tails otherwise).
    Xt = _augment(X, fit_intercept)
    assert sigma * np.linalg.norm(Xt.T @ Xt, 2) < 1e-2 * np.min(np.abs(Xt @ w - y))
    bound = np.array([d / np.trace(fim) for fim in fims])
    expected = np.array([sigma**2 * np.sum(L**2) / d for L in maps])
    assert np.all(expected >= bound * (1 - 1e-9))

    total = np.zeros(n)
    for k in range(draws):
        model = OutputPerturbedLinearRegression(
            sigma=sigma, lam=LAM, fit_intercept=fit_intercept, random_state=k
        ).fit(X, y)
        attack = GLMReconstructionAttack(model).fit(X, y)
        total += attack.reconstruction_mse(X)
    realised = total / draws
    check = attack.check_bound(X)
    np.testing.assert_allclose(check.report["mse_bound"], bound, rtol=1e-8)
    np.testing.assert_allclose(_weights(model), w, atol=10 * sigma)

    # Monte-Carlo error of a mean of 300 squared Gaussians: below 8% (one
    # standard deviation), so a band of about four either side.
    ratio = realised / expected
    assert np.all((ratio > 0.7) & (ratio < 1.35)), ratio
    assert np.all(realised >= 0.7 * bound)
    if d == 1 and not fit_intercept:
        # efficient: the MSE is the bound, and with one weight every row's
        # error is the same noise draw scaled, so the ratio is shared
        np.testing.assert_allclose(expected, bound, rtol=1e-9)
        assert np.ptp(realised / bound) < 1e-3 * np.mean(realised / bound)
    else:
        assert np.median(expected / bound) > 1.5


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_stationarity_without_intercept(loss):
    # Plug each reconstruction back: with it in place of row i, the gradient
    # of the objective at the released weights vanishes (computed by hand,
    # row by row, without the attack's leave-one-out subtraction).
    # Rows without a solution (n_solutions_ == 0) get the closest point,
    # which leaves a residual.
    X, y, Model = _problem(loss)
    model = _model(Model, 1e-4, False).fit(X, y)
    attack = GLMReconstructionAttack(model.release()).fit(X, y)
    X_hat = attack.transform(X)
    Xc = _clipped(X, loss == "logistic")
    y01 = (y == "yes").astype(float) if loss == "logistic" else y
    w = np.asarray(model.coef_)
    solved = attack.n_solutions_ > 0
    assert solved.mean() > 0.9
    for i in range(len(X)):
        Z = Xc.copy()
        Z[i] = X_hat[i]
        terms = _derivative(loss, Z @ w, y01)[:, None] * Z
        grad = terms.sum(axis=0) + len(X) * LAM * w
        scale = np.abs(terms).sum(axis=0) + len(X) * LAM * np.abs(w)
        residual = np.linalg.norm(grad) / np.linalg.norm(scale)
        assert residual < 1e-10 if solved[i] else residual > 1e-6


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_root_rule_without_intercept(loss):
    # Without an intercept a row's first-order condition has a second exact
    # solution: training on it instead gives the same minimiser, so no
    # adversary can tell them apart. The attack keeps the one whose norm is
    # closest, by ratio, to the RMS norm of the other rows.
    rng = np.random.default_rng(2)
    X = rng.standard_normal((40, 2)) * [1.0, 3.0]
    if loss == "squared":
        y = y01 = X @ [1.0, 0.5] + 0.5 * rng.standard_normal(40)
        Model = OutputPerturbedLinearRegression
    else:
        y = y01 = (X @ [1.0, 0.5] + rng.standard_normal(40) > 0).astype(float)
        Model = OutputPerturbedLogisticRegression
    model = Model(sigma=1e-12, lam=LAM, fit_intercept=False, random_state=0)
    model.fit(X, y)
    w = np.asarray(model.coef_)
    other = _other_roots(loss, X, y01, w)
    has_two = ~np.isnan(other[:, 0])
    assert has_two.sum() > 10
    for i in np.flatnonzero(has_two)[:3]:
        X_alt = X.copy()
        X_alt[i] = other[i]
        refit = Model(**model.get_params()).fit(X_alt, y)
        np.testing.assert_allclose(refit.coef_, w, rtol=1e-8)

    prior = _prior_norm(X)
    miss_true = np.abs(np.log(np.linalg.norm(X, axis=1) / prior))
    miss_other = np.abs(np.log(np.linalg.norm(other, axis=1) / prior))
    expected = np.where(has_two & (miss_other < miss_true), other.T, X.T).T
    attack = GLMReconstructionAttack(model).fit(X, y)
    picks_other = has_two & (miss_other < miss_true)
    assert picks_other.any()  # the rule matters on these data
    np.testing.assert_allclose(attack.transform(X), expected, rtol=1e-6, atol=1e-9)
    assert np.all(attack.n_solutions_[has_two] == 2)


def test_check_bound_table():
    X, y, _ = _problem("squared")
    model = OutputPerturbedLinearRegression(sigma=1e-3, lam=LAM, random_state=0)
    X_df = pd.DataFrame(X, columns=["a", "b", "c"], index=np.arange(100, 140))
    attack = GLMReconstructionAttack(model.fit(X_df, y)).fit(X_df, y)
    result = attack.check_bound(X_df)
    assert isinstance(result, Bunch)
    table = result.report
    assert table.columns.tolist() == ["mse", "mse_bound", "respects_bound", "prior_mse"]
    assert table.index.equals(model.privacy_report_.index)
    np.testing.assert_array_equal(table["mse"], attack.reconstruction_mse(X_df))
    eta = model.privacy_report_[["fil[a]", "fil[b]", "fil[c]"]].to_numpy()
    np.testing.assert_allclose(table["mse_bound"], 3 / np.sum(eta**2, axis=1))
    assert result.fraction_respected == table["respects_bound"].mean()
    np.testing.assert_array_equal(
        table["respects_bound"], table["mse"] >= table["mse_bound"]
    )
    out = attack.set_output(transform="pandas").transform(X_df)
    assert out.columns.tolist() == ["a", "b", "c"]


def test_check_bound_needs_the_fitted_report():
    X, y, _ = _problem("squared")
    model = OutputPerturbedLinearRegression(sigma=1e-3, lam=LAM, random_state=0)
    released = GLMReconstructionAttack(model.fit(X, y).release()).fit(X, y)
    with pytest.raises(ValueError, match="privacy_report_ of the fitted"):
        released.check_bound(X)
    X_oh = np.column_stack([X, (X[:, 0] > 0), (X[:, 0] <= 0)]).astype(float)
    grouped = OutputPerturbedLinearRegression(
        sigma=1e-3, lam=LAM, onehot_groups={"g": [3, 4]}, random_state=0
    ).fit(X_oh, y)
    with pytest.raises(ValueError, match="onehot_groups"):
        GLMReconstructionAttack(grouped).fit(X_oh, y).check_bound(X_oh)
    with pytest.raises(ValueError, match="40 rows"):
        GLMReconstructionAttack(model).fit(X[:30], y[:30]).check_bound(X[:30])


def test_bad_input():
    X, y, _ = _problem("squared")
    model = OutputPerturbedLinearRegression(sigma=1e-3, lam=LAM).fit(X, y)
    for other in (Ridge().fit(X, y), IRFILRegressor(n_iter=1, tol=0.0).fit(X, y)):
        with pytest.raises(TypeError, match="GLMReconstructionAttack attacks"):
            GLMReconstructionAttack(other).fit(X, y)
    with pytest.raises(NotFittedError):
        GLMReconstructionAttack(OutputPerturbedLinearRegression()).fit(X, y)
    with pytest.raises(ValueError, match="trained on 3"):
        GLMReconstructionAttack(model).fit(X[:, :2], y)
    attack = GLMReconstructionAttack(model).fit(X, y)
    with pytest.raises(ValueError, match="40 rows; got 39"):
        attack.transform(X[:39])
    with pytest.raises(ValueError, match="features"):
        attack.reconstruction_mse(X[:, :2])
    X_nan = X.copy()
    X_nan[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        attack.reconstruction_mse(X_nan)
    with pytest.raises(ValueError, match="NaN"):
        GLMReconstructionAttack(model).fit(X_nan, y)

    Xl, yl, _ = _problem("logistic")
    clf = OutputPerturbedLogisticRegression(sigma=1e-3).fit(Xl, yl)
    with pytest.raises(ValueError, match="not classes of the target model"):
        GLMReconstructionAttack(clf).fit(Xl, np.where(yl == "yes", "yes", "maybe"))
    with pytest.raises(ValueError, match="feature names"):
        named = OutputPerturbedLinearRegression(sigma=1e-3, lam=LAM).fit(
            pd.DataFrame(X, columns=["a", "b", "c"]), y
        )
        GLMReconstructionAttack(named).fit(pd.DataFrame(X, columns=["a", "b", "d"]), y)


def _sample_weights(n, seed=0):
    return np.random.default_rng(seed).uniform(0.2, 3.0, n)


def _stationarity_residuals(loss, Xc, y01, omega, w, X_hat, penalize):
    """Relative weighted gradient at w' with each reconstruction put in place.

    Computed row by row from scratch: ``sum_j omega_j l'(w^T z~_j) z~_j +
    sum(omega) lam R w`` with row ``i`` replaced by its reconstruction.
    """
    p = w.size
    fit_intercept = p == Xc.shape[1] + 1
    reg = np.full(p, omega.sum() * LAM)
    if fit_intercept and not penalize:
        reg[-1] = 0.0
    out = np.empty(len(Xc))
    for i in range(len(Xc)):
        Z = Xc.copy()
        Z[i] = X_hat[i]
        Zt = _augment(Z, fit_intercept)
        terms = (omega * _derivative(loss, Zt @ w, y01))[:, None] * Zt
        grad = terms.sum(axis=0) + reg * w
        scale = np.abs(terms).sum(axis=0) + np.abs(reg * w)
        out[i] = np.linalg.norm(grad) / np.linalg.norm(scale)
    return out


@_EPSILON_OVERFLOW
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_weighted_target_matches_weighted_refitting(loss, fit_intercept):
    # The release of a weighted fit is the minimiser of the weighted
    # objective (re-fitted from scratch here); the attack, given the weights,
    # solves its first-order condition: without noise every row comes back,
    # and without an intercept (where the scale is solved for, not read off)
    # every reconstruction put back makes the weighted gradient at a noisy
    # w' vanish.
    X, y, Model = _problem(loss)
    Xc = _clipped(X, loss == "logistic")
    y01 = (y == "yes").astype(float) if loss == "logistic" else y
    omega = _sample_weights(len(X))
    model = _model(Model, 1e-9, fit_intercept).fit(X, y, sample_weight=omega)
    coef, b = fit_minimiser(
        Xc, y01, loss, lam=LAM, sample_weight=omega, fit_intercept=fit_intercept
    )
    w_refit = coef if b is None else np.append(coef, b)
    np.testing.assert_allclose(_weights(model), w_refit, rtol=1e-7, atol=1e-8)
    attack = GLMReconstructionAttack(model.release())
    attack.fit(X, y, sample_weight=omega)
    mse = attack.reconstruction_mse(X)
    assert np.max(mse) < 1e-8 * np.mean(Xc**2)
    # the unweighted attack misses the rows
    wrong = GLMReconstructionAttack(model.release()).fit(
        X, y, sample_weight=np.ones(len(X))
    )
    assert np.max(wrong.reconstruction_mse(X)) > 1e-3 * np.mean(Xc**2)

    if fit_intercept:
        return
    noisy = _model(Model, 1e-5, fit_intercept).fit(X, y, sample_weight=omega)
    attack = GLMReconstructionAttack(noisy).fit(X, y, sample_weight=omega)
    residual = _stationarity_residuals(
        loss, Xc, y01, omega, _weights(noisy), attack.transform(X), False
    )
    solved = attack.n_solutions_ > 0
    assert solved.mean() > 0.9
    assert np.all(residual[solved] < 1e-10)


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_unit_weights_are_the_unweighted_attack(loss):
    X, y, Model = _problem(loss)
    release = _model(Model, 1e-3, True).fit(X, y).release()
    plain = GLMReconstructionAttack(release).fit(X, y)
    unit = GLMReconstructionAttack(release).fit(X, y, sample_weight=np.ones(len(X)))
    np.testing.assert_array_equal(unit.transform(X), plain.transform(X))
    np.testing.assert_array_equal(unit.n_solutions_, plain.n_solutions_)


def test_weighted_target_needs_the_weights():
    X, y, _ = _problem("squared")
    model = OutputPerturbedLinearRegression(sigma=1e-3, lam=LAM)
    model.fit(X, y, sample_weight=_sample_weights(len(X)))
    attack = GLMReconstructionAttack(model.release())
    with pytest.raises(ValueError, match="trained with sample weights; pass"):
        attack.fit(X, y)
    assert not hasattr(attack, "n_solutions_")
    with pytest.raises(ValueError, match=r"inconsistent|shape"):
        attack.fit(X, y, sample_weight=np.ones(len(X) + 1))
    with pytest.raises(ValueError, match="positive sum"):
        attack.fit(X, y, sample_weight=-np.ones(len(X)))
    # a weightless example is not in the objective: it cannot be recovered
    omega = _sample_weights(len(X))
    omega[4] = 0.0
    exact = OutputPerturbedLinearRegression(sigma=1e-9, lam=LAM, random_state=0)
    exact.fit(X, y, sample_weight=omega)
    attack = GLMReconstructionAttack(exact).fit(X, y, sample_weight=omega)
    X_hat = attack.transform(X)
    assert np.all(np.isnan(X_hat[4])) and attack.n_solutions_[4] == 0
    np.testing.assert_allclose(np.delete(X_hat, 4, 0), np.delete(X, 4, 0), rtol=1e-3)


@_EPSILON_OVERFLOW
@pytest.mark.parametrize("Model", [IRFILRegressor, IRFILClassifier])
def test_irfil_target_with_its_report_weights(Model):
    # IRFIL's final fit is the weighted objective with the weights of its
    # privacy report (summing to n): given them, the adversary re-runs it.
    loss = "squared" if Model is IRFILRegressor else "logistic"
    X, y, _ = _problem(loss)
    y01 = (y == "yes").astype(float) if loss == "logistic" else y
    model = Model(sigma=1e-9, lam=LAM, n_iter=2, tol=0.0, random_state=0).fit(X, y)
    omega = model.privacy_report_["weight"].to_numpy()
    assert np.ptp(omega) > 0.1
    coef, b = fit_minimiser(
        X,
        y01,
        loss,
        lam=LAM,
        sample_weight=omega,
        fit_intercept=True,
        penalize_intercept=model.penalize_intercept,
    )
    np.testing.assert_allclose(_weights(model), np.append(coef, b), atol=1e-7)
    with pytest.raises(TypeError, match=r"IRFIL.*sample_weight"):
        GLMReconstructionAttack(model).fit(X, y)
    attack = GLMReconstructionAttack(model.release()).fit(X, y, sample_weight=omega)
    assert np.max(attack.reconstruction_mse(X)) < 1e-8 * np.mean(X**2)


@_EPSILON_OVERFLOW
def test_noise_free_limit_with_onehot_groups_and_clipping():
    # With one-hot groups, training clips only the numeric block (to the
    # budget sqrt(data_norm^2 - groups)); the attack re-runs that recipe, so
    # the noise-free release gives back the rows exactly as training saw them.
    rng = np.random.default_rng(1)
    n = 40
    level = rng.integers(0, 3, size=n)
    numeric = _rows(n, 2, rng, radius=(0.5, 3.0))
    X = np.column_stack([numeric, np.eye(3)[level]])
    y = np.where(numeric[:, 0] + level > 1.5, "yes", "no")
    model = OutputPerturbedLogisticRegression(
        sigma=1e-9,
        lam=LAM,
        penalize_intercept=True,
        data_norm=CLIP,
        onehot_groups={"level": [2, 3, 4]},
        random_state=0,
    ).fit(X, y)
    budget = np.sqrt(CLIP**2 - 1)
    Xc = X.copy()
    Xc[:, :2] *= np.minimum(1.0, budget / np.linalg.norm(numeric, axis=1))[:, None]
    assert 0 < model.n_clipped_ < n
    attack = GLMReconstructionAttack(model.release()).fit(X, y)
    np.testing.assert_allclose(attack.transform(X), Xc, rtol=0, atol=1e-4)


def test_positional_sample_weight_is_deprecated():
    X, y, Model = _problem("squared")
    model = _model(Model, sigma=0.1, fit_intercept=True).fit(X, y)
    omega = np.ones(len(y))
    new = GLMReconstructionAttack(model).fit(X, y, sample_weight=omega)
    with pytest.warns(FutureWarning, match="sample_weight"):
        old = GLMReconstructionAttack(model).fit(X, y, omega)
    np.testing.assert_array_equal(old.transform(X), new.transform(X))
    with pytest.raises(ValueError, match="requires y"):
        GLMReconstructionAttack(model).fit(X)
