"""Private neural training: DP-SGD with per-example privacy accounting."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_fil.neural._dpsgd import DPSGDClassifier
from sklearn_fil.neural._training import RecordedStep

__all__ = ["DPSGDClassifier", "RecordedStep"]
