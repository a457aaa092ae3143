# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""The one-pass steps of binary logistic regression (BinaryLinearSteps).

The kernel is checked against per-example gradients formed explicitly, and
whole fits through it against fits forced onto the general path.
"""

import numpy as np
import pytest
from scipy.special import ndtr
from scipy.stats import norm as normal
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler

from sklearn_fil.neural import DPSGDClassifier, _kernels, _training
from sklearn_fil.neural._kernels import (
    CLIP_GELU,
    CLIP_HARD,
    CLIP_NONE,
    _ndtr,
    binary_clipped_sum,
    linear_fil_accumulate,
    linear_fil_accumulate_serial,
)

CODES = {None: CLIP_NONE, "hard": CLIP_HARD, "gelu": CLIP_GELU}


def _brute_force(X, Y, rows, w, b, C, clipping):
    """Clipped sum from each example's gradient vector (weights, then bias)."""
    grads, norms, factors = [], [], []
    for r in rows:
        p = 1.0 / (1.0 + np.exp(-(X[r] @ w + b)))
        g = np.append(X[r], 1.0) * (p - Y[r, 0])  # d loss / d(w, b)
        g_norm = np.linalg.norm(g)
        if clipping is None:
            c = 1.0
        elif clipping == "hard":
            c = min(1.0, C / g_norm) if g_norm > 0 else 1.0
        else:  # 1 / (GELU(||g|| / C - 1) + 1), GELU(u) = u Phi(u)
            u = g_norm / C - 1.0
            c = 1.0 / (u * normal.cdf(u) + 1.0)
        grads.append(c * g)
        norms.append(g_norm)
        factors.append(c)
    total = np.sum(grads, axis=0)
    return total[:-1], total[-1], np.array(norms), np.array(factors)


def _data(rng, n=500, d=37):
    X = rng.standard_normal((n, d))
    X[::7] *= 30.0  # large norms: hard clipping bites, GELU far from 1
    Y = (rng.random((n, 1)) < 0.5).astype(np.float64)
    return X, Y


@pytest.mark.parametrize("clipping", ["gelu", "hard", None])
def test_kernel_matches_explicit_per_example_gradients(clipping):
    rng = np.random.default_rng(0)
    X, Y = _data(rng)
    w, b, C = 0.2 * rng.standard_normal(X.shape[1]), -0.3, 1.5
    rows = np.sort(rng.choice(X.shape[0], 120, replace=False))
    # an example the model fits exactly (p = 1 = y): zero gradient
    X[rows[3]] = 50.0 * np.sign(w)
    Y[rows[3]] = 1.0
    grad_w = np.full(X.shape[1], np.nan)  # overwritten, not added to
    norms, c, z, delta, sq = (np.empty(rows.size) for _ in range(5))
    gathered = np.empty((rows.size, X.shape[1]))
    grad_b, exact = binary_clipped_sum(
        X, Y, rows, w, b, C, CODES[clipping], grad_w, norms, c, z, delta, sq, gathered
    )
    want_w, want_b, want_norms, want_c = _brute_force(X, Y, rows, w, b, C, clipping)
    assert exact
    assert norms[3] == 0.0
    np.testing.assert_array_equal(gathered, X[rows])
    np.testing.assert_allclose(sq, np.sum(X[rows] ** 2, axis=1), rtol=1e-13)
    np.testing.assert_allclose(z, X[rows] @ w + b, rtol=1e-13)
    np.testing.assert_allclose(delta, 1 / (1 + np.exp(-X[rows] @ w - b)) - Y[rows, 0])
    np.testing.assert_allclose(norms, want_norms, rtol=1e-13)
    np.testing.assert_allclose(c, want_c, rtol=1e-13)
    np.testing.assert_allclose(grad_w, want_w, rtol=1e-12, atol=1e-13)
    assert grad_b == pytest.approx(want_b, rel=1e-12, abs=1e-13)
    if clipping == "hard":
        assert np.any(c < 1.0) and np.all(c * norms <= C * (1 + 1e-15))


