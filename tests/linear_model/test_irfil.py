# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""IRFIL: the reweighting rule, its fixed points and the paper's behaviour."""

import warnings

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import expit
from sklearn.datasets import load_digits, make_classification
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler, normalize
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_fil import (
    IRFILClassifier,
    IRFILRegressor,
    OutputPerturbedLinearRegression,
    OutputPerturbedLogisticRegression,
)
from sklearn_fil.exceptions import PrivacyLeakWarning, UtilityWarning
from tests._reference import finite_difference_jacobian, fit_minimiser

IRFIL = [IRFILRegressor, IRFILClassifier]
PLAIN = {
    IRFILRegressor: OutputPerturbedLinearRegression,
    IRFILClassifier: OutputPerturbedLogisticRegression,
}


def _targets(cls, margin, rng):
    """Noisy linear targets, or Bernoulli(sigmoid(margin)) labels."""
    if cls is IRFILRegressor:
        return margin + 0.3 * rng.standard_normal(margin.shape[0])
    return (rng.uniform(size=margin.shape[0]) < expit(margin)).astype(float)


def _data(cls, n=60, d=4, seed=0):
    """A small problem whose examples leak unequally."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * np.linspace(0.5, 2.0, d)
    X /= np.linalg.norm(X, axis=1).max()
    return X, _targets(cls, X @ rng.standard_normal(d) * 3.0, rng)


def _onehot_data(cls, n=90, seed=1):
    """Two continuous features, then a 3-level one-hot group (columns 2-4)."""
    rng = np.random.default_rng(seed)
    level = rng.integers(0, 3, size=n)
    X = np.column_stack([rng.standard_normal((n, 2)), np.eye(3)[level]])
    margin = X[:, 0] - 0.5 * X[:, 1] + np.array([-0.5, 0.2, 0.8])[level]
    return X, _targets(cls, margin, rng)


def _cv(eta):
    return np.std(eta) / np.mean(eta)


# -- the paper's experiment --------------------------------------------------


@pytest.fixture(scope="module")
def digits01():
    """Digits 0 vs 1, rows scaled to the unit ball, PCA to 20 dimensions."""
    X, y = load_digits(return_X_y=True)
    keep = y <= 1
    X, y = normalize(X[keep]), y[keep]
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.25, random_state=0, stratify=y
    )
    pca = PCA(n_components=20, random_state=0).fit(X_train)
    X_train, X_test = pca.transform(X_train), pca.transform(X_test)
    scale = np.linalg.norm(X_train, axis=1).max()
    return X_train / scale, X_test / scale, y_train, y_test


@pytest.mark.parametrize("cls", IRFIL)
def test_digits_std_drops_mean_and_accuracy_hold(cls, digits01):
    # Hannun et al. (2021), Figure 5 and Table 1: the spread of eta vanishes
    # within a few iterations while its mean and the accuracy barely move.
    X_train, X_test, y_train, y_test = digits01
    target = 2.0 * y_train - 1.0 if cls is IRFILRegressor else y_train

    def accuracy(est):
        pred = est.predict(X_test)
        if cls is IRFILRegressor:
            pred = (pred > 0).astype(int)
        return np.mean(pred == y_test)

    params = {"sigma": 1e-3, "lam": 1e-2, "tol": 0.0, "random_state": 0}
    before = cls(n_iter=0, **params).fit(X_train, target)
    after = cls(n_iter=10, **params).fit(X_train, target)
    eta0, eta = before.privacy_report_["fil"], after.privacy_report_["fil"]
    hist = after.fil_history_

    assert after.n_iter_ == 10
    assert np.std(eta) <= np.std(eta0) / 100
    assert hist["std"].iloc[-1] <= hist["std"].iloc[0] / 100
    assert abs(np.mean(eta) / np.mean(eta0) - 1.0) < 0.30
    assert abs(accuracy(after) - accuracy(before)) <= 0.01
    # the spread shrinks at every iteration (Figure 5's monotone curves)
    assert np.all(np.diff(hist["std"]) < 0)


# -- the reweighting rule, against the plain estimators ------------------------


@pytest.mark.parametrize("cls", IRFIL)
def test_n_iter_zero_is_the_plain_estimator(cls):
    X, y = _data(cls)
    params = {"sigma": 0.3, "lam": 1e-2, "penalize_intercept": True, "random_state": 7}
    irfil = cls(n_iter=0, **params).fit(X, y)
    plain = PLAIN[cls](**params).fit(X, y)
    assert_array_equal(irfil.coef_, plain.coef_)
    assert irfil.intercept_ == plain.intercept_
    report = irfil.privacy_report_
    # the plain estimator adds each example's leave-one-out epsilon; IRFIL does not
    pd.testing.assert_frame_equal(
        report.drop(columns="weight"), plain.privacy_report_[report.columns[:-1]]
    )
    assert_array_equal(report["weight"], 1.0)
    assert_array_equal(irfil.weights_, 1.0)
    pd.testing.assert_series_equal(irfil.attribute_fil_, plain.attribute_fil_)
    assert irfil.n_iter_ == 0
    assert len(irfil.fil_history_) == 1


@pytest.mark.parametrize("cls", IRFIL)
def test_weights_follow_algorithm_1(cls):
    # omega^t = n (omega^{t-1} / eta^{t-1}) / sum(omega^{t-1} / eta^{t-1}), where
    # eta^{t-1} is the FIL of the plain estimator fitted with omega^{t-1}.
    X, y = _data(cls)
    n = X.shape[0]
    params = {"sigma": 0.3, "lam": 1e-2, "penalize_intercept": True, "random_state": 0}
    omega = np.ones(n)
    for t in (1, 2):
        eta = PLAIN[cls](**params).fit(X, y, sample_weight=omega)
        eta = eta.privacy_report_["fil"].to_numpy()
        omega = n * (omega / eta) / np.sum(omega / eta)
        irfil = cls(n_iter=t, tol=0.0, **params).fit(X, y)
        assert_allclose(irfil.weights_, omega, rtol=1e-9)
        assert_allclose(irfil.weights_.sum(), n, rtol=1e-12)
    assert _cv(omega) > 0.05  # the weights did move, so the test can fail


@pytest.mark.parametrize("cls", IRFIL)
def test_report_and_history_describe_the_released_fit(cls):
    X, y = _data(cls)
    params = {"sigma": 0.3, "lam": 1e-2, "penalize_intercept": True, "random_state": 0}
    est = cls(n_iter=4, tol=0.0, **params).fit(X, y)
    plain = PLAIN[cls](**params)
    plain.fit(X, y, sample_weight=est.weights_)
    report = est.privacy_report_
    # rel_mse_bound's units are the caller's data (unweighted here), not the
    # reweighting, which is part of the mechanism
    same = report.columns.drop(["weight", "rel_mse_bound"])
    assert_allclose(report[same], plain.privacy_report_[same], rtol=1e-7)
    assert_array_equal(report["weight"], est.weights_)
    assert report.columns[-1] == "weight"

    hist = est.fil_history_
    assert list(hist.columns) == ["iteration", "mean", "std", "min", "max"]
    assert_array_equal(hist["iteration"], np.arange(5))
    eta = report["fil"].to_numpy()
    last = hist.iloc[-1]
    assert_allclose(
        [last["mean"], last["std"], last["min"], last["max"]],
        [eta.mean(), eta.std(), eta.min(), eta.max()],
        rtol=1e-12,
    )


@pytest.mark.parametrize("cls", IRFIL)
def test_weighted_jacobian_matches_finite_differences_of_weighted_refit(cls):
    # The report's FIL must be that of the weighted minimiser: the weights
    # enter H and each example's own term. Central differences of re-fits
    # with the final weights held fixed use no derivative formula at all.
    X, y = _data(cls, n=30, d=3)
    sigma, lam = 0.5, 0.05
    est = cls(sigma=sigma, lam=lam, n_iter=3, tol=0.0, penalize_intercept=False)
    est.fit(X, y)
    omega = est.weights_
    assert _cv(omega) > 0.05
    loss = "squared" if cls is IRFILRegressor else "logistic"
    coef, intercept = fit_minimiser(
        X, y, loss, lam, omega, fit_intercept=True, gtol=1e-15
    )
    problem = {
        "X": X,
        "y": y,
        "coef": coef,
        "intercept": intercept,
        "sample_weight": omega,
        "loss": loss,
        "lam": lam,
        "penalize_intercept": False,
    }
    unweighted = dict(problem, sample_weight=None)
    unweighted["coef"], unweighted["intercept"] = fit_minimiser(
        X, y, loss, lam, None, fit_intercept=True, gtol=1e-15
    )
    report = est.privacy_report_
    for i in (0, 11, 29):
        J = finite_difference_jacobian(problem, i)  # (p, d + 1)
        assert_allclose(report["fil"].iloc[i], np.linalg.norm(J, 2) / sigma, rtol=1e-5)
        for j, name in enumerate(["x0", "x1", "x2", "y"]):
            assert_allclose(
                report[f"fil[{name}]"].iloc[i],
                np.linalg.norm(J[:, j]) / sigma,
                rtol=1e-5,
            )
        # ignoring the weights would have been caught
        J_plain = finite_difference_jacobian(unweighted, i)
        assert abs(np.linalg.norm(J_plain, 2) / np.linalg.norm(J, 2) - 1) > 1e-3


def _symmetric_data(cls, d=3, scale=0.7):
    """Rows +-scale e_k: every example is the image of every other under a
    signed permutation that maps the data set to itself, so all eta are equal."""
    X = scale * np.vstack([np.eye(d), -np.eye(d), np.eye(d), -np.eye(d)])
    sign = np.sign(X.sum(axis=1))
    y = sign if cls is IRFILRegressor else (sign > 0).astype(float)
    return X, y


@pytest.mark.parametrize("cls", IRFIL)
def test_equal_fil_is_a_fixed_point(cls):
    X, y = _symmetric_data(cls)
    params = {"sigma": 0.2, "lam": 0.1, "penalize_intercept": True, "random_state": 0}
    plain = PLAIN[cls](**params).fit(X, y)
    assert _cv(plain.privacy_report_["fil"]) < 1e-12
    est = cls(n_iter=5, tol=0.0, **params).fit(X, y)
    assert_allclose(est.weights_, 1.0, rtol=1e-12)
    assert_allclose(est.coef_, plain.coef_, rtol=1e-12)
    assert est.n_iter_ == 5
    # with the default tol the loop stops before reweighting at all
    assert cls(sigma=0.2, lam=0.1, random_state=0).fit(X, y).n_iter_ == 0


@pytest.mark.parametrize("cls", IRFIL)
def test_tol_stops_at_the_first_level_enough_fit(cls):
    X, y = _data(cls)
    tol = 1e-2
    est = cls(sigma=0.3, lam=1e-2, n_iter=50, tol=tol, random_state=0).fit(X, y)
    cv = est.fil_history_["std"] / est.fil_history_["mean"]
    assert 0 < est.n_iter_ < 50
    assert cv.iloc[-1] < tol
    assert np.all(cv.iloc[:-1] >= tol)


# -- target ---------------------------------------------------------------------


@pytest.mark.parametrize("cls", IRFIL)
def test_target_feature_levels_that_attribute(cls):
    X, y = _data(cls)
    df = pd.DataFrame(X, columns=["age", "height", "weight", "income"])
    params = {"sigma": 0.3, "lam": 1e-2, "n_iter": 20, "tol": 0.0, "random_state": 0}
    by_name = cls(target="height", **params).fit(df, y)
    by_index = cls(target=1, **params).fit(X, y)
    col = by_name.privacy_report_["fil[height]"]
    hist = by_name.fil_history_
    assert _cv(col) < hist["std"].iloc[0] / hist["mean"].iloc[0] / 500
    assert_allclose(hist["mean"].iloc[-1], col.mean(), rtol=1e-12)
    # the whole-example FIL is not what was levelled
    assert _cv(by_name.privacy_report_["fil"]) > 100 * _cv(col)
    assert_allclose(by_index.weights_, by_name.weights_, rtol=1e-12)
    assert_allclose(by_index.privacy_report_["fil[x1]"], col.to_numpy(), rtol=1e-12)


@pytest.mark.parametrize("cls", IRFIL)
def test_target_onehot_list_is_one_constrained_attribute(cls):
    X, y = _onehot_data(cls)
    params = {"sigma": 0.3, "lam": 1e-2, "n_iter": 20, "tol": 0.0, "random_state": 0}
    as_list = cls(target=[2, 3, 4], **params).fit(X, y)
    report = as_list.privacy_report_
    assert "fil[x2|x3|x4]" in report.columns
    assert "fil[x2]" not in report.columns
    hist = as_list.fil_history_
    assert (
        _cv(report["fil[x2|x3|x4]"]) < hist["std"].iloc[0] / hist["mean"].iloc[0] / 500
    )
    # the same as naming a declared group
    named = cls(target="level", onehot_groups={"level": [2, 3, 4]}, **params)
    named.fit(X, y)
    assert_allclose(named.weights_, as_list.weights_, rtol=1e-12)
    assert_allclose(
        named.privacy_report_["fil[level]"], report["fil[x2|x3|x4]"], rtol=1e-12
    )
    # a list equal to a declared group (in any order) is that group
    same = cls(target=[4, 2, 3], onehot_groups={"level": [2, 3, 4]}, **params)
    assert_allclose(same.fit(X, y).weights_, named.weights_, rtol=1e-12)


def test_unlevelled_fil_warns_and_names_the_runaway_intercept():
    # Levelling an attribute's FIL upweights well-fitted examples; a free
    # logistic intercept follows them and the spread never closes.
    X, y = _data(IRFILClassifier)
    est = IRFILClassifier(sigma=0.3, target=1, penalize_intercept=False, n_iter=10)
    with pytest.warns(ConvergenceWarning, match="penalize_intercept=True"):
        est.fit(X, y)
    hist = est.fil_history_
    assert hist["std"].iloc[-1] / hist["mean"].iloc[-1] > 0.1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", UtilityWarning)  # sigma=0.3 on 60 rows
        est.set_params(tol=0.0).fit(X, y)  # a fixed number of iterations asked
        est.set_params(tol=1e-3, penalize_intercept=True, n_iter=30).fit(X, y)
    X, y = _data(IRFILRegressor)
    with pytest.warns(ConvergenceWarning, match="Raise n_iter.$"):
        IRFILRegressor(n_iter=1).fit(X, y)


BAD_TARGETS = [
    ("nope", "names no feature"),
    (9, "names no feature"),
    (["x0", "nope"], "not features of X"),
    ([2], "at least two distinct"),
    ([0, 1], "not a one-hot encoding"),
    ([2, 3], "not a one-hot encoding"),
]


@pytest.mark.parametrize("target, match", BAD_TARGETS)
@pytest.mark.parametrize("cls", IRFIL)
def test_bad_target_errors_before_fitting(cls, target, match, monkeypatch):
    X, y = _onehot_data(cls)
    est = cls(sigma=0.3, target=target, random_state=0)

    def no_fit(*args, **kwargs):
        raise AssertionError("fitted before validating the target")

    monkeypatch.setattr(est, "_minimise", no_fit)
    with pytest.raises(ValueError, match=match):
        est.fit(X, y)
    assert not [a for a in vars(est) if a.endswith("_")]


@pytest.mark.parametrize("cls", IRFIL)
def test_target_inside_a_declared_group_is_refused(cls):
    X, y = _onehot_data(cls)
    groups = {"level": [2, 3, 4]}
    with pytest.raises(ValueError, match="set target='level'"):
        cls(target=3, onehot_groups=groups).fit(X, y)
    with pytest.raises(ValueError, match="overlaps the one-hot group 'level'"):
        cls(target=[3, 4], onehot_groups=groups).fit(X, y)


@pytest.mark.parametrize(
    "params", [{"n_iter": -1}, {"tol": -1.0}, {"n_iter": 1.5}, {"target": 1.5}]
)
@pytest.mark.parametrize("cls", IRFIL)
def test_bad_parameters(cls, params):
    X, y = _data(cls)
    with pytest.raises(InvalidParameterError):
        cls(**params).fit(X, y)


# -- privacy semantics and scikit-learn integration --------------------------------


@pytest.mark.parametrize("cls", IRFIL)
def test_no_dp_guarantee(cls):
    X, y = _data(cls)
    est = cls(sigma=0.3, tol=0.0, random_state=0).fit(X, y)
    with pytest.warns(PrivacyLeakWarning, match="weights from the training data"):
        assert est.epsilon_ is None
    with pytest.warns(PrivacyLeakWarning):
        assert est.mse_bound_rdp(1.0) is None


@pytest.mark.parametrize("cls", IRFIL)
def test_release_drops_weights_history_and_report(cls):
    X, y = _data(cls)
    est = cls(sigma=0.3, n_iter=2, tol=0.0, random_state=0).fit(X, y)
    released = est.release()
    for name in ("weights_", "fil_history_", "privacy_report_", "n_iter_"):
        assert not hasattr(released, name)
    assert_array_equal(released.predict(X), est.predict(X))
    assert released.get_params()["random_state"] is None


@pytest.mark.parametrize("cls", IRFIL)
def test_verbose_prints_one_line_per_fit(cls, capsys):
    X, y = _data(cls)
    est = cls(sigma=0.3, n_iter=3, tol=0.0, verbose=1, random_state=0).fit(X, y)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == est.n_iter_ + 1 == 4
    assert lines[-1].startswith(f"[{cls.__name__}] iteration 3/3: mean ")
    cls(sigma=0.3, n_iter=3, tol=0.0, random_state=0).fit(X, y)
    assert capsys.readouterr().out == ""


def test_dataframe_index_and_grid_search():
    X, y = make_classification(n_samples=120, n_features=4, random_state=0)
    df = pd.DataFrame(X, columns=list("abcd"), index=np.arange(120) * 10)
    est = IRFILClassifier(sigma=0.1, n_iter=2, tol=0.0, random_state=0).fit(df, y)
    assert_array_equal(est.privacy_report_.index, df.index)
    irfil = IRFILClassifier(n_iter=2, tol=0.0, random_state=0)
    pipe = make_pipeline(StandardScaler(), irfil)
    grid = GridSearchCV(pipe, {"irfilclassifier__sigma": [0.01, 0.1]}, cv=3)
    grid.fit(X, y)
    assert grid.best_estimator_[-1].weights_.shape == (120,)
