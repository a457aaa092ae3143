# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""Every gallery example runs (matplotlib is an optional extra)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").rglob("plot_*.py"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(path):
    pytest.importorskip("matplotlib")
    env = {**os.environ, "MPLBACKEND": "Agg"}
    subprocess.run([sys.executable, str(path)], check=True, env=env, timeout=300)
