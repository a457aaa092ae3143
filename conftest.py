"""Suite-wide settings: array-API checks on, and no silent skips.

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
