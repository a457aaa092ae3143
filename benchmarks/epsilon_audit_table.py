# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""The epsilon-audit table: claimed epsilon against the empirical lower bounds.

Runs :class:`sklearn_fil.audit.EpsilonAudit` on exactly the configurations
and seeds that ``tests/audit/test_epsilon.py`` audits (it imports them from
there, so the table and the tests cannot drift apart), and the power checks'
broken mechanisms, and writes one row per configuration: the claim, the
Clopper-Pearson bound (valid for any mechanism), the Gaussian-DP bound (a
bound where the trade-off curve is Gaussian), the f-DP bound (a bound where
it is the claimed mechanism's at some sensitivity), the one-run bound (filled from
``OneRunAudit`` where there is one, else "—"), their ratios to the claim,
the power (the smallest multiple of the claim the audit refutes, see
:func:`sklearn_fil.audit.detectable_multiple`) and the time each audit took.

``--releases N`` audits every row at N releases per data set (the issue's
table is at 10,000; by default each row runs its test's number). ``--only
TEXT`` runs the rows whose name contains TEXT and replaces those rows of the
existing table (the rest kept, new ones appended), so that a long table can
be built one configuration at a time. ``--n-jobs`` fits the releases in
parallel (joblib; each worker's numba kernels on one thread).

Usage::

    python benchmarks/epsilon_audit_table.py [--releases 10000] [--n-jobs 2]
    python benchmarks/epsilon_audit_table.py --releases 10000 --only glm_onehot
"""

import argparse
import datetime
import math
import os
import platform
import sys
import tempfile
import time
import types
import warnings
from pathlib import Path

import joblib
import numba
from _machine import cpu_name

import sklearn_fil
from sklearn_fil.audit import EpsilonAudit
from sklearn_fil.exceptions import PrivacyLeakWarning

HERE = Path(__file__).resolve().parent
# The repository's tests/ has no __init__.py: register it as the package
# "tests", which an installed distribution's own "tests" would otherwise shadow.
_tests = types.ModuleType("tests")
_tests.__path__ = [str(HERE.parent / "tests")]
sys.modules["tests"] = _tests
from tests.audit import test_epsilon as suite  # noqa: E402
from tests.audit import test_epsilon_multinomial as multinomial  # noqa: E402

TITLE = "# Epsilon audit: claimed epsilon against the empirical lower bounds"
HEADER = [
    "| configuration | claimed ε | δ | CP bound | GDP bound | f-DP bound "
    "| one-run bound | CP / claim | GDP / claim | f-DP / claim "
    "| power (x claim) | releases | consistent | time, s |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|",
]


def _power_mechanisms():
    """The broken mechanisms of the power tests, with their releases."""
    return {
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
        "power: ridge, half the noise": (
            suite._half_noise_linear(),
            suite.N_RELEASES_POWER_LINEAR,
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


def rows(n_releases=None, only=""):
    """``(name, audit, seconds)`` of every row whose name contains ``only``."""
    data = suite.data.__wrapped__()
    for name in suite.CONFIGURATIONS:
        if only in name:
            t0 = time.perf_counter()
            audit = suite._audit(name, data, n_releases=n_releases)
            yield name, audit, time.perf_counter() - t0
    for i, (name, estimator) in enumerate(multinomial.CONFIGURATIONS.items()):
        if only in name:  # test_epsilon_multinomial's table-only configurations
            t0 = time.perf_counter()
            audit = EpsilonAudit(
                estimator,
                n_releases=n_releases or suite.N_RELEASES,
                random_state=len(suite.CONFIGURATIONS) + i,
            ).fit(*multinomial.glm_data())
            yield name, audit, time.perf_counter() - t0
    for name, (estimator, default) in _power_mechanisms().items():
        if only in name:
            audit = EpsilonAudit(
                estimator, n_releases=n_releases or default, random_state=0
            )
            t0 = time.perf_counter()
            with suite._clipped_regression(), warnings.catch_warnings():
                warnings.simplefilter("ignore", PrivacyLeakWarning)
                audit.fit(*data)
            yield name, audit, time.perf_counter() - t0


def _number(x, digits=3):
    return (
        "—"
        if x is None or (isinstance(x, float) and math.isnan(x))
        else (f"{x:.{digits}f}")
    )


def _line(name, audit, seconds):
    claim = audit.epsilon_claimed_
    one_run = getattr(audit, "epsilon_lower_one_run_", None)
    gdp, fdp = audit.epsilon_lower_gdp_, audit.epsilon_lower_fdp_
    return (
        f"| {name} | {claim:.3f} | {audit.delta_:g} | "
        f"{audit.epsilon_lower_:.3f} | {_number(gdp)} | {_number(fdp)} | "
        f"{_number(one_run)} | "
        f"{audit.epsilon_lower_ / claim:.2f} | {_number(gdp / claim, 2)} | "
        f"{_number(fdp / claim, 2)} | "
        f"{_number(audit.power_multiple_, 2)} | {audit.n_releases} | "
        f"{audit.consistent_} | {seconds:.1f} |"
    )


def _merged(old_lines, new_lines):
    """``old_lines`` (a table among text) with the rows of the same names
    replaced by ``new_lines``, new ones appended to the table."""
    name = lambda line: line.split("|")[1].strip()  # noqa: E731
    new = {name(line): line for line in new_lines}
    out = [
        new.pop(name(x), x) if x.startswith("| ") and x not in HEADER else x
        for x in old_lines
    ]
    last = max(i for i, x in enumerate(out) if x.startswith("|"))
    return [*out[: last + 1], *new.values(), *out[last + 1 :]]


def _stamp(command, n_jobs):
    return (
        f"{datetime.date.today()}, sklearn-fil {sklearn_fil.__version__}, "
        f"Python {platform.python_version()}, {cpu_name()}. `{command}`. "
        "The configurations, data and seeds of `tests/audit/test_epsilon.py` "
        "(the logistic GLMs, binary and multinomial: 1,000 rows with a column "
        "only the canary uses; "
        "DP-SGD: 20 rows, d = 2, times 10, and a column only the canary uses; "
        f"the others: 20 rows, d = 2); 95 % confidence; n_jobs={n_jobs}. "
        "CP: Clopper-Pearson "
        "at one threshold, valid for any mechanism. GDP: the Gaussian-DP bound "
        "(Nasr et al. 2023), a bound where the trade-off curve is Gaussian "
        "(exact for output perturbation, an assumption for DP-SGD). f-DP: the "
        "claimed mechanism's own trade-off curve at a lower-bounded multiple "
        "of its sensitivity, at the GDP bound's threshold (`fdp_epsilon`: for "
        "Poisson-sampled DP-SGD a mixture; equal to GDP for Gaussian "
        "mechanisms; a bound where the curve is in that family). One-run: "
        "Steinke, Nasr & Jagielski (2023), — where not run (these small data "
        "sets at delta 0.04 make the theorem's 2 m delta term exceed 1: see "
        "`one_run.md` for one run against this audit on the same claims). "
        "Power: the "
        "smallest multiple of the claim that the CP bound refutes with "
        "probability 1/2 at these releases (a Gaussian mechanism, a perfect "
        "canary and test)."
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(HERE / "results" / "epsilon_audit.md"))
    parser.add_argument(
        "--releases",
        type=int,
        metavar="N",
        help="releases per data set for every row (default: each test's)",
    )
    parser.add_argument(
        "--only",
        default="",
        metavar="TEXT",
        help="only the rows whose name contains TEXT, replacing those rows",
    )
    parser.add_argument("--n-jobs", type=int, default=1, help="joblib workers")
    args = parser.parse_args()
    numba.set_num_threads(1)  # thousands of tiny fits: no parallel kernels
    # for joblib's workers, started later: one numba thread each, and a
    # package "tests" first on their path that is the repository's tests/,
    # from which they unpickle the tests' mechanisms
    os.environ["NUMBA_NUM_THREADS"] = "1"
    command = "python benchmarks/epsilon_audit_table.py" + "".join(
        f" --{k} {v}"
        for k, v in (("releases", args.releases), ("n-jobs", args.n_jobs))
        if v not in (None, 1)
    )
    table = []
    with (
        tempfile.TemporaryDirectory(prefix="epsilon_audit_table_") as shim,
        joblib.parallel_config(n_jobs=args.n_jobs),
    ):
        (Path(shim) / "tests").mkdir()
        (Path(shim) / "tests" / "__init__.py").write_text(
            f"__path__ = [{_tests.__path__[0]!r}]\n"
        )
        sys.path.insert(0, shim)  # the workers start with this process's path
        for row in rows(args.releases, args.only):
            table.append(_line(*row))
            print(table[-1], flush=True)
    out = Path(args.out)
    old = out.read_text().splitlines() if out.exists() else []
    if args.only and HEADER[0] in old:  # a table of these columns: merge
        note = f"Rows matching {args.only!r} rerun on {datetime.date.today()}: "
        lines = [
            *_merged(old, table),
            "",
            note + f"`{command} --only '{args.only}'`.",
        ]
    else:
        lines = [TITLE, "", _stamp(command, args.n_jobs), "", *HEADER, *table]
    out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
