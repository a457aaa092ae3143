# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

"""The secular-equation kernels against dense linear algebra.

``top_eigenvalue`` is compared with ``numpy.linalg.eigvalsh`` of the explicit
matrix ``r2 diag(gamma) + Y B Y^T`` on spectra that take each path of the
solver: poles summed directly, far poles summed by moments (about zero and
about the centre of a cluster, with and without an isolated tail), ties, a
single pole, two poles and zero columns. The truncation of the far-pole series
is checked directly against the direct sum at the edge of each term count, and
the plain-feature attribute loop against the scattered one.
"""

import numpy as np
import pytest

from sklearn_fil.fisher import _kernels as kernels

EPS = np.finfo(np.float64).eps


def _dense_top(gamma, r2, y1, y2, beta, rho):
    """Largest eigenvalue of the explicit matrix, and its spectral scale."""
    E = r2 * np.diag(gamma)
    E = E + beta * np.outer(y1, y1) + rho * (np.outer(y1, y2) + np.outer(y2, y1))
    ev = np.linalg.eigvalsh(E)
    return ev[-1], max(np.abs(ev).max(), np.finfo(np.float64).tiny)


def _top(gamma, r2, y1, y2, beta, rho):
    p = gamma.shape[0]
    return kernels.top_eigenvalue(
        np.ascontiguousarray(gamma),
        r2,
        np.ascontiguousarray(y1),
        np.ascontiguousarray(y2),
        beta,
        rho,
        np.empty(p),
        np.empty(p),
    )


def _spectrum(kind, rng):
    """Decreasing ``gamma`` of a named shape."""
    if kind == "badly_scaled":
        # two large eigenvalues, a cluster, and a tail of near-zero ones
        cluster = 1e-12 * (1.0 + 0.04 * rng.random(40))
        return np.sort(np.r_[1e-6, 8e-7, cluster, 1e-20, 1e-24, 1e-61])[::-1]
    if kind == "cluster":
        # clustered eigenvalues and one exact zero (an unpenalised intercept)
        return np.sort(np.r_[1e-11 * (1.0 + 0.15 * rng.random(40)), 0.0])[::-1]
    if kind == "geometric":
        return 0.3 ** np.arange(30.0)
    if kind == "ties":
        return np.r_[2.0, 2.0, np.full(20, 1e-9), np.full(10, 0.0)]
    if kind == "close":
        # no pole far from the root: the direct sum throughout
        return np.sort(1.0 + 0.5 * rng.random(25))[::-1]
    raise ValueError(kind)


def _case(kind, rng):
    gamma = _spectrum(kind, rng)
    p = gamma.shape[0]
    r2 = rng.uniform(0.1, 3.0) ** 2
    # Y scaled so that the rank-2 part ranges from below the top pole to far above
    # (for "close", below the poles' spread, so that none is far from the root)
    top = -0.5 if kind == "close" else 2.0
    size = np.sqrt(gamma[0] * r2) * 10.0 ** rng.uniform(-2.0, top)
    y1 = size * rng.standard_normal(p)
    y2 = size * rng.standard_normal(p)
    beta = rng.uniform(-1.0, 2.0)
    rho = rng.uniform(-1.0, 1.0)
    return gamma, r2, y1, y2, beta, rho


@pytest.mark.parametrize(
    "kind", ["badly_scaled", "cluster", "geometric", "ties", "close"]
)
def test_top_eigenvalue_matches_eigvalsh(kind):
    rng = np.random.default_rng(0)
    plans = set()
    for _ in range(12):
        gamma, r2, y1, y2, beta, rho = _case(kind, rng)
        expected, scale = _dense_top(gamma, r2, y1, y2, beta, rho)
        got = _top(gamma, r2, y1, y2, beta, rho)
        assert abs(got - expected) <= 1e-14 * scale, (got, expected, scale)
        plans.add(kernels._far_group(gamma, r2, expected)[2] > 0)
    # the far-pole path is exercised where poles are far (judged at the root,
    # the top of the bracket), and only there
    assert (True in plans) == (kind != "close")


