# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

"""The report builder: the frame's layout, and its scale-free numbers.

The scale-free bound is checked against what it must satisfy without looking
at its formula: invariance under a change of units of the data (with the
mechanism unchanged), and Theorem 2 of Guo et al. (2022) evaluated on Fisher
information matrices built by finite differences of the minimiser.
"""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from sklearn_fil import OutputPerturbedLinearRegression
from sklearn_fil._report import (
    attribute_fil_sd,
    attribute_sizes,
    attribute_variances,
    make_privacy_report,
    privacy_report_frame,
    relative_mse_bound,
)
from sklearn_fil.fisher import fisher_information_loss

# -- the frame ------------------------------------------------------------------


def _old_frame(fil, dfil, mse_bound, attribute_fil, index=None, **extra):
    """The construction the builder replaced: a dict of columns."""
    if index is None:
        index = pd.RangeIndex(np.shape(fil)[0], name="sample")
    columns = {"fil": fil, "dfil": dfil, "mse_bound": mse_bound}
    for name, values in attribute_fil.items():
        columns[f"fil[{name}]"] = values
    columns.update(extra)
    return pd.DataFrame(
        {k: np.asarray(v, dtype=np.float64) for k, v in columns.items()}, index=index
    )


class _Result:
    def __init__(self, rng, n, d):
        self.fil, self.dfil, self.mse_bound = rng.random((3, n))
        self.attribute_fil = rng.random((n, d))


@pytest.mark.parametrize("with_index", [False, True])
@pytest.mark.parametrize("n_extra", [0, 2])
def test_frame_equals_the_dict_construction(with_index, n_extra):
    rng = np.random.default_rng(0)
    n, d = 37, 6
    result = _Result(rng, n, d)
    names = [f"a{j}" for j in range(d)]
    index = pd.Index(rng.permutation(100)[:n], name="id") if with_index else None
    extra = {f"e{k}": rng.random(n) for k in range(n_extra)}
    extra = {**extra, **({"count": np.arange(n)} if n_extra else {})}  # int input
    old = _old_frame(
        result.fil,
        result.dfil,
        result.mse_bound,
        {name: result.attribute_fil[:, j] for j, name in enumerate(names)},
        index,
        **extra,
    )
    new = make_privacy_report(result, names, index, **extra)
    assert new.equals(old)
    assert list(new.columns) == list(old.columns)
    assert (new.dtypes == np.float64).all()
    assert new.index.equals(old.index) and new.index.name == old.index.name
    # nothing is copied: the report views the engine's arrays and the extras
    assert np.shares_memory(new["fil[a0]"].to_numpy(), result.attribute_fil)
    assert np.shares_memory(new["fil"].to_numpy(), result.fil)
    if n_extra:
        assert np.shares_memory(new["e0"].to_numpy(), extra["e0"])
    dict_built = privacy_report_frame(
        result.fil,
        result.dfil,
        result.mse_bound,
        {name: result.attribute_fil[:, j] for j, name in enumerate(names)},
        index,
        **extra,
    )
    assert dict_built.equals(old) and list(dict_built.columns) == list(old.columns)


def test_frame_keeps_a_duplicated_index():
    # a DataFrame X may repeat index labels; the parts must not be aligned
    rng = np.random.default_rng(8)
    result = _Result(rng, 6, 2)
    index = pd.Index([1, 1, 2, 2, 3, 3], name="id")
    new = make_privacy_report(result, ["a", "b"], index, w=np.ones(6))
    old = _old_frame(
        result.fil,
        result.dfil,
        result.mse_bound,
        {"a": result.attribute_fil[:, 0], "b": result.attribute_fil[:, 1]},
        index,
        w=np.ones(6),
    )
    assert new.equals(old) and new.index.equals(index)


