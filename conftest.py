"""Suite-wide settings: array-API checks on, no silent skips, and seeds.

Statistical tests take the ``global_random_seed`` fixture, as scikit-learn's
do: one seed (42) by default; ``SKLEARN_FIL_TESTS_GLOBAL_RANDOM_SEED=all``
runs them for every seed in 0..99, and ``=3`` or ``=10-20`` for the seeds
given, so that a test that passes for one lucky seed is found out.

The test command of README.md (and so ``.ci/run``) installs everything the
suite needs, so a skipped test means a test CI never runs. The run fails when
a test skips for any reason other than those in ``ALLOWED_SKIPS``: tests that
need a CUDA GPU with CuPy, which CI never has. Set ``SKLEARN_FIL_ALLOW_SKIPS=1``
to run a partial environment locally.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import os
import re

import pytest

# scikit-learn's estimator checks include array-API input only when SciPy's
# array-API support is on; it must be set before SciPy is first imported.
os.environ.setdefault("SCIPY_ARRAY_API", "1")

ALLOWED_SKIPS = (
    re.compile(r"could not import 'cupy'"),
    re.compile(r"CuPy found no GPU"),
)

_skips = []
_SEED_VARIABLE = "SKLEARN_FIL_TESTS_GLOBAL_RANDOM_SEED"


def _global_seeds():
    value = os.environ.get(_SEED_VARIABLE, "42").strip()
    if value == "all":
        return list(range(100))
    low, _, high = value.partition("-")
    try:
        return list(range(int(low), int(high or low) + 1))
    except ValueError:
        raise ValueError(
            f"{_SEED_VARIABLE} must be 'all', an integer or a range 'a-b'; "
            f"got {value!r}."
        ) from None


def pytest_generate_tests(metafunc):
    if "global_random_seed" in metafunc.fixturenames:
        metafunc.parametrize("global_random_seed", _global_seeds())


def _reason(report):
    longrepr = report.longrepr
    return longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)


def pytest_runtest_logreport(report):
    if report.skipped and not hasattr(report, "wasxfail"):
        _skips.append((report.nodeid, _reason(report)))


def pytest_sessionfinish(session, exitstatus):
    if hasattr(session.config, "workerinput"):  # xdist: the controller decides
        return
    if os.environ.get("SKLEARN_FIL_ALLOW_SKIPS") == "1":
        return
    unexpected = [
        (nodeid, reason)
        for nodeid, reason in _skips
        if not any(p.search(reason) for p in ALLOWED_SKIPS)
    ]
    if not unexpected:
        return
    lines = "\n".join(f"  {nodeid}: {reason}" for nodeid, reason in unexpected)
    session.config.get_terminal_writer().line(
        f"\n{len(unexpected)} test(s) skipped for a reason other than a missing "
        f"GPU (the test extra should install what they need):\n{lines}",
        red=True,
    )
    if exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
