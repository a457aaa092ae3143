"""numba kernel of the report's column moments (see ``sklearn_fil._report``).

No scikit-learn, SciPy or pandas here: ``setup.py`` compiles it ahead of time
(:mod:`sklearn_fil._compiled`).
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def block_moments(X, weight, start, stop, block):
    """``(sum of weights, column means, squared deviations)`` of the rows
    ``start:stop`` of ``X``, block by block of ``block`` rows (see
    :func:`sklearn_fil._report._column_moments`)."""
    d = X.shape[1]
    total = 0.0
    mean, m2 = np.zeros(d), np.zeros(d)
    b_mean, b_m2 = np.empty(d), np.empty(d)
    for lo in range(start, stop, block):
        hi = min(lo + block, stop)
        b_total = 0.0
        b_mean[:] = 0.0
        for i in range(lo, hi):
            b_total += weight[i]
            for j in range(d):
                b_mean[j] += weight[i] * X[i, j]
        if b_total == 0.0:
            continue
        b_mean /= b_total
        b_m2[:] = 0.0
        for i in range(lo, hi):
            for j in range(d):
                t = X[i, j] - b_mean[j]
                b_m2[j] += weight[i] * t * t
        new_total = total + b_total
        for j in range(d):
            shift = b_mean[j] - mean[j]
            m2[j] += b_m2[j] + shift * shift * (total * b_total / new_total)
            mean[j] += shift * (b_total / new_total)
        total = new_total
    return total, mean, m2
