# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

"""The FIL engine against the brute-force reference in tests/_reference.py.

Every quantity of the report is compared at a relative tolerance of 1e-8 over
losses, intercepts, private labels, regularisation, sample weights, one-hot groups,
group labels, badly scaled features and an ill-conditioned Hessian, followed by
invariances the report must have (row and feature order, sigma, chunk size).
"""

import functools
import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_fil.exceptions import NotAMinimiserWarning
from sklearn_fil.fisher import fisher_information_loss
from tests._reference import (
    brute_force_fil,
    fit_minimiser,
    hessian,
    make_problem,
)

RTOL = 1e-8

QUANTITIES = [
    "fil",
    "dfil",
    "mse_bound",
    "attribute_fil",
    "total_attribute_fil",
    "dataset_fil",
]


def _problem_kwargs(problem):
    return {
        "loss": problem["loss"],
        "lam": problem["lam"],
        "sample_weight": problem["sample_weight"],
        "penalize_intercept": problem["penalize_intercept"],
        "onehot_groups": problem["onehot_groups"],
    }


def run_engine(problem, **kwargs):
    kw = _problem_kwargs(problem) | kwargs
    return fisher_information_loss(
        problem["X"], problem["y"], problem["coef"], problem["intercept"], **kw
    )


def run_reference(problem, **kwargs):
    kw = _problem_kwargs(problem) | kwargs
    kw.pop("chunk_size", None)
    return brute_force_fil(
        problem["X"], problem["y"], problem["coef"], problem["intercept"], **kw
    )


def _normalise_attribute(a):
    if isinstance(a, str):
        return a
    return tuple(int(j) for j in a)


def _get(res, name):
    return res[name] if isinstance(res, dict) else getattr(res, name)


def assert_reports_close(res, ref, rtol=RTOL, mse_rtol=None):
    """Every quantity of two reports (engine object or reference dict) agrees."""
    mse_rtol = rtol if mse_rtol is None else mse_rtol
    assert int(_get(res, "n_private")) == int(_get(ref, "n_private"))
    assert [_normalise_attribute(a) for a in _get(res, "attributes")] == [
        _normalise_attribute(a) for a in _get(ref, "attributes")
    ]
    for name in QUANTITIES:
        actual = np.asarray(_get(res, name), dtype=np.float64)
        desired = np.asarray(_get(ref, name), dtype=np.float64)
        assert actual.shape == desired.shape, name
        # exact zeros (zero-weight examples) and infinities (their mse_bound) must
        # match exactly; everything else to rtol
        finite = np.isfinite(desired)
        assert_array_equal(np.isfinite(actual), finite, err_msg=name)
        assert_array_equal(actual[~finite], desired[~finite], err_msg=name)
        tol = mse_rtol if name == "mse_bound" else rtol
        assert_allclose(actual[finite], desired[finite], rtol=tol, atol=0, err_msg=name)
    group_res, group_ref = _get(res, "group_fil"), _get(ref, "group_fil")
    if group_ref is None:
        assert group_res is None
    else:
        assert sorted(group_res) == sorted(group_ref)
        for g in group_ref:
            assert_allclose(group_res[g], group_ref[g], rtol=rtol, atol=0)


def _grid():
    cases = []
    for loss, intercept, private_label, lam, weights, onehot in itertools.product(
        ["squared", "logistic"],
        ["none", "free", "penalized"],
        [True, False],
        [0.0, 0.05],
        [None, "random", "zeros", "normalised"],
        [False, True],
    ):
        if onehot and lam == 0.0:
            continue  # both full one-hot groups sum to one: H singular at lam = 0
        if lam == 0.0 and intercept == "penalized":
            continue  # the same problem as "free"
        cases.append((loss, intercept, private_label, lam, weights, onehot))
    return cases


@functools.cache
def _grid_problem(loss, intercept, lam, weights, onehot):
    return make_problem(
        loss,
        n=40,
        d=8 if onehot else 5,
        fit_intercept=intercept != "none",
        penalize_intercept=intercept == "penalized",
        lam=lam,
        weights="random" if weights == "normalised" else weights,
        normalise_weights=weights == "normalised",
        onehot=onehot,
        seed=11 if loss == "squared" else 12,
    )