def test_frame_rejects_colliding_or_misshapen_columns():
    rng = np.random.default_rng(1)
    result = _Result(rng, 5, 2)
    with pytest.raises(ValueError, match="collide"):
        make_privacy_report(result, ["a", "a"])
    with pytest.raises(ValueError, match="collide"):
        make_privacy_report(result, ["a", "b"], fil=np.zeros(5))
    with pytest.raises(ValueError, match="expected"):
        make_privacy_report(result, ["a", "b", "c"])
    with pytest.raises(ValueError, match="shape"):
        make_privacy_report(result, ["a", "b"], weight=np.zeros(4))


# -- variances --------------------------------------------------------------------


def test_variances_dense_sparse_and_weighted():
    rng = np.random.default_rng(2)
    n = 40
    X = rng.standard_normal((n, 5)) * [1.0, 3.0, 0.1, 1.0, 1.0]
    level = rng.integers(0, 2, n)
    X[:, 3], X[:, 4] = level, 1 - level  # a one-hot group of two columns
    X[:, :3][rng.random((n, 3)) < 0.5] = 0.0  # sparse enough to matter
    y = rng.standard_normal(n)
    attributes = [(0,), (1,), (2,), (3, 4), "label"]
    counts = rng.integers(0, 4, n)
    counts[0] = 1
    # integer weights are duplicated rows
    rows = np.repeat(np.arange(n), counts)
    expected = np.r_[
        X[rows, :3].var(axis=0), X[rows, 3].var() + X[rows, 4].var(), y[rows].var()
    ]
    for data in (X, sp.csr_matrix(X), sp.csc_matrix(X), sp.coo_matrix(X)):
        got = attribute_variances(data, y, attributes, sample_weight=counts)
        np.testing.assert_allclose(got, expected, rtol=1e-12)
    unweighted = attribute_variances(sp.csr_matrix(X), y, attributes)
    np.testing.assert_allclose(unweighted[:3], X[:, :3].var(axis=0), rtol=1e-12)
    np.testing.assert_array_equal(attribute_sizes(attributes), [1, 1, 1, 1, 1])
    np.testing.assert_array_equal(attribute_sizes([(0, 1, 2), "label"]), [2, 1])


@pytest.mark.parametrize("n_threads", [1, 2])
def test_passes_across_segments_and_chunks(monkeypatch, n_threads):
    # segments of 9 rows in chunks of 4 (each with a short last one), on one
    # or two threads: every row once, against NumPy's one-line formulas
    import sklearn_fil._report as report_module
    from sklearn_fil import _threads

    monkeypatch.setattr(_threads, "_SEGMENT_ROWS", 9)
    monkeypatch.setattr(_threads, "pass_threads", lambda: n_threads)
    monkeypatch.setattr(report_module, "_CHUNK_BYTES", 8 * 3 * 4)
    rng = np.random.default_rng(7)
    X = rng.standard_normal((50, 3)) * [1.0, 1e3, 1e-3] + [5.0, -2e3, 0.0]
    weight = rng.uniform(0.0, 2.0, 50)
    weight[12:20] = 0.0  # two whole chunks without weight
    got = attribute_variances(X, None, [(0,), (1,), (2,)], sample_weight=weight)
    mean = np.average(X, axis=0, weights=weight)
    expected = np.average((X - mean) ** 2, axis=0, weights=weight)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    variance = np.array([1.0, 2.0, 0.5])
    np.testing.assert_allclose(
        relative_mse_bound(X, variance, [1, 1, 1]),
        3 / (X**2 @ variance),
        rtol=1e-14,
    )


def test_variances_reject_bad_input():
    X = np.ones((3, 2))
    with pytest.raises(ValueError, match="y is None"):
        attribute_variances(X, None, [(0,), "label"])
    with pytest.raises(ValueError, match="non-negative"):
        attribute_variances(X, None, [(0,)], sample_weight=[1.0, -1.0, 1.0])
    with pytest.raises(ValueError, match="positive entry"):
        attribute_variances(X, None, [(0,)], sample_weight=np.zeros(3))


