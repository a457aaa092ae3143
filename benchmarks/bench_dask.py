# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""The FIL report of data larger than memory, on a Dask LocalCluster.

Writes an ``n x d`` float64 ``.npy`` store (and its labels) to disk block by
block, never holding it in memory, then on a ``LocalCluster`` of worker
processes (one thread each, a memory limit each) reading the store by rows:

* fits the ridge regression at the store (one tree-reduced Gram),
* computes :func:`sklearn_fil.fisher.fisher_information_loss` of the Dask
  array (the tree-reduced sums, the dataset/attribute FIL, then the lazy
  per-example report) and writes the per-example report to disk as a Dask
  ``.npy`` stack, in one pass,

or, with ``--estimator``, fits ``OutputPerturbedLinearRegression`` on the
Dask array (fit, report, per-instance columns) and writes its lazy
``privacy_report_`` to Parquet with ``to_parquet``,

and records the wall time of each step (after a tiny fit and report on every
worker, so that imports and numba kernels are loaded), the peak RSS of every worker
(``getrusage`` high-water mark of the worker process) and the peak memory of
the whole cluster sampled by ``distributed.diagnostics.MemorySampler``. With
``--check`` (for data that fit in memory) it also compares the first block of
the report with the NumPy engine on the whole data.

Usage::

    python benchmarks/bench_dask.py [--n 30000000] [--d 100] [--rows 250000]
        [--workers 2] [--memory-limit 4GiB] [--dir /tmp/sklearn_fil_dask]
        [--check] [--estimator] [--keep] [--out benchmarks/results/dask.md]

The store (``8 n d`` bytes, 24 GB at the default size) and the report (about
as large) are deleted at the end unless ``--keep``.
"""

import argparse
import datetime
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import cpu_name

LAM = 1e-3
SIGMA = 1.0
SEED = 0


class NpyRows:
    """Rows of a ``.npy`` file for ``da.from_array``: pickles as its path.

    Each slice opens the file with ``np.load(mmap_mode="r")`` and copies the
    rows out, so a worker holds no mapping between tasks (mapped pages would
    count in its RSS and against its memory limit) and no array is ever
    shipped between processes.
    """

    def __init__(self, path):
        self.path = str(path)
        mm = np.load(self.path, mmap_mode="r")
        self.shape, self.dtype, self.ndim = mm.shape, mm.dtype, mm.ndim

    def __getitem__(self, key):
        mm = np.load(self.path, mmap_mode="r")
        out = np.array(mm[key])
        del mm
        return out


def write_store(directory, n, d, rows):
    """``X.npy`` (standard normal, four badly scaled columns) and ``y.npy``."""
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    scale = np.ones(d)
    scale[:4] = [1e-3, 1e-2, 1e2, 1e3]
    w_true = rng.normal(size=d) / scale
    y = np.lib.format.open_memmap(directory / "y.npy", "w+", np.float64, (n,))
    with open(directory / "X.npy", "wb") as f:
        header = {"descr": "<f8", "fortran_order": False, "shape": (n, d)}
        np.lib.format.write_array_header_2_0(f, header)
        for start in range(0, n, rows):
            stop = min(start + rows, n)
            block_rng = np.random.default_rng([SEED, start])
            X = block_rng.standard_normal((stop - start, d)) * scale
            y[start:stop] = X @ w_true + 0.5 * block_rng.standard_normal(stop - start)
            f.write(X.tobytes())
    y.flush()
    del y


def worker_peak_rss():
    """High-water mark of this process's RSS, in bytes (Linux: KiB units)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def fit_ridge(Xd, yd):
    """The ridge minimiser ``(coef, intercept)`` of the store: one Gram pass."""
    import dask.array as da

    from sklearn_fil._glm import fit_glm

    omega = da.ones(Xd.shape[0], chunks=(Xd.chunks[0],))
    w, _ = fit_glm(Xd, yd, omega, "squared", LAM, True, False, None, 1)
    d = Xd.shape[1]
    return w[:d], float(w[d])


