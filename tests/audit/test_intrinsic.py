# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""IntrinsicPrivacyAudit against models re-fitted by hand and known answers."""

import math
import warnings

import joblib
import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression
from sklearn.linear_model import LinearRegression, SGDClassifier, SGDRegressor
from sklearn.neural_network import MLPClassifier
from sklearn.preprocessing import normalize
from sklearn.tree import DecisionTreeClassifier

from sklearn_fil import DPSGDClassifier
from sklearn_fil.audit import IntrinsicPrivacyAudit
from sklearn_fil.audit._intrinsic import _glorot
from sklearn_fil.exceptions import CalibrationRangeWarning
from tests._cluster import local_cluster


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(n_samples=300, n_features=5, random_state=0)
    return normalize(X), y  # rows on the unit sphere: L = sqrt(2)


def _sgd(**params):
    defaults = dict(
        loss="log_loss",
        learning_rate="constant",
        eta0=0.5,
        penalty=None,
        max_iter=3,
        tol=None,
    )
    return SGDClassifier(**{**defaults, **params})


def _full_batch_gd(n_rows):
    """Gradient descent on all rows at once: the seed has nothing to change."""
    return DPSGDClassifier(
        noise_multiplier=0.0,
        clipping=None,
        batch_size=n_rows,  # Poisson sampling at rate 1 takes every row
        learning_rate=1.0,
        max_iter=15,
        per_instance_accounting=False,
        fil_accounting=False,
    )


@pytest.fixture(scope="module")
def sgd_audit(data):
    X, y = data
    return IntrinsicPrivacyAudit(_sgd(), n_seeds=8, n_neighbours=4, random_state=0).fit(
        X, y
    )


def test_grid_matches_models_refitted_by_hand(data, sgd_audit):
    X, y = data
    audit = sgd_audit
    probe = _sgd(random_state=0).fit(X[1:], y[1:])
    for a, s in [(0, 0), (2, 5), (4, 7)]:
        rows = np.arange(1, X.shape[0])
        if a:
            rows[audit.neighbour_rows_[a - 1] - 1] = 0
        coef, intercept = _glorot(probe, ("coef_", "intercept_"), audit.seeds_[s])
        model = _sgd(random_state=audit.seeds_[s]).fit(
            X[rows], y[rows], coef_init=coef, intercept_init=intercept
        )
        np.testing.assert_array_equal(
            audit.weights_[a, s], np.r_[model.coef_.ravel(), model.intercept_]
        )
    # Every neighbouring data set differs from the base one in one example.
    assert audit.neighbour_rows_.min() >= 1
    assert np.unique(audit.neighbour_rows_).size == 4


def test_estimates_follow_the_paper_formulas(data, sgd_audit):
    X, _ = data
    audit, W = sgd_audit, sgd_audit.weights_
    data_distances = [
        np.linalg.norm(W[a, s] - W[0, s]) for a in range(1, 5) for s in range(8)
    ]
    # One norm per pair, as the audit's batched norm: equal to rounding.
    assert audit.sensitivity_ == pytest.approx(max(data_distances), rel=1e-14)
    stds = [np.std(W[a, :, j], ddof=1) for a in range(5) for j in range(W.shape[2])]
    assert audit.variability_ == pytest.approx(min(stds), rel=1e-12)
    delta = 1 / X.shape[0] ** 2
    c = math.sqrt(2 * math.log(1.25 / delta))
    assert audit.intrinsic_delta_ == delta
    assert audit.empirical_intrinsic_epsilon_ == pytest.approx(
        c * audit.sensitivity_ / audit.variability_
    )
    # Wu et al.: 2 k L eta / B with k = 3 epochs, L = sqrt(2), eta = 0.5, B = 1.
    assert audit.sensitivity_bound_ == pytest.approx(2 * 3 * math.sqrt(2) * 0.5)
    assert audit.intrinsic_epsilon_ == pytest.approx(
        c * audit.sensitivity_bound_ / audit.variability_
    )
    report = audit.audit_report_
    assert report.loc["empirical_intrinsic_epsilon", "value"] == pytest.approx(
        report.loc["empirical_intrinsic_epsilon", "per_weight_max"]
    )
    kinds = audit.distances_.groupby("kind", observed=True).size()
    assert kinds["data"] == 4 * 8
    assert kinds["seed, fixed init"] == kinds["seed, varying init"] == 8 * 7 // 2
    last = audit.stability_.groupby("quantity")["value"].last()
    assert last["sensitivity"] == audit.sensitivity_
    assert last["variability"] == pytest.approx(audit.variability_)
    assert audit.n_models_ == 8 * 5 + 8


