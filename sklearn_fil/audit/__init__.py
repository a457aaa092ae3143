"""Audits of privacy claims and of the privacy that training gives.

:class:`EpsilonAudit` bounds from below the ε a mechanism really has, from many
releases on two neighbouring data sets, and :class:`OneRunAudit` from one
training run with many canaries; the estimators of ε from scores
(:func:`clopper_pearson_epsilon`, :func:`gdp_epsilon`, :func:`fdp_epsilon`,
:func:`fdp_test`) take
anyone's scores. :class:`IntrinsicPrivacyAudit` measures how far the seed of SGD
moves the weights compared with one training example.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_fil.audit._canaries import canary_neighbours
from sklearn_fil.audit._epsilon import EpsilonAudit
from sklearn_fil.audit._intrinsic import IntrinsicPrivacyAudit
from sklearn_fil.audit._one_run import OneRunAudit, one_run_epsilon_lower_bound
from sklearn_fil.audit._scores import (
    EpsilonBound,
    FDPBound,
    GDPBound,
    ThresholdErrors,
    TradeOffTest,
    clopper_pearson_epsilon,
    detectable_multiple,
    fdp_epsilon,
    fdp_test,
    gdp_epsilon,
)

__all__ = [
    "EpsilonAudit",
    "EpsilonBound",
    "FDPBound",
    "GDPBound",
    "IntrinsicPrivacyAudit",
    "OneRunAudit",
    "ThresholdErrors",
    "TradeOffTest",
    "canary_neighbours",
    "clopper_pearson_epsilon",
    "detectable_multiple",
    "fdp_epsilon",
    "fdp_test",
    "gdp_epsilon",
    "one_run_epsilon_lower_bound",
]