@pytest.mark.parametrize(
    "loss, intercept, private_label, lam, weights, onehot", _grid()
)
def test_engine_matches_reference(loss, intercept, private_label, lam, weights, onehot):
    problem = _grid_problem(loss, intercept, lam, weights, onehot)
    n = problem["X"].shape[0]
    groups = np.arange(n) % 3
    kwargs = {"sigma": 0.7, "private_label": private_label, "groups": groups}
    res = run_engine(problem, **kwargs)
    ref = run_reference(problem, **kwargs)
    assert_reports_close(res, ref)


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_penalty_is_scaled_by_the_sum_of_weights(loss):
    """The penalty is (n lam / 2)|coef|^2 with n = sum(omega).

    So giving every example weight 2 leaves the problem unchanged (the objective
    doubles): the same minimiser and, since then J_i = -2 (2 H)^-1 M_i, the same
    report. This is what makes integer weights equal to repeated rows, as
    scikit-learn expects of sample_weight.
    """
    problem = make_problem(loss, n=30, d=4, lam=0.1, seed=51)
    X, y = problem["X"], problem["y"]
    omega = np.full(30, 2.0)
    coef, intercept = fit_minimiser(X, y, loss, 0.1, omega, True, False)
    coef_one, intercept_one = fit_minimiser(X, y, loss, 0.1, None, True, False)
    assert_allclose(coef, coef_one, rtol=1e-10)
    assert_allclose(intercept, intercept_one, rtol=1e-10)

    weighted = problem | {"coef": coef, "intercept": intercept, "sample_weight": omega}
    res = run_engine(weighted)
    assert_reports_close(res, run_reference(weighted))
    unweighted = problem | {"coef": coef, "intercept": intercept}
    assert_reports_close(res, run_engine(unweighted), rtol=1e-10)


# ---------------------------------------------------------------------------
# Hard cases: badly scaled features, ill-conditioned H
# ---------------------------------------------------------------------------


def _shortcut_fil(problem, ref, sigma):
    """The lower bound obtained by projecting J_i onto span{H^-1 xt_i, H^-1 w}.

    Exact only when H is proportional to the identity; computed here to show that a
    case discriminates between the exact spectral norm and this shortcut.
    """
    X, coef, intercept = problem["X"], problem["coef"], problem["intercept"]
    H = hessian(
        X,
        problem["y"],
        coef,
        intercept,
        problem["loss"],
        problem["lam"],
        problem["sample_weight"],
        problem["penalize_intercept"],
    )
    JN = ref["jacobians"] @ ref["projector"]
    w = coef if intercept is None else np.append(coef, 0.0)
    out = np.empty(X.shape[0])
    for i in range(X.shape[0]):
        xt = X[i] if intercept is None else np.append(X[i], 1.0)
        U, _ = np.linalg.qr(np.linalg.solve(H, np.column_stack([xt, w])))
        out[i] = np.linalg.norm(U.T @ JN[i], 2) / sigma
    return out


HARD_CASES = [
    # (loss, scaling, lam, d, shortcut_discriminates): in the last column, whether
    # projecting onto span{H^-1 x_i, H^-1 w} misses more than 1% of some eta_i
    ("squared", "bad", 0.0, 8, False),
    ("squared", "bad", 1e-3, 8, True),
    ("logistic", "bad", 0.0, 8, True),
    ("logistic", "bad", 1e-3, 8, True),
    ("squared", "bad", 1e-3, 10, True),
    ("squared", "mildly-collinear", 1e-10, 8, False),
    ("logistic", "mildly-collinear", 1e-10, 8, False),
    ("squared", "collinear", 1e-10, 8, False),
    ("logistic", "collinear", 1e-10, 8, False),
    ("squared", "collinear", 1e-10, 10, False),
    ("logistic", "collinear", 1e-10, 10, False),
]


