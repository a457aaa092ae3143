# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""Per-example leave-one-out sensitivity and epsilon, against brute-force refits.

The reference refits every leave-one-out problem from scratch with the
extended-precision Newton solver of ``_longdouble``, which shares no code with
``sklearn_fil._leave_one_out``. ``D_-i`` removes example ``i``'s loss term and
keeps the penalty at ``(sum(omega) lam) / 2``.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose
from scipy.special import expit

from sklearn_fil import (
    IRFILClassifier,
    OutputPerturbedLinearRegression,
    OutputPerturbedLogisticRegression,
)
from sklearn_fil._glm import GLMProblem
from sklearn_fil._leave_one_out import _Problem, leave_one_out
from sklearn_fil.accounting import default_delta, gaussian_epsilon
from sklearn_fil.utils._clipping import clip_rows
from tests.linear_model._longdouble import penalty, refit

COLUMNS = ["loo_sensitivity", "epsilon", "epsilon_replace_one"]


def brute_force(X, y, omega, loss, lam, fit_intercept, penalize_intercept):
    """``||w*(D) - w*(D_-i)||`` for every ``i`` by ``n + 1`` refits."""
    reg = penalty(
        X.shape[1] + fit_intercept, omega, lam, fit_intercept, penalize_intercept
    )
    w_full = refit(X, y, omega, loss, reg, fit_intercept)
    out = np.empty(X.shape[0])
    for i in range(X.shape[0]):
        without = omega.copy()
        without[i] = 0.0  # the penalty keeps sum(omega): n is public
        w_i = refit(X, y, without, loss, reg, fit_intercept)
        out[i] = float(np.sqrt(np.sum((w_i - w_full) ** 2)))
    return out, w_full


def make_data(loss, n=40, d=4, seed=0, weighted=False):
    rng = np.random.default_rng(seed)
    # features of different scales
    X = rng.standard_normal((n, d)) * np.geomspace(0.3, 3.0, d)
    if loss == "squared":
        y = X @ rng.standard_normal(d) + 1.0 + rng.standard_normal(n)
    else:
        y = (rng.uniform(size=n) < expit(0.5 * X @ rng.standard_normal(d))).astype(
            float
        )
    omega = rng.uniform(0.2, 1.0, n) if weighted else np.ones(n)
    return X, y, omega


INTERCEPTS = {
    "intercept": (True, False),
    "no_intercept": (False, False),
    "penalised_intercept": (True, True),
}


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("intercept", INTERCEPTS)
@pytest.mark.parametrize("loss", ["squared", "logistic"])
@pytest.mark.parametrize("seed", [0, 1])
def test_matches_brute_force_refits(loss, intercept, weighted, seed):
    fit_intercept, penalize_intercept = INTERCEPTS[intercept]
    X, y, omega = make_data(loss, seed=seed, weighted=weighted)
    lam = 0.05
    ref, w_full = brute_force(X, y, omega, loss, lam, fit_intercept, penalize_intercept)
    res = leave_one_out(
        X,
        y,
        w_full.astype(float),
        omega,
        loss,
        lam,
        fit_intercept,
        penalize_intercept,
        return_shifts=True,
    )
    assert_allclose(res.sensitivity, ref, rtol=1e-8)
    assert_allclose(np.linalg.norm(res.shifts, axis=1), res.sensitivity, rtol=1e-12)


@pytest.mark.parametrize("n_threads", [1, 2])
def test_squared_closed_form_in_parallel_segments(monkeypatch, n_threads):
    # segments of 7 rows in blocks of 3, shared by two threads: every row's
    # value and singular mark written once, as the brute force has them
    from sklearn_fil import _threads

    monkeypatch.setattr(_threads, "_SEGMENT_ROWS", 7)
    monkeypatch.setattr(_threads, "pass_threads", lambda: n_threads)
    monkeypatch.setattr(_threads, "CACHE_BYTES", 8 * 6 * 3)
    X, y, omega = make_data("squared", n=40, d=4, seed=3)
    ref, w_full = brute_force(X, y, omega, "squared", 0.05, True, False)
    res = leave_one_out(
        X, y, w_full, omega, "squared", 0.05, True, False, return_shifts=True
    )
    assert_allclose(res.sensitivity, ref, rtol=1e-8)
    assert_allclose(np.linalg.norm(res.shifts, axis=1), res.sensitivity, rtol=1e-12)