def test_epsilons_above_one_carry_the_calibration_caveat(data, capsys):
    # The classical calibration holds only for epsilon < 1: above it the
    # output itself says so, in the report, as a warning and in verbose mode.
    X, y = data
    audit = IntrinsicPrivacyAudit(
        _sgd(), n_seeds=4, n_neighbours=2, random_state=0, verbose=1
    )
    with pytest.warns(CalibrationRangeWarning, match="not \\(epsilon, delta\\)"):
        audit.fit(X, y)
    report = audit.audit_report_
    assert report.loc["intrinsic_epsilon", "value"] > 1  # 2kL eta/B is large
    for row in ["intrinsic_epsilon", "empirical_intrinsic_epsilon"]:
        above = report.loc[row, "value":"per_weight_max"].max() > 1
        assert ("calibration invalid" in report.loc[row, "caveat"]) == above
    assert (report.loc[["delta", "sensitivity", "variability"], "caveat"] == "").all()
    assert "not (epsilon, delta) pairs" in capsys.readouterr().err


def test_epsilons_below_one_carry_no_caveat(data):
    # Small steps for one epoch from spread initialisations, hinge loss (no
    # sensitivity bound): the seed moves the weights more than one example.
    X, y = data
    audit = IntrinsicPrivacyAudit(
        _sgd(loss="hinge", eta0=0.01, max_iter=1),
        n_seeds=6,
        n_neighbours=2,
        delta=0.1,
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", CalibrationRangeWarning)
        audit.fit(X, y)
    report = audit.audit_report_
    assert report.loc["empirical_intrinsic_epsilon", "per_weight_max"] < 1
    assert (report["caveat"] == "").all()


@pytest.mark.parametrize(
    "estimator",
    [
        _sgd(),
        _sgd(penalty="l2", alpha=1e-3),
        DPSGDClassifier(
            noise_multiplier=0.0,
            clipping=None,
            sampling="shuffle",
            batch_size=20,
            learning_rate=2.0,
            max_iter=3,
            per_instance_accounting=False,
            fil_accounting=False,
        ),
    ],
    ids=["sgd", "sgd-l2", "dpsgd-shuffle"],
)
def test_logistic_sgd_sensitivity_stays_below_the_bound(data, estimator):
    X, y = data
    audit = IntrinsicPrivacyAudit(
        estimator, n_seeds=6, n_neighbours=6, random_state=1
    ).fit(X, y)
    assert audit.sensitivity_bound_reason_ is None
    assert 0 < audit.sensitivity_ <= audit.sensitivity_bound_


def test_full_batch_gradient_descent_has_no_seed_variability(data):
    X, y = data
    audit = IntrinsicPrivacyAudit(
        _full_batch_gd(X.shape[0] - 1),
        n_seeds=4,
        n_neighbours=3,
        vary_init=False,
        random_state=0,
    ).fit(X, y)
    assert audit.variability_ == 0.0
    assert audit.sensitivity_ > 0
    assert audit.empirical_intrinsic_epsilon_ == math.inf
    fixed = audit.distances_.query("kind == 'seed, fixed init'")["distance"]
    varying = audit.distances_.query("kind == 'seed, varying init'")["distance"]
    assert (fixed == 0).all() and (varying > 0).all()
    # Poisson sampling: the bound does not apply, and says why.
    assert audit.sensitivity_bound_ is None and audit.intrinsic_epsilon_ is None
    assert "Poisson" in audit.sensitivity_bound_reason_


def test_reproducible_and_independent_of_n_jobs(data, sgd_audit):
    X, y = data
    again = IntrinsicPrivacyAudit(
        _sgd(), n_seeds=8, n_neighbours=4, random_state=0, n_jobs=2
    ).fit(X, y)
    np.testing.assert_array_equal(again.weights_, sgd_audit.weights_)
    np.testing.assert_array_equal(again.distances_, sgd_audit.distances_)
    assert again.audit_report_.equals(sgd_audit.audit_report_)
    assert again.diagnostics_.equals(sgd_audit.diagnostics_)
    other = IntrinsicPrivacyAudit(
        _sgd(), n_seeds=8, n_neighbours=4, random_state=1
    ).fit(X, y)
    assert not np.array_equal(other.weights_, sgd_audit.weights_)


def test_dask_cluster_gives_the_serial_results(data, sgd_audit):
    X, y = data
    with local_cluster(), joblib.parallel_config(backend="dask"):
        audit = IntrinsicPrivacyAudit(
            _sgd(), n_seeds=8, n_neighbours=4, random_state=0, n_jobs=-1
        ).fit(X, y)
    np.testing.assert_array_equal(audit.weights_, sgd_audit.weights_)
    assert audit.audit_report_.equals(sgd_audit.audit_report_)


def test_weight_distribution_diagnostics(sgd_audit):
    diagnostics = sgd_audit.diagnostics_
    assert list(diagnostics.index) == [
        "henze_zirkler",
        "shapiro_wilk",
        "anderson_darling_laplace",
        "tail_index",
    ]
    assert diagnostics.loc["shapiro_wilk", "n_tests"] == 6  # 5 weights, 1 bias
    assert 0 <= diagnostics.loc["shapiro_wilk", "rejected"] <= 1
    assert np.isfinite(diagnostics.loc["tail_index", "statistic"])
    assert sgd_audit.weight_tests_.shape == (6, 3)


def test_membership_with_and_without_the_seed(data):
    X, y = data
    audit = IntrinsicPrivacyAudit(
        _sgd(), n_seeds=3, n_neighbours=2, random_state=0
    ).fit(X[:200], y[:200], X_holdout=X[200:], y_holdout=y[200:])
    table = audit.membership_
    assert len(table) == 3 * 2
    assert table[["accuracy_same", "accuracy_different"]].stack().between(0, 1).all()
    np.testing.assert_allclose(
        table["epsilon_same"],
        np.log(table["accuracy_same"] / (1 - table["accuracy_same"])),
    )
    assert audit.membership_test_["n_models"] == 6


def test_membership_of_a_seed_free_model_does_not_depend_on_the_seed(data):
    X, y = data
    audit = IntrinsicPrivacyAudit(
        _full_batch_gd(199),
        n_seeds=3,
        n_neighbours=2,
        vary_init=False,
        random_state=0,
    ).fit(X[:200], y[:200], X_holdout=X[200:], y_holdout=y[200:])
    table = audit.membership_
    np.testing.assert_array_equal(table["accuracy_same"], table["accuracy_different"])
    assert audit.membership_test_["epsilon_difference"] == 0
    assert math.isnan(audit.membership_test_["p_value"])


@pytest.mark.parametrize(
    "estimator, reason",
    [
        (_sgd(loss="hinge"), "loss='hinge'"),
        (_sgd(tol=1e-3), "tol"),
        (_sgd(eta0=10.0), "not 1-expansive"),
        (
            MLPClassifier(hidden_layer_sizes=(3,), max_iter=5, solver="sgd"),
            "no sensitivity bound is known for MLPClassifier",
        ),
    ],
)
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_no_bound_without_its_assumptions(data, estimator, reason):
    X, y = data
    audit = IntrinsicPrivacyAudit(
        estimator, n_seeds=2, n_neighbours=2, random_state=0
    ).fit(X[:60], y[:60])
    assert audit.sensitivity_bound_ is None
    assert reason in audit.sensitivity_bound_reason_
    assert np.isnan(audit.audit_report_.loc["intrinsic_epsilon", "value"])


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_estimator_without_init_varies_its_own(data):
    X, y = data
    mlp = MLPClassifier(hidden_layer_sizes=(2,), max_iter=3, solver="sgd")
    audit = IntrinsicPrivacyAudit(mlp, n_seeds=3, n_neighbours=2, random_state=0)
    audit.fit(X[:60], y[:60])
    kinds = set(audit.distances_["kind"].unique())
    assert kinds == {"data", "seed, varying init"}
    assert audit.n_models_ == 3 * 3
    with pytest.raises(ValueError, match="vary_init=False needs an estimator"):
        IntrinsicPrivacyAudit(mlp, n_seeds=2, n_neighbours=2, vary_init=False).fit(
            X[:60], y[:60]
        )


@pytest.mark.parametrize(
    "params, error, match",
    [
        ({"n_seeds": 1}, ValueError, "n_seeds"),
        ({"n_neighbours": 1}, ValueError, "n_neighbours"),
        ({"delta": 0.0}, ValueError, "delta"),
    ],
)
def test_bad_parameters(data, params, error, match):
    X, y = data
    with pytest.raises(error, match=match):
        IntrinsicPrivacyAudit(_sgd(), **params).fit(X, y)


def test_bad_estimators(data):
    X, y = data
    with pytest.raises(TypeError, match="no random_state parameter"):
        IntrinsicPrivacyAudit(LinearRegression()).fit(X, y)
    with pytest.raises(TypeError, match="neither coef_ and intercept_"):
        IntrinsicPrivacyAudit(DecisionTreeClassifier(), n_seeds=2, n_neighbours=2).fit(
            X, y
        )


def test_bad_data(data):
    X, y = data
    fitted = IntrinsicPrivacyAudit(_sgd(), n_seeds=2, n_neighbours=2).fit(X, y)
    with pytest.raises(ValueError, match="X_holdout has 2 features"):
        fitted.fit(X, y, X_holdout=X[:, :2], y_holdout=y)
    assert not hasattr(fitted, "audit_report_")  # a failed refit clears the fit
    assert not hasattr(fitted, "n_features_in_")
    with pytest.raises(ValueError, match="needs at least 7 rows"):
        IntrinsicPrivacyAudit(_sgd(), n_neighbours=5).fit(X[:6], y[:6])
    with pytest.raises(ValueError, match="given together"):
        IntrinsicPrivacyAudit(_sgd()).fit(X, y, X_holdout=X)
    with pytest.raises(ValueError, match="X_holdout has 2 features"):
        IntrinsicPrivacyAudit(_sgd()).fit(X, y, X_holdout=X[:, :2], y_holdout=y)
    with pytest.raises(ValueError, match="NaN"):
        IntrinsicPrivacyAudit(_sgd()).fit(np.full_like(X, np.nan), y)


def test_sgd_regressor_and_its_squared_loss_membership():
    X, y = make_regression(n_samples=200, n_features=4, noise=1.0, random_state=0)
    X, y = normalize(X), y / np.abs(y).max()
    sgd = SGDRegressor(learning_rate="constant", eta0=0.05, max_iter=3, tol=None)
    audit = IntrinsicPrivacyAudit(sgd, n_seeds=3, n_neighbours=2, random_state=0)
    audit.fit(X[:150], y[:150], X_holdout=X[150:], y_holdout=y[150:])
    assert audit.weights_.shape == (3, 3, 4 + 1)  # coef_ (4,), intercept_ (1,)
    assert "SGDRegressor" in audit.sensitivity_bound_reason_
    assert np.isfinite(
        audit.membership_[["accuracy_same", "epsilon_same"]].to_numpy()
    ).all()
