# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""Does each thread policy of ``sklearn_fil._threads`` pay for itself?

Every policy there must be defended by this benchmark on an idle machine by
at least 10 % on the work it targets, or be removed. Each workload is timed
with the policy on and off, alternating (best of ``--repeats``):

* ``small_work`` (BLAS and numba on one thread for small data): off sets the
  policy's thresholds ``SMALL_WORK`` and ``SMALL_KERNEL_WORK`` to 0, so that
  every pass runs on all threads;
* ``row_parallel`` (a pass's fixed row segments shared over Python threads,
  BLAS and numba on one thread in each): off runs the same segments in turn,
  under ``threadpoolctl.threadpool_limits(1)`` and ``numba.set_num_threads(1)``.
  The sums are the same either way (the segments are fixed);
* the block sizes (``_GRAM_BLOCK_BYTES`` of a weighted Gram's scaled rows,
  ``CACHE_BYTES`` of a GEMM output block a kernel reads back): off makes
  each block a whole segment of ``row_parallel``. The last bits of the sums
  change with the blocks: the sizes are fixed constants, not tuned per
  machine.

Run it on an idle machine: the point is a policy's worth on users' machines,
not under a shared CI load.

Usage::

    python benchmarks/bench_threads.py [--repeats 5] [--out FILE.md]
"""

import argparse
import contextlib
import datetime
import os
import platform
import sys
import time

import numba
import numpy as np
from threadpoolctl import threadpool_limits

import sklearn_fil
from sklearn_fil import (
    OutputPerturbedLinearRegression,
    OutputPerturbedLogisticRegression,
    _threads,
)

sys.path.insert(0, os.path.dirname(__file__))
from _machine import cpu_name


@contextlib.contextmanager
def small_work_off():
    saved = _threads.SMALL_WORK, _threads.SMALL_KERNEL_WORK
    _threads.SMALL_WORK = _threads.SMALL_KERNEL_WORK = 0
    try:
        yield
    finally:
        _threads.SMALL_WORK, _threads.SMALL_KERNEL_WORK = saved


@contextlib.contextmanager
def row_parallel_off():
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        with threadpool_limits(1):
            yield
    finally:
        numba.set_num_threads(threads)


@contextlib.contextmanager
def blocks_off():
    saved = _threads._GRAM_BLOCK_BYTES, _threads.CACHE_BYTES
    _threads._GRAM_BLOCK_BYTES = _threads.CACHE_BYTES = 2**62
    try:
        yield
    finally:
        _threads._GRAM_BLOCK_BYTES, _threads.CACHE_BYTES = saved


def _data(n, p, classify, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p)) / np.sqrt(p)
    w = rng.standard_normal(p)
    if classify:
        return X, (X @ w > 0).astype(int)
    return X, X @ w + 0.1 * rng.standard_normal(n)


def _fits(model, n, p, times=1):
    classify = model is OutputPerturbedLogisticRegression
    X, y = _data(n, p, classify)
    params = {"random_state": 0} if classify else {"lam": 0.01, "random_state": 0}

    def run():
        for _ in range(times):
            model(**params).fit(X, y)

    name = "logistic" if classify else "linear"
    label = f"{times} {name} fits" if times > 1 else f"{name} fit"
    return f"{label}, n = {n:.0e}, p = {p}", run


CASES = {
    "small_work": (
        small_work_off,
        [
            _fits(OutputPerturbedLogisticRegression, 500, 20, times=20),
            _fits(OutputPerturbedLogisticRegression, 10_000, 100),
            _fits(OutputPerturbedLinearRegression, 30_000, 100),
            _fits(OutputPerturbedLogisticRegression, 100_000, 20),
        ],
    ),
    "row_parallel": (
        row_parallel_off,
        [
            _fits(OutputPerturbedLogisticRegression, 1_000_000, 100),
            _fits(OutputPerturbedLinearRegression, 300_000, 100),
        ],
    ),
    "blocks": (
        blocks_off,
        [
            _fits(OutputPerturbedLogisticRegression, 300_000, 100),
            _fits(OutputPerturbedLinearRegression, 300_000, 500),
        ],
    ),
}


# Policies this benchmark removed, with what it measured before they went.
REMOVED = """\
## Removed

`neural/_threads.StepThreads` (DP-SGD's own thread pool: each GEMM split by
rows over Python threads with BLAS on one thread, the next step's noise drawn
in the background, reused scratch arrays), measured with this script's
predecessor at commit e53ee38 on the same idle 2-core machine (2026-11-28,
load from this script only), 60000 x 784 or 20000 x 784 standard normal data,
best of 3-5 alternating runs, on against off (the `threads=None` path, BLAS
on its own threads). The fitted weights and per-example epsilons were
bitwise equal.

| workload | on s | off s | off / on |
|---|---:|---:|---:|
| MLP 784-256, n = 2e4, 1 epoch, defaults, fil_coordinates=16 | 2.772 | 2.961 | 1.07 |
| MLP 784-256, n = 6e3, 1 epoch, defaults | 27.47 | 28.95 | 1.05 |
| logistic, n = 6e4, 2 epochs, defaults | 2.456 | 2.450 | 1.00 |
| logistic, n = 6e4, 2 epochs, no accounting | 0.393 | 0.416 | 1.06 |
| MLP 784-256, n = 2e4, 1 epoch, no accounting | 1.060 | 1.241 | 1.17 |

Only the last, which users do not run by default, gained 10 %.
"""


def _best(run, off, repeats):
    times = {True: [], False: []}
    for r in range(repeats):
        for on in (True, False) if r % 2 == 0 else (False, True):
            with contextlib.nullcontext() if on else off():
                start = time.perf_counter()
                run()
                times[on].append(time.perf_counter() - start)
    return min(times[True]), min(times[False])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default="benchmarks/results/threads.md")
    args = parser.parse_args(argv)
    load_start = os.getloadavg()
    started = time.perf_counter()
    rows = []
    for policy, (off, cases) in CASES.items():
        for label, run in cases:
            run()  # compile or load the kernels, warm the caches
            on_s, off_s = _best(run, off, args.repeats)
            rows.append((policy, label, on_s, off_s))
            print(
                f"{policy:13s} {label:34s} on {on_s:8.3f} s  off {off_s:8.3f} s  "
                f"off/on {off_s / on_s:5.2f}",
                flush=True,
            )
    load_end = os.getloadavg()
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    command = " ".join(["python benchmarks/bench_threads.py", *(argv or sys.argv[1:])])
    lines = [
        "# Thread policies: on against off",
        "",
        f"- Date: {now}",
        f"- Command: `{command}`",
        f"- sklearn-fil {sklearn_fil.__version__}, Python {platform.python_version()}, "
        f"NumPy {np.__version__}, numba {numba.__version__}; CPU: {cpu_name()}, "
        f"{os.cpu_count()} logical",
        f"- Load average at the start: {', '.join(f'{x:.1f}' for x in load_start)}; "
        f"at the end: {', '.join(f'{x:.1f}' for x in load_end)} (this script's own "
        "threads count in it: the machine ran nothing else)",
        f"- Wall time: {(time.perf_counter() - started) / 60:.1f} min; best of "
        f"{args.repeats} alternating runs each",
        "",
        "| policy | workload | on s | off s | off / on |",
        "|---|---|---:|---:|---:|",
        *(f"| {p} | {w} | {a:.3f} | {b:.3f} | {b / a:.2f} |" for p, w, a, b in rows),
        "",
        REMOVED,
    ]
    with open(args.out, "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
