# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""Reference minimisers of the penalised GLM objective, gradient in longdouble.

Newton's method whose gradient is summed in extended precision (numpy
``longdouble``; the Hessian solve in float64 only steers it), so that the
difference of two minimisers keeps its relative accuracy even where it is
small. Test support: it shares no code with ``sklearn_fil``.
"""

import numpy as np

LD = np.longdouble


def refit(X, y, omega, loss, reg, fit_intercept, w0=None):
    """The minimiser of ``sum omega l + 1/2 sum reg w^2``, from ``w0`` (or 0)."""
    n = X.shape[0]
    Xt = np.hstack([X, np.ones((n, 1))]) if fit_intercept else X
    XL, yL, oL, rL = (a.astype(LD) for a in (Xt, y, omega, reg))
    w = np.zeros(Xt.shape[1], dtype=LD) if w0 is None else np.array(w0, dtype=LD)
    polish = 3  # Newton steps after the float64 tolerance: to longdouble rounding
    for _ in range(200):
        m = XL @ w
        if loss == "squared":
            r, c = m - yL, np.ones(n)
        else:
            s = 1 / (1 + np.exp(-m))
            r, c = s - yL, (s * (1 - s)).astype(float)
        g = XL.T @ (oL * r) + rL * w
        H = Xt.T @ ((omega * c)[:, None] * Xt) + np.diag(reg)
        step = np.linalg.solve(H, g.astype(float)).astype(LD)
        w -= step
        if np.abs(step).max() <= 1e-14 * (1 + np.abs(w).max()):
            polish -= 1
            if not polish:
                return w
    raise AssertionError("the reference Newton did not converge")


def penalty(p, omega, lam, fit_intercept, penalize_intercept):
    """The penalty's diagonal: ``sum(omega) lam``, 0 for a free intercept."""
    reg = np.full(p, omega.sum() * lam)
    if fit_intercept and not penalize_intercept:
        reg[-1] = 0.0
    return reg
