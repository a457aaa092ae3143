"""Output-perturbed generalised linear models with privacy reports, and IRFIL."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_fil.linear_model._irfil import IRFILClassifier, IRFILRegressor
from sklearn_fil.linear_model._output_perturbation import (
    OutputPerturbedLinearRegression,
    OutputPerturbedLogisticRegression,
)

__all__ = [
    "IRFILClassifier",
    "IRFILRegressor",
    "OutputPerturbedLinearRegression",
    "OutputPerturbedLogisticRegression",
]
