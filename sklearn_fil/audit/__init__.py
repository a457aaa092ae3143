"""Audits of privacy claims and of the privacy that training gives.

:class:`EpsilonAudit` checks a reported ε empirically: it fits an estimator
many times on two neighbouring data sets and bounds from below, with a chosen
confidence, the ε its releases really have. :class:`IntrinsicPrivacyAudit`
measures, as Hyland & Tople do, how much the randomness of SGD (its seed)
moves the weights compared with one training example. Both fit their models
with joblib (or on a Dask cluster) in parallel.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_fil.audit._epsilon import EpsilonAudit, canary_neighbours
from sklearn_fil.audit._intrinsic import IntrinsicPrivacyAudit

__all__ = ["EpsilonAudit", "IntrinsicPrivacyAudit", "canary_neighbours"]
