# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""The kernels compiled ahead of time (``sklearn_fil/_compiled.py``, built by
``setup.py``): in use where they apply, the JIT's results bit for bit, and
never called with arguments of other types."""

import importlib
import shutil
import sysconfig
import threading
import time

import numpy as np
import pytest
from numba.core.errors import TypingError
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler

from sklearn_fil import _compiled
from sklearn_fil._compiled import KERNELS, compiled
from sklearn_fil.fisher import _kernels as fisher_kernels
from sklearn_fil.linear_model import (
    OutputPerturbedLinearRegression,
    OutputPerturbedLogisticRegression,
)


def _has_compiler(name):
    command = sysconfig.get_config_var(name)  # as setup.py's build uses it
    return bool(command) and shutil.which(command.split()[0]) is not None


HAS_COMPILERS = _has_compiler("CC") and _has_compiler("CXX")


def _kernels():
    return [
        getattr(importlib.import_module(module), name)
        for module, names in KERNELS.items()
        for name in names
    ]


def _reports():
    """Fits whose reports call every kernel of KERNELS, on one thread and in
    row_parallel's threads (40,000 rows), with a one-hot group."""
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    X /= np.linalg.norm(X, axis=1).max()
    OutputPerturbedLogisticRegression(data_norm=1.0, random_state=0).fit(X, y)
    rng = np.random.default_rng(0)
    n = 40_000
    onehot = np.eye(3)[rng.integers(0, 3, n)]
    X = np.hstack([rng.standard_normal((n, 4)) / 4, onehot])
    y = X[:, :4].sum(axis=1) + X[:, 4] + 0.1 * rng.standard_normal(n)
    groups = {"g": [4, 5, 6]}
    OutputPerturbedLinearRegression(sigma=0.01, lam=1e-3, onehot_groups=groups).fit(
        X, y
    )
    OutputPerturbedLogisticRegression(
        lam=1e-3, data_norm=2.0, onehot_groups=groups
    ).fit(X, y > y.mean())


def _copy(values):
    return [v.copy() if isinstance(v, np.ndarray) else v for v in values]


def _same_bits(a, b):
    if isinstance(a, tuple):
        return len(a) == len(b) and all(map(_same_bits, a, b))
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.skipif(not HAS_COMPILERS, reason="no C and C++ compiler: not built")
def test_the_extension_is_built_for_this_process():
    # fails after a kernel's module was edited: rebuild (pip install -e .)
    assert _compiled._extension() is not None
    assert all(compiled(kernel) is not kernel for kernel in _kernels())


@pytest.mark.skipif(not HAS_COMPILERS, reason="no C and C++ compiler: not built")
def test_every_compiled_call_of_a_report_gives_the_jits_bits(monkeypatch):
    calls = {}
    for kernel in _kernels():
        twin = compiled(kernel)

        def record(*args, twin=twin, function=twin.function):
            before = _copy(args)
            out = function(*args)
            calls.setdefault(twin.kernel.py_func.__name__, []).append(
                (twin.kernel, before, _copy(args), out)
            )
            return out

        monkeypatch.setattr(twin, "function", record)
    _reports()
    # a kernel missing here was called with other types than KERNELS names
    assert sorted(calls) == sorted(k.py_func.__name__ for k in _kernels())
    for name, recorded in calls.items():
        for kernel, before, after, out in recorded[:50]:
            args = _copy(before)
            expected = kernel(*args)
            assert _same_bits(out, expected), name
            assert all(map(_same_bits, after, args)), name


@pytest.mark.skipif(not HAS_COMPILERS, reason="no C and C++ compiler: not built")
def test_arguments_of_other_types_go_to_the_jit(monkeypatch):
    twin = compiled(fisher_kernels.gradient_sums_serial)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 3))
    u, v, w = rng.standard_normal((3, 50))
    expected = fisher_kernels.gradient_sums_serial(X, u, v, w)
    assert _same_bits(twin(X, u, v, w), expected)  # X's fingerprint: exported

    def refuse(*args):
        raise AssertionError("the compiled twin took arguments of other types")

    monkeypatch.setattr(twin, "function", refuse)
    readonly = X.copy()
    readonly.flags.writeable = False
    strided = np.repeat(X, 2, axis=0)[::2]
    # X's fingerprint, unaligned
    unaligned = np.zeros(X.nbytes + 1, np.uint8)[1:].view(np.float64).reshape(X.shape)
    unaligned[:] = X
    for other in (np.asfortranarray(X), strided, readonly, unaligned):
        got = twin(other, u, v, w)
        np.testing.assert_allclose(got, expected, rtol=1e-13)
    assert twin(X.astype(np.float32), u, v, w).dtype == np.float64
    try:  # X's fingerprint too: the JIT's call (a TypingError, on its own)
        twin(X.astype(">f8"), u, v, w)
    except TypingError:
        pass


@pytest.mark.skipif(not HAS_COMPILERS, reason="no C and C++ compiler: not built")
def test_the_compiled_kernels_release_the_gil():
    # row_parallel runs the serial kernels in threads: holding the GIL, the
    # compiled twins would run them one at a time. While a call runs in a
    # thread, this one goes on (holding it, it would wait out the whole call).
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400_000, 50))
    args = (X, *rng.standard_normal((3, 400_000)))
    function = compiled(fisher_kernels.gradient_sums_serial).function
    start = time.perf_counter()
    function(*args)
    call = time.perf_counter() - start

    def largest_wait():
        worker = threading.Thread(target=function, args=args)
        last, largest = time.perf_counter(), 0.0
        worker.start()
        while worker.is_alive():
            now = time.perf_counter()
            largest, last = max(largest, now - last), now
        worker.join()
        return largest

    assert min(largest_wait() for _ in range(3)) < call / 2


def test_no_twin_for_another_build_or_without_jit(monkeypatch):
    kernel = fisher_kernels.gradient_sums_serial
    monkeypatch.setattr(_compiled, "build_tag", lambda: -1)
    _compiled._extension.cache_clear()
    _compiled.compiled.cache_clear()
    try:
        assert compiled(kernel) is kernel
        monkeypatch.undo()
        _compiled._extension.cache_clear()
        _compiled.compiled.cache_clear()
        monkeypatch.setattr(_compiled.numba.config, "DISABLE_JIT", True)
        assert compiled(kernel) is kernel
    finally:
        monkeypatch.undo()
        _compiled._extension.cache_clear()
        _compiled.compiled.cache_clear()
