# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""The numba kernels' tests again, with the kernels run as plain Python.

Compiled, an out-of-bounds index reads garbage silently and integer overflow
wraps; interpreted (``NUMBA_DISABLE_JIT=1``), the same code raises. The
switch is read when numba is first imported, so the tests run in a fresh
interpreter.
"""

import os
import subprocess
import sys
from pathlib import Path

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
        ],
        cwd=TESTS.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout
