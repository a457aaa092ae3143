# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""Broken mechanisms that the audits must refute."""

import dataclasses
import functools

from sklearn_fil import (
    OutputPerturbedLinearRegression,
    OutputPerturbedLogisticRegression,
)
from sklearn_fil.accounting import gaussian_epsilon


@functools.lru_cache
def _epsilon(sigma, sensitivity, delta):  # thousands of fits at a few settings
    return gaussian_epsilon(sigma=sigma, sensitivity=sensitivity, delta=delta)


class _LessNoise:
    """A fraction ``_noise_fraction`` of the noise, the full-noise claim."""

    _noise_fraction = 1.0

    def fit(self, X, y, sample_weight=None):
        sigma = self.sigma
        self.sigma = sigma * self._noise_fraction
        try:
            super().fit(X, y, sample_weight)
        finally:
            self.sigma = sigma
        g = self.guarantee_
        self.guarantee_ = dataclasses.replace(
            g,
            epsilon=_epsilon(sigma, g.sensitivity, g.delta),
            noise_std=sigma,
        )
        return self


class QuarterNoiseLogisticRegression(_LessNoise, OutputPerturbedLogisticRegression):
    """A quarter of the noise, the full-noise claim: epsilon understated."""

    _noise_fraction = 0.25


class HalfNoiseLinearRegression(_LessNoise, OutputPerturbedLinearRegression):
    """Half the noise, the full-noise claim: epsilon understated."""

    _noise_fraction = 0.5