def test_kernel_declines_what_it_cannot_vouch_for():
    """Non-finite norms, and sums of squares that may have underflowed."""
    rng = np.random.default_rng(1)
    X, Y = _data(rng, n=20, d=5)
    w = np.zeros(5)
    out = (np.empty(5), *(np.empty(20) for _ in range(5)), np.empty((0, 5)))
    rows = np.arange(20)
    assert binary_clipped_sum(X, Y, rows, w, 0.0, 1.0, CLIP_GELU, *out)[1]
    for bad in (np.inf, np.nan, 1e200):  # 1e200: ||x||^2 overflows
        Xb = X.copy()
        Xb[4, 2] = bad
        assert not binary_clipped_sum(Xb, Y, rows, w, 0.0, 1.0, CLIP_GELU, *out)[1]
    # p - y = 1e-300: its square underflows
    Y0 = np.zeros((20, 1))
    assert not binary_clipped_sum(
        X * 0.0, Y0, rows, w, np.log(1e-300), 1.0, CLIP_GELU, *out
    )[1]


def test_ndtr_is_scipys():
    u = np.concatenate([np.linspace(-1.0, 60.0, 20001), [0.0, 0.5, -0.5, 1.0]])
    mine = np.array([_ndtr(v) for v in u])
    np.testing.assert_allclose(mine, ndtr(u), rtol=1e-15, atol=0.0)


@pytest.fixture
def kernel_calls(monkeypatch):
    """The number of kernel calls of the fits that follow."""
    calls = [0]

    def counted(*args):
        calls[0] += 1
        return binary_clipped_sum(*args)

    monkeypatch.setattr(_kernels, "binary_clipped_sum", counted)
    return calls


def _cancer(onehot=False):
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    if onehot:  # a one-hot group of three columns, from the first feature
        level = np.digitize(X[:, 0], [-0.5, 0.5])
        X = np.column_stack([X, np.eye(3)[level]])
    return X, y


def _fit(fast, monkeypatch, X, y, **params):
    monkeypatch.setattr(DPSGDClassifier, "_fast_linear", fast)
    settings = dict(
        hidden_layer_sizes=(),
        batch_size=64,
        max_iter=4,
        learning_rate=0.5,
        fil_accounting=False,
        random_state=0,
    )
    return DPSGDClassifier(**{**settings, **params}).fit(X, y)


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"clipping": "hard", "max_grad_norm": 0.5},
        {"per_instance_accounting": True},
        {"sampling": "shuffle", "momentum": 0.9, "alpha": 1e-3},
        {
            "neighboring_relation": "add_remove",
            "public_n_samples": 600,
            "record_steps": [1, 5],
        },
        {"fil_accounting": True},
        {"fil_accounting": True, "fil_coordinates": 5, "private_label": True},
        {"fil_accounting": True, "per_instance_accounting": True, "clipping": "hard"},
        {
            "fil_accounting": True,
            "private_label": True,
            "onehot_groups": {"g": [30, 31, 32]},
        },
    ],
)
def test_fit_equals_general_path(params, kernel_calls, monkeypatch):
    X, y = _cancer(onehot="onehot_groups" in params)
    fast = _fit(True, monkeypatch, X, y, **params)
    steps = kernel_calls[0]
    general = _fit(False, monkeypatch, X, y, **params)
    assert steps == fast.t_ and kernel_calls[0] == steps  # every step, then none
    for got, want in zip(
        [*fast.coefs_, *fast.intercepts_],
        [*general.coefs_, *general.intercepts_],
        strict=True,
    ):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    assert fast.epsilon_ == general.epsilon_
    report, want = fast.privacy_report_, general.privacy_report_
    assert list(report.columns) == list(want.columns)
    np.testing.assert_allclose(report, want, rtol=1e-12, atol=1e-14)
    if params.get("fil_accounting"):
        assert report["fil"].median() > 0 and fast.dataset_fil_ > 0
        np.testing.assert_allclose(
            fast.attribute_fil_, general.attribute_fil_, rtol=1e-12
        )
    for got, want in zip(fast.recorded_steps_, general.recorded_steps_, strict=True):
        np.testing.assert_array_equal(got.indices, want.indices)
        np.testing.assert_allclose(got.grad_coefs[0], want.grad_coefs[0], rtol=1e-12)
    # not the same fit twice: the weights moved
    assert np.abs(fast.coefs_[0]).max() > 0.05


@pytest.mark.filterwarnings("ignore:No differential-privacy guarantee")
def test_fit_with_clipping_none_equals_general_path(kernel_calls, monkeypatch):
    X, y = _cancer()
    fast = _fit(True, monkeypatch, X, y, clipping=None)
    general = _fit(False, monkeypatch, X, y, clipping=None)
    assert kernel_calls[0] == fast.t_
    np.testing.assert_allclose(fast.coefs_[0], general.coefs_[0], rtol=1e-12)
    np.testing.assert_allclose(
        fast.privacy_report_["grad_norm"], general.privacy_report_["grad_norm"]
    )


