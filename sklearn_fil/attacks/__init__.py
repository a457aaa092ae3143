"""Privacy attacks that check the FIL report against what an adversary recovers.

Each attack takes the target model in its constructor, learns the adversary's
knowledge in ``fit`` and returns its guesses from ``transform`` (or ``predict``
for membership); ``score`` compares them with the truth, and
:func:`attack_report` tabulates per-example success by FIL decile.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_fil.attacks._inversion import (
    BlackBoxAttributeInversion,
    WhiteBoxAttributeInversion,
)
from sklearn_fil.attacks._membership import LossThresholdMembershipInference
from sklearn_fil.attacks._reconstruction import GLMReconstructionAttack
from sklearn_fil.attacks._report import attack_report

__all__ = [
    "BlackBoxAttributeInversion",
    "GLMReconstructionAttack",
    "LossThresholdMembershipInference",
    "WhiteBoxAttributeInversion",
    "attack_report",
]
