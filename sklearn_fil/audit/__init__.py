"""Audits of privacy claims and of the privacy that training gives.

:class:`EpsilonAudit` bounds from below the ε a mechanism really has;
:class:`IntrinsicPrivacyAudit` measures how far the seed of SGD moves the
weights compared with one training example.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_fil.audit._canaries import canary_neighbours
from sklearn_fil.audit._epsilon import EpsilonAudit
from sklearn_fil.audit._intrinsic import IntrinsicPrivacyAudit

__all__ = ["EpsilonAudit", "IntrinsicPrivacyAudit", "canary_neighbours"]