def _hard_case_rtol(H):
    """1e-8, unless the Hessian's own conditioning makes that unattainable.

    Whatever the algorithm, the engine works from a Hessian rounded to double: that
    perturbs H by ~eps |H| entrywise and so its smallest eigenvalue, which sets the
    FIL, by a relative ~eps * cond(D H D), D = diag(H)^(-1/2) (the Jacobi-scaled
    condition number: a feature's scale is no excuse, collinearity is). For cond ~
    1e8 this is ~1e-8 by itself, so the bound is 10 eps cond(D H D) (twice that for
    mse_bound = 1/dfil^2). Badly scaled but not collinear features keep the full 1e-8.
    """
    scale = 1.0 / np.sqrt(np.diag(H))
    cond = np.linalg.cond(scale[:, None] * H * scale[None, :])
    return max(RTOL, 10 * np.finfo(float).eps * cond)


@pytest.mark.parametrize("private_label", [True, False])
@pytest.mark.parametrize("loss, scaling, lam, d, discriminates", HARD_CASES)
def test_engine_matches_reference_hard_cases(
    loss, scaling, lam, d, discriminates, private_label
):
    problem = make_problem(loss, n=60, d=d, lam=lam, scaling=scaling, seed=21)
    H = hessian(
        problem["X"], problem["y"], problem["coef"], problem["intercept"], loss, lam
    )
    # the cases are as hard as they claim
    expected_cond = {"bad": 1e6, "mildly-collinear": 1e5, "collinear": 2e7}
    assert np.linalg.cond(H) > expected_cond[scaling]
    rtol = _hard_case_rtol(H)
    assert rtol < 2e-7

    groups = np.arange(60) % 2
    kwargs = {"sigma": 2.0, "private_label": private_label, "groups": groups}
    res = run_engine(problem, **kwargs)
    ref = run_reference(problem, **kwargs)
    assert_reports_close(res, ref, rtol=rtol, mse_rtol=2 * rtol)

    # The shortcut is a lower bound; where the case discriminates, the engine's
    # exact spectral norm must exceed it measurably.
    shortcut = _shortcut_fil(problem, ref, sigma=2.0)
    assert np.all(shortcut <= ref["fil"] * (1 + 1e-10))
    if discriminates:
        assert np.max(ref["fil"] / shortcut) > 1.01
        assert np.any(np.asarray(res.fil) > shortcut * (1 + 1e-3))


# ---------------------------------------------------------------------------
# Invariances and inequalities
# ---------------------------------------------------------------------------


@functools.cache
def _invariance_problem(loss):
    return make_problem(
        loss,
        n=40,
        d=8,
        lam=0.05,
        weights="zeros",
        normalise_weights=True,
        onehot=True,
        seed=31 if loss == "squared" else 32,
    )


@pytest.mark.parametrize("loss", ["squared", "logistic"])
@pytest.mark.parametrize("private_label", [True, False])
def test_row_order_invariance(loss, private_label):
    problem = _invariance_problem(loss)
    n = problem["X"].shape[0]
    groups = np.arange(n) % 4
    perm = np.random.default_rng(0).permutation(n)
    permuted = problem | {
        "X": problem["X"][perm],
        "y": problem["y"][perm],
        "sample_weight": problem["sample_weight"][perm],
    }
    kw = {"private_label": private_label}
    res = run_engine(problem, groups=groups, **kw)
    res_p = run_engine(permuted, groups=groups[perm], **kw)

    for name in ["fil", "dfil", "mse_bound", "attribute_fil"]:
        assert_allclose(
            np.asarray(getattr(res_p, name)),
            np.asarray(getattr(res, name))[perm],
            rtol=1e-12,
        )
    assert_allclose(res_p.total_attribute_fil, res.total_attribute_fil, rtol=1e-12)
    assert_allclose(res_p.dataset_fil, res.dataset_fil, rtol=1e-12)
    assert res_p.attributes == res.attributes
    for g, value in res.group_fil.items():
        assert_allclose(res_p.group_fil[g], value, rtol=1e-12)


