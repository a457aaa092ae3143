# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""The public surface: names resolve, CuPy is optional, the README runs."""

import re
import subprocess
import sys
from pathlib import Path

import sklearn_fil

ROOT = Path(__file__).resolve().parents[1]


def test_all_names_resolve():
    for name in sklearn_fil.__all__:
        assert getattr(sklearn_fil, name) is not None
    for module in (sklearn_fil.fisher, sklearn_fil.accounting, sklearn_fil.exceptions):
        for name in module.__all__:
            assert getattr(module, name) is not None
    assert re.match(r"\d+\.\d+", sklearn_fil.__version__)


def test_import_without_cupy_and_dp_accounting():
    # CuPy is an optional extra and dp-accounting is imported on first use:
    # importing the package must load neither.
    code = (
        "import sys; sys.modules['cupy'] = None; import sklearn_fil; "
        "assert 'dp_accounting' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_readme_quickstart_runs_as_written():
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    assert blocks, "README has no python quickstart"
    assert len(blocks[0].strip().splitlines()) <= 10
    subprocess.run([sys.executable, "-c", blocks[0]], check=True, cwd=ROOT)