@pytest.mark.parametrize("n, lam, scale", [(15, 1e-3, 3.0), (20, 1e-4, 2.0)])
def test_logistic_large_shifts_take_the_exact_newton_path(n, lam, scale, monkeypatch):
    # far-apart minimisers: the fixed-Hessian iteration contracts slowly, so
    # some problems are finished with their own Hessian
    rng = np.random.default_rng(0)
    X = scale * rng.standard_normal((n, 3))
    y = (rng.uniform(size=n) < 0.5).astype(float)
    omega = np.ones(n)
    calls = []
    newton = _Problem._newton

    def spy(self, U, idx, tol, max_iter):
        calls.append(len(idx))
        return newton(self, U, idx, tol, max_iter)

    monkeypatch.setattr(_Problem, "_newton", spy)
    ref, w_full = brute_force(X, y, omega, "logistic", lam, True, False)
    res = leave_one_out(X, y, w_full.astype(float), omega, "logistic", lam, True, False)
    assert sum(calls) > 0
    assert_allclose(res.sensitivity, ref, rtol=1e-8)


def test_weights_stopped_early_do_not_shift_the_result():
    # the given weights are refined by one Newton step before the iteration
    X, y, omega = make_data("logistic")
    ref, w_full = brute_force(X, y, omega, "logistic", 0.05, True, False)
    rough = w_full.astype(float) + 1e-6
    res = leave_one_out(X, y, rough, omega, "logistic", 0.05, True, False)
    assert_allclose(res.sensitivity, ref, rtol=1e-8)


def test_derivative_difference_without_cancellation():
    # sigmoid(m + t) - sigmoid(m) to full relative accuracy, also where the
    # shifted margin overflows the fast formula (the plain difference there)
    rng = np.random.default_rng(0)
    n = 30
    X = rng.standard_normal((n, 2))
    m = np.r_[rng.normal(0, 5, n - 2), 800.0, -800.0]
    omega = rng.uniform(0.5, 1, n)
    problem = _Problem(
        GLMProblem(family="logistic", lam=1.0, fit_intercept=True, X=X, omega=omega),
        np.eye(3),
        np.zeros(3),
        m,
        expit(m),
        np.ones(n),
    )
    U = np.array([[1e-9, -2e-9, 3e-9], [0.3, -0.2, 0.1], [0.0, 0.0, -800.0]])
    D = X @ U[:, :2].T + U[:, 2]
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 50

    def sig(t):
        return 1 / (1 + mpmath.exp(-t))

    ref = np.array(
        [
            [
                float(
                    omega[j] * (sig(mpmath.mpf(m[j]) + mpmath.mpf(D[j, k])) - sig(m[j]))
                )
                for k in range(3)
            ]
            for j in range(n)
        ]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning escapes
        got = problem._weighted_dpsi(U)
    assert_allclose(got[:, :2], ref[:, :2], rtol=1e-12)
    assert_allclose(got[:, 2], ref[:, 2], rtol=1e-12, atol=1e-15)


def test_squared_loss_removing_a_leverage_one_example_is_infinite():
    # lam = 0 and the only example with a nonzero second feature: without it
    # the Hessian is singular and w*(D_-i) is not determined
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.standard_normal(10), np.r_[1.0, np.zeros(9)]])
    y = rng.standard_normal(10)
    est = OutputPerturbedLinearRegression(sigma=1.0, lam=0.0, fit_intercept=False)
    report = est.fit(X, y).privacy_report_
    assert report["loo_sensitivity"].iloc[0] == np.inf
    assert report["epsilon"].iloc[0] == np.inf
    assert np.all(np.isfinite(report["loo_sensitivity"].iloc[1:]))


