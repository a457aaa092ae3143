# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

"""The passes of sklearn_fil._glm that trade memory or threads for speed.

Each must give the plain computation's numbers: the weighted Gram through its
cache-sized buffer, the margin Newton reuses, and the one-thread context of
small work (which must also give the threads back).
"""

import numba
import numpy as np
import pytest
from numpy.testing import assert_allclose
from threadpoolctl import threadpool_info

from sklearn_fil import _glm, _threads


def _blas_threads():
    return sorted(
        info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"
    )


@pytest.mark.parametrize("has_intercept", [True, False])
def test_weighted_grams_in_blocks_equal_the_plain_products(monkeypatch, has_intercept):
    # blocks of 7 rows in segments of 25 (both with a short last one): every
    # row once, scaled once per weight vector, on strided rows too
    monkeypatch.setattr(_threads, "_GRAM_BLOCK_BYTES", 8 * 7 * 3)
    monkeypatch.setattr(_threads, "_GRAM_MIN_ROWS", 7)
    monkeypatch.setattr(_threads, "_SEGMENT_ROWS", 25)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((120, 3))
    weights = [rng.uniform(0.0, 2.0, 60), np.ones(60), rng.uniform(0.0, 1.0, 60)]
    for rows in (X[:60], X[::2]):
        Xt = np.column_stack([rows, np.ones(60)]) if has_intercept else rows
        grams = _glm.weighted_grams(rows, weights, has_intercept)
        assert len(grams) == 3
        for gram, w in zip(grams, weights, strict=True):
            assert_allclose(gram, Xt.T @ (w[:, None] * Xt), rtol=1e-13)
        assert_allclose(
            _glm.weighted_gram(rows, weights[0], has_intercept), grams[0], rtol=0
        )


def test_row_parallel_results_do_not_depend_on_the_threads(monkeypatch):
    # segments summed in order: one thread and two give the same bits
    monkeypatch.setattr(_threads, "_SEGMENT_ROWS", 1000)
    rng = np.random.default_rng(2)
    X = rng.standard_normal((10_500, 30)) * np.logspace(-3, 3, 30)
    w = rng.uniform(0.0, 3.0, 10_500)
    seen = []
    real = _threads.ThreadPoolExecutor

    def spy(n_threads, **kwargs):
        seen.append(n_threads)
        return real(n_threads, **kwargs)

    monkeypatch.setattr(_threads, "ThreadPoolExecutor", spy)
    monkeypatch.setattr(_threads, "pass_threads", lambda: 1)
    one = _glm.weighted_grams(X, [w, np.ones(10_500)], True)
    assert seen == []  # one thread: no pool
    monkeypatch.setattr(_threads, "pass_threads", lambda: 2)
    two = _glm.weighted_grams(X, [w, np.ones(10_500)], True)
    assert seen == [2]
    for a, b in zip(one, two, strict=True):
        assert np.array_equal(a, b)


def test_the_kept_margin_follows_the_weights():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((50, 2))
    y = (rng.uniform(size=50) < 0.5).astype(float)
    passes = _glm.RowPasses(X, y, np.ones(50), "logistic", True)
    w1, w2 = np.array([0.3, -0.2, 0.1]), np.array([1.0, 0.5, -0.4])

    def objective(w):
        m = X @ w[:2] + w[2]
        return float(np.sum(np.logaddexp(0.0, m) - y * m))

    # (zero feature weights: the margin is the intercept, with no product)
    for w in (w1, w2, w1, w1, np.zeros(3), np.array([0.0, 0.0, 0.7])):
        assert passes.objective(w) == pytest.approx(objective(w), rel=1e-13)
    w1[0] = 5.0  # changed in place after a call: not the kept weights
    assert passes.objective(w1) == pytest.approx(objective(w1), rel=1e-13)


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("has_intercept", [True, False])
def test_gradient_in_one_read_equals_two_passes(monkeypatch, n_threads, has_intercept):
    # segments of 9 rows (a short last one) in blocks of 4 (a short last one),
    # on one or two threads: the gradient at new weights, and the margins it
    # keeps for the objective
    monkeypatch.setattr(_threads, "_SEGMENT_ROWS", 9)
    monkeypatch.setattr(_glm, "cache_rows", lambda width: 4)
    monkeypatch.setattr(_threads, "pass_threads", lambda: n_threads)
    rng = np.random.default_rng(3)
    X = rng.standard_normal((50, 3)) * [1.0, 1e3, 1e-3]
    y = (rng.uniform(size=50) < 0.5).astype(float)
    omega = rng.uniform(0.0, 2.0, 50)
    passes = _glm.RowPasses(X, y, omega, "logistic", has_intercept)
    w = np.array([0.3, -2e-4, 50.0, 0.1])[: 3 + has_intercept]
    m = X @ w[:3] + (w[3] if has_intercept else 0.0)
    v = omega * (1.0 / (1.0 + np.exp(-m)) - y)
    expected = X.T @ v
    if has_intercept:
        expected = np.append(expected, v.sum())
    assert_allclose(passes.gradient(w), expected, rtol=1e-13, atol=1e-13)
    assert_allclose(passes.margin(w), m, rtol=1e-14)
    objective = float(omega @ (np.logaddexp(0.0, m) - y * m))
    assert passes.objective(w) == pytest.approx(objective, rel=1e-13)


def test_small_work_limits_and_restores_threads():
    before, numba_before = _blas_threads(), numba.get_num_threads()
    p = 11
    blas_rows = int(_threads.SMALL_WORK // p**2)  # the most rows of a small Gram
    kernel_rows = int(_threads.SMALL_KERNEL_WORK // p)  # ... of a small kernel pass
    with _threads.small_work(kernel_rows, p):
        assert set(_blas_threads()) == {1}
        assert numba.get_num_threads() == 1
        assert _threads.pass_threads() == 1
    assert _blas_threads() == before
    assert numba.get_num_threads() == numba_before
    with _threads.small_work(blas_rows, p):  # BLAS alone
        assert set(_blas_threads()) == {1}
        assert numba.get_num_threads() == numba_before
    with _threads.small_work(blas_rows + 1, p):
        assert _blas_threads() == before
        assert numba.get_num_threads() == numba_before
    with pytest.raises(RuntimeError), _threads.small_work(kernel_rows, p):
        raise RuntimeError  # restored on the way out of an error too
    assert numba.get_num_threads() == numba_before
    assert _blas_threads() == before


class _ProcessWideLimits:
    """A stand-in for threadpoolctl's controller: one limit for the process."""

    def __init__(self, threads):
        self.threads = threads

    def limit(self, limits):
        saved, self.threads = self.threads, limits
        owner = self

        class Limiter:
            def restore_original_limits(self):
                owner.threads = saved

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self.restore_original_limits()

        return Limiter()


def test_one_blas_thread_contexts_of_two_threads_restore_the_limits(monkeypatch):
    # limits are process-wide: two threads whose contexts close in the order
    # they opened must leave BLAS as it was (each restoring the limit it
    # found would leave it at one thread)
    import threading

    blas = _ProcessWideLimits(2)
    monkeypatch.setattr(_threads, "_blas_pools", lambda: blas)
    first_in, second_in, first_out = (threading.Event() for _ in range(3))
    seen = []

    def first():
        with _threads.one_blas_thread():
            first_in.set()
            second_in.wait(10)
        first_out.set()

    def second():
        first_in.wait(10)
        with _threads.one_blas_thread():
            second_in.set()
            first_out.wait(10)
            seen.append(blas.threads)  # still limited after the first left

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert seen == [1]
    assert blas.threads == 2