@pytest.mark.parametrize("loss", ["squared", "logistic"])
@pytest.mark.parametrize("onehot", [False, True])
def test_feature_permutation(loss, onehot):
    if onehot:
        problem = _invariance_problem(loss)
    else:
        problem = make_problem(loss, n=40, d=6, lam=0.01, seed=33)
    d = problem["X"].shape[1]
    perm = np.random.default_rng(1).permutation(d)  # new column k = old perm[k]
    new_position = np.argsort(perm)  # old column j -> new position
    groups = None
    if problem["onehot_groups"] is not None:
        groups = [
            sorted(int(new_position[j]) for j in g) for g in problem["onehot_groups"]
        ]
    permuted = problem | {
        "X": problem["X"][:, perm],
        "coef": problem["coef"][perm],
        "onehot_groups": groups,
    }
    res = run_engine(problem)
    res_p = run_engine(permuted)
    for name in ["fil", "dfil", "mse_bound", "dataset_fil"]:
        assert_allclose(
            np.asarray(getattr(res_p, name)),
            np.asarray(getattr(res, name)),
            rtol=1e-11,
        )

    def key(attribute, mapping):
        if isinstance(attribute, str):
            return attribute
        return frozenset(int(mapping[j]) for j in attribute)

    columns = {key(a, new_position): c for c, a in enumerate(res.attributes)}
    columns_p = {key(a, np.arange(d)): c for c, a in enumerate(res_p.attributes)}
    assert columns.keys() == columns_p.keys()
    assert len(res_p.attributes) == len(res.attributes)
    # attributes stay listed in order of their first column
    firsts = [min(a) for a in res_p.attributes if not isinstance(a, str)]
    assert firsts == sorted(firsts)
    for k, c in columns.items():
        c_p = columns_p[k]
        assert_allclose(
            res_p.attribute_fil[:, c_p], res.attribute_fil[:, c], rtol=1e-11
        )
        assert_allclose(
            res_p.total_attribute_fil[c_p], res.total_attribute_fil[c], rtol=1e-11
        )


@functools.cache
def _sigma_one(loss, private_label):
    problem = _invariance_problem(loss)
    groups = np.arange(problem["X"].shape[0]) % 3
    return run_engine(problem, sigma=1.0, private_label=private_label, groups=groups)


@settings(max_examples=20, deadline=None)
@given(
    sigma=st.floats(min_value=1e-3, max_value=1e3),
    loss=st.sampled_from(["squared", "logistic"]),
    private_label=st.booleans(),
)
def test_sigma_scaling(sigma, loss, private_label):
    problem = _invariance_problem(loss)
    groups = np.arange(problem["X"].shape[0]) % 3
    base = _sigma_one(loss, private_label)
    res = run_engine(problem, sigma=sigma, private_label=private_label, groups=groups)
    for name in [
        "fil",
        "dfil",
        "attribute_fil",
        "total_attribute_fil",
        "dataset_fil",
    ]:
        assert_allclose(
            np.asarray(getattr(res, name)) * sigma,
            np.asarray(getattr(base, name)),
            rtol=1e-12,
        )
    # the reconstruction bound 1/dfil^2 scales like sigma^2 (inf stays inf)
    assert_allclose(res.mse_bound / sigma**2, base.mse_bound, rtol=1e-12)
    for g, value in base.group_fil.items():
        assert_allclose(res.group_fil[g] * sigma, value, rtol=1e-12)


@pytest.mark.parametrize("loss", ["squared", "logistic"])
@pytest.mark.parametrize("chunk_size", [1, 7])
def test_chunk_size_invariance(loss, chunk_size):
    problem = _invariance_problem(loss)
    groups = np.arange(problem["X"].shape[0]) % 3
    res = run_engine(problem, groups=groups)
    res_c = run_engine(problem, groups=groups, chunk_size=chunk_size)
    assert_reports_close(res_c, res, rtol=1e-12)


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_parallel_segments_give_the_one_pass_report(monkeypatch, loss):
    # segments of 11 rows on two threads, blocks of 4 rows in each (short
    # last ones): every row's columns and every sum as in one sequential pass,
    # and BLAS and numba left with the threads they had
    import numba
    from threadpoolctl import threadpool_info

    from sklearn_fil import _threads

    before = [info["num_threads"] for info in threadpool_info()]
    numba_before = numba.get_num_threads()
    problem = _invariance_problem(loss)
    groups = np.arange(problem["X"].shape[0]) % 3
    res = run_engine(problem, groups=groups)
    monkeypatch.setattr(_threads, "_SEGMENT_ROWS", 11)
    monkeypatch.setattr(_threads, "pass_threads", lambda: 2)
    width = 2 * problem["X"].shape[1] + 1  # about the GEMM's columns
    monkeypatch.setattr(_threads, "CACHE_BYTES", 8 * width * 4)
    assert_reports_close(run_engine(problem, groups=groups), res, rtol=1e-12)
    assert [info["num_threads"] for info in threadpool_info()] == before
    assert numba.get_num_threads() == numba_before