# ---------------------------------------------------------------------------
# The report columns of the estimators
# ---------------------------------------------------------------------------


def _report_reference(est, X, y, omega):
    """Brute-force Delta_i of the estimator's recipe on the rows it fitted."""
    params = est.get_params()
    loss = "squared" if isinstance(est, OutputPerturbedLinearRegression) else "logistic"
    if loss == "logistic":
        y = (np.asarray(y) == est.classes_[1]).astype(float)
    if params.get("data_norm") is not None:
        X = clip_rows(X, params["data_norm"])[0]
    ref, _ = brute_force(
        X,
        y,
        omega,
        loss,
        est.lam_,  # the values the fit used ("auto" resolved)
        params["fit_intercept"],
        est.penalize_intercept_,
    )
    return ref


@pytest.mark.parametrize(
    "est",
    [
        OutputPerturbedLinearRegression(sigma=0.3, lam=0.02),
        OutputPerturbedLinearRegression(sigma=0.3, lam=0.02, penalize_intercept=True),
        OutputPerturbedLinearRegression(sigma=0.3, lam=0.0, fit_intercept=False),
        OutputPerturbedLogisticRegression(sigma=0.3, lam=0.05),
        OutputPerturbedLogisticRegression(
            sigma=0.3, lam=0.05, data_norm=2.0, penalize_intercept=True
        ),
    ],
    ids=lambda e: repr(e).replace(" ", ""),
)
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_report_columns_match_brute_force(est, weighted):
    loss = "squared" if isinstance(est, OutputPerturbedLinearRegression) else "logistic"
    X, y, omega = make_data(loss, n=30, seed=3, weighted=weighted)
    if loss == "logistic":
        y = np.where(y == 1, "yes", "no")  # classes_[1] is "yes"
    est = est.set_params(random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)  # clipping
        est.fit(X, y, sample_weight=omega if weighted else None)
    report = est.privacy_report_
    assert list(report.columns[-3:]) == COLUMNS
    assert_allclose(
        report["loo_sensitivity"], _report_reference(est, X, y, omega), rtol=1e-8
    )
    # epsilon is gaussian_epsilon at the example's own sensitivity
    delta = est.delta_ if est.guarantee_.epsilon is not None else default_delta(30)
    for i in range(0, 30, 7):
        expected = gaussian_epsilon(
            sigma=est.sigma_, sensitivity=report["loo_sensitivity"].iloc[i], delta=delta
        )
        assert_allclose(report["epsilon"].iloc[i], expected, rtol=1e-9)


def test_onehot_groups_do_not_change_the_sensitivity():
    # Delta_i is a distance between minimisers: declaring a one-hot group
    # changes the FIL attributes, not the fit
    rng = np.random.default_rng(0)
    n = 36
    level = rng.integers(0, 3, n)
    onehot = np.eye(3)[level]
    X = pd.DataFrame(
        np.column_stack([rng.standard_normal((n, 2)), onehot]),
        columns=["a", "b", "c0", "c1", "c2"],
    )
    y = X["a"] - X["b"] + level + 0.3 * rng.standard_normal(n)
    plain = OutputPerturbedLinearRegression(sigma=0.3, lam=0.05, random_state=0)
    grouped = OutputPerturbedLinearRegression(
        sigma=0.3, lam=0.05, onehot_groups={"c": ["c0", "c1", "c2"]}, random_state=0
    )
    a = plain.fit(X, y).privacy_report_
    b = grouped.fit(X, y).privacy_report_
    assert "fil[c]" in b.columns and "fil[c0]" in a.columns
    assert_allclose(b[COLUMNS[:2]], a[COLUMNS[:2]], rtol=1e-12)
    assert_allclose(
        a["loo_sensitivity"],
        _report_reference(plain, X.to_numpy(), y.to_numpy(), np.ones(n)),
        rtol=1e-8,
    )


