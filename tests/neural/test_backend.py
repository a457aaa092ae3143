# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""DPSGDClassifier on array-API backends, compared with the NumPy path.

The generic array-API code runs on the CPU with ``array_api_strict``, which
rejects anything outside the standard; CuPy runs when a GPU is there. The
random numbers come from the same host generator on every backend, so a fit
must equal the NumPy fit up to floating-point rounding.

``array_api_strict`` has no ``erf``, so GELU clipping there needs SciPy's
array API support, which is fixed when SciPy is imported
(``SCIPY_ARRAY_API=1``). The training comparisons therefore use
``clipping="hard"``; GELU is tested separately: with the exact Phi of SciPy
patched in for ``array_api_strict`` (the same function, through the host),
and the unpatched route must either be SciPy's or raise.
"""

import itertools
import logging
import sys

import numpy as np
import pytest
import scipy.special
import sklearn
from numpy.testing import assert_allclose
from sklearn.datasets import make_classification
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_fil import _backend
from sklearn_fil.neural import DPSGDClassifier
from sklearn_fil.neural._network import Network, clip_factor, gelu, gelu_prime

xps = pytest.importorskip("array_api_strict")

RTOL = 1e-10


@pytest.fixture(autouse=True)
def _quiet_and_dispatchable(monkeypatch):
    # scikit-learn refuses array_api_dispatch without this variable.
    monkeypatch.setenv("SCIPY_ARRAY_API", "1")
    logging.getLogger("absl").setLevel(logging.ERROR)


def _data(classes, n=60, d=4, seed=0):
    X, y = make_classification(
        n_samples=n,
        n_features=d,
        n_informative=3,
        n_redundant=0,
        n_classes=classes,
        n_clusters_per_class=1,
        random_state=seed,
    )
    return X, y


def _assert_same_fit(fitted, reference):
    for got, want in zip(
        fitted.coefs_ + fitted.intercepts_,
        reference.coefs_ + reference.intercepts_,
        strict=True,
    ):
        assert type(got) is np.ndarray  # copied back to the host
        assert_allclose(got, want, rtol=RTOL, atol=1e-14)
    assert fitted.epsilon_ == reference.epsilon_
    got, want = fitted.privacy_report_, reference.privacy_report_
    assert list(got.columns) == list(want.columns)
    assert got.index.equals(want.index)
    for column in want.columns:
        # The label's clipped Jacobian is a difference of two squares that
        # cancel on clipped examples (clamped at 0): its square root keeps
        # rounding of order sqrt(eps) of the column's scale.
        # So does a one-hot group's (its columns less its all-ones direction).
        cancels = column in ("fil[y]", "fil[g]")
        atol = 0.0 if not cancels else 1e-7 * np.abs(want[column]).max()
        assert_allclose(got[column], want[column], rtol=RTOL, atol=atol, err_msg=column)
    assert np.isfinite(want["fil"]).all()  # not a vacuous NaN == NaN


CASES = {
    "logistic-binary": (2, {}),
    "logistic-multiclass": (3, {"norm_refresh": 1}),
    "tanh-mlp": (2, {"hidden_layer_sizes": (4,), "fil_coordinates": 2}),
    # Shuffled batches: unsorted indices through the mask route of _backend.Rows.
    "tanh-mlp-multiclass-shuffle": (
        3,
        {"hidden_layer_sizes": (3,), "sampling": "shuffle", "momentum": 0.5},
    ),
    # The label's Jacobian: one coordinate, or a one-hot label's tangent plane.
    "tanh-mlp-private-label": (2, {"hidden_layer_sizes": (4,), "private_label": True}),
    "logistic-multiclass-private-label": (3, {"private_label": True}),
}


@pytest.mark.parametrize("case", CASES)
def test_array_api_strict_fit_equals_numpy(case):
    classes, extra = CASES[case]
    X, y = _data(classes)
    params = dict(clipping="hard", batch_size=10, max_iter=2, random_state=0, **extra)
    reference = DPSGDClassifier(**params).fit(X, y)
    Xs, ys = xps.asarray(X), xps.asarray(y)
    with sklearn.config_context(array_api_dispatch=True):
        fitted = DPSGDClassifier(**params).fit(Xs, ys)
        proba = fitted.predict_proba(Xs)
        labels = fitted.predict(Xs)
    _assert_same_fit(fitted, reference)
    assert isinstance(proba, type(Xs))  # predictions stay in the input namespace
    assert isinstance(labels, type(Xs))
    assert_allclose(np.asarray(proba), reference.predict_proba(X), rtol=RTOL)
    np.testing.assert_array_equal(np.asarray(labels), reference.predict(X))
    # Host input to a model fitted elsewhere computes with NumPy.
    assert_allclose(fitted.predict_proba(X), reference.predict_proba(X), rtol=RTOL)


def test_backend_numpy_computes_strict_input_on_the_host():
    X, y = _data(2)
    params = dict(clipping="hard", batch_size=10, max_iter=1, random_state=0)
    reference = DPSGDClassifier(**params).fit(X, y)
    with sklearn.config_context(array_api_dispatch=True):
        fitted = DPSGDClassifier(backend="numpy", **params).fit(
            xps.asarray(X), xps.asarray(y)
        )
    # The same NumPy computation: equal to the last bit.
    for got, want in zip(fitted.coefs_, reference.coefs_, strict=True):
        np.testing.assert_array_equal(got, want)
    assert fitted.privacy_report_.equals(reference.privacy_report_)


def _strict_exact_ndtr(x, xp):
    """SciPy's Phi for array_api_strict arrays, through the host: exact."""
    if xp is np:
        return scipy.special.ndtr(x)
    return xp.asarray(scipy.special.ndtr(np.asarray(x)))