@pytest.mark.parametrize("loss", ["squared", "logistic"])
@pytest.mark.parametrize("private_label", [True, False])
def test_group_and_dataset_fil_inequalities(loss, private_label):
    problem = _invariance_problem(loss)
    n = problem["X"].shape[0]
    res = run_engine(problem, private_label=private_label, groups=np.zeros(n, int))
    assert list(res.group_fil) == [0]
    assert_allclose(res.group_fil[0], res.dataset_fil, rtol=1e-12)

    # ||J_i|| <= ||[J_1, ..., J_n]|| <= sqrt(sum_i ||J_i||^2)
    fil = np.asarray(res.fil)
    assert fil.max() <= res.dataset_fil * (1 + 1e-12)
    assert res.dataset_fil <= np.sqrt(np.sum(fil**2)) * (1 + 1e-12)
    # the same facts per attribute, and per example across attributes
    attribute_fil = np.asarray(res.attribute_fil)
    total = np.asarray(res.total_attribute_fil)
    assert np.all(attribute_fil.max(axis=0) <= total * (1 + 1e-12))
    assert np.all(total <= np.sqrt(np.sum(attribute_fil**2, axis=0)) * (1 + 1e-12))
    assert np.all(attribute_fil.max(axis=1) <= fil * (1 + 1e-12))
    assert np.all(np.asarray(res.dfil) <= fil * (1 + 1e-12))

    # groups partitioning the examples: each at most dataset_fil, and together
    # dataset_fil^2 <= sum of group_fil^2
    groups = np.arange(n) % 4
    res_g = run_engine(problem, private_label=private_label, groups=groups)
    per_group = np.array([res_g.group_fil[g] for g in range(4)])
    assert np.all(per_group <= res_g.dataset_fil * (1 + 1e-12))
    assert res_g.dataset_fil <= np.sqrt(np.sum(per_group**2)) * (1 + 1e-12)
    for g in range(4):
        assert fil[groups == g].max() <= per_group[g] * (1 + 1e-12)


def test_zero_weight_examples_have_no_fil():
    problem = _invariance_problem("logistic")
    res = run_engine(problem)
    zero = problem["sample_weight"] == 0
    assert zero.any()
    assert_array_equal(np.asarray(res.fil)[zero], 0.0)
    assert np.all(np.isinf(np.asarray(res.mse_bound)[zero]))
    assert np.all(np.asarray(res.fil)[~zero] > 0)


@pytest.mark.parametrize("private_label", [True, False])
def test_n_private_and_attributes(private_label):
    problem = _invariance_problem("squared")
    res = run_engine(problem, private_label=private_label)
    assert res.n_private == 8 - 2 + int(private_label)
    expected = [(0,), (1,), (2, 3, 4), (5,), (6, 7)]
    if private_label:
        expected.append("label")
    assert [_normalise_attribute(a) for a in res.attributes] == expected
    assert np.shape(res.attribute_fil) == (40, len(expected))
    assert np.shape(res.total_attribute_fil) == (len(expected),)
    assert res.group_fil is None


def test_warns_when_coef_is_not_a_minimiser():
    problem = make_problem("logistic", n=40, d=3, lam=0.1, seed=3)
    X, y = problem["X"], problem["y"]
    # the minimiser itself: no warning, even for an exact (zero-residual) fit
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fisher_information_loss(
            X, y, problem["coef"], problem["intercept"], loss="logistic", lam=0.1
        )
        X2 = np.random.default_rng(0).standard_normal((20, 3))
        fisher_information_loss(X2, X2 @ [1.0, 2.0, 3.0], np.array([1.0, 2.0, 3.0]))
    with pytest.warns(NotAMinimiserWarning, match="not a minimiser"):
        fisher_information_loss(
            X, y, problem["coef"] * 1.01, problem["intercept"], loss="logistic", lam=0.1
        )


