# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""Broken mechanisms that the audits must refute."""

import dataclasses
import functools

from sklearn_fil import (
    DPSGDClassifier,
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


class TwentiethNoiseLogisticRegression(_LessNoise, OutputPerturbedLogisticRegression):
    """A twentieth of the noise, the full-noise claim (for one-run audits,
    whose bounds are far below the claim)."""

    _noise_fraction = 0.05


class TenthNoiseDPSGD(DPSGDClassifier):
    """One shuffled full-batch step with a tenth of the noise, the full-noise
    claim: the Gaussian mechanism at distance 2 (replace-one, hard clipping).
    """

    def fit(self, X, y):
        if not (
            self.sampling == "shuffle"
            and self.max_iter == 1
            and self.batch_size == len(X)
            and self.clipping == "hard"
        ):
            raise ValueError("TenthNoiseDPSGD claims one full-batch step only.")
        noise = self.noise_multiplier
        self.noise_multiplier = noise / 10.0
        try:
            super().fit(X, y)
        finally:
            self.noise_multiplier = noise
        g = self.guarantee_
        self.guarantee_ = dataclasses.replace(
            g, epsilon=_epsilon(float(noise), 2.0, g.delta)
        )
        return self
