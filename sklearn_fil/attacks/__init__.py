"""Privacy attacks that check the FIL report against what an adversary recovers.

Every attack takes the target model in its constructor, learns in ``fit(X,
y=None, **fit_params)`` and returns its guesses from one verb, without changing:
see :ref:`the user guide <attacks>`.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_fil.attacks._gradient_label import (
    GradientLabelAttack,
    gradient_label_inputs,
)
from sklearn_fil.attacks._inversion import (
    BlackBoxAttributeInversion,
    WhiteBoxAttributeInversion,
)
from sklearn_fil.attacks._likelihood_ratio import LikelihoodRatioMembershipInference
from sklearn_fil.attacks._membership import LossThresholdMembershipInference
from sklearn_fil.attacks._reconstruction import GLMReconstructionAttack
from sklearn_fil.attacks._report import attack_report
from sklearn_fil.attacks._shadow import (
    LiRAMembershipInference,
    RMIAMembershipInference,
)

__all__ = [
    "BlackBoxAttributeInversion",
    "GLMReconstructionAttack",
    "GradientLabelAttack",
    "LiRAMembershipInference",
    "LikelihoodRatioMembershipInference",
    "LossThresholdMembershipInference",
    "RMIAMembershipInference",
    "WhiteBoxAttributeInversion",
    "attack_report",
    "gradient_label_inputs",
]