def test_bounds_reject_bad_input():
    fil = np.ones((4, 2))
    with pytest.raises(ValueError, match="one entry per attribute"):
        relative_mse_bound(fil, [1.0], [1, 1])
    with pytest.raises(ValueError, match="finite"):
        relative_mse_bound(fil, [1.0, -1.0], [1, 1])
    with pytest.raises(ValueError, match="integers"):
        relative_mse_bound(fil, [1.0, 1.0], [1, 0])
    with pytest.raises(ValueError, match="group_fil"):
        relative_mse_bound(fil, [1.0, 1.0], [1, 1], group_fil="max")
    with pytest.raises(ValueError, match="1-D"):
        attribute_fil_sd(fil, [1.0, 1.0], [1, 1])


def test_bound_from_a_dict_of_columns_equals_the_block():
    rng = np.random.default_rng(6)
    block = rng.random((50, 4))
    variance, sizes = rng.random(4), np.array([1, 2, 1, 1])
    columns = {f"a{j}": block[:, j] for j in range(4)}
    for group_fil in ("spectral", "trace"):
        np.testing.assert_allclose(
            relative_mse_bound(columns, variance, sizes, group_fil=group_fil),
            relative_mse_bound(block, variance, sizes, group_fil=group_fil),
            rtol=1e-14,
        )
    # and both against the formula written out
    expected = 5 / (block**2 @ (variance / [1, 2, 1, 1]))
    got = relative_mse_bound(columns, variance, sizes, group_fil="trace")
    np.testing.assert_allclose(got, expected, rtol=1e-14)
    with pytest.raises(ValueError, match="one length"):
        relative_mse_bound({"a": np.ones(3), "b": np.ones(4)}, [1, 1], [1, 1])


def test_zero_variance_is_left_out():
    fil = np.array([[1.0, 2.0], [0.5, 0.0]])
    got = relative_mse_bound(fil, [4.0, 0.0], [1, 1])
    np.testing.assert_allclose(got, [1 / 4.0, 1 / 1.0])  # k = 1, not 2
    assert np.isnan(relative_mse_bound(fil, [0.0, 0.0], [1, 1])).all()
    sd = attribute_fil_sd(np.array([2.0, 3.0]), [4.0, 0.0], [1, 1])
    assert sd[0] == 4.0 and np.isnan(sd[1])


# -- invariance under a change of units -------------------------------------------


def _scale_free(est, X, y):
    """Per-example rel_mse_bound and attribute FIL in sd, from a fitted GLM."""
    report = est.privacy_report_
    names = list(est.attribute_fil_.index)
    block = report[[f"fil[{name}]" for name in names]].to_numpy()
    attributes = [(j,) for j in range(X.shape[1])] + ["label"]
    variance = attribute_variances(np.asarray(X), np.asarray(y), attributes)
    sizes = attribute_sizes(attributes)
    return (
        relative_mse_bound(block, variance, sizes),
        attribute_fil_sd(est.attribute_fil_.to_numpy(), variance, sizes),
    )


def _data(seed=3, n=60, d=4):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * [1.0, 5.0, 0.2, 30.0][:d] + 2.0
    y = X @ rng.standard_normal(d) + rng.standard_normal(n)
    return X, y


def test_label_units_do_not_change_the_scale_free_numbers():
    # y -> c y with sigma -> c sigma releases c times the same random
    # weights (intercept included): the same mechanism in other units.
    X, y = _data()
    c = 77.0
    fits = [
        OutputPerturbedLinearRegression(sigma=s, lam=0.05).fit(X, t)
        for s, t in ((0.1, y), (0.1 * c, c * y))
    ]
    (rel0, sd0), (rel1, sd1) = (
        _scale_free(e, X, t) for e, t in zip(fits, (y, c * y), strict=True)
    )
    np.testing.assert_allclose(rel1, rel0, rtol=1e-8)
    np.testing.assert_allclose(sd1, sd0, rtol=1e-8)
    mse0 = fits[0].privacy_report_["mse_bound"].to_numpy()
    mse1 = fits[1].privacy_report_["mse_bound"].to_numpy()
    assert np.max(np.abs(mse1 / mse0 - 1)) > 0.1  # the mixed-unit bound moves
    # in the raw ranking the label drops by c; in sd it stays where it was
    label0, label1 = fits[0].attribute_fil_.iloc[-1], fits[1].attribute_fil_.iloc[-1]
    np.testing.assert_allclose(label1, label0 / c, rtol=1e-8)


