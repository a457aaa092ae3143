"""Privacy attacks that check the FIL report against what an adversary recovers.

The attacks on released models take the target model in their constructor,
learn the adversary's knowledge in ``fit`` and return their guesses from
``transform`` (or ``predict`` for membership); ``score`` compares them with the
truth, and :func:`attack_report` tabulates per-example success by FIL decile.
:class:`GradientLabelAttack` also takes its target model first; its ``fit``
reads the shared gradient of a recorded DP-SGD step (``recover`` that of any
federated step) and recovers the binary labels of the whole batch.
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

__all__ = [
    "BlackBoxAttributeInversion",
    "GLMReconstructionAttack",
    "GradientLabelAttack",
    "LikelihoodRatioMembershipInference",
    "LossThresholdMembershipInference",
    "WhiteBoxAttributeInversion",
    "attack_report",
    "gradient_label_inputs",
]
