"""The per-instance accountant as it was before its storage was made sparse.

Kept verbatim (dense ``(n_samples, n_levels)`` step counts, or ``(n_samples,
n_orders)`` RDP totals) as the reference that the sparse accountant of
:mod:`sklearn_fil.accounting._dpsgd` must reproduce; test use only.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numba
import numpy as np

from sklearn_fil.accounting._dpsgd import (
    _INDICES_MSG,
    _ceil_multiple,
    _check_orders,
    _poisson_gaussian_rdp,
    _poisson_gaussian_rdp_integer,
    _rdp_to_epsilon_rows,
)

_COUNTS_FACTOR = 4


@numba.njit(nogil=True)
def _move_levels(
    indices,
    norms,
    level,
    since,
    marks,
    stamp,
    n_steps,
    precision,
    sensitivity,
    top,
    moved,
    old_level,
    elapsed,
):
    """Move examples to the levels of their new norms.

    Checks everything first and changes nothing on bad input: returns -1 for
    an index out of range or repeated, -2 for a norm that is not finite and
    >= 0. Otherwise updates ``level`` and ``since`` and returns the number
    ``m`` of examples that changed level; ``moved[:m]``, ``old_level[:m]``
    and ``elapsed[:m]`` then hold them, their previous level and the steps
    they spent there, for the caller to account. The level is the same
    rounding up as :func:`_ceil_multiple`, capped at ``top``.
    """
    n = level.shape[0]
    for t in range(indices.shape[0]):
        i = indices[t]
        if i < 0 or i >= n or marks[i] == stamp:
            return -1
        marks[i] = stamp
        x = norms[t]
        if not (x >= 0.0 and x < np.inf):
            return -2
    m = 0
    for t in range(indices.shape[0]):
        i = indices[t]
        x = min(norms[t], sensitivity)
        k = np.ceil(x / precision)
        if k >= 1.0 and (k - 1.0) * precision >= x:
            k -= 1.0
        if k * precision < x:
            k += 1.0
        new = min(int(k), top)
        if new != level[i]:
            moved[m] = i
            old_level[m] = level[i]
            elapsed[m] = n_steps - since[i]
            level[i] = new
            since[i] = n_steps
            m += 1
    return m


class ReferencePerInstanceAccountant:
    """The old PerInstanceAccountant (see the module docstring)."""

    def __init__(
        self,
        n_samples,
        *,
        noise_multiplier,
        sample_rate,
        sensitivity=1.0,
        precision=0.01,
        orders=None,
    ):
        # the arguments of the library's accountant, which checks them
        self.n_samples = int(n_samples)
        self.noise_multiplier = float(noise_multiplier)
        self.sample_rate, self.sensitivity = float(sample_rate), float(sensitivity)
        self.precision = float(precision)
        self._orders = _check_orders(orders)
        # Levels k = 0..n_levels-1 stand for the norms min(k precision, sensitivity).
        self._top = int(_ceil_multiple(self.sensitivity, self.precision))
        self._cache = {}
        n_orders = self._orders.size
        if self._top + 1 <= _COUNTS_FACTOR * n_orders:
            self._counts = np.zeros((self.n_samples, self._top + 1), dtype=np.float64)
            self._rdp = None
        else:
            self._counts = None
            self._rdp = np.zeros((self.n_samples, n_orders), dtype=np.float64)
        # Each example's current level and the step it began at: steps at an
        # unchanged level are added in one go when it changes (or when read), so
        # a step that updates a few examples costs O(few), not O(n).
        self._level = np.full(self.n_samples, self._top, dtype=np.int64)
        self._since = np.zeros(self.n_samples, dtype=np.int64)
        self._marks = np.zeros(self.n_samples, dtype=np.int64)  # duplicate check
        self._stamp = 0
        self._n_steps = 0

    @property
    def orders(self):
        """The Renyi orders, a copy."""
        return self._orders.copy()

    @property
    def n_steps(self):
        """Number of steps accounted so far."""
        return self._n_steps

    @property
    def rdp(self):
        """Accumulated RDP, ndarray of shape (n_samples, n_orders)."""
        pending = (self._n_steps - self._since).astype(np.float64)
        if self._counts is None:
            present, inverse = np.unique(self._level, return_inverse=True)
            table = self._level_rdp(present)[inverse.reshape(-1)]
            with np.errstate(invalid="ignore"):  # 0 pending steps at an inf level
                extra = np.where(pending[:, None] > 0, pending[:, None] * table, 0.0)
            return self._rdp + extra
        # counts times a table over all levels (zero rows for levels never
        # reached), plus the steps pending at each example's current level
        used = np.flatnonzero(self._counts.any(axis=0))
        present = np.union1d(used, np.unique(self._level[pending > 0]))
        table = np.zeros((self._top + 1, self._orders.size))
        if present.size:
            table[present] = self._level_rdp(present)
        infinite = np.isinf(table)
        finite = np.where(infinite, 0.0, table)
        rdp = self._counts @ finite
        rdp += pending[:, None] * finite[self._level]
        if np.any(infinite):
            reached = (self._counts > 0) @ infinite
            reached |= (pending > 0)[:, None] & infinite[self._level]
            rdp[reached] = np.inf
        return rdp

    def _level_rdp(self, levels):
        """RDP vectors of the given level indices, shape (len(levels), n_orders)."""
        integer = np.all(self._orders == np.round(self._orders))
        missing = [lv for lv in dict.fromkeys(levels.tolist()) if lv not in self._cache]
        norms = [min(lv * self.precision, self.sensitivity) for lv in missing]
        closed_form = integer and 0.0 < self.sample_rate < 1.0 and self.noise_multiplier
        positive = [(lv, r) for lv, r in zip(missing, norms, strict=True) if r > 0.0]
        for lv, r in zip(missing, norms, strict=True):
            if r == 0.0:
                self._cache[lv] = np.zeros(self._orders.size, dtype=np.float64)
        if closed_form and positive:
            table = _poisson_gaussian_rdp_integer(
                self.sample_rate,
                [self.noise_multiplier / r for _, r in positive],
                self._orders,
            )
            for (lv, _), row in zip(positive, table, strict=True):
                self._cache[lv] = row
        else:
            for lv, r in positive:
                self._cache[lv] = _poisson_gaussian_rdp(
                    self.sample_rate, self.noise_multiplier / r, self._orders
                )
        rows = [self._cache[level] for level in levels.tolist()]
        return np.array(rows, dtype=np.float64).reshape(len(rows), self._orders.size)

    def step(self, norms=None, indices=None):
        """Account one step of DP-SGD for every example.

        Parameters
        ----------
        norms : array-like of shape (n_samples,) or (n_indices,), default=None
            Clipped gradient norms in units of ``C`` (finite, >= 0; values above
            ``sensitivity`` count as ``sensitivity``): of every example, or of
            the examples ``indices``. The others keep their last norm (at
            first, ``sensitivity``). None accounts the step at the last norms.
        indices : array-like of int of shape (n_indices,), default=None
            Examples whose norms are given; None means all.

        Returns
        -------
        self : PerInstanceAccountant
            The accountant, with one more step accounted.
        """
        if norms is not None:
            self.set_norms(norms, indices)
        self._n_steps += 1
        return self

    def set_norms(self, norms, indices=None):
        """Set the current clipped norms without accounting a step.

        Parameters
        ----------
        norms : array-like of shape (n_samples,) or (n_indices,)
            Clipped gradient norms in units of ``C``, as in :meth:`step`.
        indices : array-like of int of shape (n_indices,), default=None
            Examples whose norms are given; None means all.

        Returns
        -------
        self : PerInstanceAccountant
            The accountant.
        """
        try:
            norms = np.asarray(norms, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"norms must be an array of real numbers, got norms={norms!r}."
            ) from exc
        if indices is None:
            indices = np.arange(self.n_samples)  # distinct by construction
        else:
            indices = np.asarray(indices)
            if indices.ndim != 1 or not np.issubdtype(indices.dtype, np.integer):
                raise ValueError(_INDICES_MSG.format(self.n_samples))
        if norms.shape != indices.shape:
            raise ValueError(
                f"norms must have shape {indices.shape}, got shape {norms.shape}."
            )
        # one numba pass checks the input and moves the examples' levels
        self._stamp += 1
        indices = np.ascontiguousarray(indices, dtype=np.int64)
        moved = np.empty_like(indices)
        old = np.empty_like(indices)
        elapsed = np.empty(indices.size)
        m = _move_levels(
            indices,
            np.ascontiguousarray(norms),
            self._level,
            self._since,
            self._marks,
            self._stamp,
            self._n_steps,
            self.precision,
            self.sensitivity,
            self._top,
            moved,
            old,
            elapsed,
        )
        if m == -1:
            raise ValueError(_INDICES_MSG.format(self.n_samples))
        if m == -2:
            bad = norms[~np.isfinite(norms) | (norms < 0)]
            raise ValueError(
                f"norms must be finite and >= 0, got a norm equal to {float(bad[0])!r}."
            )
        idx, old, elapsed = moved[:m], old[:m], elapsed[:m]
        if self._counts is not None:
            self._counts[idx, old] += elapsed  # idx holds distinct examples
        elif m:
            present, inverse = np.unique(old, return_inverse=True)
            table = self._level_rdp(present)[inverse.reshape(-1)]
            with np.errstate(invalid="ignore"):  # 0 steps at an infinite level
                self._rdp[idx] += np.where(
                    elapsed[:, None] > 0, elapsed[:, None] * table, 0.0
                )
        return self

    def epsilon(self, delta):
        """Per-example epsilon at a target delta."""
        return _rdp_to_epsilon_rows(self._orders, self.rdp, float(delta))