def _ritz_start(gamma, r2, y1, y2, beta, rho):
    """Newton's start for the case, and the split ``a``, ``b`` it came from."""
    p = gamma.shape[0]
    a, b = np.empty(p), np.empty(p)
    sums = kernels._split_rank2(y1, y2, y1 @ y1, y2 @ y2, beta, rho, gamma, r2, a, b)
    assert np.allclose(sums, [a @ a, a @ (r2 * gamma * a), a @ b, b @ b,
                              b @ (r2 * gamma * b), a @ (r2 * gamma * b)],
                       rtol=1e-12, atol=1e-300)  # fmt: skip
    d = r2 * gamma
    start = kernels._ritz_start(
        d[0], a[0], b[0], a[1:] @ a[1:], b[1:] @ b[1:], a[1:] @ b[1:],
        a[1:] @ (d[1:] * a[1:]), b[1:] @ (d[1:] * b[1:]), a[1:] @ (d[1:] * b[1:]),
    )  # fmt: skip
    return start, a, b


@pytest.mark.parametrize(
    "kind", ["badly_scaled", "cluster", "geometric", "ties", "close"]
)
def test_newtons_start_is_a_ritz_value(kind):
    # a lower bound of the top eigenvalue (to rounding), at least the Rayleigh
    # quotients along e_1 and a that bounded it before, and the Ritz value of
    # the 3 x 3 matrix of E on an orthonormal basis of span{e_1, a', b'}
    rng = np.random.default_rng(1)
    errors = []
    for _ in range(12):
        gamma, r2, y1, y2, beta, rho = _case(kind, rng)
        top, scale = _dense_top(gamma, r2, y1, y2, beta, rho)
        start, a, b = _ritz_start(gamma, r2, y1, y2, beta, rho)
        E = np.diag(r2 * gamma) + np.outer(a, a) - np.outer(b, b)
        assert start <= top + 1e-12 * scale
        for v in (np.eye(gamma.size)[0], a):
            assert start >= v @ E @ v / (v @ v) - 1e-12 * scale
        basis = np.column_stack(
            [np.eye(gamma.size)[0], np.r_[0, a[1:]], np.r_[0, b[1:]]]
        )
        Q, _ = np.linalg.qr(basis)
        ritz = np.linalg.eigvalsh(Q.T @ E @ Q)[-1]
        assert abs(start - ritz) <= 1e-8 * scale
        # how far below the root the second pole lies, and the start's error
        errors.append((r2 * gamma[1] / top, (top - start) / scale))
    # where every other pole is far below the root, the start is nearly the root
    far = [error for ratio, error in errors if ratio < 1e-3]
    assert max(far, default=0.0) < 1e-6
    if kind in ("badly_scaled", "cluster", "geometric"):
        assert far


@pytest.mark.parametrize("p", [1, 2, 3])
def test_top_eigenvalue_small(p):
    rng = np.random.default_rng(p)
    for _ in range(20):
        gamma = np.sort(rng.random(p) * 10.0 ** rng.uniform(-8, 0, p))[::-1]
        r2 = rng.random()
        y1, y2 = rng.standard_normal((2, p))
        beta, rho = rng.standard_normal(2)
        expected, scale = _dense_top(gamma, r2, y1, y2, beta, rho)
        got = _top(gamma, r2, y1, y2, beta, rho)
        assert abs(got - expected) <= 1e-14 * scale


@pytest.mark.parametrize("zero", ["y1", "y2", "both", "r2", "beta_rho", "rho"])
def test_top_eigenvalue_degenerate_inputs(zero):
    rng = np.random.default_rng(3)
    gamma, r2, y1, y2, beta, rho = _case("badly_scaled", rng)
    if zero in ("y1", "both"):
        y1 = np.zeros_like(y1)
    if zero in ("y2", "both"):
        y2 = np.zeros_like(y2)
    if zero == "r2":
        r2 = 0.0
    if zero == "beta_rho":
        beta = rho = 0.0
    if zero == "rho":
        rho = 0.0
    expected, scale = _dense_top(gamma, r2, y1, y2, beta, rho)
    got = _top(gamma, r2, y1, y2, beta, rho)
    assert abs(got - expected) <= 1e-14 * scale


