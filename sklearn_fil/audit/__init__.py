"""Audits of the privacy that training gives without added noise.

:class:`IntrinsicPrivacyAudit` measures, as Hyland & Tople do, how much the
randomness of SGD (its seed) moves the weights compared with one training
example, on a grid of models that joblib (or a Dask cluster) fits in parallel.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_fil.audit._intrinsic import IntrinsicPrivacyAudit

__all__ = ["IntrinsicPrivacyAudit"]
