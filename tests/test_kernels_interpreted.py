# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""The numba kernels' tests again, with the kernels run as plain Python.

Compiled, an out-of-bounds index reads garbage silently and integer overflow
wraps; interpreted (``NUMBA_DISABLE_JIT=1``), the same code raises. The
switch is read when numba is first imported, so the tests run in a fresh
interpreter.
"""

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sklearn_fil.accounting import _kernels as accounting_kernels
from sklearn_fil.accounting import gaussian_epsilon

TESTS = Path(__file__).parent


def test_kernel_tests_pass_with_numba_disabled():
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "from sklearn_fil.fisher import _kernels; "
            "print(type(_kernels.gradient_sums).__name__)",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert probe.stdout.strip() == "function"  # not a numba dispatcher
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-n",
            "0",
            # the kernels' own tests; the sparse, Dask and fit tests call the
            # same kernels on bigger data and would take minutes interpreted
            str(TESTS / "fisher" / "test_engine.py"),
            str(TESTS / "fisher" / "test_kernels.py"),
            str(TESTS / "fisher" / "test_reference.py"),
            str(TESTS / "fisher" / "test_monte_carlo.py"),
            str(TESTS / "neural" / "test_network.py"),
            # DP-SGD's noise streams and fused step (whole file, ~10 s
            # interpreted) and the per-instance Gaussian epsilon (~20 s)
            str(TESTS / "neural" / "test_noise.py"),
            str(TESTS.parent / "sklearn_fil" / "neural" / "_noise.py"),
            str(TESTS / "accounting" / "test_per_instance_gaussian.py"),
            # the squared leave-one-out rows and the report's column moments
            # (whole files, ~5 s and ~3 s interpreted)
            str(TESTS / "linear_model" / "test_leave_one_out.py"),
            str(TESTS / "test_report.py"),
            # DP-SGD's one-pass binary logistic steps and their FIL kernels
            # (whole file, ~10 s interpreted)
            str(TESTS / "neural" / "test_binary_steps.py"),
        ],
        cwd=TESTS.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout


def test_gaussian_newton_bisects_where_the_curve_underflows():
    # At mu = 2e-10 (8 mu0 for delta = 1e-11) the bracket's top eps = 1e-8
    # is 50 mu: both terms of delta(eps) underflow to 0. Compiled, log(0)
    # is -inf and the NaN step falls back to bisection; in plain Python
    # math.log(0) raises, so the kernel must skip the step itself.
    delta, mu, top = 1e-11, 2e-10, 1e-8
    assert accounting_kernels.delta_curve(top, mu) == (0.0, 0.0)
    args = (top, mu, delta, math.log(delta), 0.0, top, 0.0)
    newton = accounting_kernels.newton
    eps = getattr(newton, "py_func", newton)(*args)[0]  # this test's process
    assert eps == pytest.approx(newton(*args)[0], rel=1e-12)
    # the root to the conditioning of the curve (delta(eps) is the
    # difference of two numbers near Phi(-1.26)): dp-accounting's inversion
    ref = gaussian_epsilon(sigma=1.0, sensitivity=mu, delta=delta)
    assert eps == pytest.approx(ref, rel=1e-5)
