# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""The (ε, δ) guarantee of OutputPerturbedLinearRegression with bounded rows
and labels.

The sensitivity against exact replace-one refits solved here with NumPy (the
normal equations, not the library's solver), and against the formula written
out by hand; the calibration against the analytic Gaussian mechanism; the λ
rule against a numeric minimisation of its stated bound; the label clipping
against a fit on labels clipped by hand; the per-example replace-one ε against
refits; the cases without a guarantee against their reasons."""

import math
import warnings

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from sklearn.base import clone

from sklearn_fil import OutputPerturbedLinearRegression
from sklearn_fil._glm import fit_glm
from sklearn_fil.accounting import (
    default_delta,
    gaussian_epsilon,
    gaussian_sigma,
    output_perturbation_ridge_lam,
    output_perturbation_sensitivity,
    per_instance_gaussian_epsilon,
)
from sklearn_fil.exceptions import ClippingWarning, PrivacyLeakWarning

DATA_NORM, LABEL_BOUND = 1.5, 2.0


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = X @ [0.8, -0.5, 0.3] + 0.3 * rng.normal(size=60)
    return X, y  # some rows and some labels beyond the bounds


def _clip(X, y):
    """Rows and labels as the guarantee's fit sees them, clipped by hand."""
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    X = X * np.minimum(1.0, DATA_NORM / norms)
    return X, np.clip(y, -LABEL_BOUND, LABEL_BOUND)


def _ridge(X, y, lam, fit_intercept=True):
    """The exact minimiser of the penalised objective (intercept penalised)."""
    Z = np.column_stack([X, np.ones(len(X))]) if fit_intercept else X
    n, p = Z.shape
    return np.linalg.solve(Z.T @ Z + n * lam * np.eye(p), Z.T @ y)


def _model(**params):
    defaults = dict(sigma=0.1, lam=0.5, data_norm=DATA_NORM, label_bound=LABEL_BOUND)
    return OutputPerturbedLinearRegression(**{**defaults, **params})


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("lam", [0.05, 0.5, 5.0])
def test_sensitivity_is_the_formula_and_bounds_worst_case_refits(
    data, fit_intercept, lam
):
    X, y = _clip(*data)
    n = X.shape[0]
    model = _model(lam=lam, fit_intercept=fit_intercept).fit(*data)
    L = math.hypot(DATA_NORM, float(fit_intercept))
    G = LABEL_BOUND * (L / (2 * math.sqrt(lam)) + 1.0)  # the largest residual
    by_hand = 2.0 * G * L / (n * lam)
    assert model.guarantee_.sensitivity == pytest.approx(
        by_hand * (1 + 2e-6), rel=1e-12
    )
    assert output_perturbation_sensitivity(
        n_samples=n, lam=lam, row_norm=L, label_bound=LABEL_BOUND
    ) == pytest.approx(by_hand, rel=1e-14)
    w = _ridge(X, y, lam, fit_intercept)
    # the ball the proof confines every minimiser to
    assert np.linalg.norm(w) <= LABEL_BOUND / (2 * math.sqrt(lam))
    # replace row 0 by rows on the clipping sphere with labels at the bound,
    # in every direction and along the fit's own weights
    rng = np.random.default_rng(1)
    directions = rng.normal(size=(200, 3))
    directions = np.vstack([directions, w[:3], -w[:3], np.eye(3), -np.eye(3)])
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    moved = 0.0
    for u in directions:
        for label in (-LABEL_BOUND, LABEL_BOUND):
            Xr, yr = X.copy(), y.copy()
            Xr[0], yr[0] = DATA_NORM * u, label
            moved = max(moved, np.linalg.norm(_ridge(Xr, yr, lam, fit_intercept) - w))
    assert moved <= by_hand


@pytest.mark.parametrize("target", [0.3, 1.0, 5.0])
def test_target_epsilon_is_the_analytic_gaussian_mechanism(data, target):
    model = _model(target_epsilon=target, sigma=99.0).fit(*data)
    g = model.guarantee_
    delta = default_delta(data[0].shape[0])
    assert g.holds and g.neighboring_relation == "replace_one"
    assert model.delta_ == delta
    assert model.epsilon_ == pytest.approx(target, rel=1e-9)
    expected = gaussian_sigma(epsilon=target, delta=delta, sensitivity=g.sensitivity)
    assert model.sigma_ == pytest.approx(expected, rel=1e-12)
    assert gaussian_epsilon(
        sigma=model.sigma_, sensitivity=g.sensitivity, delta=delta
    ) == pytest.approx(target, rel=1e-9)
    assert "n_samples" in g.public


def test_auto_lam_minimises_the_stated_bound():
    n, p, L, eps, delta, a = 5000, 8, math.sqrt(7.0 + 1.0), 1.0, 1e-5, 0.25
    c = gaussian_sigma(epsilon=eps, delta=delta, sensitivity=1.0)

    def bound(lam, B_y=1.7):  # penalty bias + noise, as the docstring writes them
        G = B_y * (L / (2 * math.sqrt(lam)) + 1.0)
        sigma = c * 2.0 * G * L / (n * lam)
        B = a * B_y * math.sqrt(p) / L
        return lam * B**2 / 2.0 + L**2 * p * sigma**2 / 2.0

    lam = output_perturbation_ridge_lam(n, p, L, eps, delta)
    found = minimize_scalar(lambda t: bound(math.exp(t)), bracket=(-5, 5), tol=1e-12)
    assert lam == pytest.approx(math.exp(found.x), rel=1e-5)
    # features rescaled by t: lam by t^2; stronger privacy: more penalty
    assert output_perturbation_ridge_lam(n, p, 3 * L, eps, delta) == pytest.approx(
        9 * lam, rel=1e-10
    )
    assert output_perturbation_ridge_lam(n, p, L, eps / 2, delta) > lam


def test_auto_lam_is_public_and_resolved(data):
    X, y = data
    n = X.shape[0]
    model = OutputPerturbedLinearRegression(
        target_epsilon=1.0, data_norm=DATA_NORM, label_bound=LABEL_BOUND
    ).fit(X, y)
    expected = output_perturbation_ridge_lam(
        n, 4, math.hypot(DATA_NORM, 1.0), 1.0, default_delta(n)
    )
    assert model.lam_ == expected
    assert model.penalize_intercept_ is True
    # a neighbouring data set: the same λ (public numbers only)
    y2 = y.copy()
    y2[0] = -LABEL_BOUND
    assert clone(model).fit(X, y2).lam_ == model.lam_
    # without a target: 1e-2 where a guarantee is asked, else least squares
    assert _model(lam="auto").fit(X, y).lam_ == 1e-2
    plain = OutputPerturbedLinearRegression(random_state=0).fit(X, y)
    assert (plain.lam_, plain.penalize_intercept_) == (0.0, False)


def test_labels_clipped_and_counted(data):
    X, y = data
    outside = int(np.sum(np.abs(y) > LABEL_BOUND))
    assert outside > 0
    model = _model(random_state=0).fit(X, y)
    assert model.n_labels_clipped_ == outside
    # the same release as from labels clipped by hand (nothing left to clip)
    by_hand = _model(random_state=0).fit(X, np.clip(y, -LABEL_BOUND, LABEL_BOUND))
    assert by_hand.n_labels_clipped_ == 0
    np.testing.assert_array_equal(model.coef_, by_hand.coef_)
    assert model.intercept_ == by_hand.intercept_
    assert _model().fit(X, y / 100).n_labels_clipped_ == 0
    with pytest.warns(ClippingWarning, match="clipped 60 of 60 labels"):
        _model().fit(X, 10 * np.sign(y))


def test_released_centre_is_certified(data):
    """The solve the guarantee releases is within 1e-6 Δ of the minimiser."""
    X, y = _clip(*data)
    n, lam = X.shape[0], 0.5
    # an ill-conditioned design: a nearly repeated column
    Xc = np.column_stack([X, X[:, 0] + 1e-9 * np.arange(n)])
    sensitivity = 1e-3
    gtol = 1e-6 * sensitivity * n * lam
    w, n_iter = fit_glm(
        Xc, y, np.ones(n), "squared", lam, True, True, None, 1, gtol=gtol
    )
    Z = np.column_stack([Xc, np.ones(n)])
    gradient = Z.T @ (Z @ w - y) + n * lam * w
    assert np.linalg.norm(gradient) <= gtol
    assert n_iter >= 1
    with pytest.raises(ValueError, match="iterative refinement"):
        fit_glm(Xc, y, np.ones(n), "squared", lam, True, True, None, 1, gtol=1e-300)


def test_per_example_replace_one_epsilon_bounds_refits(data):
    X, y = data
    model = _model(sigma=0.05, random_state=0).fit(X, y)
    report = model.privacy_report_
    assert np.all(report["epsilon"] <= report["epsilon_replace_one"])
    assert np.all(report["epsilon_replace_one"] <= model.epsilon_ * (1 + 1e-12))
    Xc, yc = _clip(X, y)
    w = _ridge(Xc, yc, 0.5)
    rng = np.random.default_rng(2)
    delta = model.delta_
    for i in (0, 7, 33):
        for _ in range(20):
            Xr, yr = Xc.copy(), yc.copy()
            u = rng.normal(size=3)
            Xr[i] = DATA_NORM * u / np.linalg.norm(u)
            yr[i] = rng.choice([-LABEL_BOUND, LABEL_BOUND])
            moved = np.linalg.norm(_ridge(Xr, yr, 0.5) - w)
            eps = per_instance_gaussian_epsilon(moved, sigma=0.05, delta=delta)
            assert eps <= report["epsilon_replace_one"].iloc[i] * (1 + 1e-9)


@pytest.mark.parametrize(
    "params, match",
    [
        (dict(data_norm=None), "data_norm was not set"),
        (dict(label_bound=None), "label_bound was not set"),
        (dict(lam=0.0), "lam=0"),
        (dict(penalize_intercept=False), "intercept is not penalised"),
    ],
)
def test_no_guarantee_says_why(data, params, match):
    model = _model(**params).fit(*data)
    assert not model.guarantee_.holds
    with pytest.warns(PrivacyLeakWarning, match=match):
        assert model.epsilon_ is None
    assert np.isinf(model.privacy_report_["epsilon_replace_one"]).all()
    with pytest.raises(ValueError, match=match):
        _model(target_epsilon=1.0, **params).fit(*data)


def test_private_weights_give_no_guarantee_public_ones_do(data):
    X, y = data
    weights = np.linspace(0.5, 1.0, X.shape[0])
    private = _model().fit(X, y, sample_weight=weights)
    assert not private.guarantee_.holds
    public = _model(public_sample_weight=True).fit(X, y, sample_weight=weights)
    n, L = X.shape[0], math.hypot(DATA_NORM, 1.0)
    unit = output_perturbation_sensitivity(
        n_samples=n, lam=0.5, row_norm=L, label_bound=LABEL_BOUND
    )
    expected = unit * n / weights.sum() * (1 + 2e-6)  # max(omega) = 1
    assert public.guarantee_.sensitivity == pytest.approx(expected, rel=1e-12)


def test_dask_clips_labels_as_in_memory(data):
    da = pytest.importorskip("dask.array")
    X, y = data
    model = _model(random_state=0).fit(X, y)
    lazy = _model(random_state=0).fit(
        da.from_array(X, chunks=(20, 3)), da.from_array(y, chunks=20)
    )
    assert lazy.n_labels_clipped_ == model.n_labels_clipped_
    np.testing.assert_allclose(lazy.coef_, model.coef_, rtol=1e-12)
    assert lazy.epsilon_ == model.epsilon_


def test_attack_recipe_clips_labels(data):
    from sklearn_fil.attacks._base import target_glm

    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        recipe = target_glm(_model().fit(X, y).release(), "test")
    np.testing.assert_array_equal(
        recipe.encode(y), np.clip(y, -LABEL_BOUND, LABEL_BOUND)
    )


@pytest.mark.parametrize("bad", [0.0, -1.0, "3", np.inf])
def test_label_bound_is_validated(data, bad):
    with pytest.raises(ValueError, match="label_bound"):
        _model(label_bound=bad).fit(*data)


def test_public_centre_through_transformed_target_regressor(data):
    """Labels in [low, high] centred on a public c: the documented recipe."""
    from sklearn.compose import TransformedTargetRegressor

    X, y = data
    low, high = 10.0, 14.0
    shifted = 12.0 + y  # labels of a task around 12
    model = TransformedTargetRegressor(
        _model(label_bound=(high - low) / 2, random_state=0),
        func=lambda t: t - 12.0,
        inverse_func=lambda t: t + 12.0,
        check_inverse=False,
    ).fit(X, shifted)
    direct = _model(label_bound=(high - low) / 2, random_state=0).fit(X, y)
    assert model.regressor_.epsilon_ == direct.epsilon_
    np.testing.assert_allclose(model.predict(X), direct.predict(X) + 12.0, rtol=1e-12)