def test_huge_rows_take_the_general_path(kernel_calls, monkeypatch):
    """A row of 1e200 is clipped by the general path's scaled norms."""
    X, y = _cancer()
    X = X.copy()
    X[0] = 1e200
    fast = _fit(True, monkeypatch, X, y, max_iter=1)
    general = _fit(False, monkeypatch, X, y, max_iter=1)
    assert 0 < kernel_calls[0] == fast.t_
    np.testing.assert_allclose(fast.coefs_[0], general.coefs_[0], rtol=1e-12)
    assert np.isfinite(fast.coefs_[0]).all()


@pytest.mark.parametrize(
    "params, data",
    [
        ({"hidden_layer_sizes": (3,)}, "binary"),
        ({}, "three classes"),
    ],
)
def test_other_models_keep_the_general_path(params, data, kernel_calls, monkeypatch):
    X, y = _cancer()
    if data == "three classes":
        y = y + (X[:, 0] > 1.0)
    _fit(True, monkeypatch, X, y, max_iter=1, **params)
    assert kernel_calls[0] == 0


@pytest.mark.parametrize("per_attribute", [False, True])
def test_fil_kernels_agree_on_whole_data_and_threads(per_attribute):
    """The parallel and serial FIL kernels, from the batch or the whole data."""
    rng = np.random.default_rng(2)
    n, d, b = 300, 12, 40
    X = rng.standard_normal((n, d))
    W = 0.3 * rng.standard_normal((d, 1))
    rows = np.sort(rng.choice(n, b, replace=False))
    Xb = X[rows]
    P = 1.0 / (1.0 + np.exp(-Xb @ W))
    D = P - (rng.random((b, 1)) < 0.5)
    norms = np.abs(D[:, 0]) * np.sqrt(np.sum(Xb * Xb, axis=1) + 1.0)
    c, dc = 1.0 / (1.0 + norms), -1.0 / (1.0 + norms) ** 2
    coords = np.array([0, 3, 4, 11])
    results = []
    for kernel in (linear_fil_accumulate, linear_fil_accumulate_serial):
        for data, whole in ((Xb, False), (X, True)):
            trace = np.zeros(n)
            attr = np.zeros((n, d) if per_attribute else (0, 0))
            args = (coords, W, P, D, norms, c, dc, rows, 2.0, 3.0, trace, attr, whole)
            kernel(data, *args)
            results.append((trace, attr))
    for trace, attr in results[1:]:
        np.testing.assert_array_equal(trace, results[0][0])
        np.testing.assert_array_equal(attr, results[0][1])
    assert np.all(results[0][0][rows] > 0) and results[0][0].sum() == pytest.approx(
        results[0][0][rows].sum()
    )
    if per_attribute:  # trace = trace_factor * the sum over the coordinates
        np.testing.assert_allclose(
            results[0][0][rows], 3.0 * results[0][1][rows].sum(axis=1)
        )


def test_column_major_input_takes_the_one_pass_steps(monkeypatch):
    # a DataFrame's values are column-major; the fit copies them to C order,
    # so the one-pass steps apply (their gathers of strided rows made a fit
    # 17x slower) and the model is the one fitted on the C array
    import pandas as pd

    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 6))
    y = (X @ rng.standard_normal(6) > 0).astype(int)
    calls = []
    real = _training.BinaryLinearSteps.__call__

    def spy(self, *args, **kwargs):
        calls.append(self.X.flags.c_contiguous)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(_training.BinaryLinearSteps, "__call__", spy)
    ref = DPSGDClassifier(max_iter=2, batch_size=64, random_state=0).fit(X, y)
    n_steps = len(calls)
    frame = pd.DataFrame(np.asfortranarray(X), columns=[f"f{j}" for j in range(6)])
    assert frame.to_numpy().flags.f_contiguous  # the layout this test is about
    for data in (np.asfortranarray(X), frame):
        calls.clear()
        est = DPSGDClassifier(max_iter=2, batch_size=64, random_state=0).fit(data, y)
        assert n_steps > 0 and calls == [True] * n_steps
        np.testing.assert_array_equal(est.coefs_[0], ref.coefs_[0])
        np.testing.assert_array_equal(
            est.privacy_report_["fil"].to_numpy(), ref.privacy_report_["fil"].to_numpy()
        )