def test_ratio_bounds_keep_the_truncation_below_rounding():
    # the geometric tail sum_{j >= m} r^j = r^m / (1 - r), from its formula
    for m, bound in [
        (3, kernels._RHO3),
        (4, kernels._RHO4),
        (6, kernels._RHO6),
    ]:
        assert bound**m / (1.0 - bound) <= 2.0**-54
        # and not needlessly tight: 5% more would break it
        assert (1.05 * bound) ** m / (1.0 - 1.05 * bound) > 2.0**-54


def _group_at_ratio(ratio, n_far=30):
    """A top pole and a cluster of ``n_far`` poles ``ratio`` away from ``lo``.

    The cluster spans ``[c - h, c + h]`` with ``h = ratio * (lo - c)``.
    """
    c, lo = 50.0, 100.0
    h = ratio * (lo - c)
    cluster = np.linspace(c + h, c - h, n_far)
    return np.r_[lo + 50.0, cluster], lo


@pytest.mark.parametrize("ratio", [1e-9, 3e-6, 8e-5, 1.9e-3, 5e-3, 0.05, 0.3])
def test_far_group_chooses_enough_terms(ratio):
    """The plan taken at a ratio truncates below rounding, or sums directly."""
    gamma, lo = _group_at_ratio(ratio)
    kf, kt, m = kernels._far_group(gamma, 1.0, lo)
    p = gamma.shape[0]
    if m == 0:
        # no expansion: every pole summed directly
        assert (kf, kt) == (p, p)
        assert ratio > kernels._RHO6
        return
    if ratio < kernels._RHO6:
        assert (kf, kt) == (1, p)
    h = 0.5 * (gamma[kf] - gamma[kt - 1])
    c = 0.5 * (gamma[kf] + gamma[kt - 1])
    r = h / (lo - c)
    assert r**m / (1.0 - r) <= 2.0**-54 * 1.001


@pytest.mark.parametrize("m", [3, 4, 6])
def test_far_moments_match_the_direct_sum_at_the_edge(m):
    """At the largest ratio allowed ``m`` terms, the series equals the sum.

    Evaluated at the lowest root possible (``mu = lo``, where the series
    converges slowest), the 2x2 pole sums by moments and directly agree to a
    few ulps of the sum of the absolute terms; a looser ratio bound (one more
    term's worth) would leave a relative gap of ``r^m``, above 1e-12 here.
    """
    ratio = {3: kernels._RHO3, 4: kernels._RHO4, 6: kernels._RHO6}[m]
    gamma, lo = _group_at_ratio(ratio * 0.999)
    p = gamma.shape[0]
    kf, kt, m_taken = kernels._far_group(gamma, 1.0, lo)
    assert m_taken == m and (kf, kt) == (1, p)
    rng = np.random.default_rng(m)
    # weights all on the two cluster ends, where the ratio is largest
    a = np.zeros(p)
    b = np.zeros(p)
    a[1], a[-1] = rng.uniform(1.0, 2.0, 2)
    b[1], b[-1] = rng.uniform(1.0, 2.0, 2)
    c = 0.5 * (gamma[kf] + gamma[kt - 1])
    dist = lo - c
    far = kernels._far_moments(gamma, 1.0, a, b, kf, kt, c, 1.0 / dist, m)
    d1 = gamma[0]
    series = kernels._tau_scaled(
        lo, d1, 0.0, 0.0, gamma, 1.0, a, b, kf, kt, c, dist, far
    )
    direct = kernels._tau_scaled(
        lo, d1, 0.0, 0.0, gamma, 1.0, a, b, p, p, 0.0, 1.0, far
    )
    # with a[0] = b[0] = 0 the value is 1 + sum a^2 / (d - mu) or the like:
    # compare the value and the slope tau' = dnum / dden
    inv = 1.0 / np.abs(gamma[1:] - lo)
    mag = np.sum((a[1:] ** 2 + b[1:] ** 2) * inv)
    assert abs(series[0] - direct[0]) <= 8 * EPS * (1.0 + mag)
    slope_s = series[1] / series[2]
    slope_d = direct[1] / direct[2]
    assert abs(slope_s - slope_d) <= 1e-14 * abs(slope_d)


