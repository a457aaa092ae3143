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


def test_ci_runs_the_readme_test_command_then_the_browser_test():
    readme = (ROOT / "README.md").read_text()
    setup = readme.split("## Set up and run")[1].split("\n## ")[0]
    commands = re.findall(r"```bash\n(.*?)\n```", setup, flags=re.S)
    assert len(commands) == 2, commands
    test_command = commands[1]
    # no -m of its own: pyproject.toml's addopts deselects the browser test
    assert "-m" not in test_command.rpartition("pytest")[2].split()
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    browser = "python -m pytest -m browser -q tests/test_docs_math.py"
    assert test_command in ci and browser in ci
    assert ci.index(test_command) < ci.index(browser)
