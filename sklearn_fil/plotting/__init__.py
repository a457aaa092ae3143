"""Display objects that draw privacy reports, in scikit-learn's Display style.

Each display holds the data of one figure and draws it with ``plot(ax=None,
**kwargs)``, which returns the display with its axes (``ax_`` or ``axes_``),
``figure_`` and artists; classmethods ``from_estimator`` read a fitted
estimator and ``from_report`` (or ``from_history``, ``from_predictions``) a
table or arrays. matplotlib is an optional dependency, imported only when a
display is drawn: ``pip install sklearn-fil[plot]``.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_fil.plotting._attacks import (
    AttackSuccessDisplay,
    MembershipROCDisplay,
    ReconstructionBoundDisplay,
)
from sklearn_fil.plotting._distributions import (
    FILHistogramDisplay,
    MSEBoundDisplay,
    PerInstanceEpsilonDisplay,
)
from sklearn_fil.plotting._exposed import ExposedExamplesDisplay
from sklearn_fil.plotting._irfil import IRFILConvergenceDisplay

__all__ = [
    "AttackSuccessDisplay",
    "ExposedExamplesDisplay",
    "FILHistogramDisplay",
    "IRFILConvergenceDisplay",
    "MSEBoundDisplay",
    "MembershipROCDisplay",
    "PerInstanceEpsilonDisplay",
    "ReconstructionBoundDisplay",
]
