# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
# The markdown output uses typographic signs (multiplication) on purpose.
# ruff: noqa: RUF001
"""Throughput of the intrinsic-privacy audit: serial, joblib and Dask.

:class:`sklearn_fil.audit.IntrinsicPrivacyAudit` fits one model per (seed,
data set) and is the one workload of the package that outgrows a machine:
Hyland & Tople trained over 120,000 models. This script runs the same audit of
logistic SGD (scikit-learn's ``SGDClassifier``, constant step, 5 epochs) on
generated data with ``n_jobs=1``, with ``n_jobs=2`` (joblib's loky processes)
and on a ``dask.distributed.LocalCluster`` of two single-threaded worker
processes through ``joblib.parallel_config(backend="dask")``, checks that the
three give identical weights, and reports models fitted per second. The
cluster's start-up is timed apart from the audit.

Usage::

    python benchmarks/bench_audit.py [--n 30000] [--d 100] [--seeds 100]
        [--neighbours 20] [--out benchmarks/results/audit.md]
"""

import argparse
import datetime
import os
import platform
import sys
import time
from pathlib import Path

import joblib
import numpy as np
from _machine import cpu_name
from sklearn.datasets import make_classification
from sklearn.linear_model import SGDClassifier
from sklearn.preprocessing import normalize

import sklearn_fil
from sklearn_fil.audit import IntrinsicPrivacyAudit

HERE = Path(__file__).resolve().parent
EPOCHS = 5


def make_audit(seeds, neighbours, n_jobs):
    sgd = SGDClassifier(
        loss="log_loss",
        learning_rate="constant",
        eta0=0.5,
        penalty=None,
        max_iter=EPOCHS,
        tol=None,
    )
    return IntrinsicPrivacyAudit(
        sgd, n_seeds=seeds, n_neighbours=neighbours, n_jobs=n_jobs, random_state=0
    )


def timed_fit(audit, X, y):
    start = time.perf_counter()
    audit.fit(X, y)
    return time.perf_counter() - start


def run(n, d, seeds, neighbours):
    X, y = make_classification(
        n_samples=n, n_features=d, n_informative=d // 5, random_state=0
    )
    X = normalize(X)
    rows, reference = [], None
    for label, n_jobs in [("serial (n_jobs=1)", 1), ("joblib loky (n_jobs=2)", 2)]:
        audit = make_audit(seeds, neighbours, n_jobs)
        seconds = timed_fit(audit, X, y)
        rows.append((label, audit.n_models_, seconds, None))
        print(f"{label}: {audit.n_models_} models in {seconds:.1f} s", flush=True)
        reference = audit if reference is None else reference
        assert np.array_equal(audit.weights_, reference.weights_)

    from dask.distributed import Client, LocalCluster

    start = time.perf_counter()
    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
        ) as cluster,
        Client(cluster),
    ):
        startup = time.perf_counter() - start
        with joblib.parallel_config(backend="dask"):
            audit = make_audit(seeds, neighbours, -1)
            seconds = timed_fit(audit, X, y)
    assert np.array_equal(audit.weights_, reference.weights_)
    label = "Dask LocalCluster (2 workers)"
    rows.append((label, audit.n_models_, seconds, startup))
    print(f"{label}: {audit.n_models_} models in {seconds:.1f} s", flush=True)
    return rows, reference


def write_markdown(path, args, rows, audit, elapsed):
    serial = rows[0][2]
    lines = [
        "# Intrinsic-privacy audit: models per second on 2 cores",
        "",
        f"- Date: {datetime.datetime.now(datetime.UTC).isoformat(timespec='seconds')}",
        f"- Command: `python benchmarks/bench_audit.py --n {args.n} --d {args.d} "
        f"--seeds {args.seeds} --neighbours {args.neighbours}`",
        f"- sklearn-fil {sklearn_fil.__version__}, Python {platform.python_version()},"
        f" NumPy {np.__version__}, joblib {joblib.__version__}; CPU: {cpu_name()}, "
        f"{os.cpu_count()} logical",
        f"- Load average at the end: {', '.join(f'{v:.1f}' for v in os.getloadavg())}",
        f"- Wall time of the run: {elapsed / 60:.1f} min",
        f"- Problem: {args.n} × {args.d} generated rows on the unit sphere; "
        f"`SGDClassifier(loss='log_loss', learning_rate='constant', eta0=0.5, "
        f"penalty=None, max_iter={EPOCHS}, tol=None)`; {args.seeds} seeds × "
        f"({args.neighbours} + 1) data sets plus {args.seeds} models with the "
        "other initialisation. The three runs give identical weights.",
        "",
        "| backend | models | audit, s | models / s | speed-up | cluster start, s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, models, seconds, startup in rows:
        start = "" if startup is None else f"{startup:.1f}"
        lines.append(
            f"| {label} | {models} | {seconds:.1f} | {models / seconds:.1f} | "
            f"{serial / seconds:.2f} × | {start} |"
        )
    report = audit.audit_report_["value"]
    lines += [
        "",
        f"Audit: empirical sensitivity {report['sensitivity']:.4f}, bound "
        f"{report['sensitivity_bound']:.3f}, variability {report['variability']:.4f}, "
        f"intrinsic epsilon {report['intrinsic_epsilon']:.1f} (bound) / "
        f"{report['empirical_intrinsic_epsilon']:.2f} (empirical) at delta "
        f"{report['delta']:.2g}.",
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=30000)
    parser.add_argument("--d", type=int, default=100)
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--neighbours", type=int, default=20)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "audit.md")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    rows, audit = run(args.n, args.d, args.seeds, args.neighbours)
    write_markdown(args.out, args, rows, audit, time.perf_counter() - started)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