def test_onehot_groups_with_clipping_match_brute_force():
    # the numeric columns are clipped to the remaining norm, the 0/1 columns kept
    rng = np.random.default_rng(1)
    n = 40
    onehot = np.eye(2)[rng.integers(0, 2, n)]
    X = np.column_stack([3.0 * rng.standard_normal((n, 2)), onehot])
    y = (rng.uniform(size=n) < expit(X[:, 0] - X[:, 2])).astype(int)
    est = OutputPerturbedLogisticRegression(
        sigma=0.5,
        lam=0.05,
        data_norm=2.0,
        penalize_intercept=True,
        onehot_groups={"g": [2, 3]},
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        est.fit(X, y)
    assert est.n_clipped_ > 0
    clipped = clip_rows(X, 2.0, exempt=[2, 3])[0]
    ref, _ = brute_force(
        clipped, y.astype(float), np.ones(n), "logistic", 0.05, True, True
    )
    assert_allclose(est.privacy_report_["loo_sensitivity"], ref, rtol=1e-8)


# ---------------------------------------------------------------------------
# Against the global guarantee
# ---------------------------------------------------------------------------


def _dp_model(n=50, seed=0, weighted=False, **params):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    y = (rng.uniform(size=n) < expit(X @ [1.0, -1.0, 0.5])).astype(int)
    omega = rng.uniform(0.3, 1.0, n) if weighted else None
    est = OutputPerturbedLogisticRegression(
        sigma=0.5,
        lam=0.1,
        data_norm=1.5,
        penalize_intercept=True,
        public_sample_weight=weighted,
        random_state=0,
        **params,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        est.fit(X, y, sample_weight=omega)
    return est, X, y, omega


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_per_instance_epsilon_below_the_guarantee(weighted, fit_intercept):
    est, *_ = _dp_model(weighted=weighted, fit_intercept=fit_intercept)
    report = est.privacy_report_
    assert est.epsilon_ is not None
    assert np.all(report["epsilon"] <= report["epsilon_replace_one"])
    assert np.all(report["epsilon_replace_one"] <= est.epsilon_)
    # Delta_i <= omega_i L / (sum(omega) lam): half the global sensitivity
    assert np.all(report["loo_sensitivity"] <= 0.5 * est.guarantee_.sensitivity)


def test_replace_one_inequality_chain():
    # ||w*(D) - w*(D^{i->z})|| <= Delta_i + omega_i L / (sum(omega) lam) for
    # clipped replacements z (random, the opposite row, the flipped label),
    # and Delta_i <= omega_i L / (sum(omega) lam)
    est, X, y, _ = _dp_model(n=30, seed=4)
    norm, lam = 1.5, 0.1
    Xc = clip_rows(X, norm)[0]
    yf = y.astype(float)
    n = X.shape[0]
    reg = penalty(4, np.ones(n), lam, True, True)
    w_full = refit(Xc, yf, np.ones(n), "logistic", reg, True)
    bound = np.hypot(norm, 1.0) / (n * lam)
    delta_i = est.privacy_report_["loo_sensitivity"].to_numpy()
    assert np.all(delta_i <= bound)
    rng = np.random.default_rng(0)
    for i in range(0, n, 6):
        candidates = [(-Xc[i], 1 - yf[i]), (Xc[i], 1 - yf[i])]
        for _ in range(4):
            z = rng.standard_normal(3)
            candidates.append((norm * z / np.linalg.norm(z), float(rng.integers(0, 2))))
        for z, label in candidates:
            Xz, yz = Xc.copy(), yf.copy()
            Xz[i], yz[i] = z, label
            w_z = refit(Xz, yz, np.ones(n), "logistic", reg, True)
            moved = float(np.sqrt(np.sum((w_z - w_full) ** 2)))
            assert moved <= delta_i[i] + bound
            assert moved <= 2 * bound  # hence at most the global sensitivity


def test_bounds_instead_of_leave_one_out_refits():
    exact, *_ = _dp_model()
    bounded, *_ = _dp_model(per_instance_accounting=False)
    a, b = exact.privacy_report_, bounded.privacy_report_
    n, lam = 50, 0.1
    # a bound is never read as the exact distance: the column says which
    assert "loo_sensitivity" not in b
    bound = b["loo_sensitivity_bound"]
    assert_allclose(bound, np.hypot(1.5, 1.0) / (n * lam), rtol=1e-12)
    assert np.all(bound >= a["loo_sensitivity"])
    assert np.all(b["epsilon"] >= a["epsilon"])
    assert np.all(b["epsilon_replace_one"] <= exact.epsilon_)
    # the FIL columns do not depend on it
    assert_allclose(a.iloc[:, :-3], b.iloc[:, :-3], rtol=0)


def test_auto_is_exact_on_small_data_only(monkeypatch):
    from sklearn_fil.linear_model import _output_perturbation

    est, *_ = _dp_model(per_instance_accounting="auto")
    exact, *_ = _dp_model(per_instance_accounting=True)
    assert_allclose(
        est.privacy_report_["loo_sensitivity"], exact.privacy_report_["loo_sensitivity"]
    )
    monkeypatch.setattr(_output_perturbation, "AUTO_EXACT_MAX_SAMPLES", 49)
    est, *_ = _dp_model(per_instance_accounting="auto")
    bounded, *_ = _dp_model(per_instance_accounting=False)
    # above the threshold a certified interval, within the bound; False the
    # bound alone
    report, exact_delta = est.privacy_report_, exact.privacy_report_["loo_sensitivity"]
    assert np.all(report["loo_sensitivity_lower"] <= exact_delta)
    assert np.all(exact_delta <= report["loo_sensitivity_bound"])
    slack = 1 + 4e-6  # the certification of the fits (CERTIFIED_FRACTION)
    bound = bounded.privacy_report_["loo_sensitivity_bound"]
    assert np.all(report["loo_sensitivity_bound"] <= bound * slack)
    assert "loo_sensitivity_lower" not in bounded.privacy_report_


def test_without_guarantee_replace_one_is_infinite():
    X, y, _ = make_data("logistic")
    clf = OutputPerturbedLogisticRegression(sigma=0.5, lam=0.05).fit(X, y)
    report = clf.privacy_report_
    assert np.all(report["epsilon_replace_one"] == np.inf)
    assert np.all(np.isfinite(report["epsilon"]))
    bounded = OutputPerturbedLogisticRegression(
        sigma=0.5, lam=0.05, per_instance_accounting=False
    ).fit(X, y)
    bounds = ["loo_sensitivity_bound", *COLUMNS[1:]]
    assert np.all(bounded.privacy_report_[bounds] == np.inf)


def test_irfil_reports_no_per_instance_epsilon():
    X, y, _ = make_data("logistic")
    est = IRFILClassifier(sigma=0.5, n_iter=1, tol=0.0).fit(X, y)
    assert not set(COLUMNS) & set(est.privacy_report_.columns)


def test_calibrated_noise_is_the_noise_of_the_per_instance_epsilon():
    # with target_epsilon the release's noise is sigma_, not sigma
    est, *_ = _dp_model(target_epsilon=1.0)
    report = est.privacy_report_
    assert est.sigma_ != est.sigma
    assert est.epsilon_ <= 1.0
    assert np.all(report["epsilon_replace_one"] <= est.epsilon_)
    for i in (0, 17, 33):
        expected = gaussian_epsilon(
            sigma=est.sigma_,
            sensitivity=report["loo_sensitivity"].iloc[i],
            delta=est.delta_,
        )
        assert_allclose(report["epsilon"].iloc[i], expected, rtol=1e-9)


def test_bounds_on_more_examples_than_the_interpolation_grid():
    # every example has the same bound: one sensitivity repeated n > 256 times
    est, *_ = _dp_model(n=400, per_instance_accounting=False)
    report = est.privacy_report_
    assert report["loo_sensitivity_bound"].nunique() == 1
    assert report["epsilon"].nunique() == 1
    assert np.all(report["epsilon_replace_one"] <= est.epsilon_)