def test_feature_units_do_not_change_the_scale_free_numbers():
    # X -> c X with sigma -> sigma / c and lam -> c^2 lam, no intercept:
    # the release is the old one divided by c.
    X, y = _data(seed=4)
    c = 1000.0
    fits = [
        OutputPerturbedLinearRegression(sigma=s, lam=lam, fit_intercept=False).fit(Z, y)
        for s, lam, Z in ((0.1, 0.01, X), (0.1 / c, 0.01 * c**2, c * X))
    ]
    (rel0, sd0), (rel1, sd1) = (
        _scale_free(e, Z, y) for e, Z in zip(fits, (X, c * X), strict=True)
    )
    np.testing.assert_allclose(rel1, rel0, rtol=1e-7)
    np.testing.assert_allclose(sd1, sd0, rtol=1e-7)
    mse0 = fits[0].privacy_report_["mse_bound"].to_numpy()
    mse1 = fits[1].privacy_report_["mse_bound"].to_numpy()
    assert np.max(np.abs(mse1 / mse0 - 1)) > 0.1


# -- Theorem 2 on brute-force Fisher information ------------------------------------


def _ridge(X, y, lam):
    """Minimiser of sum (w.x + b - y)^2 / 2 + (n lam / 2) |w|^2, b unpenalised."""
    n, d = X.shape
    Xt = np.hstack([X, np.ones((n, 1))])
    reg = np.r_[np.full(d, n * lam), 0.0]
    return np.linalg.solve(Xt.T @ Xt + np.diag(reg), Xt.T @ y)


def _fim_by_finite_differences(X, y, lam, sigma, i, h=1e-6):
    """Fisher information of w* + N(0, sigma^2 I) about (x_i, y_i)."""
    d = X.shape[1]
    columns = []
    for j in range(d + 1):
        plus, minus = [X.copy(), y.copy()], [X.copy(), y.copy()]
        for data, step in ((plus, h), (minus, -h)):
            if j < d:
                data[0][i, j] += step
            else:
                data[1][i] += step
        columns.append((_ridge(*plus, lam) - _ridge(*minus, lam)) / (2 * h))
    J = np.column_stack(columns)
    return J.T @ J / sigma**2


def _onehot_problem(seed=5, n=30, m=3):
    rng = np.random.default_rng(seed)
    level = rng.integers(0, m, n)
    level[:m] = np.arange(m)
    onehot = np.eye(m)[level]
    X = np.hstack([rng.standard_normal((n, 2)) * [1.0, 8.0], onehot])
    y = X @ rng.standard_normal(2 + m) + rng.standard_normal(n)
    return X, y, list(range(2, 2 + m))


@pytest.mark.parametrize("m", [2, 3])
def test_bound_against_finite_difference_fisher_information(m):
    X, y, group = _onehot_problem(m=m)
    lam, sigma = 0.05, 0.3
    w = _ridge(X, y, lam)
    res = fisher_information_loss(
        X, y, w[:-1], w[-1], lam=lam, sigma=sigma, onehot_groups=[group]
    )
    assert res.attributes == [(0,), (1,), tuple(group), "label"]
    variance = attribute_variances(X, y, res.attributes)
    sizes = attribute_sizes(res.attributes)
    rel = relative_mse_bound(res.attribute_fil, variance, sizes)
    var_columns = np.r_[X.var(axis=0), y.var()]
    P = np.eye(m) - 1.0 / m  # the group's tangent space
    t2 = X[:, group].var(axis=0).sum() / (m - 1)  # the group's unit, squared
    k = 2 + (m - 1) + 1
    for i in range(0, X.shape[0], 7):
        fim = _fim_by_finite_differences(X, y, lam, sigma, i)
        # Theorem 2 in units t_j: k / Tr(D I D) over the private coordinates
        plain = [0, 1, X.shape[1]]
        trace = np.sum(var_columns[plain] * np.diag(fim)[plain])
        trace += t2 * np.trace(P @ fim[np.ix_(group, group)] @ P)
        exact = k / trace
        assert rel[i] <= exact * (1 + 1e-6)  # a valid (lower) bound
        if m == 2:  # a one-dimensional tangent space: spectral = trace
            np.testing.assert_allclose(rel[i], exact, rtol=1e-6)
        # with the group's trace FIL (DP-SGD's) the bound is exact
        traced = res.attribute_fil[i].copy()
        traced[2] = np.sqrt(np.trace(P @ fim[np.ix_(group, group)] @ P))
        got = relative_mse_bound(traced[None], variance, sizes, group_fil="trace")
        np.testing.assert_allclose(got[0], exact, rtol=1e-6)
        # without units the same finite differences give the report's mse_bound
        mixed = k / (np.trace(fim) - np.sum(fim[np.ix_(group, group)]) / m)
        np.testing.assert_allclose(res.mse_bound[i], mixed, rtol=1e-6)


