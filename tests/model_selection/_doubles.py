# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""A cheap private classifier that follows the package's guarantee contract."""

import functools

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin

from sklearn_fil.accounting import Guarantee, gaussian_sigma


@functools.lru_cache
def _sigma(epsilon, delta, sensitivity):
    return gaussian_sigma(epsilon=epsilon, delta=delta, sensitivity=sensitivity)


class NoisyMeanClassifier(ClassifierMixin, BaseEstimator):
    """Release the mean of the rows clipped to ``data_norm``, plus Gaussian noise.

    Under replace-one the mean moves by at most ``2 data_norm / n``; the noise
    is the analytic Gaussian mechanism's for ``target_epsilon`` at ``delta``.
    It predicts ``classes_[1]`` for every row (``constant=True``) or the
    sign of ``x . coef_ + shift``: a candidate whose validation accuracy only
    reads the validation labels, or one that depends on ``shift``.
    """

    def __init__(
        self,
        *,
        target_epsilon=1.0,
        delta=1e-5,
        data_norm=1.0,
        shift=0.0,
        constant=False,
        random_state=None,
    ):
        self.target_epsilon = target_epsilon
        self.delta = delta
        self.data_norm = data_norm
        self.shift = shift
        self.constant = constant
        self.random_state = random_state

    @classmethod
    @functools.cache
    def _get_param_names(cls):
        # thousands of clones in the audit: the signature read once
        return tuple(super()._get_param_names())

    def fit(self, X, y):
        X = np.asarray(X, dtype=np.float64)
        self.classes_ = np.unique(y)
        norms = np.sqrt(np.einsum("ij,ij->i", X, X))
        X = X * np.minimum(1.0, self.data_norm / np.maximum(norms, 1e-300))[:, None]
        sensitivity = 2.0 * self.data_norm / X.shape[0]
        sigma = _sigma(float(self.target_epsilon), float(self.delta), sensitivity)
        rng = np.random.default_rng(self.random_state)
        self.mean_, self.noise_std_ = X.mean(axis=0), sigma  # for the tests
        self.coef_ = self.mean_ + rng.normal(0.0, sigma, size=X.shape[1])
        import dp_accounting

        self.guarantee_ = Guarantee(
            epsilon=float(self.target_epsilon),
            delta=float(self.delta),
            neighboring_relation="replace_one",
            public=("n_samples", "classes"),
            mechanism="Gaussian mean (test)",
            accountant="analytic Gaussian mechanism",
            sensitivity=sensitivity,
            noise_std=sigma,
            dp_event=dp_accounting.GaussianDpEvent(sigma / sensitivity),
            event_relation="add_remove",
        )
        return self

    def predict(self, X):
        X = np.asarray(X, dtype=np.float64)
        if self.constant:
            return np.full(X.shape[0], self.classes_[1])
        return self.classes_[(X @ self.coef_ + self.shift > 0).astype(int)]
