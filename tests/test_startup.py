# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""Cold start: the import loads no numba and compiles nothing, a first compile
says so once, and the serial twins of the parallel kernels give the same bits.

``benchmarks/bench_startup.py`` times the cold and warm runs.
"""

import io
import subprocess
import sys

import numba
import numpy as np
import pytest

from sklearn_fil.cli import _compile_notice
from sklearn_fil.fisher import _kernels as kernels

_LOADED_AT_IMPORT = """
import importlib, pkgutil, sys
import sklearn_fil
loaded = sorted(name for name in sys.modules if name.split(".")[0] == "numba")
assert not loaded, "import sklearn_fil loaded numba: " + ", ".join(loaded[:3])
from numba.core.registry import CPUDispatcher
for info in pkgutil.walk_packages(sklearn_fil.__path__, "sklearn_fil."):
    if not info.name.endswith("__main__"):
        importlib.import_module(info.name)
kernels = {
    f"{name}.{attr}": value
    for name, module in list(sys.modules.items())
    if name.startswith("sklearn_fil") and module is not None
    for attr, value in vars(module).items()
    if isinstance(value, CPUDispatcher)
}
assert len(kernels) >= 20, sorted(kernels)
loaded = sorted(name for name, kernel in kernels.items() if kernel.overloads)
assert not loaded, loaded
"""


def test_import_loads_no_numba_and_compiles_no_kernel():
    # numba's import (about 0.35 s) waits for the first kernel; importing the
    # kernels' modules then compiles nothing: a kernel with an explicit
    # signature would compile (or load from the cache) at every import
    proc = subprocess.run(
        [sys.executable, "-c", _LOADED_AT_IMPORT], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def _new_kernel(module):
    """A jitted function of ``module``, not compiled yet."""
    namespace = {"__name__": module}
    exec("def kernel(x):\n    return x + 1\n", namespace)
    return numba.njit(namespace["kernel"])


def test_compile_notice_once_on_a_terminal():
    stream = _Terminal()
    with _compile_notice(stream, "report"):
        _new_kernel("other_package")(1)
        assert stream.getvalue() == ""  # not sklearn-fil's kernel
        _new_kernel("sklearn_fil._probe")(1)
        _new_kernel("sklearn_fil._probe")(2.0)
    _new_kernel("sklearn_fil._probe")(3)  # the listener is gone
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sklearn-fil report: compiling")

    captured = io.StringIO()  # a script's or a test's stderr: kept for errors
    with _compile_notice(captured, "report"):
        _new_kernel("sklearn_fil._probe")(1)
    assert captured.getvalue() == ""


@pytest.mark.parametrize("n", [1, 65, 20_000])
def test_serial_twins_give_the_same_bits(n):
    rng = np.random.default_rng(n)
    X = rng.standard_normal((n, 7))
    u, v, w = rng.standard_normal((3, n))
    np.testing.assert_array_equal(
        kernels.gradient_sums_serial(X, u, v, w), kernels.gradient_sums(X, u, v, w)
    )

    p, d = 5, 4
    gamma = np.sort(rng.random(p))[::-1]
    empty = np.zeros(0, dtype=np.int64)
    args = (
        rng.standard_normal((n, p + d)),  # Z
        rng.standard_normal(p),  # yu_off
        rng.standard_normal(d),  # g_off
        rng.standard_normal(n),  # r
        rng.random(n),  # c
        rng.random(n),  # omega2
        gamma,
        rng.standard_normal(p),  # yv
        0.7,  # beta0
        gamma.sum(),  # trace_k
        rng.standard_normal(d),  # w_feat
        rng.random(d) + 1.0,  # hdiag
        np.arange(d, dtype=np.int64),  # feat_col
        np.zeros(1, dtype=np.int64),  # grp_ptr: no one-hot group
        empty,
        np.zeros(0),
        np.zeros(0),
        np.zeros(0),
        empty,
        d,  # label_col
        1.3,  # inv_sigma
        0.25,  # inv_k
    )
    outputs = []
    for kernel in (kernels.per_example_fil, kernels.per_example_fil_serial):
        fil, dfil, attr = np.empty(n), np.empty(n), np.empty((n, d + 1))
        kernel(*args, fil, dfil, attr)
        outputs.append((fil, dfil, attr))
    for parallel, serial in zip(*outputs, strict=True):
        np.testing.assert_array_equal(parallel, serial)
