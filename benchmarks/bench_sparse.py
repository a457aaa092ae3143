# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""Memory and time of a fit on sparse (CSR) X against the same X dense.

The data have a OneHotEncoder's layout: two numeric columns and categorical
columns one-hot encoded (five stored values per row). The same matrix is
fitted by ``OutputPerturbedLogisticRegression(onehot_groups="auto",
data_norm=...)`` once as CSR and once as a dense array, each in a fresh
subprocess, which reports

* the fit time,
* the ``tracemalloc`` peak of the fit (NumPy and scipy allocations are
  traced; X itself exists before tracing starts),
* the extra RSS of the fit (the high-water mark minus the RSS once X exists),
* the size of X in that format.

The estimator is fitted once on 500 rows first, so that loading the compiled
kernels is not measured.

Usage::

    python benchmarks/bench_sparse.py [--n 50000] [--levels 100,100,98]
"""

import argparse
import json
import resource
import subprocess
import sys


def _child(fmt, n, levels):
    import time
    import tracemalloc
    import warnings

    import numpy as np
    from scipy import sparse
    from scipy.special import expit

    from sklearn_fil import OutputPerturbedLogisticRegression

    rng = np.random.default_rng(0)
    k = 2 + len(levels)
    offsets = np.cumsum([2, *levels])[:-1]
    codes = [o + rng.integers(0, m, n) for o, m in zip(offsets, levels, strict=True)]
    indices = np.column_stack([np.zeros(n, int), np.ones(n, int), *codes]).ravel()
    numeric = [0.3 * rng.normal(size=n) for _ in range(2)]
    data = np.column_stack([*numeric, *[np.ones(n)] * len(levels)]).ravel()
    X = sparse.csr_array(
        (data, indices, np.arange(0, n * k + 1, k)), shape=(n, 2 + sum(levels))
    )
    y = (rng.uniform(size=n) < expit(X @ rng.normal(size=X.shape[1]))).astype(int)
    if fmt == "dense":
        X = X.toarray()
        x_bytes = X.nbytes
    else:
        x_bytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    est = OutputPerturbedLogisticRegression(
        lam=0.01, data_norm=2.5, penalize_intercept=True, onehot_groups="auto"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X[:500], y[:500])
    with open("/proc/self/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))
    tracemalloc.start()
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    hwm = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {
                "format": fmt,
                "n": n,
                "d": X.shape[1],
                "x_mb": x_bytes / 1e6,
                "fit_s": seconds,
                "traced_peak_mb": peak / 1e6,
                "extra_rss_mb": (hwm - rss) / 1e3,
                "fil_sum": float(est.privacy_report_["fil"].sum()),
            }
        )
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--levels", default="100,100,98")
    parser.add_argument("--child", default=None)
    args = parser.parse_args()
    levels = tuple(int(v) for v in args.levels.split(","))
    if args.child:
        _child(args.child, args.n, levels)
        return
    rows = []
    for fmt in ("sparse", "dense"):
        command = [sys.executable, __file__, "--n", str(args.n)]
        command += ["--levels", args.levels, "--child", fmt]
        out = subprocess.run(
            command,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
        print(rows[-1], flush=True)
    sparse_row, dense_row = rows
    rel = abs(sparse_row["fil_sum"] / dense_row["fil_sum"] - 1)
    print(f"relative difference of sum(fil), sparse vs dense: {rel:.2e}")


if __name__ == "__main__":
    main()