def warm_up(n_workers):
    """A tiny fit and report on every worker: imports and numba kernels loaded."""
    import dask.array as da

    from sklearn_fil.fisher import fisher_information_loss
    from sklearn_fil.linear_model import OutputPerturbedLinearRegression

    rng = np.random.default_rng(SEED)
    X = da.from_array(rng.normal(size=(200 * n_workers, 3)), chunks=(100, -1))
    y = X @ np.ones(3)
    coef, intercept = fit_ridge(X, y)
    res = fisher_information_loss(X, y, coef, intercept, lam=LAM)
    res.fil.compute()
    OutputPerturbedLinearRegression(lam=LAM).fit(X, y).privacy_report_.compute()


def run(args, directory):
    import dask.array as da
    from distributed import Client, LocalCluster
    from distributed.diagnostics import MemorySampler

    cluster = LocalCluster(
        n_workers=args.workers,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        memory_limit=args.memory_limit,
        # one numba thread per worker: the workers already use every core
        env={"NUMBA_NUM_THREADS": "1"},
    )
    client = Client(cluster)
    sampler = MemorySampler()
    try:
        warm_up(args.workers)
        Xd = da.from_array(NpyRows(directory / "X.npy"), chunks=(args.rows, -1))
        yd = da.from_array(NpyRows(directory / "y.npy"), chunks=(args.rows,))
        with sampler.sample("run", interval=0.5):
            if args.estimator:
                times, res = run_estimator(Xd, yd, directory)
            else:
                times, res = run_engine(Xd, yd, directory)
        peaks = client.run(worker_peak_rss)
        frame = sampler.to_pandas()
        cluster_peak = float(frame.max().iloc[0])
        limit = next(iter(client.scheduler_info()["workers"].values()))["memory_limit"]
    finally:
        client.close()
        cluster.close()
    client_peak = worker_peak_rss()  # before the in-memory reference below
    check = None
    if args.check and not args.estimator:
        check = compare_with_numpy(directory, res.coef, res.intercept)
    reference = numpy_reference(
        directory, min(args.n, args.reference_rows), args.estimator
    )
    return {
        "times": times,
        "worker_peaks": sorted(peaks.values()),
        "cluster_peak": cluster_peak,
        "memory_limit": limit,
        "client_peak": client_peak,
        "dataset_fil": res.dataset_fil,
        "check": check,
        "reference": reference,
    }