def test_gelu_helpers_are_namespace_generic(monkeypatch):
    monkeypatch.setattr(_backend, "ndtr", _strict_exact_ndtr)
    norms = np.array([0.0, 0.3, 0.9, 1.4, 1.6, 3.0, 10.0])
    u = norms / 1.5 - 1.0
    assert_allclose(np.asarray(gelu(xps.asarray(u))), gelu(u), rtol=1e-15)
    assert_allclose(np.asarray(gelu_prime(xps.asarray(u))), gelu_prime(u), rtol=1e-15)
    for clipping in ["gelu", "hard", None]:
        want = clip_factor(norms, 1.5, clipping)
        got = clip_factor(xps.asarray(norms), 1.5, clipping)
        for g, w in zip(got, want, strict=True):
            assert_allclose(np.asarray(g), w, rtol=1e-15, atol=1e-300)


def test_gelu_clipped_fit_in_strict_equals_numpy(monkeypatch):
    monkeypatch.setattr(_backend, "ndtr", _strict_exact_ndtr)
    X, y = _data(3)
    params = dict(hidden_layer_sizes=(3,), batch_size=10, max_iter=2, random_state=0)
    reference = DPSGDClassifier(**params).fit(X, y)
    with sklearn.config_context(array_api_dispatch=True):
        fitted = DPSGDClassifier(**params).fit(xps.asarray(X), xps.asarray(y))
    _assert_same_fit(fitted, reference)


def test_gelu_without_an_exact_phi_raises_before_any_work():
    # array_api_strict's "device1" refuses conversion to NumPy, so SciPy cannot
    # reach it whatever its array API mode: no exact Phi, a clear error.
    X, y = _data(2)
    device1 = xps.Device("device1")
    clf = DPSGDClassifier(batch_size=10, max_iter=1, random_state=0)
    with sklearn.config_context(array_api_dispatch=True):
        with pytest.raises(ValueError, match=r"no exact route.*clipping='hard'"):
            clf.fit(xps.asarray(X, device=device1), xps.asarray(y, device=device1))
    assert not [a for a in vars(clf) if a.endswith("_")]