def test_not_a_minimiser_warning_names_the_caller():
    # the public function dispatches (sklearn_fil.fisher._api) to the engine:
    # the warning still points at its caller, as on the Dask path
    problem = make_problem("logistic", n=40, d=3, lam=0.1, seed=3)
    with pytest.warns(NotAMinimiserWarning, match="not a minimiser") as record:
        fisher_information_loss(
            problem["X"],
            problem["y"],
            problem["coef"] * 1.01,
            problem["intercept"],
            loss="logistic",
            lam=0.1,
        )
    assert record[0].filename == __file__


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"loss": "hinge"}, "loss must be one of"),
        ({"sigma": 0.0}, "sigma must be"),
        ({"lam": -1.0}, "lam must be"),
        ({"sample_weight": -np.ones(10)}, "non-negative"),
        ({"onehot_groups": [[0]]}, "at least two"),
        ({"onehot_groups": [[0, 5]]}, "outside"),
        ({"onehot_groups": [[0, 1], [1, 2]]}, "overlaps"),
        ({"onehot_groups": [[0, 1]]}, "not a one-hot encoding"),
        ({"chunk_size": 0}, "chunk_size"),
    ],
)
def test_engine_rejects_bad_input(kwargs, match):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((10, 3))
    y = X @ [1.0, 0.5, -1.0]
    with pytest.raises(ValueError, match=match):
        fisher_information_loss(X, y, np.array([1.0, 0.5, -1.0]), **kwargs)


def test_engine_rejects_non_binary_logistic_labels_and_singular_hessian():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((10, 3))
    with pytest.raises(ValueError, match=r"labels in \{0, 1\}"):
        fisher_information_loss(X, X[:, 0], np.zeros(3), loss="logistic", lam=0.1)
    with pytest.raises(ValueError, match="lam > 0"):
        fisher_information_loss(X[:2], X[:2, 0], np.zeros(3))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("column", [0, 1])
def test_engine_refuses_non_finite_x_through_its_margins(bad, column):
    # the margins check X: a bad entry is caught even where its weight is 0
    # (0 * inf is NaN), with scikit-learn's message
    rng = np.random.default_rng(0)
    X = rng.standard_normal((10, 3))
    coef = np.array([1.0, 0.0, -1.0])
    y = X @ coef
    X[4, column] = bad
    word = "NaN" if np.isnan(bad) else "infinity"
    with pytest.raises(ValueError, match=f"Input X contains {word}"):
        fisher_information_loss(X, y, coef)


def test_engine_refuses_margins_that_overflow():
    X = np.full((10, 2), 1e300)
    X[::2] *= -1
    with pytest.raises(ValueError, match="overflows"):
        fisher_information_loss(X, np.zeros(10), np.array([1e10, 1e10]))


def test_top_eig_survives_a_failing_dsyevr(monkeypatch):
    """dsyevr has failed on a top eigenvalue repeated 299 times (one-run
    canaries): the full decomposition then gives the same eigenvalue."""
    from scipy import linalg

    from sklearn_fil.fisher import _engine

    rng = np.random.default_rng(0)
    A = rng.normal(size=(6, 6))
    M = A @ A.T
    exact = np.linalg.eigvalsh(M)[-1]
    calls, eigvalsh = [], linalg.eigvalsh

    def failing(M, **kwargs):
        calls.append(kwargs)
        if "subset_by_index" in kwargs:
            raise linalg.LinAlgError("Internal Error.")
        return eigvalsh(M, **kwargs)

    monkeypatch.setattr(_engine.linalg, "eigvalsh", failing)
    assert_allclose(_engine._top_eig(M), exact, rtol=1e-13)
    assert [sorted(c) for c in calls] == [["subset_by_index"], ["driver"]]