def run_engine(Xd, yd, directory):
    """The ridge fit, then the engine's report written to a ``.npy`` stack."""
    import dask.array as da

    from sklearn_fil.fisher import fisher_information_loss

    times = {}
    t0 = time.perf_counter()
    coef, intercept = fit_ridge(Xd, yd)
    times["fit (one Gram pass)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = fisher_information_loss(
        Xd, yd, coef, intercept, loss="squared", lam=LAM, sigma=SIGMA
    )
    times["report: sums pass and totals"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    columns = [res.fil, res.dfil, res.mse_bound]
    table = da.concatenate([*(c[:, None] for c in columns), res.attribute_fil], axis=1)
    da.to_npy_stack(str(directory / "report"), table)
    times["report: per-example pass, written to disk"] = time.perf_counter() - t0
    res = Result(res.dataset_fil, coef, intercept)
    return times, res


def run_estimator(Xd, yd, directory):
    """The estimator's fit, then its lazy report written to Parquet."""
    from sklearn_fil.linear_model import OutputPerturbedLinearRegression

    times = {}
    t0 = time.perf_counter()
    est = OutputPerturbedLinearRegression(sigma=SIGMA, lam=LAM, random_state=0)
    est.fit(Xd, yd)
    times["fit: first pass, Gram, sums, totals, variances, refit gradient"] = (
        time.perf_counter() - t0
    )
    t0 = time.perf_counter()
    est.privacy_report_.to_parquet(directory / "report")
    times["privacy_report_ (per-example pass) written to Parquet"] = (
        time.perf_counter() - t0
    )
    return times, Result(est.dataset_fil_, None, None)


@dataclass
class Result:
    dataset_fil: float
    coef: np.ndarray | None
    intercept: float | None


def numpy_reference(directory, rows, estimator=False):
    """In-memory NumPy times on the first ``rows`` rows, on one thread (BLAS
    and numba) as each worker has: the best of two runs of one ``X.T @ X``,
    the ridge fit and the report of those rows.
    """
    import numba
    from threadpoolctl import threadpool_limits

    from sklearn_fil._glm import fit_glm
    from sklearn_fil.fisher import fisher_information_loss
    from sklearn_fil.linear_model import OutputPerturbedLinearRegression

    X = np.array(np.load(directory / "X.npy", mmap_mode="r")[:rows])
    y = np.array(np.load(directory / "y.npy", mmap_mode="r")[:rows])
    d = X.shape[1]
    fisher_information_loss(X[:100], y[:100], np.zeros(d), lam=1.0)  # compile
    times = {"rows": rows, "gram": np.inf, "fit": np.inf, "report": np.inf}
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        with threadpool_limits(1):
            for _ in range(2):
                t0 = time.perf_counter()
                X.T @ X
                t1 = time.perf_counter()
                if estimator:  # the whole fit in "report", none in "fit"
                    t2 = time.perf_counter()
                    OutputPerturbedLinearRegression(
                        sigma=SIGMA, lam=LAM, random_state=0
                    ).fit(X, y)
                else:
                    w, _ = fit_glm(
                        X, y, np.ones(rows), "squared", LAM, True, False, None, 1
                    )
                    t2 = time.perf_counter()
                    fisher_information_loss(
                        X, y, w[:d], w[d], loss="squared", lam=LAM, sigma=SIGMA
                    )
                t3 = time.perf_counter()
                for key, dt in (
                    ("gram", t1 - t0),
                    ("fit", t2 - t1),
                    ("report", t3 - t2),
                ):
                    times[key] = min(times[key], dt)
    finally:
        numba.set_num_threads(threads)
    return times


def compare_with_numpy(directory, coef, intercept):
    """Largest relative difference from the NumPy engine (store in memory)."""
    from sklearn_fil.fisher import fisher_information_loss

    X, y = np.load(directory / "X.npy"), np.load(directory / "y.npy")
    ref = fisher_information_loss(
        X, y, coef, intercept, loss="squared", lam=LAM, sigma=SIGMA
    )
    table = np.load(directory / "report" / "0.npy")
    rows = table.shape[0]
    got = {"fil": table[:, 0], "dfil": table[:, 1], "attribute_fil": table[:, 3:]}
    worst = max(
        float(np.max(np.abs(got[k] - getattr(ref, k)[:rows]) / getattr(ref, k)[:rows]))
        for k in got
    )
    return worst, rows


def git_head():
    """The checkout's commit, taken when the run starts."""
    return subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()


def markdown(args, result, write_s, elapsed, command):
    gib = 2.0**30
    git = result["git"]
    n, d = args.n, args.d
    store_gb = 8 * n * d / 1e9
    report_gb = 8 * n * (3 + d + 1) / 1e9
    mem_total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / gib
    lines = [
        "# The FIL report of data larger than memory, on Dask",
        "",
        f"- Date: {datetime.datetime.now(datetime.timezone.utc).isoformat()}",
        f"- Command: `{command}`",
        f"- sklearn-fil: git {git} (at the start of the run)",
        f"- CPU: {cpu_name()}, {os.cpu_count()} logical; memory {mem_total:.1f} GiB;"
        f" Python {platform.python_version()}, NumPy {np.__version__}",
        f"- Cluster: `LocalCluster(n_workers={args.workers}, threads_per_worker=1,"
        f" processes=True, memory_limit={args.memory_limit!r})`, NUMBA_NUM_THREADS=1"
        " in the workers; the machine was shared with other jobs, so times are"
        " indicative.",
        f"- Data: n = {n:,}, d = {d} float64 in one `.npy` file ({store_gb:.1f} GB on"
        " disk), read by rows through `np.load(mmap_mode='r')` wrapped for"
        f" `da.from_array` in blocks of {args.rows:,} rows"
        f" ({8 * args.rows * d / 2**20:.0f} MiB); standard normal features, four"
        " scaled by 1e-3, 1e-2, 1e2, 1e3; y linear plus N(0, 0.25) noise;"
        f" written block by block in {write_s:.0f} s.",
        f"- Model: ridge regression with an intercept, lam = {LAM}, sigma = {SIGMA};"
        f" every feature and the label private ({d + 1} attribute columns). "
        + (
            "`OutputPerturbedLinearRegression` fitted on the Dask array; its lazy"
            " `privacy_report_` (fil, dfil, mse_bound, one FIL per attribute,"
            " rel_mse_bound and the exact per-instance columns loo_sensitivity,"
            " epsilon, epsilon_replace_one) written with `to_parquet`."
            if args.estimator
            else f"The per-example report ({report_gb:.1f} GB: fil, dfil, mse_bound"
            " and one FIL per attribute) is written to a Dask `.npy` stack."
        ),
        "",
        "| step | wall s |",
        "|---|---:|",
    ]
    for step, seconds in result["times"].items():
        lines.append(f"| {step} | {seconds:.1f} |")
    lines.append(f"| total | {sum(result['times'].values()):.1f} |")
    peaks = ", ".join(f"{p / gib:.2f}" for p in result["worker_peaks"])
    lines += [
        "",
        f"- Peak RSS per worker (getrusage high-water mark): {peaks} GiB, each"
        f" under its memory limit of {result['memory_limit'] / gib:.1f} GiB.",
        "- Peak process memory of the whole cluster (MemorySampler, every 0.5 s):"
        f" {result['cluster_peak'] / gib:.2f} GiB; the client's peak RSS:"
        f" {result['client_peak'] / gib:.2f} GiB.",
        f"- Dataset FIL: {result['dataset_fil']:.6g}.",
    ]
    if result["check"] is not None:
        worst, rows = result["check"]
        lines.append(
            f"- Against the NumPy engine on the data in memory: largest relative"
            f" difference {worst:.1e} over the first {rows:,} rows of fil, dfil"
            " and attribute_fil."
        )
    ref = result["reference"]
    dask_s = sum(result["times"].values())
    scale = n / ref["rows"]
    in_memory = scale * (ref["fit"] + ref["report"])
    lines += [
        f"- NumPy in memory on the first {ref['rows']:,} rows, same run, on one"
        " thread (BLAS and numba) as each worker has, best of 2: one X.T @ X"
        f" {ref['gram']:.2f} s, "
        + (
            f"the estimator's fit (report included) {ref['report']:.2f} s."
            if args.estimator
            else f"ridge fit {ref['fit']:.2f} s, report {ref['report']:.2f} s."
        )
        + f" Scaled by n / {ref['rows']:,} = {scale:.0f}, fit"
        f" and report in memory on one thread would take {in_memory:.0f} s (had the"
        f" data fitted): the Dask run on {args.workers} workers took"
        f" {dask_s / in_memory:.2f} times that (1 / {args.workers} ="
        f" {1 / args.workers:.2f} would be perfect scaling with no cost for the"
        " disk and the scheduler).",
        "- Load average (1, 5, 15 min) at the start: "
        + ", ".join(f"{v:.1f}" for v in result["load"][0])
        + "; at the end: "
        + ", ".join(f"{v:.1f}" for v in result["load"][1])
        + f" (on {os.cpu_count()} cores: above that, other jobs took CPU time).",
        f"- Wall time of the whole run: {elapsed / 60:.1f} min.",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=float, default=3e7)
    parser.add_argument("--d", type=int, default=100)
    parser.add_argument("--rows", type=int, default=250_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="4GiB")
    parser.add_argument("--dir", default="/tmp/sklearn_fil_dask")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--estimator", action="store_true")
    parser.add_argument("--reference-rows", type=int, default=1_000_000)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--out", default="benchmarks/results/dask.md")
    args = parser.parse_args(argv)
    args.n = int(args.n)
    command = "python benchmarks/bench_dask.py " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    directory = Path(args.dir)
    if directory.exists():
        raise SystemExit(f"{directory} exists; remove it or pass another --dir.")
    started = time.perf_counter()
    try:
        t0 = time.perf_counter()
        load_start, git = os.getloadavg(), git_head()
        write_store(directory, args.n, args.d, args.rows)
        write_s = time.perf_counter() - t0
        print(f"store written in {write_s:.1f} s", flush=True)
        result = run(args, directory)
        result["load"] = (load_start, os.getloadavg())
        result["git"] = git
    finally:
        if not args.keep:
            shutil.rmtree(directory, ignore_errors=True)
    text = markdown(args, result, write_s, time.perf_counter() - started, command)
    print(text)
    Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