def test_attribute_fil_sd_bounds_the_whole_column():
    # FIL in sd of a feature: sqrt(lambda_max) of the Fisher information about
    # the feature's n values, in units of its std, from finite differences.
    X, y, _ = _onehot_problem(m=2)
    X = X[:, :2]
    lam, sigma = 0.05, 0.3
    w = _ridge(X, y, lam)
    res = fisher_information_loss(X, y, w[:-1], w[-1], lam=lam, sigma=sigma)
    variance = attribute_variances(X, y, res.attributes)
    sd = attribute_fil_sd(
        res.total_attribute_fil, variance, attribute_sizes(res.attributes)
    )
    n, h = X.shape[0], 1e-6
    for j in range(2):
        J = np.empty((w.size, n))
        for i in range(n):
            Xp, Xm = X.copy(), X.copy()
            Xp[i, j] += h
            Xm[i, j] -= h
            J[:, i] = (_ridge(Xp, y, lam) - _ridge(Xm, y, lam)) / (2 * h)
        top = np.linalg.eigvalsh(J.T @ J / sigma**2)[-1]
        np.testing.assert_allclose(sd[j], np.sqrt(top * X[:, j].var()), rtol=1e-6)


# -- the estimators' attribute_fil_sd_ --------------------------------------------


def test_estimator_attribute_fil_sd():
    X, y = _data(seed=7)
    counts = np.random.default_rng(7).integers(1, 4, X.shape[0])
    est = OutputPerturbedLinearRegression(sigma=0.1, lam=0.05)
    fitted = est.fit(X, y, sample_weight=counts)
    # a weight of c is c copies of the row: weighted std = std of the copies
    rows = np.repeat(np.arange(X.shape[0]), counts)
    sd = np.r_[X[rows].std(axis=0), y[rows].std()]
    np.testing.assert_allclose(
        fitted.attribute_fil_sd_.to_numpy(),
        fitted.attribute_fil_.to_numpy() * sd,
        rtol=1e-12,
    )
    assert fitted.attribute_fil_sd_.index.equals(fitted.attribute_fil_.index)
    assert fitted.attribute_fil_sd_.name == "fil_sd"
    # sparse rows give the same numbers
    dense = OutputPerturbedLinearRegression(sigma=0.1, lam=0.05).fit(X, y)
    sparse = OutputPerturbedLinearRegression(sigma=0.1, lam=0.05).fit(
        sp.csr_matrix(X), y
    )
    np.testing.assert_allclose(
        sparse.attribute_fil_sd_, dense.attribute_fil_sd_, rtol=1e-10
    )
    # the label's units do not change it (sigma scaled with y, as above)
    c = 77.0
    scaled = OutputPerturbedLinearRegression(sigma=0.1 * c, lam=0.05).fit(X, c * y)
    np.testing.assert_allclose(
        scaled.attribute_fil_sd_, dense.attribute_fil_sd_, rtol=1e-8
    )
    assert "attribute_fil_sd_" not in vars(dense.release())
