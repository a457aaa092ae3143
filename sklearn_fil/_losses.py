"""Loss families of generalised linear models, as the FIL engine needs them.

A family gives, at margin ``m = w^T x`` and label ``y``, the loss, its first
derivative ``r = dl/dm`` (the residual) and second derivative ``c =
d2l/dm2``, and the size of the terms that cancel in ``r`` (to judge whether
a gradient is zero to rounding). Both families are canonical GLMs, so
``d(dl/dm)/dy = -1``: the label column of the per-example Jacobian is ``-x``.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from scipy.special import expit, log_expit


class _SquaredLoss:
    """``l(m, y) = (m - y)^2 / 2``."""

    name = "squared"
    # a bound R on |l'''| / l'' (see _LogisticLoss.curvature_rate)
    curvature_rate = 0.0

    @staticmethod
    def check_y(y):
        return y

    @staticmethod
    def value(m, y):
        return 0.5 * (m - y) ** 2

    @staticmethod
    def derivatives(m, y):
        return m - y, np.ones_like(m)

    @staticmethod
    def residual_scale(m, y):
        """Size of the terms whose difference is the residual ``m - y``."""
        return np.abs(m) + np.abs(y)


class _LogisticLoss:
    """``l(m, y) = -y log s(m) - (1 - y) log(1 - s(m))``, ``y`` in {0, 1}."""

    name = "logistic"
    # A bound R on |l'''| / l'': here l'' = s (1 - s) and l''' = l'' (1 - 2 s),
    # so R = 1, and the curvature changes at most by a factor exp(R |t|) when
    # the margin moves by t (which bounds the loss after a step: see
    # sklearn_fil._glm.fit_glm).
    curvature_rate = 1.0

    @staticmethod
    def check_y(y):
        if not np.all((y == 0) | (y == 1)):
            bad = np.unique(y[(y != 0) & (y != 1)])[:5]
            raise ValueError(
                f"The logistic loss needs labels in {{0, 1}}; got values such as {bad}."
            )
        return y

    @staticmethod
    def value(m, y):
        # y in {0, 1}: one log-sigmoid of +-m, equal to the two-term form to
        # the bit at half its cost (a Newton objective evaluates it per step)
        return -log_expit((2.0 * y - 1.0) * m)

    @staticmethod
    def derivatives(m, y):
        s = expit(m)
        return s - y, s * (1.0 - s)

    @staticmethod
    def residual_scale(m, y):
        """Size of the terms whose difference is the residual ``s(m) - y``."""
        return expit(m) + np.abs(y)


LOSSES = {"squared": _SquaredLoss, "logistic": _LogisticLoss}
