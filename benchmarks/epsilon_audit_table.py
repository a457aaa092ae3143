# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""The epsilon-audit table: claimed epsilon against the empirical lower bound.

Runs :class:`sklearn_fil.audit.EpsilonAudit` on exactly the configurations
and seeds that ``tests/audit/test_epsilon.py`` audits (it imports them from
there, so the table and the tests cannot drift apart) and writes one row per
configuration, with the time each audit took.

Usage::

    python benchmarks/epsilon_audit_table.py [--out benchmarks/results/epsilon_audit.md]
"""

import argparse
import datetime
import platform
import sys
import time
import warnings
from pathlib import Path

import numba
from _machine import cpu_name

import sklearn_fil
from sklearn_fil.audit import EpsilonAudit
from sklearn_fil.exceptions import PrivacyLeakWarning

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "audit"))
import test_epsilon as suite  # noqa: E402


def rows():
    data = suite.data.__wrapped__()
    for name in suite.CONFIGURATIONS:
        t0 = time.perf_counter()
        audit = suite._audit(name, data)
        yield name, audit, time.perf_counter() - t0
    power = {
        "power: Gaussian mean, half the noise": (
            suite.HalfNoiseMean(sigma=0.1, data_norm=1.0),
            2000,
        ),
        "power: logistic, a quarter of the noise": (
            suite.QuarterNoiseLogisticRegression(
                sigma=0.1,
                lam=1.0,
                fit_intercept=False,
                data_norm=1.0,
                delta=suite.DELTA,
            ),
            1000,
        ),
        "power: DP-SGD shuffle, old accounting (C, not 2C), delta 0.05": (
            suite.OldReplaceOneAccountingDPSGD(
                noise_multiplier=1.0,
                max_grad_norm=0.5,
                clipping="hard",
                sampling="shuffle",
                batch_size=suite.N_SAMPLES,
                max_iter=1,
                delta=0.05,
                per_instance_accounting=False,
                fil_accounting=False,
            ),
            2000,
        ),
    }
    for name, (estimator, n_releases) in power.items():
        t0 = time.perf_counter()
        audit = EpsilonAudit(estimator, n_releases=n_releases, random_state=0)
        audit.fit(*data)
        yield name, audit, time.perf_counter() - t0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(HERE / "results" / "epsilon_audit.md"))
    args = parser.parse_args()
    numba.set_num_threads(1)  # thousands of tiny fits: no parallel kernels
    lines = [
        "# Epsilon audit: claimed epsilon against the empirical lower bound",
        "",
        f"{datetime.date.today()}, sklearn-fil {sklearn_fil.__version__}, "
        f"Python {platform.python_version()}, {cpu_name()}. "
        "`python benchmarks/epsilon_audit_table.py`. n = 20 rows, d = 2; "
        "95 % confidence; the configurations and seeds of "
        "`tests/audit/test_epsilon.py`.",
        "",
        "| configuration | claimed ε | δ | lower bound | estimate | releases "
        "| consistent | time, s |",
        "|---|---:|---:|---:|---:|---:|---|---:|",
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        for name, audit, seconds in rows():
            line = (
                f"| {name} | {audit.epsilon_claimed_:.3f} | {audit.delta_:g} | "
                f"{audit.epsilon_lower_:.3f} | {audit.epsilon_estimate_:.3f} | "
                f"{audit.n_releases} | {audit.consistent_} | {seconds:.1f} |"
            )
            print(line, flush=True)
            lines.append(line)
    Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