def test_gelu_on_the_strict_cpu_device_follows_scipy():
    # SciPy's array API mode is fixed at import: test the route this process has.
    X, y = _data(2)
    params = dict(batch_size=10, max_iter=1, random_state=0)
    clf = DPSGDClassifier(**params)
    scipy_dispatches = not isinstance(
        scipy.special.ndtr(xps.asarray([0.0])), np.ndarray
    )
    with sklearn.config_context(array_api_dispatch=True):
        if scipy_dispatches:
            clf.fit(xps.asarray(X), xps.asarray(y))
            _assert_same_fit(clf, DPSGDClassifier(**params).fit(X, y))
        else:
            with pytest.raises(ValueError, match="SCIPY_ARRAY_API=1"):
                clf.fit(xps.asarray(X), xps.asarray(y))


@pytest.mark.parametrize("case", ["logistic-multiclass", "tanh-mlp"])
def test_strict_non_cpu_device_keeps_the_computation_there(case):
    # "device1" refuses np.asarray: any hidden host conversion would raise.
    classes, extra = CASES[case]
    X, y = _data(classes)
    params = dict(clipping="hard", batch_size=10, max_iter=2, random_state=0, **extra)
    reference = DPSGDClassifier(**params).fit(X, y)
    device1 = xps.Device("device1")
    Xs = xps.asarray(X, device=device1)
    with sklearn.config_context(array_api_dispatch=True):
        fitted = DPSGDClassifier(**params).fit(Xs, xps.asarray(y, device=device1))
        proba = fitted.predict_proba(Xs)
    _assert_same_fit(fitted, reference)
    assert proba.device == device1
    proba = xps.asarray(proba, device=xps.Device("CPU_DEVICE"))
    assert_allclose(np.asarray(proba), reference.predict_proba(X), rtol=RTOL)


ARCHITECTURES = {
    "logistic-binary": ((), 1),
    "logistic-multiclass": ((), 3),
    "mlp-binary": ((4, 3), 1),
    "mlp-multiclass": ((5,), 3),
}


@pytest.mark.parametrize("name", ARCHITECTURES)
@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_network_in_strict_equals_numpy(name, activation, monkeypatch):
    import sklearn_fil.neural._network as network

    sizes, n_out = ARCHITECTURES[name]
    rng = np.random.default_rng(0)
    widths = [3, *sizes, n_out]
    coefs = [rng.standard_normal((a, b)) for a, b in itertools.pairwise(widths)]
    intercepts = [rng.standard_normal(b) for b in widths[1:]]
    X = rng.standard_normal((7, 3))
    labels = rng.integers(0, max(n_out, 2), 7)
    Y = labels[:, None].astype(float) if n_out == 1 else np.eye(n_out)[labels]
    coords = np.array([2, 0, 1])

    def run(xp):
        net = Network(
            [xp.asarray(W) for W in coefs],
            [xp.asarray(b) for b in intercepts],
            activation,
        )
        acts, logits = net.forward(xp.asarray(X))
        deltas = net.backward(acts, logits, xp.asarray(Y))
        norms = net.grad_norms(acts, deltas)
        c, dc = clip_factor(norms, 0.7, "hard")
        summed = net.weighted_sum(acts, deltas, c)
        jac = net.jacobian_sq_norms(
            acts, logits, deltas, norms, c, dc, xp.asarray(coords)
        )
        loss = net.loss(logits, xp.asarray(Y))
        flat = [net.proba(logits), loss, norms, jac, *itertools.chain(*summed)]
        return [np.asarray(a) for a in flat]

    want = run(np)  # the numba kernel for the logistic models
    # One coordinate per chunk in the generic code.
    monkeypatch.setattr(network, "_TANGENT_ENTRIES", 1)
    got = run(xps)
    for g, w in zip(got, want, strict=True):
        assert_allclose(g, w, rtol=1e-12, atol=1e-15)


