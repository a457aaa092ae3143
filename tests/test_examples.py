# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""Every gallery example runs, so that none of them goes stale.

Each example runs as a script in its own process, as sphinx-gallery runs it,
with the non-interactive Agg backend and ``SKLEARN_FIL_EXAMPLE_QUICK=1``: the
examples that are slow at full size read that variable and shrink their
problems. The documentation build (``doc/``) runs them at full size.

The suite runs one test per core (``pytest -n``), so each example gets one BLAS
thread: OpenBLAS threads on oversubscribed cores spin and stall (a 784 x 784
``eigh`` went from 0.1 s to over 6 s on the 2-core CI machine).
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES_DIR = Path(__file__).resolve().parents[1] / "examples"
EXAMPLES = sorted(EXAMPLES_DIR.rglob("plot_*.py"))


def test_examples_found():
    assert EXAMPLES, f"no plot_*.py example under {EXAMPLES_DIR}"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(path):
    pytest.importorskip("matplotlib")
    env = {
        **os.environ,
        "MPLBACKEND": "Agg",
        "SKLEARN_FIL_EXAMPLE_QUICK": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    result = subprocess.run(
        [sys.executable, str(path)],
        cwd=path.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, (
        f"{path.name} failed with exit code {result.returncode}:\n"
        f"{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
    )
