"""Sparse per-example histograms of steps per norm level, for per-instance RDP.

The per-instance RDP of an example (Yu et al. 2022) after ``T`` steps is
``sum_k c_k rdp(level_k)``, with ``c_k`` the number of steps its rounded norm
spent at level ``k``. An example visits few levels, so its nonzero counts are
kept exactly as ``(level, count)`` slots: :data:`INLINE_SLOTS` per example,
then linked blocks of :data:`BLOCK_SLOTS` from a shared pool (about 50 bytes
per example plus 44 per block), and the RDP is formed on demand, a block of
examples at a time.

Counts and step stamps are ``uint32`` (the accountant refuses a step beyond
``2**32 - 2``); levels take the smallest unsigned type that holds them.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numba
import numpy as np

INLINE_SLOTS = 8
BLOCK_SLOTS = 8


def level_dtype(top):
    """Smallest integer type holding the levels ``0..top``."""
    for dtype in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(dtype).max:
            return dtype
    return np.int64


@numba.njit(cache=True, nogil=True)
def _check_norms(indices, all_rows, norms, marks, stamp):
    """0 if the input is valid; -1 for a bad or repeated index, -2 for a bad norm.

    ``all_rows`` means the norms are those of every example, in order (and
    ``indices`` is unused). ``marks`` records ``stamp`` at each index seen.
    """
    n = marks.shape[0]
    m = n if all_rows else indices.shape[0]
    if not all_rows:
        for t in range(m):
            i = indices[t]
            if i < 0 or i >= n or marks[i] == stamp:
                return -1
            marks[i] = stamp
    for t in range(m):
        x = norms[t]
        if not (x >= 0.0 and x < np.inf):
            return -2
    return 0


@numba.njit(cache=True, nogil=True)
def _put(levels, counts, lvl, count):
    """Add ``count`` steps at ``lvl`` to one block of slots; False if it is full.

    The slot already holding ``lvl`` grows, else the first empty one takes it.
    """
    for s in range(counts.shape[0]):
        if counts[s] == 0:
            levels[s] = lvl
            counts[s] = count
            return True
        if levels[s] == lvl:
            counts[s] += count
            return True
    return False


@numba.njit(cache=True, nogil=True)
def _add_steps(i, lvl, count, slot_level, slot_count, link, pool, used, seen):
    """Add ``count`` steps at level ``lvl`` to example ``i``'s histogram.

    ``pool`` is ``(pool_level, pool_count, pool_next)``. Returns the new
    number of pool blocks in use, or -1 when the pool is full (nothing
    changed).
    """
    pool_level, pool_count, pool_next = pool
    seen[lvl] = True
    if _put(slot_level[i], slot_count[i], lvl, count):
        return used
    b = link[i]
    last = -1
    while b >= 0:
        if _put(pool_level[b], pool_count[b], lvl, count):
            return used
        last = b
        b = pool_next[b]
    if used >= pool_count.shape[0]:
        return -1
    pool_level[used, 0] = lvl
    pool_count[used, 0] = count
    pool_next[used] = -1
    if last < 0:
        link[i] = used
    else:
        pool_next[last] = used
    return used + 1


@numba.njit(cache=True, nogil=True)
def apply_norms(
    indices,
    all_rows,
    norms,
    start,
    n_steps,
    precision,
    sensitivity,
    top,
    level,
    since,
    slots,
    pool,
    used,
    seen,
):
    """Move examples to the levels of their new norms, from position ``start``.

    The level of ``x`` is ``_dpsgd._ceil_multiple(min(x, sensitivity),
    precision)`` capped at ``top``; an example that changes level has the steps
    at its old level added to its histogram. Returns ``(position, used)``: the
    position reached (before the end when the pool is full) and the pool
    blocks in use.
    """
    slot_level, slot_count, link = slots
    m = level.shape[0] if all_rows else indices.shape[0]
    for t in range(start, m):
        i = t if all_rows else indices[t]
        x = min(norms[t], sensitivity)
        k = np.ceil(x / precision)
        if k >= 1.0 and (k - 1.0) * precision >= x:
            k -= 1.0
        if k * precision < x:
            k += 1.0
        new = min(int(k), top)
        old = np.int64(level[i])
        if new == old:
            continue
        elapsed = n_steps - np.int64(since[i])
        if elapsed > 0:
            now = _add_steps(
                i, old, elapsed, slot_level, slot_count, link, pool, used, seen
            )
            if now < 0:
                return t, used
            used = now
        level[i] = new
        since[i] = n_steps
    return m, used


@numba.njit(cache=True, nogil=True)
def pending_levels(level, since, n_steps, seen):
    """Mark in ``seen`` the current level of every example with pending steps."""
    for i in range(level.shape[0]):
        if np.int64(since[i]) < n_steps:
            seen[level[i]] = True


@numba.njit(cache=True, nogil=True)
def dense_rdp(start, n_steps, level, since, slots, pool, table, out):
    """RDP of the examples ``start .. start + len(out)``, into ``out``: ``sum_k
    c_k table[k]`` over the filled slots (an infinite RDP at an unreached level
    adds nothing), plus the steps pending at the current level."""
    slot_level, slot_count, link = slots
    pool_level, pool_count, pool_next = pool
    for r in range(out.shape[0]):
        i = start + r
        out[r, :] = 0.0
        _add_slots(out[r], slot_level[i], slot_count[i], table)
        b = link[i]
        while b >= 0:
            _add_slots(out[r], pool_level[b], pool_count[b], table)
            b = pool_next[b]
        pending = n_steps - np.int64(since[i])
        if pending > 0:
            lv = level[i]
            for j in range(table.shape[1]):
                out[r, j] += pending * table[lv, j]


@numba.njit(cache=True, nogil=True)
def _add_slots(row, levels, counts, table):
    """Add ``counts[s] * table[levels[s]]`` to ``row`` for each filled slot."""
    for s in range(counts.shape[0]):
        c = counts[s]
        if c == 0:
            break
        for j in range(row.shape[0]):
            row[j] += c * table[levels[s], j]


class LevelHistograms:
    """Each example's current level and its histogram of steps per level.

    Parameters
    ----------
    n : int
        Number of examples.
    top : int
        Highest level; every example starts there.
    """

    # the most steps counted: counts and stamps are uint32
    MAX_STEPS = 2**32 - 2
    # rows of RDP formed at once when reading the histograms
    READ_BLOCK = 8192

    def __init__(self, n, top):
        dtype = level_dtype(top)
        self.top = top
        self.level = np.full(n, top, dtype=dtype)
        self.since = np.zeros(n, dtype=np.uint32)
        self.marks = np.zeros(n, dtype=np.uint32)
        self.stamp = 0
        self.slots = (
            np.zeros((n, INLINE_SLOTS), dtype=dtype),
            np.zeros((n, INLINE_SLOTS), dtype=np.uint32),
            np.full(n, -1, dtype=np.int32),
        )
        self.pool = self._empty_pool(max(64, n // 64), dtype)
        self.used = 0
        self.seen = np.zeros(top + 1, dtype=np.bool_)

    @staticmethod
    def _empty_pool(blocks, dtype):
        return (
            np.zeros((blocks, BLOCK_SLOTS), dtype=dtype),
            np.zeros((blocks, BLOCK_SLOTS), dtype=np.uint32),
            np.full(blocks, -1, dtype=np.int32),
        )

    def _grow(self):
        """Half as many pool blocks again, keeping those in use."""
        old = self.pool
        blocks = old[2].shape[0]
        new = self._empty_pool(blocks + max(64, blocks // 2), old[0].dtype)
        for src, dst in zip(old, new, strict=True):
            dst[:blocks] = src
        self.pool = new

    def check_norms(self, indices, all_rows, norms):
        """0 if the input of :meth:`move` is valid; -1 for a bad or repeated
        index, -2 for a bad norm (one pass; nothing changes but the marks)."""
        if self.stamp == np.iinfo(np.uint32).max:
            self.marks[:] = 0
            self.stamp = 0
        self.stamp += 1
        return _check_norms(indices, all_rows, norms, self.marks, self.stamp)

    def move(self, indices, all_rows, norms, n_steps, precision, sensitivity):
        """Apply :func:`apply_norms` to every norm, growing the pool as needed."""
        start = 0
        m = self.level.shape[0] if all_rows else indices.shape[0]
        while True:
            start, self.used = apply_norms(
                indices,
                all_rows,
                norms,
                start,
                n_steps,
                precision,
                sensitivity,
                self.top,
                self.level,
                self.since,
                self.slots,
                self.pool,
                self.used,
                self.seen,
            )
            if start >= m:
                return
            self._grow()

    def levels_in_use(self, n_steps):
        """Levels with steps counted or pending, ndarray of int."""
        seen = self.seen.copy()
        pending_levels(self.level, self.since, n_steps, seen)
        return np.flatnonzero(seen)

    def rdp_rows(self, start, stop, n_steps, table):
        """Accumulated RDP of the examples ``start:stop``, from the level ``table``."""
        out = np.empty((stop - start, table.shape[1]))
        dense_rdp(
            start, n_steps, self.level, self.since, self.slots, self.pool, table, out
        )
        return out

    def nbytes(self):
        """Bytes held by the histograms."""
        arrays = (
            self.level,
            self.since,
            self.marks,
            self.seen,
            *self.slots,
            *self.pool,
        )
        return int(sum(a.nbytes for a in arrays))
