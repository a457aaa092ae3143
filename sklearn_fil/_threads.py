"""Thread and block policy of the passes over the rows, in one place.

Small work runs on one thread (:func:`small_work`); large passes share fixed
segments of rows over Python threads, BLAS and numba on one thread in each
(:func:`row_parallel`); blocks of rows are sized to stay in a core's cache.
Each policy is kept while it wins by at least 10 % on an idle machine: see
``benchmarks/results/threads.md`` (``benchmarks/bench_threads.py`` measures it).

numba is imported inside the functions that need it, as the kernels' modules
are everywhere in the package: ``import sklearn_fil`` leaves it out (about
0.35 s), the first kernel loads it (``tests/test_startup.py``).
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import contextlib
import functools
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from sklearn.utils import gen_batches
from threadpoolctl import ThreadpoolController

# Multiply-adds ``rows * p**2`` of a pass (a Gram of ``rows x p`` data, or the
# algebra of a ``p x p`` matrix) up to which BLAS runs on one thread: a second
# thread gains little on thin products and would wait on pools left spinning.
SMALL_WORK = 5e8
# Entries ``rows * p`` of the data up to which numba runs on one thread too:
# the kernels cost O(p) a row, so a small Gram is not a small kernel pass.
SMALL_KERNEL_WORK = 5e6
# Bytes of the rows of a weighted Gram scaled at a time by one thread, into a
# reused buffer that stays in its L2 cache between the scaling and the
# product; never fewer than _GRAM_MIN_ROWS rows, below which BLAS's SYRK slows
# on wide data.
_GRAM_BLOCK_BYTES = 2**19
_GRAM_MIN_ROWS = 512
# Bytes of a block of a GEMM's output that a kernel reads while it is still in
# the core's cache (the FIL's per-example pass, the leave-one-out closed form).
CACHE_BYTES = 2 * 2**20
# Rows of a segment of a row-parallel pass (see row_parallel).
_SEGMENT_ROWS = 2**15


@functools.cache
def _blas_pools():
    """The BLAS libraries loaded when first asked (NumPy's and SciPy's by then)."""
    return ThreadpoolController().select(user_api="blas")


def blas_threads():
    """The most threads a loaded BLAS runs on now (1 without one)."""
    return max((lib.num_threads for lib in _blas_pools().lib_controllers), default=1)


def pass_threads():
    """Threads of a pass over the rows: the most BLAS or numba may run on now.

    Both count: under a BLAS limit alone (``threadpool_limits(1)``) the
    numba kernels still take every core. :func:`small_work` limits both.
    """
    import numba

    return max(blas_threads(), numba.get_num_threads())


# The one-BLAS-thread contexts open in any thread of the process, and the
# limiter that restores the limits when the last one closes (threadpoolctl's
# limits are process-wide).
_ONE_THREAD_LOCK = threading.Lock()
_one_thread_depth = 0
_one_thread_limiter = None


@contextmanager
def one_blas_thread():
    """Context in which every loaded BLAS runs on one thread.

    The limit is process-wide, so the contexts open in all threads share one:
    the first to open sets it, the last to close restores the limits found
    then (each restoring its own would leave BLAS on one thread for good
    when two threads close in the order they opened).
    """
    global _one_thread_depth, _one_thread_limiter
    with _ONE_THREAD_LOCK:
        if _one_thread_depth == 0:
            _one_thread_limiter = _blas_pools().limit(limits=1)
        _one_thread_depth += 1
    try:
        yield
    finally:
        with _ONE_THREAD_LOCK:
            _one_thread_depth -= 1
            if _one_thread_depth == 0:
                _one_thread_limiter.restore_original_limits()
                _one_thread_limiter = None


@contextmanager
def small_work(rows, p):
    """Context for work on ``rows x p`` data: one thread if it is small.

    Up to ``rows * p**2 = SMALL_WORK`` BLAS runs on one thread; up to ``rows
    * p = SMALL_KERNEL_WORK`` numba does too (in the calling thread), and
    :func:`row_parallel` runs its segments in turn: a parallel region waits
    for its slowest thread, which a busy machine deschedules for a time
    slice. Results are the same up to the order of the sums.
    """
    with contextlib.ExitStack() as stack:
        if rows * p * p <= SMALL_WORK:
            stack.enter_context(one_blas_thread())
        if rows * p <= SMALL_KERNEL_WORK:
            import numba

            numba_threads = numba.get_num_threads()
            numba.set_num_threads(1)
            stack.callback(numba.set_num_threads, numba_threads)
        yield


def one_numba_thread():
    """Whether numba runs on the calling thread alone here (see :func:`small_work`).

    Then a kernel's serial twin (the same code compiled without
    ``parallel=True``, same results) does its work: a first call does not
    wait for the parallel variant to compile.
    """
    import numba

    return numba.get_num_threads() == 1


def row_parallel(func, n):
    """``[func(rows) for rows in segments]`` over fixed segments of ``range(n)``.

    The segments (slices of ``_SEGMENT_ROWS`` rows) are shared by as many
    Python threads as BLAS or numba has, in each of which both run on one
    thread: on few cores two one-thread products on separate rows beat one
    two-thread product, and no pool is left spinning between a BLAS call and
    a numba kernel. The results come back in segment order whatever the
    number of threads, so sums over them do not depend on it.
    """
    segments = list(gen_batches(n, _SEGMENT_ROWS))
    n_threads = min(pass_threads(), len(segments))
    if n_threads < 2:
        return [func(rows) for rows in segments]
    import numba

    with (
        one_blas_thread(),
        ThreadPoolExecutor(
            n_threads, initializer=numba.set_num_threads, initargs=(1,)
        ) as pool,
    ):
        return list(pool.map(func, segments))


def row_blocks(rows, size):
    """Slices of at most ``size`` rows covering the slice ``rows``, in order."""
    for lo in range(rows.start, rows.stop, size):
        yield slice(lo, min(lo + size, rows.stop))


def cache_rows(width):
    """Rows of a float64 block ``width`` wide that fit in ``CACHE_BYTES`` (>= 1)."""
    return max(1, CACHE_BYTES // (8 * width))


def gram_block_rows(d):
    """Rows of ``d`` features a weighted Gram scales at a time (see above)."""
    return max(_GRAM_BLOCK_BYTES // (8 * d), _GRAM_MIN_ROWS)
