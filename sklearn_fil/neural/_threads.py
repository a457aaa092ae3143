"""The threads and scratch memory of a NumPy DP-SGD run.

A DP-SGD step on the host is two small GEMMs (the batch's forward pass and
its clipped sum) between pieces of single-threaded work (activations,
per-example norms, the noisy update). With BLAS on several threads, its pool
threads keep spinning after each GEMM (OpenBLAS: measured, a whole core for
the next 50 ms) and take the cores from the work that follows; on a shared
machine a GEMM split statically over BLAS threads also waits for the slowest
one. :class:`StepThreads` runs the training loop with BLAS on one thread and
splits the GEMMs (by rows of their output, each thread then adding the bias
and activating its rows) and the update over its own threads, which sleep
when idle; they draw the step's noise (by its fixed blocks, see
:class:`~sklearn_fil.neural._noise.NoiseStreams`) in the background while
the caller runs the step's single-threaded work. On 2 cores, a step of the
784 -> 256 -> 1 MLP took 7.7 ms with the GEMMs split this way against 19 ms
with BLAS on two threads, measured alternately under a load of about 3.5
from other jobs (on a quiet machine both took about 4 ms, before the
background noise).

It also keeps the step's scratch arrays (:meth:`StepThreads.buffer`): a
fresh ``256 x 256`` float64 temporary costs about 0.1 ms in page faults
(``1 - a * a`` took 0.27 ms, in place 0.05 ms), more than the arithmetic.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import collections
import contextlib
import itertools
import math
import threading

import numpy as np

from sklearn_fil._glm import blas_threads, one_blas_thread

# The most threads of a run (the noise has at most this many blocks).
MAX_THREADS = 8
# Multiply-adds of a GEMM below which it runs whole on the calling thread:
# handing a piece to another thread costs tens of microseconds.
MIN_SPLIT_WORK = 2**21


def default_threads():
    """Threads for a run: as many as BLAS would use now, at most ``MAX_THREADS``.

    Limits set by the caller (``threadpoolctl``, ``OMP_NUM_THREADS``, a
    joblib worker's) are kept: with BLAS on one thread, the run is serial.
    """
    return max(1, min(blas_threads(), MAX_THREADS))


class StepThreads:
    """A pool of ``n_threads`` (the caller's included) for the DP-SGD loop.

    Used as a context manager: inside it every loaded BLAS runs on one
    thread and ``n_threads - 1`` worker threads wait for :meth:`run` (work
    shared now) or :meth:`background` (work for idle moments); on exit the
    workers stop and BLAS gets its threads back. Results do not depend on
    ``n_threads``: the pieces of a GEMM are the same sums, and each noise
    block has its own generator.

    Parameters
    ----------
    n_threads : int, default=None
        None: :func:`default_threads`.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fil.neural._threads import StepThreads
    >>> a, b = np.ones((512, 300)), np.ones((300, 40))
    >>> with StepThreads(2) as threads:
    ...     product = threads.matmul(a, b)
    >>> bool(np.all(product == 300.0))
    True
    """

    def __init__(self, n_threads=None):
        self.n_threads = default_threads() if n_threads is None else int(n_threads)
        self._workers = []
        self._limit = None
        self._buffers = {}

    def buffer(self, key, shape):
        """A float64 scratch array of ``shape`` for ``key``, reused between calls.

        Its content is undefined; the array of a key is overwritten by the
        next call with the same key (it grows when a bigger one is asked).
        """
        size = math.prod(shape)
        flat = self._buffers.get(key)
        if flat is None or flat.size < size:
            flat = self._buffers[key] = np.empty(size)
        return flat[:size].reshape(shape)

    def __enter__(self):
        self._limit = contextlib.ExitStack()
        self._limit.enter_context(one_blas_thread())
        self._cond = threading.Condition()
        self._job = None  # the foreground job: [tasks, next, unfinished]
        self._background = collections.deque()
        self._unfinished = 0  # background tasks queued or running
        self._errors = []
        self._stop = False
        self._workers = [
            threading.Thread(target=self._worker, name=f"sklearn-fil-dpsgd-{k}")
            for k in range(self.n_threads - 1)
        ]
        for worker in self._workers:
            worker.start()
        return self

    def __exit__(self, *exc):
        with self._cond:
            self._stop = True
            self._background.clear()
            self._cond.notify_all()
        for worker in self._workers:
            worker.join()
        self._workers = []
        self._limit.close()
        return False

    def _claim(self):
        """The next task, foreground first (under the lock), or None."""
        job = self._job
        if job is not None and job[1] < len(job[0]):
            job[1] += 1
            return job[0][job[1] - 1], job
        if self._background:
            return self._background.popleft(), None
        return None

    def _call(self, task, job):
        """Run a claimed task; account for it (and keep its error) under the lock."""
        try:
            task()
        except BaseException as exc:  # raised again by run or wait_background
            error = exc
        else:
            error = None
        with self._cond:
            if error is not None:
                self._errors.append(error)
            if job is None:
                self._unfinished -= 1
            else:
                job[2] -= 1
            self._cond.notify_all()

    def _worker(self):
        while True:
            with self._cond:
                claimed = self._claim()
                while claimed is None and not self._stop:
                    self._cond.wait()
                    claimed = self._claim()
                if claimed is None:
                    return
            self._call(*claimed)

    def _raise(self):
        with self._cond:
            errors, self._errors = self._errors, []
        if errors:
            raise errors[0]

    def run(self, tasks):
        """Call every function of ``tasks``, spread over the threads.

        Each thread takes the next task not yet taken (before any background
        task) until none is left; the call returns when all are done and
        raises the first error met.
        """
        if not self._workers or len(tasks) < 2:
            for task in tasks:
                task()
            return
        job = [tasks, 0, len(tasks)]
        with self._cond:
            self._job = job
            self._cond.notify_all()
        while True:
            with self._cond:
                if job[1] >= len(tasks):
                    while job[2] > 0:
                        self._cond.wait()
                    self._job = None
                    break
                job[1] += 1
                task = tasks[job[1] - 1]
            self._call(task, job)
        self._raise()

    def background(self, tasks):
        """Queue ``tasks`` for the workers to run when no :meth:`run` needs them.

        :meth:`wait_background` waits for them (without workers they run
        there, on the calling thread).
        """
        with self._cond:
            self._background.extend(tasks)
            self._unfinished += len(tasks)
            self._cond.notify_all()

    def wait_background(self):
        """Help with the queued background tasks, then wait until all are done."""
        while True:
            with self._cond:
                if not self._background:
                    while self._unfinished > 0:
                        self._cond.wait()
                    break
                task = self._background.popleft()
            self._call(task, None)
        self._raise()

    def _pieces(self, rows, split):
        """Row bounds of the pieces of ``rows`` rows: one per thread if ``split``."""
        n = min(self.n_threads, rows) if split else 1
        bounds = [rows * k // n for k in range(n + 1)]
        return list(itertools.pairwise(bounds))

    def matmul(self, a, b, out=None, then=None):
        """``a @ b``, its rows split over the threads (``out``: where to write).

        ``then(rows)``, if given, is called by each thread on its rows of the
        product (a slice of ``out``) once they are computed.
        """
        if out is None:
            out = np.empty((a.shape[0], b.shape[1]), dtype=np.result_type(a, b))

        def piece(lo, hi):
            np.matmul(a[lo:hi], b, out=out[lo:hi])
            if then is not None:
                then(out[lo:hi])

        pieces = self._pieces(a.shape[0], a.size * b.shape[1] >= MIN_SPLIT_WORK)
        self.run([lambda lo=lo, hi=hi: piece(lo, hi) for lo, hi in pieces])
        return out

    def matmul_t(self, a, b, out):
        """``a.T @ b`` into ``out``, by rows (``a``'s columns) over the threads."""
        pieces = self._pieces(a.shape[1], a.size * b.shape[1] >= MIN_SPLIT_WORK)
        self.run(
            [
                lambda lo=lo, hi=hi: np.matmul(a[:, lo:hi].T, b, out=out[lo:hi])
                for lo, hi in pieces
            ]
        )
        return out

    def gather_matmul(
        self, X, indices, b, out=None, then=None, row_sq=None, key="rows"
    ):
        """``X[indices]`` and ``X[indices] @ b``, each thread its rows of both.

        The gathered rows go to :meth:`buffer` ``key`` and are multiplied
        while in the thread's cache (one hand-over instead of two); ``then``
        as in :meth:`matmul`; ``row_sq``, if given, receives the squared
        norm of each gathered row.

        Returns
        -------
        rows, product : ndarray
        """
        rows = self.buffer(key, (indices.size, *X.shape[1:]))
        if out is None:
            out = np.empty((indices.size, b.shape[1]), dtype=np.result_type(X, b))
        # a gather alone is not worth a hand-over: on 2 cores a logistic step
        # took 0.60 ms with its 256 rows gathered by two threads, 0.53 by one
        split = rows.size * b.shape[1] >= MIN_SPLIT_WORK

        def piece(lo, hi):
            part = rows[lo:hi]
            np.take(X, indices[lo:hi], axis=0, out=part, mode="clip")
            if row_sq is not None:
                with np.errstate(over="ignore", under="ignore", invalid="ignore"):
                    np.einsum("ij,ij->i", part, part, out=row_sq[lo:hi])
            np.matmul(part, b, out=out[lo:hi])
            if then is not None:
                then(out[lo:hi])

        self.run(
            [
                lambda lo=lo, hi=hi: piece(lo, hi)
                for lo, hi in self._pieces(indices.size, split)
            ]
        )
        return rows, out