def test_plain_attribute_loop_matches_scattered_columns():
    """Features in order (contiguous loop) and reversed (scattered writes)."""
    rng = np.random.default_rng(7)
    n, p, d = 300, 5, 4
    gamma = np.sort(rng.random(p))[::-1]
    YU, G = rng.standard_normal((n, p)), rng.standard_normal((n, d))
    args = dict(
        Z=np.hstack([YU, G]),
        yu_off=rng.standard_normal(p),
        g_off=rng.standard_normal(d),
        r=rng.standard_normal(n),
        c=rng.random(n),
        omega2=rng.random(n),
        gamma=gamma,
        yv=rng.standard_normal(p),
        beta0=0.7,
        trace_k=gamma.sum(),
        w_feat=rng.standard_normal(d),
        hdiag=rng.random(d) + 1.0,
    )
    groups = dict(
        grp_ptr=np.zeros(1, dtype=np.int64),
        grp_cols=np.zeros(0, dtype=np.int64),
        grp_rot=np.zeros(0),
        grp_gamma=np.zeros(0),
        grp_w=np.zeros(0),
        grp_col=np.zeros(0, dtype=np.int64),
    )

    def run(feat_col):
        fil, dfil, attr = np.empty(n), np.empty(n), np.empty((n, d + 1))
        kernels.per_example_fil(
            *args.values(),
            feat_col,
            *groups.values(),
            d,
            1.3,
            0.25,
            fil,
            dfil,
            attr,
        )
        return fil, dfil, attr

    plain = run(np.arange(d, dtype=np.int64))
    scattered = run(np.arange(d, dtype=np.int64)[::-1].copy())
    np.testing.assert_array_equal(plain[0], scattered[0])
    np.testing.assert_array_equal(plain[2][:, :d], scattered[2][:, d - 1 :: -1])
    np.testing.assert_array_equal(plain[2][:, d], scattered[2][:, d])
    # one attribute by its formula: omega^2 (c^2 w^2 a + 2 c r w g + r^2 h) / sigma^2
    yu = YU + args["yu_off"]
    gi = G + args["g_off"]
    a = np.sum(yu**2, axis=1)
    w = args["w_feat"]
    expected = args["omega2"][:, None] * (
        (args["c"] ** 2 * a)[:, None] * w**2
        + 2.0 * (args["c"] * args["r"])[:, None] * w * gi
        + (args["r"] ** 2)[:, None] * args["hdiag"]
    )
    np.testing.assert_allclose(
        plain[2][:, :d], np.sqrt(np.maximum(expected, 0.0)) * 1.3, rtol=1e-12
    )


@pytest.mark.parametrize("n", [1, 63, 64, 65, 300, 20_000])
def test_gradient_sums_read_every_row(n):
    # every row once, whatever n against the kernel's 64 row blocks
    rng = np.random.default_rng(n)
    X = rng.standard_normal((n, 3))
    u, v, w = rng.standard_normal((3, n))
    expected = [X.T @ u, X.T @ v, np.abs(X).T @ np.abs(w)]
    got = kernels.gradient_sums(X, u, v, w)
    for k in range(3):
        np.testing.assert_allclose(got[k], expected[k], rtol=1e-12, atol=1e-12 * n)


@pytest.mark.parametrize("n", [1, 63, 64, 65, 300, 20_000])
def test_gram_column_reads_every_row(n):
    # column j of X~^T diag(w) X~, whatever n against the 64 row blocks
    rng = np.random.default_rng(n)
    X = rng.standard_normal((n, 4))
    weights = rng.uniform(0.0, 2.0, n)
    Xt = np.column_stack([X, np.ones(n)])
    for j in (0, 3):
        expected = Xt.T @ (weights * X[:, j])
        got = kernels.gram_column(X, weights, j)
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12 * n)