def test_rows_mask_route_matches_integer_indexing():
    idx = np.array([4, 0, 3])
    values = np.arange(6.0).reshape(3, 2) + 1.0
    want_set, want_add = np.zeros((5, 2)), np.ones((5, 2))
    want_set[idx] = values
    want_add[idx] += values
    rows = _backend.Rows(idx, 5, xps)
    got_set = xps.zeros((5, 2), dtype=xps.float64)
    got_add = xps.ones((5, 2), dtype=xps.float64)
    rows.set(got_set, xps.asarray(values))
    rows.add(got_add, xps.asarray(values))
    np.testing.assert_array_equal(np.asarray(got_set), want_set)
    np.testing.assert_array_equal(np.asarray(got_add), want_add)
    np.testing.assert_array_equal(
        np.asarray(rows.take(xps.asarray(want_add))), want_add[idx]
    )


def test_cupy_backend_without_cupy_raises_before_any_work(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy -> ImportError
    X, y = _data(2)
    X[0, 0] = np.nan  # validation would complain first if it ran first
    clf = DPSGDClassifier(backend="cupy", batch_size=10)
    with pytest.raises(ImportError, match=r"pip install sklearn-fil\[gpu\]"):
        clf.fit(X, y)
    assert not [a for a in vars(clf) if a.endswith("_")]


def test_bad_backend_is_an_invalid_parameter():
    X, y = _data(2)
    with pytest.raises(InvalidParameterError, match="backend"):
        DPSGDClassifier(backend="torch", batch_size=10).fit(X, y)


def _cupy_with_a_gpu():
    cupy = pytest.importorskip("cupy")
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("CuPy found no GPU")
    except cupy.cuda.runtime.CUDARuntimeError as exc:
        pytest.skip(f"CuPy found no GPU: {exc}")
    return cupy


@pytest.mark.gpu
@pytest.mark.parametrize(
    "extra",
    [{}, {"hidden_layer_sizes": (4,), "clipping": "hard", "fil_coordinates": 2}],
)
def test_cupy_fit_equals_numpy(extra):
    cupy = _cupy_with_a_gpu()
    X, y = _data(3)
    params = dict(batch_size=10, max_iter=2, random_state=0, **extra)
    reference = DPSGDClassifier(**params).fit(X, y)
    # backend="cupy" moves NumPy input to the GPU.
    _assert_same_fit(DPSGDClassifier(backend="cupy", **params).fit(X, y), reference)
    # backend="auto" computes CuPy input on the GPU under array_api_dispatch.
    Xc, yc = cupy.asarray(X), cupy.asarray(y)
    with sklearn.config_context(array_api_dispatch=True):
        fitted = DPSGDClassifier(**params).fit(Xc, yc)
        proba = fitted.predict_proba(Xc)
    _assert_same_fit(fitted, reference)
    assert isinstance(proba, cupy.ndarray)
    assert_allclose(proba.get(), reference.predict_proba(X), rtol=RTOL)


@pytest.mark.parametrize(
    "classes, extra",
    [(3, {}), (2, {"hidden_layer_sizes": (4,), "private_label": True})],
    ids=["logistic-multiclass", "tanh-mlp-private-label"],
)
def test_array_api_strict_onehot_group_fit_equals_numpy(classes, extra):
    # the group's all-ones direction through the generic code in both
    # namespaces; the logistic NumPy columns come from the numba kernel
    X, y = _data(classes)
    level = np.random.default_rng(0).integers(0, 3, X.shape[0])
    X = np.hstack([X, np.eye(3)[level]])
    params = dict(
        clipping="hard",
        batch_size=10,
        max_iter=2,
        onehot_groups={"g": [4, 5, 6]},
        random_state=0,
        **extra,
    )
    reference = DPSGDClassifier(**params).fit(X, y)
    with sklearn.config_context(array_api_dispatch=True):
        fitted = DPSGDClassifier(**params).fit(xps.asarray(X), xps.asarray(y))
    _assert_same_fit(fitted, reference)
    assert "fil[g]" in reference.privacy_report_
    assert_allclose(fitted.attribute_fil_, reference.attribute_fil_, rtol=1e-7)
    assert_allclose(fitted.dataset_fil_, reference.dataset_fil_, rtol=RTOL)
